//! One step of the run: picking the next task, advancing the clock when
//! nothing is runnable, polling, and failing the run.

use super::*;

impl Exec {
    /// Polls a task inside real Tokio's context, then the checks that
    /// follow such a poll.
    pub(super) fn poll_task_inside(&self, slot: u32, id: u64, stray: &context::Stray) {
        self.poll_task(slot, id);
        self.after_real_poll();
        self.check_stray(stray);
    }

    /// After a poll inside real Tokio's context: a poll that spent the
    /// whole budget may have left a deferred wake with Tokio (its
    /// operation returned `Pending` and woke the task through Tokio's
    /// scheduler), which must be flushed before the run may go idle.
    #[inline]
    pub(super) fn after_real_poll(&self) {
        if context::refresh_budget() {
            self.unflushed.set(true);
        }
        self.deadlock_flushed.set(false);
    }

    /// Fails the run at once if a poll spawned a task on real Tokio's
    /// runtime (Tokio may still poll that task once before the run ends).
    #[inline]
    pub(super) fn check_stray(&self, stray: &context::Stray) {
        if stray.spawned() {
            let failure = {
                let mut core = self.core.borrow_mut();
                core.fail(
                    Class::Forbidden,
                    format!("{}. {}", context::STRAY_REAL_TASK, report::REAL_TOKIO_HINT),
                );
                core.failure.take().expect("just recorded")
            };
            self.fail(failure)
        }
    }

    /// Wakes the tasks that called `yield_now`, in the order they yielded.
    pub(super) fn wake_yielded(&self) {
        self.yield_flush_step.set(self.core.borrow().step);
        let mut yielded = self.yielded.replace(self.yielded_spare.take());
        self.drain_wakes(true);
        self.wake_in_order(&mut yielded);
        self.yielded_spare.set(yielded);
    }

    /// Wakes `wakers` in their order and empties the list, as calling each
    /// and then `drain_wakes(false)` would, but its own tasks go straight to
    /// the run queue (with their slab entries and headers fetched ahead when
    /// the list is long). Expects no wake buffered.
    pub(super) fn wake_in_order(&self, wakers: &mut Vec<WakeRef>) {
        let n = wakers.len();
        let prefetching = n > self.core.borrow().prefetch_min;
        let mut i = 0;
        while i < n {
            {
                let mut core = self.core.borrow_mut();
                while i < n {
                    let WakeRef::Task { slot, id } = wakers[i] else {
                        break;
                    };
                    if prefetching {
                        core.prefetch_wake(wakers.get(i + 8));
                    }
                    core.take_request(slot, id);
                    i += 1;
                }
            }
            if i < n {
                // Another waker: it runs user code, outside the borrow, and
                // what it wakes queues before the wakes after it.
                if let WakeRef::Other(w) = &wakers[i] {
                    w.wake_by_ref();
                }
                self.drain_wakes(false);
                i += 1;
            }
        }
        wakers.clear();
    }

    /// Wakes what `w` stands for, as its waker would: a task that has
    /// finished or was dropped since is not woken.
    pub(crate) fn wake(&self, w: WakeRef) {
        match w {
            WakeRef::Task { slot, id } => self.push_wake(slot, id),
            WakeRef::Other(w) => w.wake(),
        }
    }

    #[inline]
    pub(super) fn after_poll(&self) {
        let forbidden = hooks::forbidden();
        if forbidden.any() {
            self.forbidden_attempt(forbidden);
        }
    }

    #[inline(never)]
    pub(super) fn forbidden_attempt(&self, forbidden: hooks::Forbidden) {
        let mut core = self.core.borrow_mut();
        for message in forbidden.messages() {
            core.fail(Class::Forbidden, message);
        }
    }

