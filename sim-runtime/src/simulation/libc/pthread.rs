//! The pthread synchronisation calls of C and C++ code inside a simulation:
//! mutexes, condition variables, reader--writer locks, barriers and
//! semaphores. glibc implements them with futex system calls of its own,
//! which no interposer sees (std's locks reach the simulation through
//! `syscall(SYS_futex)`, libc/thread.rs): a simulated thread that blocked in
//! one would wait in the kernel while it holds the baton, and the whole
//! simulation would hang. Here each blocking step is a futex wait of the
//! simulation (`thread::futex_wait`: a wait in virtual time, woken by
//! `thread::futex_wake`, scheduled by the seed), and timed waits time out on
//! the node's virtual clocks.
//!
//! | caller | entry points |
//! |---|---|
//! | C `pthread_mutex_*`, C++ `std::mutex`, `std::recursive_mutex`, `std::timed_mutex` | `pthread_mutex_lock`, `_trylock`, `_timedlock`, `_clocklock`, `_unlock` |
//! | C `pthread_cond_*`, C++ `std::condition_variable` | `pthread_cond_wait`, `_timedwait`, `_clockwait`, `_signal`, `_broadcast` |
//! | C `pthread_rwlock_*`, C++ `std::shared_mutex` | `pthread_rwlock_rdlock`, `_wrlock`, `_tryrdlock`, `_trywrlock`, `_timedrdlock`, `_timedwrlock`, `_clockrdlock`, `_clockwrlock`, `_unlock` |
//! | `pthread_barrier_wait` | (pthread/sync.rs) |
//! | POSIX semaphores | `sem_wait`, `sem_trywait`, `sem_timedwait`, `sem_clockwait`, `sem_post` (pthread/sync.rs) |
//! | `pthread_once`, C++ `std::call_once`; spin locks | `pthread_once`, `pthread_spin_lock`, `_unlock` (pthread/once.rs) |
//!
//! Initialisation, attributes and destruction stay glibc's: they block
//! nothing.
//!
//! **Where the state lives.** In the object's own memory, in glibc's own
//! fields with glibc's own meaning (pthread/layout.rs: the layout, and the
//! check of it), so one object can be used by simulated and real code in
//! turn: a `PTHREAD_MUTEX_INITIALIZER` static of a C library used in one
//! simulation, then outside any, then in the next; a mutex locked inside a
//! simulation and unlocked after it by the same OS thread (its `__owner` is
//! the kernel thread id, as glibc writes it). Only waiting is the
//! simulation's: a waiter is an entry in the run's futex queues (thread/),
//! never a count in the object, so a simulated waiter killed with its node
//! leaves nothing behind. Per kind:
//! - mutexes (normal, adaptive, recursive, error-checking) follow glibc's
//!   own protocol on `__lock` (0, 1, 2 with atomic exchanges), `__owner`,
//!   `__count`, `__nusers`, so mutual exclusion holds even against a
//!   thread outside the simulation using the same mutex at the same time;
//!   an unlock that finds waiters but wakes none of the simulation's also
//!   wakes the kernel's. Robust, priority-inheritance and priority-protection
//!   mutexes are locked by glibc's own `pthread_mutex_trylock`, retried
//!   every [`POLL`] of virtual time (the kernel's bookkeeping of those kinds
//!   stays glibc's); a destroyed mutex's calls are glibc's (`EINVAL`).
//! - condition variables change nothing in the object: waiters wait on the
//!   simulation's queue at the object's address, and a signal that finds no
//!   simulated waiter is passed to glibc for its waiters outside (when there
//!   are none glibc returns at once). The clock is read from the object
//!   (`pthread_condattr_setclock`).
//! - reader--writer locks, barriers and semaphores are, whenever no call of
//!   the simulation is in progress, in states glibc's own code produces (a
//!   lock idle, held by readers, or held by a writer; a barrier between
//!   rounds; a semaphore's value), so glibc takes over from any of them.
//!   Barriers and semaphores follow glibc's atomic protocol; a
//!   reader--writer lock assumes no thread outside the simulation uses it
//!   at the same time.
//!
//! **Not supported.** A thread outside this simulation (another seed's, or
//! a real one) that holds an object a simulated thread waits for, and
//! releases it: the simulated thread is not woken by glibc's kernel wake
//! (the executor's own thread watches the word for a while, as for std's
//! locks; thread/). Statics are per process, not per node: a mutex held by
//! a thread of a crashed node stays held after the restart, as it would in
//! a process that kept running. Elided (TSX) locks and process-shared
//! objects mapped at two addresses. Thread cancellation.

