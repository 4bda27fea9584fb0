//! One step of the run: what runs next (a task the strategy picks, or the
//! clock moves when nothing is runnable or an early timer jumps), and the
//! clock's advance.

use super::schedule::Runnable;
use super::*;
use std::cell::RefMut;

impl Exec {
    /// What to do next: poll the main future or a task, or stop (the run
    /// failed, or nothing is runnable), moving the clock as needed.
    pub(super) fn next(&self, when_idle: WhenIdle) -> Next {
        let mut core = self.core.borrow_mut();
        loop {
            if let Some(f) = core.ended() {
                return Next::Fail(f);
            }
            if self.yielders_due(core.step) {
                drop(core);
                self.wake_yielded();
                core = self.core.borrow_mut();
                continue;
            }
            if core.run_queue.is_empty() {
                if let Some(next) = self.when_empty(core, when_idle) {
                    return next;
                }
                core = self.core.borrow_mut();
                continue;
            }
            if when_idle == WhenIdle::Advance && core.early_jump() {
                if let Err(f) = self.advance(core) {
                    return Next::Fail(f);
                }
                core = self.core.borrow_mut();
                continue;
            }
            let (slot, id) = core.pick();
            if slot == MAIN_SLOT {
                core.picked_main();
                self.not_idle();
                return Next::Main;
            }
            if let Some(blocking) = core.picked_task(slot, id) {
                core.clock.busy = true;
                self.not_idle();
                if blocking {
                    return picked_blocking(slot, id);
                }
                return Next::Task(slot, id);
            }
        }
    }

    /// Nothing is runnable: move the clock to the next timer and fire every
    /// timer due then. Consumes the core borrow so that wakers run with the
    /// core released.
    pub(super) fn advance<'a>(&'a self, mut core: RefMut<'a, Core>) -> Result<(), Failure> {
        let Some(deadline) = core.clock.timers.next_deadline() else {
            return Err(self.deadlock(&mut core, &Default::default()));
        };
        if let Some(limit) = core.config.time_limit {
            if deadline > limit.as_nanos() as u64 {
                return Err(time_limit_failure(limit.as_nanos() as u64, deadline));
            }
        }
        debug_assert!(deadline >= core.clock.now, "timers never fire in the past");
        if deadline > core.clock.now {
            core.clock.now = deadline;
            core.clock.parks += 1;
            core.worker_parks();
            hooks::set_now(deadline);
            core.decide(Kind::Advance, deadline);
        }
        if WAKE_PENDING.get() {
            drop(core);
            self.drain_wakes(true);
            core = self.core.borrow_mut();
        }
        // The fired timers' wakers, in firing order: the executor's own
        // tasks go straight to the run queue, until the first other waker
        // (which runs user code, outside the borrow); from there on they
        // are kept and woken in order.
        let mut wakers = self.fired.take();
        debug_assert!(wakers.is_empty());
        core.fire_due(&mut wakers);
        drop(core);
        if !wakers.is_empty() {
            self.wake_in_order(&mut wakers);
        }
        self.fired.set(wakers);
        Ok(())
    }

    /// The deadlock failure: what nothing runnable means here, and the
    /// wait-for graph, with what the holders experiment found (none when
    /// the run is not `block_on`'s and cannot drop its main future).
    pub(super) fn deadlock(&self, core: &mut Core, holders: &holders::Holders) -> Failure {
        let paused: Vec<&str> = core
            .nodes
            .iter()
            .filter(|n| n.paused)
            .map(|n| n.name.as_str())
            .collect();
        let mut message = String::from(
            "nothing is runnable, no timer is pending, and the main future is not finished",
        );
        if !paused.is_empty() {
            message.push_str(&format!(" (paused nodes hold work: {})", paused.join(", ")));
        }
        message.push_str(".\n  live tasks and what each waits for:");
        message.push_str(&core.wait_for_graph(holders));
        let mut notes = Vec::new();
        if let Some(&(task, node)) = core.left_destructors.first() {
            notes.push(format!(
                "note: a destructor of task {task} of dead node '{}' was left where it would wait                  (for a thread its node's death stopped){}: whatever else that task held was                  never dropped, so a channel it held never closes and a lock it held stays held,                  as if the process had died. Wait for the death itself (the code that crashes                  the node), not for that task's leftovers.",
                core.node(node).name,
                match core.left_destructors.len() {
                    1 => String::new(),
                    n => format!(" ({} more such tasks)", n - 1),
                }
            ));
        }
        if let Some(n) = core.held.as_ref().map(Vec::len).filter(|&n| n > 0) {
            notes.push(format!(
                "note: {n} task(s) wait for a `block_on` to run them: a current-thread runtime \
                 (as Tokio's) runs its tasks only while a `Runtime::block_on` holds its worker, \
                 and the thread that built it waits outside `block_on`. Call `block_on` (or use \
                 a multi-thread runtime) where those tasks must run."
            ));
        }
        core.each_driver(|d, _| notes.extend(d.deadlock_note()));
        for note in notes {
            message.push_str("\n  ");
            message.push_str(&note);
        }
        Failure {
            class: Class::Deadlock,
            message,
        }
    }
}

