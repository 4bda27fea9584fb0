//! The task slab: one entry per live task, indexed by slot (the slot is in
//! every waker, so a wake finds its task without a search); freed slots are
//! reused. Spawning puts a task here, and a task leaves it when it
//! finishes, is aborted, or its node dies.

use super::*;

/// A slab entry: what picking and waking a task read, in 32 bytes aligned
/// to 32 (half a cache line): with many tasks and a random schedule every
/// step misses the cache on it, so nothing on those paths reads the task's
/// allocation, which only its poll does.
#[repr(align(32))]
pub(super) struct Task {
    /// The executor's reference to the task (task/raw.rs): header, future,
    /// join slot. `None` while the task is being polled.
    pub(super) future: Option<OwnedTask>,
    pub(super) id: u64,
    /// In the run queue (or a paused node's parked list): a wake is not
    /// queued twice. Cleared when the task is picked for a poll.
    pub(super) queued: bool,
    /// `abort` was asked: the task is dropped at its next turn.
    pub(super) aborted: bool,
    pub(super) node: NodeId,
    /// The node's incarnation when the task was spawned: a task outlives
    /// neither a kill nor a restart of its node.
    pub(super) incarnation: u32,
    /// What kind of task: a `spawn_blocking` closure's is polled outside
    /// real Tokio's context (core/executor/context.rs); a simulated
    /// thread's is the only kind that runs while the executor's own thread
    /// is blocked in user code (blocked.rs).
    pub(super) kind: TaskKind,
    /// Owed a poll before the clock may jump early again: woken by the
    /// clock (a timer or a delivery fired), or passed over by an early
    /// jump, and not polled since (schedule/early.rs counts them; kept in
    /// runs with early timers only).
    pub(super) owed_poll: bool,
    /// The step of its last poll (low bits): a wait noted in that poll is
    /// its current one (core/executor/wait.rs).
    pub(super) polled_at: u32,
}

/// What a task is (kept in one byte of the slab entry).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum TaskKind {
    Async,
    /// A `spawn_blocking` closure.
    Blocking,
    /// A simulated OS thread (thread/): its poll hands the baton to it.
    Thread,
}

// Half a cache line, as the pick's prefetching assumes.
const _: () = assert!(std::mem::size_of::<Option<Task>>() == 32);

/// The cold part of a task, read only by reports and by the early-timer
/// check (same index as `tasks`).
pub(super) struct TaskMeta {
    pub(super) name: Option<Arc<str>>,
    pub(super) location: &'static Location<'static>,
    /// What a poll of it last noted it waits for, stamped with that step.
    pub(super) wait: Option<(u32, Wait)>,
    /// A simulated thread of `spawn_blocking`'s pool, idle: part of the
    /// runtime, not a task the program left running.
    pub(super) idle_worker: bool,
}

/// The tasks of a run.
pub(super) struct Slab {
    pub(super) tasks: mem::HugeVec<Option<Task>>,
    /// Each task's cold part, by slot.
    pub(super) meta: Vec<TaskMeta>,
    /// Free slots, reused last-freed first.
    pub(super) free: Vec<u32>,
    /// Live tasks.
    pub(super) alive: usize,
    /// The id the next spawned task gets (ids are never reused).
    pub(super) next_id: u64,
    /// Tasks spawned from off the runtime's worker and not polled yet: what
    /// Tokio keeps in its global (inject) queue (`global_queue_depth`).
    pub(super) injected: Vec<u64>,
}

impl Slab {
    /// Whether a scripted action (`sim::at`) is in `run_queue`. Read only
    /// when an early-timer jump was drawn (a few times per run).
    pub(super) fn scripted_runnable(&self, run_queue: &queue::RunQueue) -> bool {
        run_queue.iter().any(|&(slot, id)| {
            let live = matches!(self.tasks.get(slot as usize), Some(Some(t)) if t.id == id);
            live && self.meta.get(slot as usize).and_then(|m| m.name.as_deref()) == Some(SCRIPTED)
        })
    }
}

impl Core {
    /// Takes a task out of the slab and frees its slot (the caller drops it
    /// outside the borrow).
    pub(super) fn remove_task(&mut self, slot: u32) -> Option<Task> {
        let task = self.slab.tasks[slot as usize].take();
        debug_assert!(task.is_some(), "removing a free slot");
        if task.as_ref().is_some_and(|t| t.owed_poll) {
            self.sched.paid();
        }
        if self.polling.1 == slot {
            self.polling = (std::ptr::null(), 0, 0);
        }
        if let Some(t) = task.as_ref().filter(|_| !self.slab.injected.is_empty()) {
            self.slab.injected.retain(|&i| i != t.id);
        }
        self.slab.free.push(slot);
        self.slab.alive -= 1;
        // The metadata is only read for live tasks and is overwritten when
        // the slot is reused: it is left alone here (with many tasks its line
        // is not in the cache, and writing it cost 6% of spawn_yield).
        task
    }

    pub(crate) fn alive_tasks(&self) -> usize {
        self.slab.alive
    }

    /// Tasks spawned from off the worker and not polled yet (Tokio's
    /// `global_queue_depth`: a task spawned from outside the runtime's worker
    /// waits in its global queue until the worker takes it).
    pub(crate) fn injected_tasks(&self) -> usize {
        self.slab.injected.len()
    }

