//! The executor's own thread blocked in user code, and the tasks that are
//! simulated threads.
//!
//! A simulated OS thread (thread/) is a task whose poll hands the baton to
//! its thread and returns when the thread blocks, yields or ends; the seed
//! picks it like any task. When a task's own code blocks its thread (a std
//! `Mutex` a simulated thread holds, `thread::sleep` in async code,
//! `JoinHandle::join` of a std thread), the executor's thread is blocked as
//! a current-thread runtime's worker would be: no task runs, but simulated
//! threads do, and the clock moves to their timers. [`Exec::block_executor`]
//! is that wait: it polls only thread tasks, each picked by the seed among
//! the runnable ones, until the caller's condition holds.

use super::*;

impl Exec {
    /// Spawns `fut` as a simulated thread's task on `node` (thread/).
    pub(crate) fn spawn_thread_task<F>(
        self: &Rc<Self>,
        fut: F,
        name: Option<Arc<str>>,
        location: &'static Location<'static>,
        node: NodeId,
    ) -> JoinHandle<()>
    where
        F: Future<Output = ()> + 'static,
    {
        self.spawning_thread.set(true);
        self.spawn(fut, name, location, Some(node))
    }

    /// Blocks the executor's thread, from inside a poll, until `until`
    /// holds: meanwhile only simulated threads run (each picked by the
    /// seed), and the clock moves to the next timer whenever none is
    /// runnable. Tasks woken meanwhile wait for the poll to end. Fails when
    /// nothing can ever make `until` hold (no thread runnable, no timer) or
    /// a limit of the run is reached.
    ///
    /// `stuck` is asked when nothing in the simulation can move: it may wait
    /// for something outside (in real time) and return `true` to look
    /// again, or `false` to fail.
    pub(crate) fn block_executor(
        &self,
        stuck: &mut dyn FnMut() -> bool,
        until: &mut dyn FnMut() -> bool,
    ) -> Result<(), Failure> {
        let saved_cur = self.cur.get();
        let saved_polling = self.core.borrow().polling;
        let out = loop {
            self.drain_wakes(true);
            if until() {
                break Ok(());
            }
            let picked = {
                let mut core = self.core.borrow_mut();
                if let Some(f) = core.failure.take() {
                    break Err(f);
                }
                core.pick_thread()
            };
            match picked {
                Some((slot, id)) => self.poll_task(slot, id),
                None => {
                    let mut core = self.core.borrow_mut();
                    if core.clock.timers.next_deadline().is_none() {
                        drop(core);
                        if stuck() {
                            continue;
                        }
                        core = self.core.borrow_mut();
                        let mut f = self.deadlock(&mut core, &Default::default());
                        f.message = format!(
                            "a task blocked the executor's thread in user code (a std lock, \
                             a condition variable, a thread join or a sleep), and no \
                             simulated thread or timer can ever release it: {}",
                            f.message
                        );
                        break Err(f);
                    }
                    if let Err(f) = self.advance(core) {
                        break Err(f);
                    }
                }
            }
        };
        self.cur.set(saved_cur);
        self.sync_clock(saved_cur.node);
        self.core.borrow_mut().polling = saved_polling;
        out
    }
}

impl Exec {
    /// Tells the watchdog which simulated thread holds the baton (null:
    /// none), so that a hang names it.
    pub(crate) fn watch_thread(&self, t: *const super::super::watchdog::RunningThread) {
        self.progress.set_thread(t);
    }

    /// Makes the code running now (a simulated thread's) run as task
    /// `task`, or as no task, on the same node.
    pub(crate) fn run_as_task(&self, task: Option<u64>) {
        let cur = self.cur.get();
        self.cur.set(Cur {
            task,
            node: cur.node,
        });
    }

    /// Makes the code running now (a simulated thread's) run on `node`.
    pub(crate) fn move_current_node(&self, node: NodeId) {
        let cur = self.cur.get();
        self.cur.set(Cur {
            task: cur.task,
            node,
        });
        self.sync_clock(node);
    }

    /// The report of `f`, as a failing run prints it.
    pub(crate) fn render_failure(&self, f: &Failure) -> String {
        report::render(&self.core.borrow().snapshot(), f)
    }
}

impl Core {
    /// Takes a runnable simulated thread's task out of the run queue, picked
    /// by the seed among those whose node is not paused; `None` if there is
    /// none.
    fn pick_thread(&mut self) -> Option<(u32, u64)> {
        let candidates: Vec<usize> = self
            .run_queue
            .iter()
            .enumerate()
            .filter(|(_, &(slot, id))| {
                matches!(self.slab.tasks.get(slot as usize), Some(Some(t))
                    if t.id == id && t.future.is_some() && t.kind == TaskKind::Thread
                        && !self.is_paused(t.node))
            })
            .map(|(i, _)| i)
            .collect();
        let chosen = match candidates.len() {
            0 => return None,
            1 => candidates[0],
            n => candidates[self.select_draw(n as u32) as usize],
        };
        self.run_queue.remove(chosen)
    }
}

impl Exec {
    /// Holds this runtime's tasks (`on`: they stay queued, unpolled, as on
    /// a current-thread runtime whose worker no `block_on` holds), or lets
    /// them run again, queueing the held ones afresh in the order they were
    /// spawned. Simulated threads and `spawn_blocking` closures run either
    /// way, as Tokio's threads and blocking pool do.
    pub(crate) fn hold_tasks(&self, on: bool) {
        let held = {
            let mut core = self.core.borrow_mut();
            if on {
                core.held.get_or_insert_with(Vec::new);
                return;
            }
            core.held.take()
        };
        if let Some(held) = held {
            self.wake_afresh(held);
        }
    }
}