mod layout;
mod once;
mod rwlock;
mod sync;

use super::refused::simulated;
use super::sys::Real;
use crate::simulation::core::executor::with_current;
use crate::simulation::core::hooks;
use crate::simulation::thread;
use layout::{cond as c, field, mutex as m};
use libc::{c_int, clockid_t, pthread_cond_t, pthread_mutex_t, timespec};
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static REAL_MUTEX_LOCK: Real = Real::new(c"pthread_mutex_lock");
static REAL_MUTEX_TRYLOCK: Real = Real::new(c"pthread_mutex_trylock");
static REAL_MUTEX_TIMEDLOCK: Real = Real::new(c"pthread_mutex_timedlock");
static REAL_MUTEX_CLOCKLOCK: Real = Real::new(c"pthread_mutex_clocklock");
static REAL_MUTEX_UNLOCK: Real = Real::new(c"pthread_mutex_unlock");
static REAL_COND_WAIT: Real = Real::new(c"pthread_cond_wait");
static REAL_COND_TIMEDWAIT: Real = Real::new(c"pthread_cond_timedwait");
static REAL_COND_CLOCKWAIT: Real = Real::new(c"pthread_cond_clockwait");
static REAL_COND_SIGNAL: Real = Real::new(c"pthread_cond_signal");
static REAL_COND_BROADCAST: Real = Real::new(c"pthread_cond_broadcast");
static REAL_RWLOCK_RDLOCK: Real = Real::new(c"pthread_rwlock_rdlock");
static REAL_RWLOCK_WRLOCK: Real = Real::new(c"pthread_rwlock_wrlock");
static REAL_RWLOCK_UNLOCK: Real = Real::new(c"pthread_rwlock_unlock");

/// How often a robust, priority-inheritance or priority-protection mutex is
/// tried again (virtual time).
const POLL: Duration = Duration::from_millis(1);

/// Whether the call is simulated code's in a simulation's executor: then
/// it is simulated here; otherwise glibc's (the calling thread is not in a
/// simulation, or no executor runs there: an interception test's thread).
fn in_sim() -> bool {
    if simulated() && with_current(|_| ()).is_some() {
        layout::check();
        true
    } else {
        false
    }
}

thread_local! {
    /// The calling OS thread's kernel id (0 until first asked).
    static TID: Cell<i32> = const { Cell::new(0) };
}

/// The calling OS thread's kernel thread id: what glibc writes as a lock's
/// owner.
fn tid() -> i32 {
    // SAFETY: `gettid` has no preconditions.
    let ask = || unsafe { libc::gettid() };
    TID.try_with(|t| {
        if t.get() == 0 {
            t.set(ask());
        }
        t.get()
    })
    .unwrap_or_else(|_| ask())
}

/// An absolute timeout on a clock.
#[derive(Clone, Copy)]
struct Deadline {
    clock: clockid_t,
    ns: u64,
    /// The nanosecond field was in range (see [`Deadline::lenient`]).
    valid: bool,
}

impl Deadline {
    /// `abstime` on `clock`; `EINVAL` for a clock glibc refuses, a null time
    /// or a nanosecond field out of range.
    ///
    /// # Safety
    ///
    /// `abstime` is null or points to a readable `timespec`.
    unsafe fn new(clock: clockid_t, abstime: *const timespec) -> Result<Deadline, c_int> {
        // SAFETY: the caller's contract.
        let d = unsafe { Deadline::lenient(clock, abstime) }?;
        if d.valid {
            Ok(d)
        } else {
            Err(libc::EINVAL)
        }
    }

