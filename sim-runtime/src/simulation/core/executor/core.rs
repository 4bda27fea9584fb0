//! The core's own bookkeeping: schedule draws, wake requests, nodes' pause
//! state, the task slab.

use super::*;

impl Core {
    /// The run's settings.
    #[inline]
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The run's root seed.
    #[inline]
    pub(crate) fn seed(&self) -> u64 {
        self.config.seed
    }

    /// Global virtual time, ns since the start of the run.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.now
    }

    /// Steps (polls) taken so far.
    #[inline]
    pub(crate) fn step(&self) -> u64 {
        self.step
    }

    /// Times the run went idle and the clock jumped.
    pub(crate) fn parks(&self) -> u64 {
        self.parks
    }

    /// The timer queue (every sleep, interval and delivery of the run).
    #[inline]
    pub(crate) fn timers(&self) -> &Timers {
        &self.timers
    }

    /// [`Core::timers`], to change.
    #[inline]
    pub(crate) fn timers_mut(&mut self) -> &mut Timers {
        &mut self.timers
    }

    /// The run's nodes, by index (`NodeId`).
    #[inline]
    pub(crate) fn nodes(&self) -> &super::super::node::Nodes {
        &self.nodes
    }

    /// Adds a node; every driver hears of it.
    pub(crate) fn add_node(&mut self, state: NodeState) -> NodeId {
        let id = self.nodes.push(state);
        self.each_driver(|d, core| d.node_created(core, id));
        id
    }

    /// The decision log and fingerprint.
    #[inline]
    pub(crate) fn trace(&self) -> &Trace {
        &self.trace
    }

    /// [`Core::trace`], to change (finish it, take its record).
    pub(crate) fn trace_mut(&mut self) -> &mut Trace {
        &mut self.trace
    }

    /// What a report says of the run at this point.
    pub(crate) fn snapshot(&self) -> report::Snapshot {
        report::Snapshot {
            seed: self.config.seed,
            schedule: self.config.schedule,
            step: self.step,
            now: self.now,
        }
    }

    /// Whether a scripted action (`sim::at`) is in the run queue. Read
    /// only when an early-timer jump was drawn (a few times per run).
    pub(super) fn scripted_runnable(&self) -> bool {
        self.run_queue.iter().any(|&(slot, id)| {
            let live = matches!(self.tasks.get(slot as usize), Some(Some(t)) if t.id == id);
            live && self.meta.get(slot as usize).and_then(|m| m.name.as_deref()) == Some(SCRIPTED)
        })
    }

    #[inline]
    pub(crate) fn decide(&mut self, kind: Kind, value: u64) {
        self.trace.decide(self.step, self.now, kind, value);
    }

    /// The next draw of the schedule stream (an early one if peeked).
    #[inline]
    pub(super) fn sched_draw(&mut self) -> u64 {
        if self.sched_peeked == 0 {
            return self.sched_rng.next_u64();
        }
        let x = self.sched_peek[self.sched_first];
        self.sched_first = (self.sched_first + 1) % PEEK_RING;
        self.sched_peeked -= 1;
        x
    }

    /// Guesses the next random picks (the next draws of the schedule
    /// stream, with the run queue one shorter per pick: the picked task
    /// waits or yields, which defers it) and asks the CPU to fetch, while
    /// this step's task runs, a pipeline of what those picks will read: the
    /// run-queue entry of the pick `PEEK - 1` ahead, the slab entry of the
    /// one `SLAB_AHEAD` ahead (its queue entry fetched some steps ago), and
    /// the task of the one `TASK_AHEAD` ahead. A wrong guess only wastes a
    /// prefetch; the schedule is unchanged (each draw is consumed exactly
    /// when it would have been drawn).
    #[inline]
    pub(super) fn prefetch_next_picks(&mut self, len: usize) {
        while self.sched_peeked < PEEK {
            self.sched_peek[(self.sched_first + self.sched_peeked) % PEEK_RING] =
                self.sched_rng.next_u64();
            self.sched_peeked += 1;
        }
        let index = |k: usize| {
            let draw = self.sched_peek[(self.sched_first + k) % PEEK_RING];
            seed::below(draw, len.saturating_sub(k) as u64) as usize
        };
        let task_at = |k: usize| {
            let &(slot, _) = self.run_queue.get(index(k))?;
            self.tasks.get(slot as usize)
        };
        if let Some(Some(t)) = task_at(TASK_AHEAD) {
            if let Some(f) = &t.future {
                // Three lines: the header, the future and, for a small
                // future, the join slot (the task's last poll completes
                // it: a miss that was 9% of spawn_yield in perf).
                let p = f.task().as_ptr();
                prefetch(p);
                prefetch(p.cast::<u8>().wrapping_add(64));
                prefetch(p.cast::<u8>().wrapping_add(128));
            }
        }
        if let Some(entry) = task_at(SLAB_AHEAD) {
            prefetch(entry as *const Option<Task>);
        }
        if let Some(q) = self.run_queue.get(index(PEEK - 1)) {
            prefetch(q as *const (u32, u64));
        }
    }

    /// Takes wake requests (from the buffer or the remote queue) into the
    /// run queue, in their order.
    pub(super) fn take_requests(&mut self, requests: impl IntoIterator<Item = (u32, u64)>) {
        for (slot, raw) in requests {
            self.take_request(slot, raw);
        }
    }

    /// Takes one wake request: the task goes to the run queue unless it is
    /// already there (or gone); `ABORT_BIT` marks it aborted first.
    #[inline]
    pub(super) fn take_request(&mut self, slot: u32, raw: u64) {
        let id = raw & !ABORT_BIT;
        if slot == MAIN_SLOT {
            if !self.main_queued {
                self.main_queued = true;
                self.run_queue.push_back((slot, id));
            }
            return;
        }
        if let Some(Some(t)) = self.tasks.get_mut(slot as usize) {
            if t.id == id {
                t.aborted |= raw & ABORT_BIT != 0;
                if !t.queued {
                    t.queued = true;
                    self.run_queue.push_back((slot, id));
                }
            }
        }
    }

    /// Keeps `waker` as a [`WakeRef`].
    #[inline]
    pub(crate) fn wake_ref(&self, waker: &Waker) -> WakeRef {
        let (data, slot, id) = self.polling;
        let ours = std::ptr::eq(waker.vtable(), &raw::WAKER);
        if ours && std::ptr::eq(waker.data(), data) {
            return WakeRef::Task { slot, id };
        }
        if ours {
            // SAFETY: the vtable is `raw::WAKER`: the data is a live header
            // (the waker holds a reference for this call).
            let h = unsafe { raw::waker_header(waker) };
            if h.exec_id == self.exec_id {
                return WakeRef::Task {
                    slot: h.slot,
                    id: h.id,
                };
            }
        }
        WakeRef::Other(waker.clone())
    }

    /// Asks the CPU to fetch the slab entry of `next`, a wake to come.
    #[inline]
    pub(super) fn prefetch_wake(&self, next: Option<&WakeRef>) {
        if let Some(&WakeRef::Task { slot, .. }) = next {
            if let Some(entry) = self.tasks.get(slot as usize) {
                prefetch(entry as *const Option<Task>);
            }
        }
    }

    pub(crate) fn select_draw(&mut self, n: u32) -> u32 {
        let v = seed::below(self.select_rng.next_u64(), u64::from(n)) as u32;
        self.decide(Kind::Select, u64::from(v));
        v
    }

    pub(crate) fn fail(&mut self, class: Class, message: String) {
        if self.failure.is_none() {
            self.failure = Some(Failure { class, message });
        }
    }

    pub(crate) fn node(&self, id: NodeId) -> &NodeState {
        &self.nodes[id.index()]
    }

    pub(crate) fn node_mut(&mut self, id: NodeId) -> &mut NodeState {
        &mut self.nodes[id.index()]
    }

    /// Pauses or resumes a node's scheduling (the one writer of `paused`).
    pub(crate) fn set_paused(&mut self, id: NodeId, paused: bool) {
        self.node_mut(id).paused = paused;
        self.any_paused = self.nodes.iter().any(|n| n.paused);
    }

    /// Whether `id` is paused, with no load of the node when none is.
    #[inline]
    pub(super) fn is_paused(&self, id: NodeId) -> bool {
        self.any_paused && self.node(id).paused
    }

    /// Takes a task out of the slab and frees its slot (the caller drops it
    /// outside the borrow).
    pub(super) fn remove_task(&mut self, slot: u32) -> Option<Task> {
        let task = self.tasks[slot as usize].take();
        debug_assert!(task.is_some(), "removing a free slot");
        if task.as_ref().is_some_and(|t| t.owed_poll) {
            self.owed_poll -= 1;
        }
        if self.polling.1 == slot {
            self.polling = (std::ptr::null(), 0, 0);
        }
        self.free.push(slot);
        self.alive -= 1;
        // The metadata is only read for live tasks and is overwritten when
        // the slot is reused: it is left alone here (with many tasks its line
        // is not in the cache, and writing it cost 6% of spawn_yield).
        task
    }

    /// Notes that this task must be polled before the next early jump
    /// (`owed_poll`).
    pub(super) fn owe_poll(&mut self, slot: u32, id: u64) {
        if slot == MAIN_SLOT {
            if !self.main_owed {
                self.main_owed = true;
                self.owed_poll += 1;
            }
            return;
        }
        if let Some(Some(t)) = self.tasks.get_mut(slot as usize) {
            if t.id == id && !t.owed_poll {
                t.owed_poll = true;
                self.owed_poll += 1;
            }
        }
    }

    pub(crate) fn alive_tasks(&self) -> usize {
        self.alive
    }

    /// Every live task, in id order, as the deadlock report lists them.
    pub(crate) fn describe_tasks(&self) -> Vec<String> {
        let mut tasks: Vec<(&Task, &TaskMeta)> = self
            .tasks
            .iter()
            .zip(&self.meta)
            .filter_map(|(t, m)| Some((t.as_ref()?, m)))
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
