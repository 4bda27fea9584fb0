//! Barriers and POSIX semaphores inside a simulation (see pthread.rs). Both
//! keep glibc's own counters with glibc's meaning and atomic protocol; only
//! the waits are the simulation's.

use super::layout::{barrier as b, field, sem as s};
use super::{wait, wake, wake_all_sides, Deadline, Real};
use crate::simulation::libc::sys::set_errno;
use libc::{c_int, clockid_t, pthread_barrier_t, sem_t, timespec};
use std::sync::atomic::Ordering;

static REAL_BARRIER_WAIT: Real = Real::new(c"pthread_barrier_wait");
static REAL_SEM_WAIT: Real = Real::new(c"sem_wait");
static REAL_SEM_TRYWAIT: Real = Real::new(c"sem_trywait");
static REAL_SEM_TIMEDWAIT: Real = Real::new(c"sem_timedwait");
static REAL_SEM_CLOCKWAIT: Real = Real::new(c"sem_clockwait");
static REAL_SEM_POST: Real = Real::new(c"sem_post");

/// glibc's `BARRIER_IN_THRESHOLD`: arrivals after which a barrier starts
/// its counts again.
const THRESHOLD: u32 = u32::MAX / 2;

/// `pthread_barrier_wait` in the simulation. A thread's arrival is its
/// position in `in`; the thread that completes a round moves
/// `current_round` to its end and wakes the round; each leaving thread
/// counts itself in `out`, and the last one before the threshold starts the
/// counts again. The last to arrive is the round's serial thread.
///
/// # Safety
///
/// `bar` is an initialised barrier (the C contract).
unsafe fn barrier_wait(bar: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's contract.
    let (arrived, round, count, out) = unsafe {
        (
            field(bar, b::IN),
            field(bar, b::ROUND),
            field(bar, b::COUNT),
            field(bar, b::OUT),
        )
    };
    let n = count.load(Ordering::Relaxed);
    if n == 0 || n > THRESHOLD {
        return libc::EINVAL;
    }
    let max_in = THRESHOLD - THRESHOLD % n;
    loop {
        let i = arrived.fetch_add(1, Ordering::AcqRel) + 1;
        if i > max_in {
            // Past the threshold: wait for the counts to start again.
            let mut now = i;
            while now > max_in {
                let _ = wait(arrived, now, None);
                now = arrived.load(Ordering::Relaxed);
            }
            continue;
        }
        let mut cr = round.load(Ordering::Relaxed);
        while cr + n <= i {
            let end = i - i % n;
            match round.compare_exchange(cr, end, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => {
                    cr = end;
                    wake_all_sides(round, u32::MAX);
                    break;
                }
                Err(now) => cr = now,
            }
        }
        while i > cr {
            let _ = wait(round, cr, None);
            cr = round.load(Ordering::Acquire);
        }
        let o = out.fetch_add(1, Ordering::Release) + 1;
        if o == max_in {
            round.store(0, Ordering::Relaxed);
            out.store(0, Ordering::Relaxed);
            arrived.store(0, Ordering::Release);
            wake_all_sides(arrived, u32::MAX);
        }
        return if i % n == 0 {
            libc::PTHREAD_BARRIER_SERIAL_THREAD
        } else {
            0
        };
    }
}

/// `pthread_barrier_wait(3)`.
///
/// # Safety
///
/// The C contract of `pthread_barrier_wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_barrier_wait(bar: *mut pthread_barrier_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { barrier_wait(bar) };
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_BARRIER_WAIT as fn(*mut pthread_barrier_t) -> c_int)(bar) }
}

/// glibc's `SEM_VALUE_MAX`.
const SEM_VALUE_MAX: u32 = i32::MAX as u32;