    /// [`Deadline::new`], except that a nanosecond field out of range is
    /// an error only once the call has to wait ([`wait`] answers
    /// `EINVAL`): glibc's mutexes check it that late.
    ///
    /// # Safety
    ///
    /// As for [`Deadline::new`].
    unsafe fn lenient(clock: clockid_t, abstime: *const timespec) -> Result<Deadline, c_int> {
        if clock != libc::CLOCK_REALTIME && clock != libc::CLOCK_MONOTONIC || abstime.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: the caller's contract, and not null.
        let ts = unsafe { *abstime };
        let valid = (0..1_000_000_000).contains(&ts.tv_nsec);
        let ns = if ts.tv_sec < 0 || !valid {
            0
        } else {
            (ts.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64)
        };
        Ok(Deadline { clock, ns, valid })
    }

    /// What is left of it on the calling node's virtual clock.
    fn remaining(&self) -> Duration {
        let now = if self.clock == libc::CLOCK_REALTIME {
            hooks::wall_ns()
        } else {
            hooks::mono_ns()
        };
        Duration::from_nanos(self.ns.saturating_sub(now))
    }
}

/// Blocks the calling thread of the simulation while `word` holds
/// `expected`, until a wake of the simulation or `deadline`. `Ok` when woken
/// (or the word had changed; callers look again), `Err(ETIMEDOUT)`, or
/// `Err(EINVAL)` for a deadline whose time is not valid.
fn wait(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> Result<(), c_int> {
    if deadline.is_some_and(|d| !d.valid) {
        return Err(libc::EINVAL);
    }
    let timeout = deadline.map(|d| d.remaining());
    // SAFETY: `word` is a live futex word, borrowed for the call.
    match unsafe { thread::futex_wait(word.as_ptr(), expected, u32::MAX, timeout) } {
        Some(Err(libc::ETIMEDOUT)) => Err(libc::ETIMEDOUT),
        Some(_) => Ok(()),
        None => {
            // The executor's core is borrowed (no user code runs then, so
            // this is not reached): wait for real a little; callers retry.
            thread::gate::wait_outside(word, expected, Duration::from_millis(20));
            Ok(())
        }
    }
}

/// Wakes up to `n` of the simulation's waiters on `word`; how many.
fn wake(word: &AtomicU32, n: u32) -> u32 {
    thread::futex_wake(word.as_ptr() as usize, n, u32::MAX).unwrap_or(0)
}

/// [`wake`], and the kernel's waiters (threads outside the simulation) for
/// what it did not wake.
fn wake_all_sides(word: &AtomicU32, n: u32) {
    let here = wake(word, n);
    if here < n {
        thread::gate::wake_outside(word.as_ptr(), n - here);
    }
}

// ---------------------------------------------------------------------------
// Mutexes.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Normal (`PTHREAD_MUTEX_TIMED_NP`, the default) or adaptive.
    Normal,
    Recursive,
    ErrorCheck,
    /// Robust, priority inheritance or priority protection: glibc's
    /// trylock, polled.
    Polled,
    /// Destroyed or never initialised: glibc's answer.
    Glibc,
}

/// `__kind`'s flags for robust, priority-inheritance and
/// priority-protection mutexes.
const KIND_POLLED: i32 = 16 | 32 | 64;

/// The mutex's kind.
///
/// # Safety
///
/// `mx` is a mutex object (the C contract).
unsafe fn kind(mx: *const pthread_mutex_t) -> Kind {
    // SAFETY: the caller's contract.
    let k = unsafe { field(mx, m::KIND) }.load(Ordering::Relaxed) as i32;
    if k < 0 {
        Kind::Glibc
    } else if k & KIND_POLLED != 0 {
        Kind::Polled
    } else {
        match k & 3 {
            1 => Kind::Recursive,
            2 => Kind::ErrorCheck,
            _ => Kind::Normal,
        }
    }
}

