//! Reader--writer locks inside a simulation (see pthread.rs).
//!
//! Between calls the lock is in one of three states glibc's own code makes
//! and takes over from (its `__readers` word: bit 0 write phase, bit 1
//! write-locked, readers from bit 3): idle (`__readers` 0, the futex words
//! 0), held by n readers (n << 3), or held by a writer (write phase and
//! write-locked, both futex words 1, `__cur_writer` its thread id). Waiting
//! is the simulation's: readers wait in the queue of `__wrphase_futex`,
//! writers in that of `__writers_futex`, and are woken to look again.
//!
//! Policy, as glibc's kinds ask: readers get in whenever no writer holds
//! the lock (the default, `PTHREAD_RWLOCK_PREFER_READER_NP`), except that
//! with `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP` no new reader joins
//! readers while a writer waits; a writer's release wakes one waiting
//! writer alone if the kind prefers writers, and otherwise every reader and
//! one writer, which the seed then orders.

use super::layout::{field, rwlock as f};
use super::{tid, wait, wake, Deadline};
use crate::simulation::thread;
use libc::{c_int, clockid_t, pthread_rwlock_t, timespec};
use std::sync::atomic::{AtomicU32, Ordering};

const WRPHASE: u32 = 1;
const WRLOCKED: u32 = 2;
const SHIFT: u32 = 3;
/// glibc's bound on readers (`PTHREAD_RWLOCK_READER_OVERFLOW`).
const OVERFLOW: u32 = 1 << 31;
const PREFER_READER: u32 = 0;
const PREFER_WRITER_NONRECURSIVE: u32 = 2;

struct Lock<'a> {
    readers: &'a AtomicU32,
    wrphase: &'a AtomicU32,
    writers: &'a AtomicU32,
    cur_writer: &'a AtomicU32,
    flags: u32,
}