/// Takes one from `sem`'s value if it is positive: whether it did.
///
/// # Safety
///
/// `sem` is an initialised semaphore (the C contract).
unsafe fn sem_take(sem: *mut sem_t) -> bool {
    // SAFETY: the caller's contract.
    let value = unsafe { field(sem, s::VALUE) };
    let mut v = value.load(Ordering::Relaxed);
    while v > 0 {
        match value.compare_exchange_weak(v, v - 1, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => v = now,
        }
    }
    false
}

/// `sem_wait` and the timed waits in the simulation: 0, or -1 with
/// `errno` (`ETIMEDOUT`). Waiters are the simulation's alone: they do not
/// count themselves in the semaphore.
///
/// # Safety
///
/// `sem` is an initialised semaphore (the C contract).
unsafe fn sem_wait_until(sem: *mut sem_t, deadline: Option<Deadline>) -> c_int {
    // SAFETY: the caller's contract.
    let value = unsafe { field(sem, s::VALUE) };
    loop {
        // SAFETY: the caller's contract.
        if unsafe { sem_take(sem) } {
            return 0;
        }
        if let Err(e) = wait(value, 0, deadline) {
            set_errno(e);
            return -1;
        }
    }
}

/// `sem_wait(3)`.
///
/// # Safety
///
/// The C contract of `sem_wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_wait(sem: *mut sem_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { sem_wait_until(sem, None) };
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_SEM_WAIT as fn(*mut sem_t) -> c_int)(sem) }
}

/// `sem_trywait(3)`.
///
/// # Safety
///
/// The C contract of `sem_trywait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_trywait(sem: *mut sem_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        if unsafe { sem_take(sem) } {
            return 0;
        }
        set_errno(libc::EAGAIN);
        return -1;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_SEM_TRYWAIT as fn(*mut sem_t) -> c_int)(sem) }
}

/// The timed waits: the time is checked first, as glibc does.
///
/// # Safety
///
/// `sem` is an initialised semaphore, `abstime` null or readable.
unsafe fn sem_clockwait_sim(sem: *mut sem_t, clock: clockid_t, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { Deadline::new(clock, abstime) } {
        // SAFETY: the caller's contract.
        Ok(d) => unsafe { sem_wait_until(sem, Some(d)) },
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// `sem_timedwait(3)`: `abstime` on `CLOCK_REALTIME`.
///
/// # Safety
///
/// The C contract of `sem_timedwait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_timedwait(sem: *mut sem_t, abstime: *const timespec) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { sem_clockwait_sim(sem, libc::CLOCK_REALTIME, abstime) };
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_SEM_TIMEDWAIT as fn(*mut sem_t, *const timespec) -> c_int)(sem, abstime) }
}

/// `sem_clockwait(3)` (glibc 2.30): `abstime` on `clock`.
///
/// # Safety
///
/// The C contract of `sem_clockwait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_clockwait(
    sem: *mut sem_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { sem_clockwait_sim(sem, clock, abstime) };
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe {
        real!(REAL_SEM_CLOCKWAIT as fn(*mut sem_t, clockid_t, *const timespec) -> c_int)(
            sem, clock, abstime,
        )
    }
}

/// `sem_post(3)`: wakes one of the simulation's waiters, or, if there is
/// none and glibc counts waiters of its own (threads outside the
/// simulation), one of those.
///
/// # Safety
///
/// The C contract of `sem_post`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_post(sem: *mut sem_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        let (value, outside) = unsafe { (field(sem, s::VALUE), field(sem, s::NWAITERS)) };
        let mut v = value.load(Ordering::Relaxed);
        loop {
            if v >= SEM_VALUE_MAX {
                set_errno(libc::EOVERFLOW);
                return -1;
            }
            match value.compare_exchange_weak(v, v + 1, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => v = now,
            }
        }
        if wake(value, 1) == 0 && outside.load(Ordering::Relaxed) > 0 {
            crate::simulation::thread::gate::wake_outside(value.as_ptr(), 1);
        }
        return 0;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_SEM_POST as fn(*mut sem_t) -> c_int)(sem) }
}