/// Locks `mx` in the simulation, waiting until `deadline`; `users`: count
/// the lock in `__nusers` (not when a condition variable takes it back, as
/// glibc's does not). `None`: glibc's own call answers.
///
/// # Safety
///
/// `mx` is an initialised mutex (the C contract).
unsafe fn mutex_lock(
    mx: *mut pthread_mutex_t,
    deadline: Option<Deadline>,
    users: bool,
) -> Option<c_int> {
    // SAFETY: the caller's contract, for this and every field below.
    let kind = unsafe { kind(mx) };
    match kind {
        Kind::Glibc => return None,
        // SAFETY: as above.
        Kind::Polled => return Some(unsafe { mutex_lock_polled(mx, deadline) }),
        _ => {}
    }
    let me = tid() as u32;
    // SAFETY: as above.
    let (word, owner, count) =
        unsafe { (field(mx, m::LOCK), field(mx, m::OWNER), field(mx, m::COUNT)) };
    if owner.load(Ordering::Relaxed) == me {
        match kind {
            Kind::Recursive => {
                let n = count.load(Ordering::Relaxed);
                if n == u32::MAX {
                    return Some(libc::EAGAIN);
                }
                count.store(n + 1, Ordering::Relaxed);
                return Some(0);
            }
            Kind::ErrorCheck => return Some(libc::EDEADLK),
            _ => {}
        }
    }
    if word
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        // glibc's contended path: mark the lock contended (2), and wait
        // while it is held.
        while word.swap(2, Ordering::Acquire) != 0 {
            if let Err(e) = wait(word, 2, deadline) {
                return Some(e);
            }
        }
    }
    // SAFETY: as above.
    unsafe { mutex_acquired(mx, kind, users) };
    Some(0)
}

/// Records the calling thread as `mx`'s owner, as glibc does once `__lock`
/// is taken.
///
/// # Safety
///
/// `mx` is an initialised mutex whose `__lock` the caller just took.
unsafe fn mutex_acquired(mx: *mut pthread_mutex_t, kind: Kind, users: bool) {
    // SAFETY: the caller's contract.
    let (owner, count, nusers) = unsafe {
        (
            field(mx, m::OWNER),
            field(mx, m::COUNT),
            field(mx, m::NUSERS),
        )
    };
    owner.store(tid() as u32, Ordering::Relaxed);
    if users {
        nusers.fetch_add(1, Ordering::Relaxed);
    }
    if kind == Kind::Recursive {
        count.store(1, Ordering::Relaxed);
    }
}

/// A robust, priority-inheritance or priority-protection mutex: glibc's
/// trylock (which keeps the kernel's bookkeeping of those kinds), tried
/// again every [`POLL`] of virtual time.
///
/// # Safety
///
/// `mx` is an initialised mutex (the C contract).
unsafe fn mutex_lock_polled(mx: *mut pthread_mutex_t, deadline: Option<Deadline>) -> c_int {
    loop {
        // SAFETY: glibc's trylock, which never blocks, on the caller's mutex.
        let rc = unsafe { real!(REAL_MUTEX_TRYLOCK as fn(*mut pthread_mutex_t) -> c_int)(mx) };
        if rc != libc::EBUSY {
            return rc;
        }
        let pause = match deadline {
            None => POLL,
            Some(d) if !d.valid => return libc::EINVAL,
            Some(d) => {
                let left = d.remaining();
                if left.is_zero() {
                    return libc::ETIMEDOUT;
                }
                left.min(POLL)
            }
        };
        thread::sleep(pause);
    }
}

