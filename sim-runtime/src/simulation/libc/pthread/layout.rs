//! glibc's pthread objects as pthread.rs reads and writes them.
//!
//! The simulated calls keep each object's state in glibc's own fields, with
//! glibc's own meaning, so an object stays usable by glibc itself before,
//! between and after simulations. That rests on the layout of glibc 2.36 on
//! x86_64 (Debian 12's), which has been the same since 2.34 for these
//! fields:
//!
//! | object | size | fields used (byte offset) |
//! |---|---|---|
//! | `pthread_mutex_t` | 40 | `__lock` (0: 0 free, 1 locked, 2 locked with waiters), `__count` (4: a recursive mutex's depth), `__owner` (8: the owner's kernel thread id), `__nusers` (12), `__kind` (16: the type in bits 0-1; 16 robust, 32 priority inheritance, 64 priority protection, 128 process-shared, 256/512 elision; -1 once destroyed) |
//! | `pthread_cond_t` | 48 | `__wrefs` (36: bit 1 set when the clock is `CLOCK_MONOTONIC`; waiters outside the simulation counted from bit 3) |
//! | `pthread_rwlock_t` | 56 | `__readers` (0: bit 0 write phase, bit 1 write-locked, readers from bit 3), `__wrphase_futex` (8), `__writers_futex` (12), `__cur_writer` (24: the writer's thread id), `__flags` (48: the kind, 2 = prefer writers, non-recursive) |
//! | `pthread_barrier_t` | 32 | `in` (0), `current_round` (4), `count` (8), `out` (16) |
//! | `sem_t` | 32 | the value (0) and the number of waiters outside the simulation (4): the low and high halves of one 64-bit word |
//! | `pthread_spinlock_t` | 4 | the lock: 1 free, 0 held (x86_64's own implementation, not the generic 0-free one) |
//! | `pthread_once_t` | 4 | 0 not started, 1 in progress, 2 done (the bits above count forks) |
//!
//! [`check`] tests every row once per process, before the first simulated
//! operation, against glibc's own functions on scratch objects (an
//! attribute's type lands in `__kind`, a lock by glibc writes `__lock`,
//! `__owner`, `__nusers`, ...): a glibc whose layout differs stops the
//! process with a message, rather than have the simulation corrupt its
//! objects.

use super::once::{FREE, REAL_SPIN_LOCK, REAL_SPIN_UNLOCK};
use super::{tid, REAL_MUTEX_LOCK, REAL_MUTEX_UNLOCK, REAL_RWLOCK_RDLOCK, REAL_RWLOCK_UNLOCK};
use super::{REAL_COND_SIGNAL, REAL_RWLOCK_WRLOCK};
use libc::c_int;
use std::mem::{size_of, MaybeUninit};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

pub(super) mod mutex {
    pub(crate) const LOCK: usize = 0;
    pub(crate) const COUNT: usize = 4;
    pub(crate) const OWNER: usize = 8;
    pub(crate) const NUSERS: usize = 12;
    pub(crate) const KIND: usize = 16;
}

pub(super) mod cond {
    pub(crate) const WREFS: usize = 36;
    /// In `__wrefs`: the condition variable's clock is `CLOCK_MONOTONIC`.
    pub(crate) const MONOTONIC: u32 = 2;
}

pub(super) mod rwlock {
    pub(crate) const READERS: usize = 0;
    pub(crate) const WRPHASE_FUTEX: usize = 8;
    pub(crate) const WRITERS_FUTEX: usize = 12;
    pub(crate) const CUR_WRITER: usize = 24;
    pub(crate) const FLAGS: usize = 48;
}

pub(super) mod barrier {
    pub(crate) const IN: usize = 0;
    pub(crate) const ROUND: usize = 4;
    pub(crate) const COUNT: usize = 8;
    pub(crate) const OUT: usize = 16;
}

pub(super) mod sem {
    pub(crate) const VALUE: usize = 0;
    pub(crate) const NWAITERS: usize = 4;
}

const _: () = {
    assert!(size_of::<libc::pthread_mutex_t>() == 40);
    assert!(size_of::<libc::pthread_cond_t>() == 48);
    assert!(size_of::<libc::pthread_rwlock_t>() == 56);
    assert!(size_of::<libc::pthread_barrier_t>() == 32);
    assert!(size_of::<libc::sem_t>() == 32);
};

/// The 32-bit field at byte offset `off` of the object at `obj`.
///
/// # Safety
///
/// `obj` points to a live, 4-aligned glibc object of one of the types above
/// with a field at `off`, that outlives `'a` (the C contract of the call
/// that passed it).
pub(super) unsafe fn field<'a, T>(obj: *const T, off: usize) -> &'a AtomicU32 {
    // SAFETY: the caller's contract; glibc accesses these fields atomically
    // too, and an `AtomicU32` has the layout of a `u32`.
    unsafe { &*obj.cast::<u8>().add(off).cast::<AtomicU32>() }
}