impl Core {
    /// The failure that ends the run before this step: one recorded, or
    /// the step limit reached.
    #[inline]
    fn ended(&mut self) -> Option<Failure> {
        // Checked before taken: `take` on every step copied the (absent)
        // failure out and wrote it back.
        if self.failure.is_some() {
            return self.failure.take();
        }
        match self.config.step_limit {
            Some(limit) if self.step >= limit => Some(step_limit_failure(limit)),
            _ => None,
        }
    }

    /// Early timers (schedule/early.rs): whether the clock jumps to the
    /// next deadline now although tasks are runnable. If it does, every
    /// task runnable now is owed a poll before the next jump.
    #[inline]
    fn early_jump(&mut self) -> bool {
        let Core {
            sched,
            clock,
            config,
            step,
            slab,
            run_queue,
            ..
        } = self;
        let Some(early) = sched.early.as_mut() else {
            return false;
        };
        let limit = config.time_limit.map(|l| l.as_nanos() as u64);
        if !early.jump(*step, &mut clock.timers, clock.now, limit, || {
            slab.scripted_runnable(run_queue)
        }) {
            return false;
        }
        let runnable: Vec<(u32, u64)> = self.run_queue.iter().copied().collect();
        for (slot, id) in runnable {
            self.owe_poll(slot, id);
        }
        true
    }

    /// The main future was picked: it is out of the run queue, and no
    /// longer owed a poll.
    #[inline(always)]
    fn picked_main(&mut self) {
        self.main.queued = false;
        if self.main.owed {
            self.main.owed = false;
            self.sched.paid();
        }
    }

    /// Task `id` in `slot` was picked: whether it is a `spawn_blocking`
    /// task, or `None` when it does not run now (it finished or was dropped
    /// since it was woken, or its node is paused: it is parked there until
    /// the node resumes).
    #[inline(always)]
    fn picked_task(&mut self, slot: u32, id: u64) -> Option<bool> {
        let (node, kind) = match self.slab.tasks.get(slot as usize).and_then(|t| t.as_ref()) {
            Some(t) if t.id == id && t.future.is_some() => (t.node, t.kind),
            _ => return None,
        };
        if self.is_paused(node) {
            self.node_mut(node).parked.push((slot, id));
            return None;
        }
        if kind == TaskKind::Async {
            if let Some(held) = self.held.as_mut() {
                held.push((slot, id));
                return None;
            }
        }
        Some(kind == TaskKind::Blocking)
    }

    /// Takes the strategy's pick out of the run queue (not empty).
    #[inline(always)]
    fn pick(&mut self) -> (u32, u64) {
        let Core {
            sched,
            run_queue,
            slab,
            prefetch_min,
            ..
        } = self;
        sched.pick(&mut Runnable::new(run_queue, &slab.tasks, *prefetch_min))
    }

    /// Fires every timer due now, in their seeded order: the wakes of the
    /// executor's own tasks go to the run queue until the first other
    /// waker, which and whatever follows it go to `wakers`. A paused node's
    /// timers are held until it resumes.
    /// Inlined into `advance`, its one caller (the loop runs once per
    /// timer).
    #[inline(always)]
    fn fire_due(&mut self, wakers: &mut Vec<WakeRef>) {
        let now = self.clock.now;
        loop {
            let Clock {
                timers, timer_rng, ..
            } = &mut self.clock;
            let Some(fired) = timers.pop_due(now, timer_rng) else {
                break;
            };
            if self.is_paused(fired.node) {
                self.node_mut(fired.node).deferred.push(fired.waker);
                continue;
            }
            self.decide(Kind::Fire, fired.seq);
            if let (Some(WakeRef::Task { slot, id }), Some(_)) = (&fired.waker, &self.sched.early) {
                let (slot, id) = (*slot, *id);
                self.owe_poll(slot, id & !ABORT_BIT);
            }
            match fired.waker {
                Some(WakeRef::Task { slot, id }) if wakers.is_empty() => {
                    self.take_request(slot, id)
                }
                Some(w) => wakers.push(w),
                None => {}
            }
        }
    }
}

/// A `spawn_blocking` task was picked (rare). Out of line, so that the
/// common case is a predicted branch: compiled as a select between the two
/// variants, the step's result waited for the task's slab entry, and the
/// step closure's dispatch on it stalled (4% of the `sleep` bench).
#[cold]
#[inline(never)]
fn picked_blocking(slot: u32, id: u64) -> Next {
    Next::Blocking(slot, id)
}

#[cold]
fn step_limit_failure(limit: u64) -> Failure {
    Failure {
        class: Class::StepLimit,
        message: format!(
            "the run took {limit} steps without finishing (a busy loop that never yields to the \
             clock?). Raise it with SIM_STEP_LIMIT=<n> or SIM_STEP_LIMIT=none."
        ),
    }
}

#[cold]
fn time_limit_failure(limit_ns: u64, deadline: u64) -> Failure {
    Failure {
        class: Class::Livelock,
        message: format!(
            "virtual time would pass the limit of {} (next timer at {}) and the main future is \
             still not finished. Raise it with SIM_TIME_LIMIT=<duration> or SIM_TIME_LIMIT=none.",
            report::fmt_ns(limit_ns),
            report::fmt_ns(deadline)
        ),
    }
}
