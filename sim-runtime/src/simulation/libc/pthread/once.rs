//! `pthread_once` and spin locks inside a simulation (see pthread.rs).
//!
//! glibc's `pthread_once` waits for an initialisation in progress with a
//! futex call of its own, and its spin locks spin: a simulated thread that
//! met either while another simulated thread was inside would hold the
//! baton in the kernel, or in a loop, and the run would hang. C++'s
//! `std::call_once` and every `CRYPTO_once` of the TLS libraries come here.
//! Both keep glibc's own word with glibc's meaning, so an object is usable
//! by glibc itself before, between and after simulations.

use super::{wait, wake_all_sides, Real};
use libc::{c_int, pthread_once_t, pthread_spinlock_t};
use std::sync::atomic::{AtomicU32, Ordering};

static REAL_ONCE: Real = Real::new(c"pthread_once");
pub(super) static REAL_SPIN_LOCK: Real = Real::new(c"pthread_spin_lock");
pub(super) static REAL_SPIN_UNLOCK: Real = Real::new(c"pthread_spin_unlock");

/// glibc's `__PTHREAD_ONCE_INPROGRESS` and `__PTHREAD_ONCE_DONE`: the low
/// bits of a once word; the bits above count forks.
const IN_PROGRESS: u32 = 1;
const DONE: u32 = 2;

/// A spin lock's word after glibc's `pthread_spin_init` and `_unlock` on
/// x86_64 (layout.rs checks it).
pub(super) const FREE: u32 = 1;

/// The `int` at `p` as the atomic word glibc treats it as.
///
/// # Safety
///
/// `p` points to a live, 4-aligned `int` that outlives `'a`.
unsafe fn word<'a>(p: *const c_int) -> &'a AtomicU32 {
    // SAFETY: the caller's contract; glibc accesses the word atomically.
    unsafe { &*p.cast::<AtomicU32>() }
}

/// `pthread_once` in the simulation: the first caller runs `init` and
/// marks the word done; a caller that finds an initialisation in progress
/// waits for it as a futex wait of the simulation (woken when it ends).
/// A word in progress from before a fork (another fork count) is taken
/// over, as glibc does; the simulation never forks, so its own mark is the
/// plain `IN_PROGRESS`.
///
/// # Safety
///
/// `once` is a live once word, `init` callable (the C contract).
unsafe fn once(once: *mut pthread_once_t, init: extern "C" fn()) -> c_int {
    // SAFETY: the caller's contract.
    let w = unsafe { word(once) };
    loop {
        let seen = w.load(Ordering::Acquire);
        if seen & DONE != 0 {
            return 0;
        }
        if seen == IN_PROGRESS {
            // Another thread is inside `init`: wait until it marks the word.
            let _ = wait(w, seen, None);
            continue;
        }
        if w.compare_exchange(seen, IN_PROGRESS, Ordering::Acquire, Ordering::Acquire)
            .is_err()
        {
            continue;
        }
        init();
        w.store(DONE, Ordering::Release);
        wake_all_sides(w, u32::MAX);
        return 0;
    }
}

/// `pthread_once(3)`.
///
/// # Safety
///
/// The C contract of `pthread_once`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_once(o: *mut pthread_once_t, init: extern "C" fn()) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { word(o) }.load(Ordering::Acquire) & DONE != 0 {
        // Done already: what glibc's fast path answers, in or out.
        return 0;
    }
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { once(o, init) };
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_ONCE as fn(*mut pthread_once_t, extern "C" fn()) -> c_int)(o, init) }
}

/// `pthread_spin_lock(3)`: in the simulation a held lock is a futex wait
/// on its word, woken by the simulated unlock; a holder outside the run (a
/// `static` lock another seed's thread holds) is waited out for real
/// first, as for every process-wide word. The word keeps x86_64 glibc's
/// meaning (layout.rs): above 0 free (1 after an unlock), 0 held, below 0
/// held while glibc's own lockers spin on it. Taking it is glibc's step
/// from a free value to 0.
///
/// # Safety
///
/// The C contract of `pthread_spin_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_spin_lock(lock: *mut pthread_spinlock_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        let w = unsafe { word(lock) };
        loop {
            let seen = w.load(Ordering::Relaxed);
            if (seen as i32) > 0 {
                if w.compare_exchange(seen, 0, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return 0;
                }
                continue;
            }
            let _ = wait(w, seen, None);
        }
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_SPIN_LOCK as fn(*mut pthread_spinlock_t) -> c_int)(lock) }
}

/// `pthread_spin_unlock(3)`: releases the lock and, in a simulation, wakes
/// one waiter: the simulation's, or one waiting for real from another run.
///
/// # Safety
///
/// The C contract of `pthread_spin_unlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_spin_unlock(lock: *mut pthread_spinlock_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        let w = unsafe { word(lock) };
        w.store(FREE, Ordering::Release);
        wake_all_sides(w, 1);
        return 0;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_SPIN_UNLOCK as fn(*mut pthread_spinlock_t) -> c_int)(lock) }
}
