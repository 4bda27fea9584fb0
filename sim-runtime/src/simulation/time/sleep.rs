use super::Instant;
use crate::simulation::core::executor::{self, expect_current, WakeRef};
use crate::simulation::core::timer::TimerKey;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Whom a timer wakes: the waker of a poll, or the one a reset timer had.
enum Waiter<'a> {
    New(&'a Waker),
    Kept(WakeRef),
}

/// Waits until `duration` has elapsed on the node's virtual clock.
#[track_caller]
#[inline(always)]
pub fn sleep(duration: Duration) -> Sleep {
    Sleep::after(duration, false)
}

/// A sleep of the simulator's own (an OS thread's `sleep`, a timed futex
/// wait): virtual time whether or not the runtime enabled Tokio's timers,
/// as a thread's sleep on Linux does not need Tokio's.
pub(crate) fn os_sleep(duration: Duration) -> Sleep {
    let exec = expect_current();
    Sleep {
        deadline: Deadline::At(Sleep::deadline_slow(duration)),
        exact: false,
        os: true,
        key: None,
        exec_id: exec.id,
        elapsed: false,
        _pin: PhantomPinned,
    }
}

/// Waits until `deadline` is reached on the node's virtual clock.
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::new(deadline, false)
}

/// Future returned by [`sleep`] and [`sleep_until`].
///
/// Registered with the timer queue on first poll; dropping it cancels the
/// timer (no stale wake-up, and the clock is not pulled forward).
#[derive(Debug)]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    deadline: Deadline,
    /// `advance()` sleeps to the exact nanosecond; `sleep` rounds up to ms.
    exact: bool,
    /// An OS thread's sleep or timed wait (`os_sleep`), which is not
    /// Tokio's timer: it still sleeps while a runtime shuts down.
    os: bool,
    key: Option<TimerKey>,
    exec_id: u64,
    elapsed: bool,
    _pin: PhantomPinned,
}

/// When a sleep completes.
#[derive(Debug, Clone, Copy)]
enum Deadline {
    /// `ns` past the process's standard base instant, as `sleep` computes
    /// it (one number: registration needs the nanoseconds, and the
    /// `Instant` is made only if asked for).
    Since(u64),
    At(Instant),
}

impl Deadline {
    fn instant(self) -> Instant {
        match self {
            Deadline::Since(ns) => {
                let base =
                    executor::standard_base().expect("set by the executor that made the sleep");
                Instant::from_std(base + Duration::from_nanos(ns))
            }
            Deadline::At(i) => i,
        }
    }
}

#[track_caller]
fn check_enabled(exec: &crate::simulation::core::executor::Exec) {
    if !exec.compat.timers_enabled() {
        panic!(
            "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the \
             runtime builder to enable timers."
        );
    }
}

impl Sleep {
    #[track_caller]
    fn new(deadline: Instant, exact: bool) -> Sleep {
        Sleep {
            deadline: Deadline::At(deadline),
            exact,
            os: false,
            key: None,
            exec_id: Sleep::exec_id_or_panic(),
            elapsed: false,
            _pin: PhantomPinned,
        }
    }

    pub(crate) fn exact(duration: Duration) -> Sleep {
        Sleep::after(duration, true)
    }

    /// `Instant::now() + duration` (or the far future), with one executor
    /// lookup and no `Instant` arithmetic on the common path.
    // Inlined, and nothing on the common path returns more than a word: a
    // `Sleep` returned from a call (or an `Option` of one from a closure)
    // is written by the callee and read back by the caller in other widths,
    // a store-forwarding stall that was a third of the `sleep` bench.
    #[track_caller]
    #[inline(always)]
    fn after(duration: Duration, exact: bool) -> Sleep {
        let exec = executor::current_ptr();
        let mut since = None;
        let mut exec_id = 0;
        if !exec.is_null() {
            // SAFETY: non-null, the executor entered on this thread, which
            // nothing below leaves or drops (no user code runs).
            let exec = unsafe { &*exec };
            if exec.compat.timers_enabled() && exec.standard_base {
                since = u64::try_from(duration.as_nanos())
                    .ok()
                    .and_then(|d| Instant::local_now_ns(exec).checked_add(d));
                exec_id = exec.id;
            }
        }
        // One construction, from scalars (the slow path's come back in
        // registers): the optimiser then writes the fields where the
        // caller keeps the `Sleep`, not into a temporary it copies from.
        let deadline = match since {
            Some(ns) => Deadline::Since(ns),
            None => {
                exec_id = Sleep::exec_id_or_panic();
                Deadline::At(Sleep::deadline_slow(duration))
            }
        };
        Sleep {
            deadline,
            exact,
            os: false,
            key: None,
            exec_id,
            elapsed: false,
            _pin: PhantomPinned,
        }
    }

    /// The current executor's id; Tokio's panics without one, or with its
    /// timers disabled.
    #[track_caller]
    #[cold]
    #[inline(never)]
    fn exec_id_or_panic() -> u64 {
        let exec = expect_current();
        check_enabled(&exec);
        exec.id
    }