    pub(super) fn next(&self, when_idle: WhenIdle) -> Next {
        let mut core = self.core.borrow_mut();
        loop {
            // Checked before taken: `take` on every step copied the
            // (absent) failure out and wrote it back.
            if core.failure.is_some() {
                return Next::Fail(core.failure.take().expect("checked"));
            }
            if let Some(limit) = core.config.step_limit {
                if core.step >= limit {
                    return Next::Fail(Failure {
                        class: Class::StepLimit,
                        message: format!(
                            "the run took {limit} steps without finishing (a busy loop that never \
                             yields to the clock?). Raise it with SIM_STEP_LIMIT=<n> or \
                             SIM_STEP_LIMIT=none."
                        ),
                    });
                }
            }
            // As Tokio wakes deferred tasks at least every 61 polls, a
            // yielder is not starved by tasks that keep waking each other.
            if core.step >= self.yield_flush_step.get() + YIELD_INTERVAL
                && !self.yielded.borrow().is_empty()
            {
                drop(core);
                self.wake_yielded();
                core = self.core.borrow_mut();
                continue;
            }
            if core.run_queue.is_empty() {
                if self.shared.has_remote.load(Ordering::Acquire) {
                    drop(core);
                    self.drain_wakes(true);
                    core = self.core.borrow_mut();
                    continue;
                }
                if self.unflushed.replace(false) {
                    // Tokio wakes what it deferred (a task that spent its
                    // budget) together with the tasks that yielded: both
                    // are runnable again at once.
                    if !self.yielded.borrow().is_empty() {
                        drop(core);
                        self.wake_yielded();
                    }
                    return Next::Flush;
                }
                if !self.yielded.borrow().is_empty() {
                    // Every task that was runnable when these yielded has
                    // run: the yielders go again, in the order they yielded.
                    drop(core);
                    self.wake_yielded();
                    core = self.core.borrow_mut();
                    continue;
                }
                if !self.park_hook_ran.replace(true) {
                    let hook = self.park_hook.borrow().clone();
                    if let Some(hook) = hook {
                        drop(core);
                        hook();
                        self.drain_wakes(true);
                        core = self.core.borrow_mut();
                        continue;
                    }
                }
                // Before a deadlock is declared, real Tokio wakes what it
                // deferred (a crate built on real Tokio may have yielded
                // through it).
                if when_idle == WhenIdle::Advance
                    && core.timers.next_deadline().is_none()
                    && !self.deadlock_flushed.replace(true)
                {
                    return Next::Flush;
                }
                // A pump stops here unless timers are due at this very
                // instant (firing them does not move the clock).
                let now = core.now;
                if when_idle == WhenIdle::Stop
                    && core.timers.next_deadline().is_none_or(|d| d > now)
                {
                    return Next::Idle;
                }
                match self.advance(core) {
                    Ok(c) => {
                        core = c;
                        continue;
                    }
                    Err(f) => return Next::Fail(f),
                }
            }
            // Early timers: now and then, the clock jumps to the next
            // deadline although tasks are runnable (never past a timer).
            let step = core.step;
            if when_idle == WhenIdle::Advance && core.early.as_mut().is_some_and(|e| e.fire(step)) {
                let now = core.now;
                // A scripted action due now (`sim::at`) runs at its time:
                // the jump waits until it has run. Never past the time
                // limit: that is a livelock only when nothing is runnable.
                // Never past a deadline whose timer fired but whose owner
                // has not yet looked: `timeout(150ms, sleep(600ms))` would
                // find both done and return the sleep's `Ok`, an order no
                // runtime produces. And never twice over a task that stayed
                // runnable: the tasks runnable now are owed a poll first.
                let limit = core.config.time_limit.map(|l| l.as_nanos() as u64);
                if core.timers.unseen() == 0
                    && core.owed_poll == 0
                    && core
                        .timers
                        .next_deadline()
                        .is_some_and(|d| d > now && limit.is_none_or(|l| d <= l))
                    && !core.scripted_runnable()
                {
                    let runnable: Vec<(u32, u64)> = core.run_queue.iter().copied().collect();
                    for (slot, id) in runnable {
                        core.owe_poll(slot, id);
                    }
                    match self.advance(core) {
                        Ok(c) => {
                            core = c;
                            continue;
                        }
                        Err(f) => return Next::Fail(f),
                    }
                }
            }
            let len = core.run_queue.len();
            let (slot, id) = match core.config.schedule {
                Schedule::Fifo => core.run_queue.pop_front(),
                Schedule::Pct(_) => {
                    let Core { pct, run_queue, .. } = &mut *core;
                    pct.as_mut().expect("PCT state").pick(run_queue)
                }
                Schedule::Random => {
                    let i = if len == 1 {
                        0
                    } else {
                        seed::below(core.sched_draw(), len as u64)
                    };
                    let picked = core.run_queue.swap_remove_back(i as usize);
                    if len > core.prefetch_min {
                        let left = core.run_queue.len();
                        core.prefetch_next_picks(left);
                    }
                    picked
                }
            }
            .expect("run queue is not empty");
            if slot == MAIN_SLOT {
                core.main_queued = false;
                if core.main_owed {
                    core.main_owed = false;
                    core.owed_poll -= 1;
                }
                self.park_hook_ran.set(false);
                return Next::Main;
            }
            let (node, blocking) = match core.tasks.get(slot as usize).and_then(|t| t.as_ref()) {
                Some(t) if t.id == id && t.future.is_some() => (t.node, t.blocking),
                _ => continue, // finished or dropped since it was woken
            };
            if core.is_paused(node) {
                core.node_mut(node).parked.push((slot, id));
                continue;
            }
            self.park_hook_ran.set(false);
            if blocking {
                return Next::Blocking(slot, id);
            }
            return Next::Task(slot, id);
        }
    }

