//! Blocking and waking: futex waits and wakes on the run's wait queues,
//! sleeps and yields, for a simulated thread (which hands the baton back)
//! or the executor's thread in a task's code (which runs only threads
//! meanwhile: core/executor/blocked.rs).

use super::*;

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Woke {
    Woken,
    TimedOut,
}

/// Blocks the calling thread of the simulation (a simulated thread, or the
/// executor's thread in a task's code) until `waiter` is woken or `timeout`
/// passes. The waiter must be registered where a wake finds it.
///
/// `word` is the futex word and the value it was waited at: if nothing in
/// the simulation can wake the executor's thread, a thread outside it may
/// (a lazily initialised static that another seed's thread is
/// initialising): the wait then watches the word for real, for up to
/// [`OUTSIDE_PATIENCE`], before the run is declared deadlocked.
pub(super) fn block(
    waiter: &Rc<Waiter>,
    timeout: Option<Duration>,
    word: Option<(*const u32, u32)>,
) -> Result<Woke, Failure> {
    stop_if_dead();
    if let Some(ctl) = this_thread() {
        if ctl.blocked.get() == Blocked::Nothing {
            ctl.blocked.set(match word {
                Some((addr, _)) => Blocked::Futex(addr as usize),
                None => Blocked::Sleep,
            });
        }
        ctl.state.set(State::Waiting {
            timeout: timeout.map(|d| d.as_nanos().min(u64::MAX as u128) as u64),
            yielded: false,
        });
        ctl.hand_back();
        ctl.blocked.set(Blocked::Nothing);
        return Ok(if waiter.woken.get() {
            Woke::Woken
        } else {
            Woke::TimedOut
        });
    }
    let exec = executor::expect_current();
    let mut timer = timeout.map(|d| Box::pin(crate::simulation::time::os_sleep(d)));
    let mut fired = false;
    let mut patience = if crate::simulation::core::tape::replaying() {
        Duration::ZERO
    } else {
        OUTSIDE_PATIENCE
    };
    let mut others = super::statics::Others::new();
    let mut stuck = || {
        let Some((addr, expected)) = word else {
            return false;
        };
        // SAFETY: the futex word stays valid while its waiter waits (the
        // futex contract).
        let atomic = unsafe { &*addr.cast::<AtomicU32>() };
        if atomic.load(Ordering::SeqCst) != expected {
            waiter.woken.set(true);
            return true;
        }
        if patience.is_zero() {
            return false;
        }
        gate::wait_outside(atomic, expected, OUTSIDE_STEP);
        if !others.moved(addr as usize, OUTSIDE_STEP) {
            patience = patience.saturating_sub(OUTSIDE_STEP);
        }
        true
    };
    exec.block_executor(&mut stuck, &mut || {
        if waiter.woken.get() {
            return true;
        }
        if let Some(t) = timer.as_mut() {
            fired = t
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_ready();
        }
        fired
    })?;
    Ok(if waiter.woken.get() {
        Woke::Woken
    } else {
        Woke::TimedOut
    })
}

/// How long a run in which nothing can move watches the futex words its
/// threads wait on for a thread outside it (real time), before it is
/// declared deadlocked.
pub(super) const OUTSIDE_PATIENCE: Duration = Duration::from_secs(2);
pub(super) const OUTSIDE_STEP: Duration = Duration::from_millis(20);
/// How long the executor's thread, blocking in a task's code, first waits
/// for real for a word that a thread outside the run may release.
const OUTSIDE_FIRST: Duration = Duration::from_micros(300);

/// The waiter of the calling thread of the simulation.
pub(super) fn own_waiter() -> Rc<Waiter> {
    match this_thread() {
        Some(ctl) => ctl.waiter.clone(),
        None => Waiter::new(),
    }
}

/// A destructor of a dead node's task (core/executor/reap.rs) that would
/// wait stops here for good, as the process it belonged to had. Called
/// before the wait holds anything of the run.
fn stop_if_dead() {
    if reap::reaping() == Some(Reaping::Dead) {
        reap::abandon();
    }
}