/// 0: not checked yet; 1: the layout is the one above.
static CHECKED: AtomicU8 = AtomicU8::new(0);

/// Checks the table above once per process (see the module's docs); ends
/// the process with a message if glibc disagrees.
pub(super) fn check() {
    if CHECKED.load(Ordering::Acquire) == 1 {
        return;
    }
    // Two threads may probe at once: each uses its own scratch objects.
    if let Err(what) = probe() {
        let text = format!(
            "sim: glibc's pthread objects are not laid out as \
             sim-runtime/src/simulation/libc/pthread/layout.rs assumes (glibc 2.36, x86_64): \
             {what}. The simulated pthread calls would corrupt them; stopping.\n"
        );
        // SAFETY: a valid byte slice; then the process ends.
        unsafe {
            libc::write(2, text.as_ptr().cast(), text.len());
            libc::abort();
        }
    }
    CHECKED.store(1, Ordering::Release);
}

/// Reads `off` of a scratch object.
fn at<T>(obj: &MaybeUninit<T>, off: usize) -> u32 {
    // SAFETY: `obj` is a live scratch object initialised by glibc, whose
    // size (asserted above) covers `off`.
    unsafe { field(obj.as_ptr(), off) }.load(Ordering::Relaxed)
}

fn expect(ok: bool, what: &'static str) -> Result<(), &'static str> {
    if ok {
        Ok(())
    } else {
        Err(what)
    }
}

fn probe() -> Result<(), &'static str> {
    let me = tid() as u32;
    // SAFETY: every object is a scratch object on this stack, initialised
    // by glibc's own init function before any other use, used by this
    // thread alone and destroyed before it goes; the locks are glibc's own
    // functions (`Real`), each uncontended, so none blocks.
    unsafe {
        let mut attr = MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
        libc::pthread_mutexattr_init(attr.as_mut_ptr());
        for (kind, want) in [
            (libc::PTHREAD_MUTEX_NORMAL, 0),
            (libc::PTHREAD_MUTEX_RECURSIVE, 1),
            (libc::PTHREAD_MUTEX_ERRORCHECK, 2),
        ] {
            libc::pthread_mutexattr_settype(attr.as_mut_ptr(), kind);
            let mut m = MaybeUninit::<libc::pthread_mutex_t>::uninit();
            libc::pthread_mutex_init(m.as_mut_ptr(), attr.as_ptr());
            // Bits 0-1 are the type, and none of the flags pthread.rs
            // leaves to glibc is set (settype adds no-elision, 512, to a
            // normal mutex).
            expect(
                at(&m, mutex::KIND) & 0x7f == want,
                "a mutex's type is not in bits 0-1 of __kind",
            )?;
            let lock = real!(REAL_MUTEX_LOCK as fn(*mut libc::pthread_mutex_t) -> c_int);
            let unlock = real!(REAL_MUTEX_UNLOCK as fn(*mut libc::pthread_mutex_t) -> c_int);
            lock(m.as_mut_ptr());
            expect(at(&m, mutex::LOCK) == 1, "a locked mutex's __lock is not 1")?;
            expect(
                at(&m, mutex::OWNER) == me,
                "a locked mutex's __owner is not its thread id",
            )?;
            expect(
                at(&m, mutex::NUSERS) == 1,
                "a locked mutex's __nusers is not 1",
            )?;
            if kind == libc::PTHREAD_MUTEX_RECURSIVE {
                lock(m.as_mut_ptr());
                expect(
                    at(&m, mutex::COUNT) == 2,
                    "a recursive mutex's depth is not __count",
                )?;
                unlock(m.as_mut_ptr());
            }
            unlock(m.as_mut_ptr());
            expect(
                at(&m, mutex::LOCK) == 0 && at(&m, mutex::OWNER) == 0 && at(&m, mutex::NUSERS) == 0,
                "an unlocked mutex's __lock, __owner or __nusers is not 0",
            )?;
            libc::pthread_mutex_destroy(m.as_mut_ptr());
        }
        libc::pthread_mutexattr_destroy(attr.as_mut_ptr());

        let mut cattr = MaybeUninit::<libc::pthread_condattr_t>::uninit();
        libc::pthread_condattr_init(cattr.as_mut_ptr());
        for (clock, want) in [
            (libc::CLOCK_REALTIME, 0),
            (libc::CLOCK_MONOTONIC, cond::MONOTONIC),
        ] {
            libc::pthread_condattr_setclock(cattr.as_mut_ptr(), clock);
            let mut c = MaybeUninit::<libc::pthread_cond_t>::uninit();
            libc::pthread_cond_init(c.as_mut_ptr(), cattr.as_ptr());
            expect(
                at(&c, cond::WREFS) & cond::MONOTONIC == want,
                "a condition variable's clock is not bit 1 of __wrefs",
            )?;
            libc::pthread_cond_destroy(c.as_mut_ptr());
        }
        libc::pthread_condattr_destroy(cattr.as_mut_ptr());
        // The condition variable calls found by name are glibc's current
        // ones, not the compatibility symbols of its old layout.
        let current = libc::dlvsym(
            libc::RTLD_NEXT,
            c"pthread_cond_signal".as_ptr(),
            c"GLIBC_2.3.2".as_ptr(),
        );
        expect(
            current.is_null() || current == REAL_COND_SIGNAL.get(),
            "pthread_cond_signal resolves to a compatibility version",
        )?;

        let mut rwattr = MaybeUninit::<libc::pthread_rwlockattr_t>::uninit();
        libc::pthread_rwlockattr_init(rwattr.as_mut_ptr());
        libc::pthread_rwlockattr_setkind_np(rwattr.as_mut_ptr(), 2);
        let mut l = MaybeUninit::<libc::pthread_rwlock_t>::uninit();
        libc::pthread_rwlock_init(l.as_mut_ptr(), rwattr.as_ptr());
        expect(at(&l, rwlock::FLAGS) == 2, "a rwlock's kind is not __flags")?;
        libc::pthread_rwlock_destroy(l.as_mut_ptr());
        libc::pthread_rwlockattr_destroy(rwattr.as_mut_ptr());
        libc::pthread_rwlock_init(l.as_mut_ptr(), std::ptr::null());
        let rd = real!(REAL_RWLOCK_RDLOCK as fn(*mut libc::pthread_rwlock_t) -> c_int);
        let wr = real!(REAL_RWLOCK_WRLOCK as fn(*mut libc::pthread_rwlock_t) -> c_int);
        let un = real!(REAL_RWLOCK_UNLOCK as fn(*mut libc::pthread_rwlock_t) -> c_int);
        rd(l.as_mut_ptr());
        expect(
            at(&l, rwlock::READERS) == 8,
            "a reader is not counted from bit 3 of __readers",
        )?;
        un(l.as_mut_ptr());
        expect(
            at(&l, rwlock::READERS) == 0,
            "an idle rwlock's __readers is not 0",
        )?;
        wr(l.as_mut_ptr());
        expect(
            at(&l, rwlock::READERS) == 3
                && at(&l, rwlock::CUR_WRITER) == me
                && at(&l, rwlock::WRPHASE_FUTEX) == 1
                && at(&l, rwlock::WRITERS_FUTEX) == 1,
            "a write-locked rwlock's __readers, __cur_writer or futex words differ",
        )?;
        un(l.as_mut_ptr());
        expect(
            at(&l, rwlock::CUR_WRITER) == 0,
            "a released rwlock keeps __cur_writer",
        )?;
        libc::pthread_rwlock_destroy(l.as_mut_ptr());

        let mut b = MaybeUninit::<libc::pthread_barrier_t>::uninit();
        libc::pthread_barrier_init(b.as_mut_ptr(), std::ptr::null(), 3);
        expect(
            at(&b, barrier::COUNT) == 3
                && at(&b, barrier::IN) == 0
                && at(&b, barrier::ROUND) == 0
                && at(&b, barrier::OUT) == 0,
            "a barrier's count is not at byte 8",
        )?;
        libc::pthread_barrier_destroy(b.as_mut_ptr());

        let mut s = MaybeUninit::<libc::sem_t>::uninit();
        libc::sem_init(s.as_mut_ptr(), 0, 5);
        expect(
            at(&s, sem::VALUE) == 5 && at(&s, sem::NWAITERS) == 0,
            "a semaphore's value is not its first word",
        )?;
        libc::sem_destroy(s.as_mut_ptr());

        let mut spin: libc::pthread_spinlock_t = 7;
        libc::pthread_spin_init(&mut spin, 0);
        let init = spin as u32;
        real!(REAL_SPIN_LOCK as fn(*mut libc::pthread_spinlock_t) -> c_int)(&mut spin);
        let held = spin;
        real!(REAL_SPIN_UNLOCK as fn(*mut libc::pthread_spinlock_t) -> c_int)(&mut spin);
        expect(
            init == FREE && held == 0 && spin as u32 == FREE,
            "a spin lock is not 1 when free and 0 when held",
        )?;
    }
    Ok(())
}
