//! Driving the executor: entering it on this thread, `block_on` and
//! `pump`, and the guards that undo what driving sets up.

use super::*;

impl Exec {
    /// Makes this executor the current one on this thread until the guard
    /// drops.
    pub(crate) fn enter(self: &Rc<Self>) -> Entered {
        let prev = set_current(Some(self.clone()));
        let prev_wake = WAKE_BUF.with(|b| std::mem::replace(&mut b.borrow_mut().exec_id, self.id));
        Entered {
            exec: self.clone(),
            prev,
            prev_wake,
            prev_ended: super::ended::hide_ended(),
        }
    }

    /// Enters the executor to drive it (`block_on`, `pump`): its context is
    /// current, the interposers answer from the seed, the watchdog watches,
    /// and a nested `block_on` is refused. Everything is undone when the
    /// guard drops.
    #[track_caller]
    fn begin_driving(self: &Rc<Self>) -> Driving<'_> {
        if self.in_block_on.get() || current().is_some_and(|c| c.in_block_on.get()) {
            // Tokio's words, which `#[should_panic(expected = ..)]` compares.
            panic!(
                "Cannot start a runtime from within a runtime. This happens because a function \
                 (like `block_on`) attempted to block the current thread while the thread is \
                 being used to drive asynchronous tasks. If you are in an async function, use \
                 `.await` on the future instead of blocking on it."
            );
        }
        let entered = self.enter();
        let active = self.activate();
        self.in_block_on.set(true);
        self.progress.set_running(true);
        Driving {
            _reset: ResetOnDrop(&self.in_block_on),
            _running: Running(&self.progress),
            _active: active,
            _entered: entered,
        }
    }

    /// Turns interception on for this thread, as a `block_on` does, until
    /// the guard drops (a runtime's shutdown runs its destructors so).
    pub(crate) fn activate(&self) -> Active {
        let n = {
            let mut core = self.core.borrow_mut();
            core.block_ons += 1;
            core.block_ons
        };
        Active::new(self, n)
    }

    /// Runs every runnable task, and the tasks they wake, until none is
    /// runnable, without moving the clock (timers already due at the
    /// current instant fire; later ones wait). Returns how many steps
    /// (polls) ran. Used outside any `block_on`, by the harness's
    /// imperative world (`sim::World::pump`).
    pub(crate) fn pump(self: &Rc<Self>) -> u64 {
        let _driving = self.begin_driving();
        let start = self.core.borrow().step;
        context::drive(
            |stray| {
                self.drain_wakes(true);
                match self.next(WhenIdle::Stop) {
                    Next::Idle => return Step::Done(()),
                    Next::Flush => return Step::Flush,
                    // No main future exists between `block_on`s: a stale wake
                    // of the last one has nothing to poll.
                    Next::Main => self.core.borrow_mut().main.queued = false,
                    Next::Blocking(slot, id) => return Step::Outside(slot, id),
                    Next::Task(slot, id) => self.poll_task_inside(slot, id, stray),
                    Next::Fail(f) => self.fail(f),
                }
                Step::More
            },
            |slot, id| self.poll_task(slot, id),
        );
        let steps = self.core.borrow().step - start;
        steps
    }

    #[track_caller]
    pub(crate) fn block_on<F: Future>(self: &Rc<Self>, fut: F) -> F::Output {
        let _driving = self.begin_driving();
        let mut fut = std::pin::pin!(fut);
        let main_waker = self.core.borrow().main.task.task().waker();
        self.core.borrow_mut().main.queued = false;
        main_waker.wake_by_ref();
        context::drive(
            |stray| {
                self.drain_wakes(true);
                match self.next(WhenIdle::Advance) {
                    Next::Main => {
                        if let Some(v) = self.poll_main(fut.as_mut(), &main_waker, stray) {
                            self.core.borrow_mut().worker_parks();
                            return Step::Done(v);
                        }
                    }
                    Next::Blocking(slot, id) => return Step::Outside(slot, id),
                    Next::Task(slot, id) => self.poll_task_inside(slot, id, stray),
                    Next::Fail(f) if f.class == Class::Deadlock => {
                        // Who holds what each task waits for, found by
                        // dropping each in a forked copy (holders.rs); the
                        // main future is dropped in place there, and that
                        // copy never returns to this frame.
                        let mut drop_main = || {
                            // SAFETY: runs only in the forked child, which
                            // exits without returning here: the pinned
                            // future is dropped in place once and its memory
                            // never used again.
                            unsafe { std::ptr::drop_in_place(fut.as_mut().get_unchecked_mut()) }
                        };
                        let holders = self.find_holders(Some(&mut drop_main));
                        let f = self.deadlock(&mut self.core.borrow_mut(), &holders);
                        self.fail(f)
                    }
                    Next::Fail(f) => self.fail(f),
                    Next::Idle => unreachable!("block_on advances the clock when idle"),
                    Next::Flush => return Step::Flush,
                }
                Step::More
            },
            |slot, id| self.poll_task(slot, id),
        )
    }

    /// Polls `block_on`'s future once, as the main node; its output once it
    /// is ready (then the run is over). Kept out of the step closure, which
    /// runs at every step and mostly polls tasks.
    #[inline(never)]
    fn poll_main<F: Future>(
        &self,
        fut: std::pin::Pin<&mut F>,
        main_waker: &Waker,
        stray: &context::Stray,
    ) -> Option<F::Output> {
        self.cur.set(Cur {
            task: None,
            node: NodeId::MAIN,
        });
        self.sync_clock(NodeId::MAIN);
        {
            let mut core = self.core.borrow_mut();
            core.step += 1;
            core.main.polled_at = core.step as u32;
            core.decide(Kind::Poll, 0);
            self.progress.polling(core.step, 0, 0);
            if crate::simulation::core::tape::on() {
                crate::simulation::core::tape::mark(core.step, core.clock.now);
            }
        }
        let mut cx = Context::from_waker(main_waker);
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx)));
        if polled.is_ok() {
            self.check_stray(stray);
        }
        match polled {
            Ok(Poll::Ready(v)) => {
                // A forbidden call in the last poll fails the run too: the
                // body returning does not make what it did simulated.
                self.after_poll();
                let failure = self.core.borrow_mut().failure.take();
                if let Some(f) = failure {
                    self.fail(f);
                }
                self.drain_wakes(true);
                self.core.borrow_mut().trace.finish();
                return Some(v);
            }
            Ok(Poll::Pending) => self.after_poll(),
            Err(payload) => self.main_panicked(payload),
        }
        self.after_real_poll();
        None
    }
}