/// `FUTEX_WAIT(_BITSET)` inside a simulation: if `*addr == expected`,
/// blocks until a wake whose bitset meets `bitset`, or `timeout`.
/// `Err(EAGAIN)` when the word differs, `Err(ETIMEDOUT)` on timeout;
/// `None` when the calling thread is not in a simulation's executor.
///
/// # Safety
///
/// `addr` is valid for reading a 32-bit word (the futex contract).
pub(crate) unsafe fn futex_wait(
    addr: *const u32,
    expected: u32,
    bitset: u32,
    timeout: Option<Duration>,
) -> Option<Result<(), i32>> {
    // SAFETY: the caller's contract; a futex word is read atomically.
    let word = unsafe { &*addr.cast::<AtomicU32>() };
    let mut now = word.load(Ordering::SeqCst);
    if now == expected && timeout != Some(Duration::ZERO) {
        with_current(|_| ())?;
        if super::statics::is_static(addr as usize) {
            // A lock in a static (std's output and environment locks,
            // tracing's registries, a `OnceLock`) is shared with every other
            // run in the process: one of their threads may hold it for a
            // moment. Waited out for real, the run's decisions are the same
            // whoever held it and for how long.
            if super::statics::wait_for_outside(word, expected) {
                // A wake the caller rechecks, as after any futex wait.
                return Some(Ok(()));
            }
        } else if this_thread().is_none() || std::thread::panicking() {
            // The executor's thread blocks in a task's code, or a thread
            // blocks while it panics (std's panic machinery takes locks
            // that a thread ended while holding one would keep forever).
            // The word may still be a lock that a thread outside the run
            // holds for a moment (one on the heap that a static points
            // to): wait for it for real, briefly, before the run decides
            // anything. Held by a thread of the run, it cannot change
            // meanwhile (that thread waits for the baton), so the run's
            // decisions are the same either way.
            gate::wait_outside(word, expected, OUTSIDE_FIRST);
            now = word.load(Ordering::SeqCst);
            if now != expected {
                return Some(Ok(()));
            }
        }
    }
    if now == expected && timeout != Some(Duration::ZERO) {
        stop_if_dead();
    }
    let waiter = own_waiter();
    let registered = with_threads(|t| {
        if now != expected {
            return false;
        }
        waiter.woken.set(false);
        t.queues
            .entry(addr as usize)
            .or_default()
            .push_back(Queued {
                bitset,
                expected,
                waiter: waiter.clone(),
            });
        true
    })?;
    if !registered {
        return Some(Err(libc::EAGAIN));
    }
    if timeout == Some(Duration::ZERO) {
        unqueue(addr as usize, &waiter);
        return Some(Err(libc::ETIMEDOUT));
    }
    match block(&waiter, timeout, Some((addr, expected))) {
        Ok(Woke::Woken) => Some(Ok(())),
        Ok(Woke::TimedOut) => {
            unqueue(addr as usize, &waiter);
            Some(Err(libc::ETIMEDOUT))
        }
        Err(f) => {
            unqueue(addr as usize, &waiter);
            drop(waiter);
            blocked_forever(f)
        }
    }
}

/// Takes `waiter` out of `addr`'s queue (its wait timed out).
fn unqueue(addr: usize, waiter: &Rc<Waiter>) {
    with_threads(|t| {
        if let Some(q) = t.queues.get_mut(&addr) {
            q.retain(|e| !Rc::ptr_eq(&e.waiter, waiter));
            if q.is_empty() {
                t.queues.remove(&addr);
            }
        }
    });
}

/// `FUTEX_WAKE(_BITSET)`: wakes up to `n` waiters on `addr` whose bitset
/// meets `bitset`, oldest first; returns how many. `None` outside a
/// simulation's executor. The caller also wakes the kernel's waiters when
/// fewer than `n` were woken here: the word may be shared with a thread
/// outside the simulation.
pub(crate) fn futex_wake(addr: usize, n: u32, bitset: u32) -> Option<u32> {
    let woken: Vec<Rc<Waiter>> = with_threads(|t| {
        let mut woken = Vec::new();
        if let Some(q) = t.queues.get_mut(&addr) {
            let mut i = 0;
            while i < q.len() && (woken.len() as u32) < n {
                if q[i].waiter.dead.get() {
                    q.remove(i);
                } else if q[i].bitset & bitset != 0 {
                    let e = q.remove(i).expect("in range");
                    e.waiter.woken.set(true);
                    woken.push(e.waiter);
                } else {
                    i += 1;
                }
            }
            if q.is_empty() {
                t.queues.remove(&addr);
            }
        }
        woken
    })?;
    let count = woken.len() as u32;
    if count == 0 && ORPHAN_WORDS.with(|w| w.contains(&addr)) {
        with_threads(|t| t.woke_orphan = Some(addr));
    }
    for w in woken {
        let waker = w.waker.borrow_mut().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
    Some(count)
}

/// `nanosleep` and friends inside a simulation: the calling thread sleeps
/// `d` of virtual time (a simulated thread alone; the executor's thread
/// with every task). `false` outside a simulation's executor.
pub(crate) fn sleep(d: Duration) -> bool {
    if with_current(|_| ()).is_none() {
        // Inside `block_in_place`: the executor's thread is still the one
        // that sleeps.
        return match executor::left_executor() {
            Some(exec) => executor::reenter(exec, || sleep(d)),
            None => false,
        };
    }
    let waiter = own_waiter();
    waiter.woken.set(false);
    if let Err(f) = block(&waiter, Some(d), None) {
        blocked_forever(f);
    }
    true
}

/// `sched_yield` inside a simulation: a simulated thread lets the seed pick
/// again; the executor's thread lets one simulated thread run (or the clock
/// move). `false` outside a simulation's executor.
pub(crate) fn yield_now() -> bool {
    if let Some(ctl) = this_thread() {
        ctl.state.set(State::Waiting {
            timeout: None,
            yielded: true,
        });
        ctl.hand_back();
        return true;
    }
    if current().is_none() {
        return false;
    }
    stop_if_dead();
    let Some(exec) = current() else {
        return false;
    };
    let mut once = false;
    let out = exec.block_executor(&mut || false, &mut || std::mem::replace(&mut once, true));
    if let Err(f) = out {
        blocked_forever(f);
    }
    true
}