    /// Nothing is runnable: move the clock to the next timer and fire every
    /// timer due then. Consumes and returns the core borrow so that wakers
    /// run with the core released.
    pub(super) fn advance<'a>(
        &'a self,
        mut core: std::cell::RefMut<'a, Core>,
    ) -> Result<std::cell::RefMut<'a, Core>, Failure> {
        let Some(deadline) = core.timers.next_deadline() else {
            return Err(self.deadlock(&mut core, &Default::default()));
        };
        if let Some(limit) = core.config.time_limit {
            if deadline > limit.as_nanos() as u64 {
                return Err(Failure {
                    class: Class::Livelock,
                    message: format!(
                        "virtual time would pass the limit of {} (next timer at {}) and the main \
                         future is still not finished. Raise it with SIM_TIME_LIMIT=<duration> \
                         or SIM_TIME_LIMIT=none.",
                        report::fmt_ns(limit.as_nanos() as u64),
                        report::fmt_ns(deadline)
                    ),
                });
            }
        }
        debug_assert!(deadline >= core.now, "timers never fire in the past");
        if deadline > core.now {
            core.now = deadline;
            core.parks += 1;
            hooks::set_now(deadline);
            core.decide(Kind::Advance, deadline);
        }
        let now = core.now;
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
        loop {
            let Core {
                timers, timer_rng, ..
            } = &mut *core;
            let Some(fired) = timers.pop_due(now, timer_rng) else {
                break;
            };
            if core.is_paused(fired.node) {
                core.node_mut(fired.node).deferred.push(fired.waker);
                continue;
            }
            core.decide(Kind::Fire, fired.seq);
            if let (Some(WakeRef::Task { slot, id }), Some(_)) = (&fired.waker, &core.early) {
                let (slot, id) = (*slot, *id);
                core.owe_poll(slot, id & !ABORT_BIT);
            }
            match fired.waker {
                Some(WakeRef::Task { slot, id }) if wakers.is_empty() => {
                    core.take_request(slot, id)
                }
                Some(w) => wakers.push(w),
                None => {}
            }
        }
        drop(core);
        if !wakers.is_empty() {
            self.wake_in_order(&mut wakers);
        }
        self.fired.set(wakers);
        Ok(self.core.borrow_mut())
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
        Failure {
            class: Class::Deadlock,
            message,
        }
    }

    pub(super) fn poll_task(&self, slot: u32, id: u64) {
        let (mut fut, node, incarnation) = {
            let mut core = self.core.borrow_mut();
            let step = core.step + 1;
            let task = core.tasks[slot as usize]
                .as_mut()
                .expect("picked task exists");
            if task.aborted {
                let fut = task.future.take();
                let node = task.node;
                let task = core.remove_task(slot);
                drop(core);
                self.with_task(node, Some(id), || {
                    drop(fut);
                    drop(task);
                });
                return;
            }
            let fut = task.future.take().expect("task is not being polled");
            // Wakes from now on queue it again.
            task.queued = false;
            task.polled_at = step as u32;
            let seen = std::mem::take(&mut task.owed_poll);
            let ptr = fut.task().as_ptr();
            let node = task.node;
            let incarnation = task.incarnation;
            if seen {
                core.owed_poll -= 1;
            }
            core.step += 1;
            core.decide(Kind::Poll, id);
            core.polling = (ptr.cast(), slot, id);
            self.progress.polling(core.step, id, node.0);
            (fut, node, incarnation)
        };
        // `fut`, the executor's reference, keeps the task alive for the
        // whole poll; the waker is borrowed from it.
        let waker = fut.borrowed_waker();
        self.cur.set(Cur {
            task: Some(id),
            node,
        });
        self.sync_clock(node);
        let ready = fut.poll(&mut Context::from_waker(&waker)).is_ready();
        self.cur.set(Cur { task: None, node });
        let mut core = self.core.borrow_mut();
        core.polling = (std::ptr::null(), 0, 0);
        let killed = core.node(node).incarnation != incarnation;
        if ready || killed {
            let task = core.remove_task(slot);
            drop(core);
            self.with_task(node, Some(id), || {
                drop(fut);
                drop(task);
            });
        } else {
            core.tasks[slot as usize]
                .as_mut()
                .expect("task still present")
                .future = Some(fut);
            drop(core);
        }
        self.after_poll();
    }

    pub(super) fn main_panicked(&self, payload: Box<dyn std::any::Any + Send>) -> ! {
        // A panic that follows a refused call (an `unwrap` of its error) is
        // that call's failure, not an assertion of the test's.
        let forbidden = hooks::forbidden();
        if forbidden.any() {
            self.forbidden_attempt(forbidden);
            let failure = self.core.borrow_mut().failure.take();
            if let Some(mut f) = failure {
                f.message = format!(
                    "{}\n  (the test body then panicked: {})",
                    f.message,
                    report::payload_text(&*payload)
                );
                self.fail(f);
            }
        }
        let context = {
            let core = self.core.borrow();
            report::context(&core.snapshot(), "assertion (the test body panicked)")
        };
        let context = match report::real_tokio_hint(&report::payload_text(&*payload)) {
            Some(hint) => format!("{hint}\n{context}"),
            None => context,
        };
        if !report::quiet() {
            eprintln!("{context}");
        }
        std::panic::resume_unwind(report::augment_payload(payload, &context))
    }

    pub(super) fn fail(&self, f: Failure) -> ! {
        let text = {
            let core = self.core.borrow();
            report::render(&core.snapshot(), &f)
        };
        *self.last_failure.borrow_mut() = Some(f);
        panic!("{text}");
    }
}