/// `pthread_mutex_trylock` in the simulation; `None`: glibc's answers
/// (which never blocks).
///
/// # Safety
///
/// `mx` is an initialised mutex (the C contract).
unsafe fn mutex_trylock(mx: *mut pthread_mutex_t) -> Option<c_int> {
    // SAFETY: the caller's contract, for this and every field below.
    let kind = unsafe { kind(mx) };
    if matches!(kind, Kind::Glibc | Kind::Polled) {
        return None;
    }
    // SAFETY: as above.
    let (word, owner, count) =
        unsafe { (field(mx, m::LOCK), field(mx, m::OWNER), field(mx, m::COUNT)) };
    if kind == Kind::Recursive && owner.load(Ordering::Relaxed) == tid() as u32 {
        let n = count.load(Ordering::Relaxed);
        if n == u32::MAX {
            return Some(libc::EAGAIN);
        }
        count.store(n + 1, Ordering::Relaxed);
        return Some(0);
    }
    if word
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return Some(libc::EBUSY);
    }
    // SAFETY: as above; the lock was just taken.
    unsafe { mutex_acquired(mx, kind, true) };
    Some(0)
}

/// Unlocks `mx` as glibc does; `users`: uncount it from `__nusers` (not
/// when a condition variable releases it). `None`: glibc's own call
/// answers (it never blocks).
///
/// # Safety
///
/// `mx` is an initialised mutex (the C contract).
unsafe fn mutex_unlock(mx: *mut pthread_mutex_t, users: bool) -> Option<c_int> {
    // SAFETY: the caller's contract, for this and every field below.
    let kind = unsafe { kind(mx) };
    if matches!(kind, Kind::Glibc | Kind::Polled) {
        return None;
    }
    // SAFETY: as above.
    let (word, owner, count, nusers) = unsafe {
        (
            field(mx, m::LOCK),
            field(mx, m::OWNER),
            field(mx, m::COUNT),
            field(mx, m::NUSERS),
        )
    };
    let me = tid() as u32;
    match kind {
        Kind::Recursive => {
            if owner.load(Ordering::Relaxed) != me {
                return Some(libc::EPERM);
            }
            let n = count.load(Ordering::Relaxed).wrapping_sub(1);
            count.store(n, Ordering::Relaxed);
            if n != 0 {
                return Some(0);
            }
        }
        Kind::ErrorCheck
            if owner.load(Ordering::Relaxed) != me || word.load(Ordering::Relaxed) == 0 =>
        {
            return Some(libc::EPERM);
        }
        _ => {}
    }
    owner.store(0, Ordering::Relaxed);
    if users {
        nusers.fetch_sub(1, Ordering::Relaxed);
    }
    if word.swap(0, Ordering::Release) > 1 {
        wake_all_sides(word, 1);
    }
    Some(0)
}

/// `pthread_mutex_lock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_mutex_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_lock(mx: *mut pthread_mutex_t) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        if let Some(rc) = unsafe { mutex_lock(mx, None, true) } {
            return rc;
        }
    }
    // SAFETY: glibc's `pthread_mutex_lock`, under the caller's contract.
    unsafe { real!(REAL_MUTEX_LOCK as fn(*mut pthread_mutex_t) -> c_int)(mx) }
}

/// `pthread_mutex_trylock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_mutex_trylock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_trylock(mx: *mut pthread_mutex_t) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        if let Some(rc) = unsafe { mutex_trylock(mx) } {
            return rc;
        }
    }
    // SAFETY: glibc's `pthread_mutex_trylock`, under the caller's contract.
    unsafe { real!(REAL_MUTEX_TRYLOCK as fn(*mut pthread_mutex_t) -> c_int)(mx) }
}

/// `pthread_mutex_timedlock(3)`: `abstime` on `CLOCK_REALTIME`.
///
/// # Safety
///
/// The C contract of `pthread_mutex_timedlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    mx: *mut pthread_mutex_t,
    abstime: *const timespec,
) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        if let Some(rc) = unsafe { mutex_clocklock(mx, libc::CLOCK_REALTIME, abstime) } {
            return rc;
        }
    }
    // SAFETY: glibc's `pthread_mutex_timedlock`, under the caller's contract.
    unsafe {
        real!(REAL_MUTEX_TIMEDLOCK as fn(*mut pthread_mutex_t, *const timespec) -> c_int)(
            mx, abstime,
        )
    }
}