/// The guards of a `block_on` or `pump`, dropped in this order.
struct Driving<'a> {
    _reset: ResetOnDrop<'a>,
    _running: Running<'a>,
    _active: Active,
    _entered: Entered,
}

struct Running<'a>(&'a super::super::watchdog::Progress);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.set_running(false);
    }
}

struct ResetOnDrop<'a>(&'a Cell<bool>);

impl Drop for ResetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Interception is on while a `block_on` runs on this thread.
pub(crate) struct Active {
    was_active: bool,
}

impl Active {
    fn new(exec: &Exec, n: u64) -> Active {
        let was_active = hooks::active();
        if !was_active {
            let seed = exec.core.borrow().config.seed;
            hooks::activate(
                seed::decide(seed, &format!("std.random.{n}")),
                exec.wall_base_ns,
            );
        }
        hooks::set_now(exec.now_ns());
        exec.refresh_clock();
        Active { was_active }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        if !self.was_active {
            hooks::deactivate();
        }
    }
}

pub(crate) struct Entered {
    exec: Rc<Exec>,
    prev: Option<Rc<Exec>>,
    prev_wake: u64,
    /// The ended runtime entered on this thread before, hidden meanwhile
    /// (ended.rs).
    prev_ended: Option<super::Remote>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        // Wakes buffered for this executor go to its run queue before the
        // buffer is handed back.
        let leftover = WAKE_BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.exec_id = self.prev_wake;
            std::mem::take(&mut b.buf)
        });
        if !leftover.is_empty() {
            if let Ok(mut core) = self.exec.core.try_borrow_mut() {
                core.take_requests(leftover);
            }
        }
        let prev = self.prev.take();
        drop(set_current(prev));
        super::ended::restore_ended(self.prev_ended.take());
    }
}