    /// `Instant::now() + duration`, or the far future.
    #[cold]
    #[inline(never)]
    fn deadline_slow(duration: Duration) -> Instant {
        Instant::now()
            .checked_add(duration)
            .unwrap_or_else(Instant::far_future)
    }

    /// The instant at which the future completes.
    pub fn deadline(&self) -> Instant {
        self.deadline.instant()
    }

    /// Whether the deadline has elapsed.
    pub fn is_elapsed(&self) -> bool {
        // As in Tokio: only a sleep that was polled (or whose timer fired)
        // has elapsed; a zero-length sleep is not elapsed before its poll.
        if self.elapsed {
            return true;
        }
        match (self.key, executor::current()) {
            (Some(k), Some(exec)) if exec.id == self.exec_id => exec.core().timers().is_fired(k),
            _ => false,
        }
    }

    /// Resets the deadline. A task waiting on this sleep is woken at the new
    /// deadline without being polled again first, as in Tokio.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        // SAFETY: no field is structurally pinned; `PhantomPinned` only keeps
        // the type `!Unpin` like Tokio's.
        let this = unsafe { self.get_unchecked_mut() };
        this.deadline = Deadline::At(deadline);
        this.elapsed = false;
        let waker = this.deregister();
        if let Some(w) = waker {
            let _ = this.register(Waiter::Kept(w));
        }
    }

    fn deregister(&mut self) -> Option<WakeRef> {
        let key = self.key.take()?;
        executor::with_current(|exec| {
            if exec.id != self.exec_id {
                return None;
            }
            exec.core_mut().timers_mut().remove(key)
        })
        .flatten()
    }

    /// Registers the timer. Returns `true` if the deadline is already due.
    fn register(&mut self, waker: Waiter<'_>) -> bool {
        executor::with_expected(|exec| self.register_in(exec, waker))
    }

    fn register_in(&mut self, exec: &executor::Exec, waker: Waiter<'_>) -> bool {
        // As Tokio's timer after `shutdown_timeout`/`shutdown_background`;
        // but the destructors a shutdown runs still have their timers (as
        // Tokio's: its time driver stops after the tasks are dropped), so a
        // `std::thread::sleep` in one sleeps in virtual time.
        // An OS thread's sleep is not Tokio's timer: a `spawn_blocking`
        // closure the shutdown waits for sleeps as before.
        if exec.compat.shut_down()
            && !self.os
            && crate::simulation::core::executor::reap::reaping().is_none()
        {
            panic!(
                "{}",
                crate::simulation::runtime::RUNTIME_SHUTTING_DOWN_ERROR
            );
        }
        let since_base = match self.deadline {
            // The standard base is this executor's: `after` checked.
            Deadline::Since(ns) => i128::from(ns),
            Deadline::At(i) => i.since_base_ns(exec),
        };
        let node = exec.current_node();
        let mut core = exec.core_mut();
        let global = Instant::global_ns(core.node(node), since_base);
        let mut due = if self.exact {
            global
        } else {
            global.div_ceil(MS).saturating_mul(MS)
        };
        if due <= core.now() {
            return true;
        }
        // A fault point of the runtime's own: a timer that fires late (by
        // 1–10 ms; never early), as on a loaded machine. Not for `advance`
        // and the harness's exact sleeps, which move the clock to the
        // nanosecond asked for.
        if !self.exact {
            if let Some(draw) = core.fault_point("sim.time.late_timer", 1, 4) {
                let late_ms = 1 + crate::simulation::core::seed::splitmix(draw) % 10;
                due = due.saturating_add(late_ms * MS);
            }
        }
        let waker = match waker {
            Waiter::New(w) => core.wake_ref(w),
            Waiter::Kept(w) => w,
        };
        self.key = Some(core.timers_mut().insert(due, waker, node));
        false
    }

    fn poll_elapsed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.elapsed {
            return Poll::Ready(());
        }
        match self.key {
            Some(key) => {
                let fired = executor::with_expected(|exec| {
                    let mut core = exec.core_mut();
                    let fired = core.timers_mut().take_fired(key);
                    if !fired {
                        let w = core.wake_ref(cx.waker());
                        core.timers_mut().set_waker(key, w);
                    }
                    fired
                });
                if !fired {
                    return Poll::Pending;
                }
                self.key = None;
                self.elapsed = true;
                Poll::Ready(())
            }
            None => {
                if self.register(Waiter::New(cx.waker())) {
                    self.elapsed = true;
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl Future for Sleep {
    type Output = ();

    // Always inlined into the future that awaits it: the bench's sleep
    // loop ran 4% faster (no call, and each site's copy specialised: a few
    // hundred bytes of code per site, not the 2.6 KB of the shared copy).
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // As Tokio's: a poll spends a unit of the task's budget (given back
        // if the sleep is still pending).
        let coop = std::task::ready!(crate::task::coop::poll_proceed(cx));
        // SAFETY: see `reset`.
        let r = unsafe { self.get_unchecked_mut() }.poll_elapsed(cx);
        if r.is_ready() {
            crate::simulation::core::executor::progress(coop);
        }
        r
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        let w = self.deregister();
        drop(w);
    }
}