/// `pthread_mutex_clocklock(3)` (glibc 2.30): `abstime` on `clock`.
///
/// # Safety
///
/// The C contract of `pthread_mutex_clocklock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    mx: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        if let Some(rc) = unsafe { mutex_clocklock(mx, clock, abstime) } {
            return rc;
        }
    }
    // SAFETY: glibc's `pthread_mutex_clocklock`, under the caller's contract.
    unsafe {
        real!(REAL_MUTEX_CLOCKLOCK as fn(*mut pthread_mutex_t, clockid_t, *const timespec) -> c_int)(
            mx, clock, abstime,
        )
    }
}

/// The timed locks in the simulation.
///
/// # Safety
///
/// `mx` is an initialised mutex, `abstime` null or readable.
unsafe fn mutex_clocklock(
    mx: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> Option<c_int> {
    // SAFETY: the caller's contract.
    match unsafe { Deadline::lenient(clock, abstime) } {
        // SAFETY: the caller's contract.
        Ok(d) => unsafe { mutex_lock(mx, Some(d), true) },
        Err(e) => Some(e),
    }
}

/// `pthread_mutex_unlock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_mutex_unlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_unlock(mx: *mut pthread_mutex_t) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        if let Some(rc) = unsafe { mutex_unlock(mx, true) } {
            return rc;
        }
    }
    // SAFETY: glibc's `pthread_mutex_unlock`, under the caller's contract.
    unsafe { real!(REAL_MUTEX_UNLOCK as fn(*mut pthread_mutex_t) -> c_int)(mx) }
}

// ---------------------------------------------------------------------------
// Condition variables.
// ---------------------------------------------------------------------------

/// The word whose simulated queue the condition variable's waiters wait in:
/// its first, which the simulation never writes (glibc never waits on it).
///
/// # Safety
///
/// `cv` is a condition variable object (the C contract).
unsafe fn cond_word<'a>(cv: *const pthread_cond_t) -> &'a AtomicU32 {
    // SAFETY: the caller's contract.
    unsafe { field(cv, 0) }
}

/// Waits on `cv` in the simulation, releasing `mx` meanwhile and taking it
/// back before returning, as glibc does (`__nusers` unchanged).
///
/// No signal can be lost between the release and the wait: the waiter is
/// queued before any other thread of the simulation runs (releasing wakes
/// others but keeps the baton).
///
/// # Safety
///
/// `cv` is an initialised condition variable, `mx` an initialised mutex.
unsafe fn cond_wait(
    cv: *mut pthread_cond_t,
    mx: *mut pthread_mutex_t,
    deadline: Option<Deadline>,
) -> c_int {
    // SAFETY: the caller's contract.
    let word = unsafe { cond_word(cv) };
    let seen = word.load(Ordering::Relaxed);
    // SAFETY: the caller's contract, for the mutex below.
    let released = match unsafe { mutex_unlock(mx, false) } {
        Some(rc) => rc,
        // SAFETY: as above; glibc's unlock, which never blocks.
        None => unsafe { real!(REAL_MUTEX_UNLOCK as fn(*mut pthread_mutex_t) -> c_int)(mx) },
    };
    if released != 0 {
        return released;
    }
    let waited = wait(word, seen, deadline);
    // SAFETY: as above.
    let relocked = match unsafe { mutex_lock(mx, None, false) } {
        Some(rc) => rc,
        // SAFETY: as above; a destroyed mutex, which glibc refuses at once.
        None => unsafe { real!(REAL_MUTEX_LOCK as fn(*mut pthread_mutex_t) -> c_int)(mx) },
    };
    if relocked != 0 {
        return relocked;
    }
    match waited {
        Err(e) => e,
        Ok(()) => 0,
    }
}