    /// Live tasks that are not simulated threads (Tokio's count: its
    /// metrics know no threads).
    pub(crate) fn alive_async_tasks(&self) -> usize {
        self.slab
            .tasks
            .iter()
            .flatten()
            .filter(|t| t.kind != TaskKind::Thread)
            .count()
    }

    /// Moves task `id` (a simulated thread that named itself after a node)
    /// to `node`, as a task of its current incarnation.
    pub(crate) fn set_task_node(&mut self, id: u64, node: NodeId) {
        let incarnation = self.node(node).incarnation;
        if let Some(t) = self.slab.tasks.iter_mut().flatten().find(|t| t.id == id) {
            t.node = node;
            t.incarnation = incarnation;
        }
    }

    /// The slot of live task `id` (a scan: for a thread's rare renames and
    /// its pool worker's idle marks, not a step's path).
    fn slot_of(&self, id: u64) -> Option<usize> {
        self.slab
            .tasks
            .iter()
            .position(|t| t.as_ref().is_some_and(|t| t.id == id))
    }

    /// Whether task `id` is still alive (in the slab).
    pub(crate) fn is_alive(&self, id: u64) -> bool {
        self.slot_of(id).is_some()
    }

    /// Renames task `id` (a simulated thread that named itself).
    pub(crate) fn set_task_name(&mut self, id: u64, name: Arc<str>) {
        if let Some(slot) = self.slot_of(id) {
            self.slab.meta[slot].name = Some(name);
        }
    }

    /// Marks task `id` (a simulated thread's) as an idle `spawn_blocking`
    /// worker, or no longer idle: leftover reports pass over idle ones.
    pub(crate) fn set_idle_worker(&mut self, id: u64, idle: bool) {
        if let Some(slot) = self.slot_of(id) {
            self.slab.meta[slot].idle_worker = idle;
        }
    }

    /// Every live task, in id order, as the deadlock report lists them.
    pub(crate) fn describe_tasks(&self) -> Vec<String> {
        let mut tasks: Vec<(&Task, &TaskMeta)> = self
            .slab
            .tasks
            .iter()
            .zip(&self.slab.meta)
            .filter_map(|(t, m)| Some((t.as_ref()?, m)))
            .filter(|(_, m)| !m.idle_worker)
            .collect();
        tasks.sort_by_key(|(t, _)| t.id);
        tasks
            .iter()
            .map(|(t, m)| {
                let node = self.node(t.node);
                format!(
                    "task {} {} on node '{}'{} spawned at {}",
                    t.id,
                    m.name
                        .as_deref()
                        .map(|n| format!("'{n}'"))
                        .unwrap_or_else(|| "(unnamed)".into()),
                    node.name,
                    if node.paused { " (paused)" } else { "" },
                    m.location
                )
            })
            .collect()
    }
}

impl Exec {
    pub(crate) fn spawn<F>(
        self: &Rc<Self>,
        fut: F,
        name: Option<Arc<str>>,
        location: &'static Location<'static>,
        node: Option<NodeId>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let kind = if self.compat.set_spawning_blocking(false) {
            TaskKind::Blocking
        } else if self.spawning_thread.replace(false) {
            TaskKind::Thread
        } else {
            TaskKind::Async
        };
        let node = node.unwrap_or_else(|| self.cur.get().node);
        // Tokio queues a task spawned off its worker in the global queue.
        let injected = kind == TaskKind::Async && self.worker_index().is_none();
        let mut core = self.core.borrow_mut();
        // Once the simulation has ended, ids continue where it left off,
        // shared with the threads that spawn without the executor (ended.rs).
        let id = match self.shared.ended.get() {
            None => {
                let id = core.slab.next_id;
                core.slab.next_id += 1;
                id
            }
            Some(ended) => ended.take_id(),
        };
        let slot = match core.slab.free.pop() {
            Some(s) => s,
            None => {
                core.slab.tasks.push(None);
                core.slab.meta.push(TaskMeta {
                    name: None,
                    location,
                    wait: None,
                    idle_worker: false,
                });
                (core.slab.tasks.len() - 1) as u32
            }
        };
        let task = raw::new_task(
            Header::new(self.id, slot, id, self.shared.clone()),
            fut,
            name.clone(),
        );
        let handle = JoinHandle::new(task.handle_ref(), id);
        core.decide(Kind::Spawn, id);
        if !core.node(node).alive {
            // As on a runtime that is shutting down: the task is dropped at
            // once and its handle reports cancellation.
            core.slab.free.push(slot);
            drop(core);
            self.with_task(node, Some(id), || drop(task));
            return handle;
        }
        let incarnation = core.node(node).incarnation;
        core.slab.tasks[slot as usize] = Some(Task {
            future: Some(task),
            id,
            queued: false,
            aborted: false,
            node,
            incarnation,
            kind,
            owed_poll: false,
            polled_at: 0,
        });
        core.slab.meta[slot as usize] = TaskMeta {
            name,
            location,
            wait: None,
            idle_worker: false,
        };
        core.slab.alive += 1;
        if injected {
            core.slab.injected.push(id);
        }
        drop(core);
        self.push_wake(slot, id);
        handle
    }
}