impl Lock<'_> {
    /// # Safety
    ///
    /// `l` is an initialised reader--writer lock that outlives the value.
    unsafe fn of(l: *mut pthread_rwlock_t) -> Self {
        // SAFETY: the caller's contract.
        unsafe {
            Lock {
                readers: field(l, f::READERS),
                wrphase: field(l, f::WRPHASE_FUTEX),
                writers: field(l, f::WRITERS_FUTEX),
                cur_writer: field(l, f::CUR_WRITER),
                flags: field(l, f::FLAGS).load(Ordering::Relaxed),
            }
        }
    }

    /// Whether a writer waits in the simulation.
    fn writer_waits(&self) -> bool {
        thread::futex_waiters(self.writers.as_ptr() as usize).is_some_and(|n| n > 0)
    }

    /// Takes a read lock if one can be had now: `Some(0)`, `Some(EAGAIN)`
    /// (too many readers), or `None` (wait).
    fn try_read(&self) -> Option<c_int> {
        // Compare-and-swap, not load-then-store: a lock in a static is shared
        // with the other runs of the process, whose threads really run at
        // the same time as this one (aws-lc's seed lock under two jobs).
        loop {
            let r = self.readers.load(Ordering::Relaxed);
            if r & WRLOCKED != 0 {
                return None;
            }
            if self.flags == PREFER_WRITER_NONRECURSIVE && r >> SHIFT > 0 && self.writer_waits() {
                return None;
            }
            if (r >> SHIFT) + 1 >= OVERFLOW >> SHIFT {
                return Some(libc::EAGAIN);
            }
            // Idle in a write phase (glibc leaves it so): start a read phase.
            let next = if r & WRPHASE != 0 {
                1 << SHIFT
            } else {
                r + (1 << SHIFT)
            };
            if self
                .readers
                .compare_exchange(r, next, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                if r & WRPHASE != 0 {
                    self.wrphase.store(0, Ordering::Relaxed);
                }
                return Some(0);
            }
        }
    }

    /// Takes the write lock if it is free: whether it did.
    fn try_write(&self) -> bool {
        let r = self.readers.load(Ordering::Relaxed);
        if r & WRLOCKED != 0 || r >> SHIFT != 0 {
            return false;
        }
        if self
            .readers
            .compare_exchange(r, WRPHASE | WRLOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.wrphase.store(1, Ordering::Relaxed);
        self.writers.store(1, Ordering::Relaxed);
        self.cur_writer.store(tid() as u32, Ordering::Relaxed);
        true
    }

    fn rdlock(&self, deadline: Option<Deadline>) -> c_int {
        if self.cur_writer.load(Ordering::Relaxed) == tid() as u32 {
            return libc::EDEADLK;
        }
        loop {
            // The word's value before the attempt: a release by a thread of
            // another run, really concurrent, between the two changes it.
            let seen = self.wrphase.load(Ordering::Acquire);
            if let Some(rc) = self.try_read() {
                return rc;
            }
            if let Err(e) = wait(self.wrphase, seen, deadline) {
                return e;
            }
        }
    }

    fn wrlock(&self, deadline: Option<Deadline>) -> c_int {
        if self.cur_writer.load(Ordering::Relaxed) == tid() as u32 {
            return libc::EDEADLK;
        }
        loop {
            let seen = self.writers.load(Ordering::Acquire);
            if self.try_write() {
                return 0;
            }
            if let Err(e) = wait(self.writers, seen, deadline) {
                // Readers held back for this writer look again.
                wake(self.wrphase, u32::MAX);
                return e;
            }
        }
    }

    fn unlock(&self) -> c_int {
        let r = self.readers.load(Ordering::Relaxed);
        if r & WRLOCKED != 0 && self.cur_writer.load(Ordering::Relaxed) == tid() as u32 {
            self.cur_writer.store(0, Ordering::Relaxed);
            self.writers.store(0, Ordering::Relaxed);
            self.wrphase.store(0, Ordering::Relaxed);
            self.readers.store(0, Ordering::Release);
            if self.flags != PREFER_READER && wake(self.writers, 1) > 0 {
                return 0;
            }
            wake(self.wrphase, u32::MAX);
            if self.flags == PREFER_READER {
                wake(self.writers, 1);
            }
            return 0;
        }
        if r >> SHIFT == 0 || r & WRLOCKED != 0 {
            // Not held by readers, nor by the calling writer.
            return libc::EPERM;
        }
        let left = self.readers.fetch_sub(1 << SHIFT, Ordering::Release) - (1 << SHIFT);
        if left >> SHIFT == 0 && wake(self.writers, 1) == 0 {
            wake(self.wrphase, u32::MAX);
        }
        0
    }
}

/// Which call, for the entry points' shared shape.
#[derive(Clone, Copy)]
enum Op {
    Read,
    Write,
}

/// A blocking or timed lock in the simulation; `None` outside one.
///
/// # Safety
///
/// `l` is an initialised reader--writer lock; `abstime` null or readable.
unsafe fn lock(
    l: *mut pthread_rwlock_t,
    op: Op,
    timed: Option<(clockid_t, *const timespec)>,
) -> Option<c_int> {
    if !super::in_sim() {
        return None;
    }
    let deadline = match timed {
        None => None,
        // SAFETY: the caller's contract.
        Some((clock, abstime)) => match unsafe { Deadline::new(clock, abstime) } {
            Ok(d) => Some(d),
            Err(e) => return Some(e),
        },
    };
    // SAFETY: the caller's contract.
    let lock = unsafe { Lock::of(l) };
    Some(match op {
        Op::Read => lock.rdlock(deadline),
        Op::Write => lock.wrlock(deadline),
    })
}