/// `pthread_cond_wait(3)`.
///
/// # Safety
///
/// The C contract of `pthread_cond_wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_wait(
    cv: *mut pthread_cond_t,
    mx: *mut pthread_mutex_t,
) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { cond_wait(cv, mx, None) };
    }
    // SAFETY: glibc's `pthread_cond_wait`, under the caller's contract.
    unsafe {
        real!(REAL_COND_WAIT as fn(*mut pthread_cond_t, *mut pthread_mutex_t) -> c_int)(cv, mx)
    }
}

/// `pthread_cond_timedwait(3)`: `abstime` on the condition variable's clock
/// (`CLOCK_REALTIME` unless `pthread_condattr_setclock` chose
/// `CLOCK_MONOTONIC`).
///
/// # Safety
///
/// The C contract of `pthread_cond_timedwait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_timedwait(
    cv: *mut pthread_cond_t,
    mx: *mut pthread_mutex_t,
    abstime: *const timespec,
) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        let wrefs = unsafe { field(cv, c::WREFS) }.load(Ordering::Relaxed);
        let clock = if wrefs & c::MONOTONIC != 0 {
            libc::CLOCK_MONOTONIC
        } else {
            libc::CLOCK_REALTIME
        };
        // SAFETY: the caller's contract.
        return match unsafe { Deadline::new(clock, abstime) } {
            // SAFETY: the caller's contract.
            Ok(d) => unsafe { cond_wait(cv, mx, Some(d)) },
            Err(e) => e,
        };
    }
    // SAFETY: glibc's `pthread_cond_timedwait`, under the caller's contract.
    unsafe {
        real!(
            REAL_COND_TIMEDWAIT
                as fn(*mut pthread_cond_t, *mut pthread_mutex_t, *const timespec) -> c_int
        )(cv, mx, abstime)
    }
}

/// `pthread_cond_clockwait(3)` (glibc 2.30): `abstime` on `clock`.
///
/// # Safety
///
/// The C contract of `pthread_cond_clockwait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_clockwait(
    cv: *mut pthread_cond_t,
    mx: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        return match unsafe { Deadline::new(clock, abstime) } {
            // SAFETY: the caller's contract.
            Ok(d) => unsafe { cond_wait(cv, mx, Some(d)) },
            Err(e) => e,
        };
    }
    // SAFETY: glibc's `pthread_cond_clockwait`, under the caller's contract.
    unsafe {
        real!(
            REAL_COND_CLOCKWAIT
                as fn(
                    *mut pthread_cond_t,
                    *mut pthread_mutex_t,
                    clockid_t,
                    *const timespec,
                ) -> c_int
        )(cv, mx, clock, abstime)
    }
}

/// `pthread_cond_signal(3)`: wakes one of the simulation's waiters, or if
/// there is none, one of glibc's (a thread outside the simulation).
///
/// # Safety
///
/// The C contract of `pthread_cond_signal`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_signal(cv: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's contract.
    if in_sim() && wake(unsafe { cond_word(cv) }, 1) == 1 {
        return 0;
    }
    // SAFETY: glibc's `pthread_cond_signal`, under the caller's contract; it
    // returns at once when it has no waiter, and never blocks otherwise.
    unsafe { real!(REAL_COND_SIGNAL as fn(*mut pthread_cond_t) -> c_int)(cv) }
}

/// `pthread_cond_broadcast(3)`: wakes every waiter, the simulation's and
/// glibc's.
///
/// # Safety
///
/// The C contract of `pthread_cond_broadcast`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_broadcast(cv: *mut pthread_cond_t) -> c_int {
    if in_sim() {
        // SAFETY: the caller's contract.
        wake(unsafe { cond_word(cv) }, u32::MAX);
    }
    // SAFETY: as in `pthread_cond_signal`.
    unsafe { real!(REAL_COND_BROADCAST as fn(*mut pthread_cond_t) -> c_int)(cv) }
}