static REAL_TRYRDLOCK: super::Real = super::Real::new(c"pthread_rwlock_tryrdlock");
static REAL_TRYWRLOCK: super::Real = super::Real::new(c"pthread_rwlock_trywrlock");
static REAL_TIMEDRDLOCK: super::Real = super::Real::new(c"pthread_rwlock_timedrdlock");
static REAL_TIMEDWRLOCK: super::Real = super::Real::new(c"pthread_rwlock_timedwrlock");
static REAL_CLOCKRDLOCK: super::Real = super::Real::new(c"pthread_rwlock_clockrdlock");
static REAL_CLOCKWRLOCK: super::Real = super::Real::new(c"pthread_rwlock_clockwrlock");
use super::{REAL_RWLOCK_RDLOCK, REAL_RWLOCK_UNLOCK, REAL_RWLOCK_WRLOCK};

/// `pthread_rwlock_rdlock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_rdlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { lock(l, Op::Read, None) } {
        return rc;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_RWLOCK_RDLOCK as fn(*mut pthread_rwlock_t) -> c_int)(l) }
}

/// `pthread_rwlock_wrlock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_wrlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { lock(l, Op::Write, None) } {
        return rc;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_RWLOCK_WRLOCK as fn(*mut pthread_rwlock_t) -> c_int)(l) }
}

/// `pthread_rwlock_timedrdlock(3)`: `abstime` on `CLOCK_REALTIME`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_timedrdlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(
    l: *mut pthread_rwlock_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { lock(l, Op::Read, Some((libc::CLOCK_REALTIME, abstime))) } {
        return rc;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe {
        real!(REAL_TIMEDRDLOCK as fn(*mut pthread_rwlock_t, *const timespec) -> c_int)(l, abstime)
    }
}

/// `pthread_rwlock_timedwrlock(3)`: `abstime` on `CLOCK_REALTIME`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_timedwrlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(
    l: *mut pthread_rwlock_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { lock(l, Op::Write, Some((libc::CLOCK_REALTIME, abstime))) } {
        return rc;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe {
        real!(REAL_TIMEDWRLOCK as fn(*mut pthread_rwlock_t, *const timespec) -> c_int)(l, abstime)
    }
}

/// `pthread_rwlock_clockrdlock(3)` (glibc 2.30): `abstime` on `clock`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_clockrdlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_clockrdlock(
    l: *mut pthread_rwlock_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { lock(l, Op::Read, Some((clock, abstime))) } {
        return rc;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe {
        real!(REAL_CLOCKRDLOCK as fn(*mut pthread_rwlock_t, clockid_t, *const timespec) -> c_int)(
            l, clock, abstime,
        )
    }
}

/// `pthread_rwlock_clockwrlock(3)` (glibc 2.30): `abstime` on `clock`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_clockwrlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_clockwrlock(
    l: *mut pthread_rwlock_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { lock(l, Op::Write, Some((clock, abstime))) } {
        return rc;
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe {
        real!(REAL_CLOCKWRLOCK as fn(*mut pthread_rwlock_t, clockid_t, *const timespec) -> c_int)(
            l, clock, abstime,
        )
    }
}

/// `pthread_rwlock_tryrdlock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_tryrdlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { Lock::of(l) }.try_read().unwrap_or(libc::EBUSY);
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_TRYRDLOCK as fn(*mut pthread_rwlock_t) -> c_int)(l) }
}

/// `pthread_rwlock_trywrlock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_trywrlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return if unsafe { Lock::of(l) }.try_write() {
            0
        } else {
            libc::EBUSY
        };
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_TRYWRLOCK as fn(*mut pthread_rwlock_t) -> c_int)(l) }
}

/// `pthread_rwlock_unlock(3)`.
///
/// # Safety
///
/// The C contract of `pthread_rwlock_unlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    if super::in_sim() {
        // SAFETY: the caller's contract.
        return unsafe { Lock::of(l) }.unlock();
    }
    // SAFETY: glibc's, under the caller's contract.
    unsafe { real!(REAL_RWLOCK_UNLOCK as fn(*mut pthread_rwlock_t) -> c_int)(l) }
}
