//! The C entry points of OS threads inside a simulation: starting, joining
//! and detaching threads, futex waits and wakes, sleeping and yielding.
//! Each makes the simulated thread's move through `thread/` (the baton, the
//! wait queues, virtual time); outside a simulation, or on the simulator's
//! own work, each is glibc's own (or the raw system call).
//!
//! | caller                                        | entry point                        |
//! |-----------------------------------------------|------------------------------------|
//! | `std::thread::spawn`, rayon, C/C++ threads    | `pthread_create`                   |
//! | `JoinHandle::join`, dropping a `JoinHandle`   | `pthread_join`, `pthread_detach`   |
//! | std's `Mutex`, `Condvar`, `RwLock`, `Once`, `park`; parking_lot; crossbeam | `syscall(SYS_futex, ..)` |
//! | `std::thread::sleep`, C sleeps                 | `nanosleep`, `clock_nanosleep`, `usleep`, `sleep` |
//! | `std::thread::yield_now`                       | `sched_yield`                      |

use super::refused::{positive, refuse_sleep, simulated};
use super::sys::{set_errno, Real};
use crate::simulation::core::{hooks, outside};
use crate::simulation::thread;
use libc::{c_int, c_long, c_uint, c_void, pthread_attr_t, pthread_t, timespec};
use std::time::Duration;

extern "C" {
    /// glibc's; the libc crate does not declare it.
    fn pthread_attr_getdetachstate(attr: *const pthread_attr_t, state: *mut c_int) -> c_int;
}

static REAL_PTHREAD_CREATE: Real = Real::new(c"pthread_create");
static REAL_PTHREAD_JOIN: Real = Real::new(c"pthread_join");
static REAL_PTHREAD_DETACH: Real = Real::new(c"pthread_detach");
static REAL_SCHED_YIELD: Real = Real::new(c"sched_yield");
static REAL_PTHREAD_SETNAME_NP: Real = Real::new(c"pthread_setname_np");
static REAL_NANOSLEEP: Real = Real::new(c"nanosleep");
static REAL_CLOCK_NANOSLEEP: Real = Real::new(c"clock_nanosleep");
static REAL_USLEEP: Real = Real::new(c"usleep");
static REAL_SLEEP: Real = Real::new(c"sleep");

type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;

/// Joins a simulated thread's OS thread for real (see `thread::RealJoin`).
///
/// # Safety
///
/// `t` is a joinable thread that nothing else joins.
unsafe fn real_join(t: pthread_t) {
    // SAFETY: glibc's `pthread_join`, under the caller's contract.
    unsafe {
        real!(REAL_PTHREAD_JOIN as fn(pthread_t, *mut *mut c_void) -> c_int)(
            t,
            std::ptr::null_mut(),
        );
    }
}

/// `pthread_create(3)`: inside a simulation, a simulated thread of the
/// calling node (thread/): a real OS thread that waits for its first turn.
/// Created joinable whatever `attr` says, so the run can always join it;
/// a detached one is joined by the run when it ends.
///
/// # Safety
///
/// The C contract of `pthread_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    out: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    if simulated() || thread::owner_starts_threads() {
        if let Some(prepared) = thread::prepare(start, arg, real_join) {
            let ctl = prepared.ctl().clone();
            let mut detached = false;
            if !attr.is_null() {
                let mut state = 0;
                // SAFETY: `attr` is an initialised attribute object (the C
                // contract); glibc reads and writes only its own fields, and
                // the change is undone below before the caller sees it.
                unsafe {
                    pthread_attr_getdetachstate(attr, &mut state);
                    if state == libc::PTHREAD_CREATE_DETACHED {
                        detached = true;
                        libc::pthread_attr_setdetachstate(
                            attr.cast_mut(),
                            libc::PTHREAD_CREATE_JOINABLE,
                        );
                    }
                }
            }
            let raw = Box::into_raw(prepared);
            // SAFETY: glibc's `pthread_create`; the routine is `trampoline`,
            // whose argument is the `Start` box it takes back once.
            let rc = unsafe {
                real!(
                    REAL_PTHREAD_CREATE
                        as fn(
                            *mut pthread_t,
                            *const pthread_attr_t,
                            unsafe extern "C" fn(*mut c_void) -> *mut c_void,
                            *mut c_void,
                        ) -> c_int
                )(out, attr, thread::trampoline, raw.cast())
            };
            if detached {
                // SAFETY: as above.
                unsafe {
                    libc::pthread_attr_setdetachstate(
                        attr.cast_mut(),
                        libc::PTHREAD_CREATE_DETACHED,
                    )
                };
            }
            if rc != 0 {
                // SAFETY: the thread was not created, so the box is ours again.
                drop(unsafe { Box::from_raw(raw) });
                return rc;
            }
            // SAFETY: `pthread_create` succeeded and wrote the new thread's id.
            let id = unsafe { *out };
            thread::forget_ended(id);
            thread::started(&ctl, id, detached);
            return 0;
        }
        hooks::note_thread_spawn_attempt();
        refused_thread_message();
        return libc::EAGAIN;
    }
    let real = REAL_PTHREAD_CREATE.get();
    // SAFETY: glibc's `pthread_create`, whose address `real` is.
    let create = unsafe {
        std::mem::transmute::<
            *mut c_void,
            extern "C" fn(
                *mut pthread_t,
                *const pthread_attr_t,
                StartRoutine,
                *mut c_void,
            ) -> c_int,
        >(real)
    };
    // A thread started outside any simulation is counted for its starter
    // until it ends (core/outside.rs): a run on the starter's thread waits
    // for it before declaring a deadlock, as it may still wake a task.
    let rc = match outside::child_starting() {
        None => create(out, attr, start, arg),
        Some(count) => {
            let counted = Box::into_raw(Box::new(Counted { start, arg, count }));
            let rc = create(out, attr, counted_start, counted.cast());
            if rc != 0 {
                // SAFETY: the thread was not created, so the box is ours again.
                let counted = unsafe { Box::from_raw(counted) };
                outside::child_not_started(counted.count);
            }
            rc
        }
    };
    if rc == 0 {
        // SAFETY: `pthread_create` succeeded and wrote the new thread's id.
        thread::forget_ended(unsafe { *out });
    }
    rc
}

/// A thread started outside any simulation, counted for its starter.
struct Counted {
    start: StartRoutine,
    arg: *mut c_void,
    count: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

/// The start routine of a [`Counted`] thread: it holds its starter's count
/// until it ends, then runs the program's routine.
extern "C" fn counted_start(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the box `pthread_create` made for this thread, taken
    // back once, here.
    let counted = unsafe { Box::from_raw(p.cast::<Counted>()) };
    let Counted { start, arg, count } = *counted;
    outside::child_running(count);
    start(arg)
}

/// Where no executor runs the simulation (an interception test's thread),
/// a thread cannot be simulated: it is refused, and said so.
fn refused_thread_message() {
    const MESSAGE: &[u8] = b"sim: an OS thread was started where no simulation's executor \
runs (an interception test's thread); it was refused.\n";
    // SAFETY: a valid byte slice; a failed write changes nothing.
    unsafe { libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len()) };
}

/// `pthread_join(3)`: of a simulated thread, a simulated wait for its end,
/// then the real join (which returns its value).
///
/// # Safety
///
/// The C contract of `pthread_join`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_join(t: pthread_t, retval: *mut *mut c_void) -> c_int {
    if simulated() || thread::owner_starts_threads() {
        thread::join(t);
    }
    if thread::join_ended(t) {
        // A simulated thread its run ended (with its node, or with the run)
        // and joined for real: it never returned, so it reports itself
        // cancelled, once (a static's destructor at exit joining a pool
        // that a run started, as RocksDB's does, would get ESRCH and
        // terminate the process).
        if !retval.is_null() {
            // SAFETY: the caller's out-pointer (the C contract).
            unsafe { *retval = PTHREAD_CANCELED };
        }
        return 0;
    }
    // SAFETY: glibc's `pthread_join`; the arguments pass through.
    unsafe { real!(REAL_PTHREAD_JOIN as fn(pthread_t, *mut *mut c_void) -> c_int)(t, retval) }
}

/// glibc's `PTHREAD_CANCELED`, `(void *) -1` (the libc crate has none).
const PTHREAD_CANCELED: *mut c_void = std::ptr::without_provenance_mut(usize::MAX);

/// `pthread_detach(3)`: a simulated thread stays joinable underneath (the
/// run joins it when it ends); any other is glibc's.
///
/// # Safety
///
/// The C contract of `pthread_detach`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_detach(t: pthread_t) -> c_int {
    if simulated() && thread::detach(t) {
        return 0;
    }
    // SAFETY: glibc's `pthread_detach`; the argument passes through.
    unsafe { real!(REAL_PTHREAD_DETACH as fn(pthread_t) -> c_int)(t) }
}

/// `pthread_setname_np(3)`: a simulated thread's name also names its task
/// in reports; the real name is set too (it shows in `/proc` and
/// debuggers).
///
/// # Safety
///
/// The C contract of `pthread_setname_np`: `name` is a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_setname_np(t: pthread_t, name: *const libc::c_char) -> c_int {
    if simulated() && !name.is_null() {
        // SAFETY: a C string, by the caller's contract.
        let text = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
        thread::set_name(t, &text);
    }
    // SAFETY: glibc's `pthread_setname_np`; the arguments pass through.
    unsafe {
        real!(REAL_PTHREAD_SETNAME_NP as fn(pthread_t, *const libc::c_char) -> c_int)(t, name)
    }
}

/// `sched_yield(2)`: the seed picks who runs next.
///
/// # Safety
///
/// None beyond C's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sched_yield() -> c_int {
    if simulated() && thread::yield_now() {
        return 0;
    }
    // SAFETY: glibc's `sched_yield`.
    unsafe { real!(REAL_SCHED_YIELD as fn() -> c_int)() }
}

/// `syscall(SYS_futex, ..)` inside a simulation: the wait and wake
/// operations (with or without a bitset) on the simulation's wait queues;
/// `None` for the other operations and outside a simulation's executor
/// (the raw system call follows).
///
/// # Safety
///
/// The futex contract for the arguments.
pub(super) unsafe fn futex(
    addr: c_long,
    op: c_long,
    val: c_long,
    timeout: c_long,
    _addr2: c_long,
    val3: c_long,
) -> Option<c_long> {
    let owner = !simulated();
    if owner && !thread::owner_waits() {
        return None;
    }
    let op = op as c_int;
    let cmd = op & !(libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME);
    let addr = addr as *const u32;
    match cmd {
        libc::FUTEX_WAIT | libc::FUTEX_WAIT_BITSET => {
            let bitset = if cmd == libc::FUTEX_WAIT {
                u32::MAX
            } else {
                val3 as u32
            };
            let ts = timeout as *const timespec;
            let timeout = if ts.is_null() {
                None
            } else {
                // SAFETY: a non-null timeout is a readable timespec (the
                // futex contract).
                let ts = unsafe { *ts };
                let ns = duration_ns(&ts);
                Some(if cmd == libc::FUTEX_WAIT {
                    Duration::from_nanos(ns)
                } else {
                    let realtime = op & libc::FUTEX_CLOCK_REALTIME != 0;
                    let now = if owner {
                        // Outside a simulation the deadline was read from
                        // the real clocks.
                        real_now_ns(realtime)
                    } else if realtime {
                        hooks::wall_ns()
                    } else {
                        hooks::mono_ns()
                    };
                    Duration::from_nanos(ns.saturating_sub(now))
                })
            };
            let waited = if owner {
                // SAFETY: the futex contract: `addr` is a readable word.
                unsafe { thread::owner_wait(addr, val as u32, bitset, timeout) }
            } else {
                // SAFETY: the futex contract: `addr` is a readable word.
                unsafe { thread::futex_wait(addr, val as u32, bitset, timeout) }
            };
            match waited? {
                Ok(()) => Some(0),
                Err(e) => {
                    set_errno(e);
                    Some(-1)
                }
            }
        }
        libc::FUTEX_WAKE | libc::FUTEX_WAKE_BITSET => {
            let bitset = if cmd == libc::FUTEX_WAKE {
                u32::MAX
            } else {
                val3 as u32
            };
            let n = val.clamp(0, i32::MAX as c_long) as u32;
            let here = thread::futex_wake(addr as usize, n, bitset)?;
            let outside = if here < n {
                thread::gate::wake_outside(addr, n - here)
            } else {
                0
            };
            Some(c_long::from(here + outside))
        }
        _ => None,
    }
}

/// The real clock now, in ns (realtime or monotonic): this thread is
/// outside any simulation, so `clock_gettime` is glibc's.
fn real_now_ns(realtime: bool) -> u64 {
    let mut ts = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let clock = if realtime {
        libc::CLOCK_REALTIME
    } else {
        libc::CLOCK_MONOTONIC
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    duration_ns(&ts)
}

/// A `timespec`'s value in ns (negative parts count as 0).
fn duration_ns(ts: &timespec) -> u64 {
    (ts.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec.max(0) as u64)
}

/// Sleeps `d` of virtual time if the calling thread is in a simulation's
/// executor; otherwise the sleep is refused as before threads were
/// simulated (`call` names it).
fn sleep_for(d: Duration, call: &'static str) {
    if !thread::sleep(d) {
        refuse_sleep(call);
    }
}

/// `nanosleep(2)`: what `std::thread::sleep` calls. Inside a simulation it
/// sleeps in virtual time (the calling thread alone, or, on the executor's
/// thread, the whole runtime as a blocked worker would).
///
/// # Safety
///
/// The C contract of `nanosleep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    // SAFETY: `req` is null or readable, by the caller's contract.
    if simulated() && unsafe { positive(req) } {
        // SAFETY: as above, and non-null.
        sleep_for(
            Duration::from_nanos(duration_ns(unsafe { &*req })),
            "nanosleep",
        );
        if !rem.is_null() {
            // SAFETY: `rem` is writable by the caller's contract.
            unsafe {
                *rem = timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                }
            };
        }
        return 0;
    }
    // SAFETY: glibc's `nanosleep`, called under the caller's contract.
    unsafe { real!(REAL_NANOSLEEP as fn(*const timespec, *mut timespec) -> c_int)(req, rem) }
}

/// `clock_nanosleep(2)`: relative or absolute (`TIMER_ABSTIME`), on the
/// node's virtual clocks.
///
/// # Safety
///
/// The C contract of `clock_nanosleep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_nanosleep(
    clock: libc::clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    // SAFETY: `req` is null or readable, by the caller's contract.
    if simulated() && unsafe { positive(req) } {
        // SAFETY: as above, and non-null.
        let ns = duration_ns(unsafe { &*req });
        let d = if flags & libc::TIMER_ABSTIME != 0 {
            let now = if clock == libc::CLOCK_REALTIME || clock == libc::CLOCK_TAI {
                hooks::wall_ns()
            } else {
                hooks::mono_ns()
            };
            ns.saturating_sub(now)
        } else {
            ns
        };
        sleep_for(Duration::from_nanos(d), "clock_nanosleep");
        if !rem.is_null() && flags & libc::TIMER_ABSTIME == 0 {
            // SAFETY: `rem` is writable by the caller's contract.
            unsafe {
                *rem = timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                }
            };
        }
        return 0;
    }
    // SAFETY: glibc's `clock_nanosleep`, called under the caller's contract.
    unsafe {
        real!(
            REAL_CLOCK_NANOSLEEP
                as fn(libc::clockid_t, c_int, *const timespec, *mut timespec) -> c_int
        )(clock, flags, req, rem)
    }
}

/// `usleep(3)`.
///
/// # Safety
///
/// The C contract of `usleep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn usleep(usec: libc::useconds_t) -> c_int {
    if simulated() && usec > 0 {
        sleep_for(Duration::from_micros(u64::from(usec)), "usleep");
        return 0;
    }
    // SAFETY: glibc's `usleep`, called under the caller's contract.
    unsafe { real!(REAL_USLEEP as fn(libc::useconds_t) -> c_int)(usec) }
}

/// `sleep(3)`.
///
/// # Safety
///
/// The C contract of `sleep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sleep(seconds: c_uint) -> c_uint {
    if simulated() && seconds > 0 {
        sleep_for(Duration::from_secs(u64::from(seconds)), "sleep");
        return 0;
    }
    // SAFETY: glibc's `sleep`, called under the caller's contract.
    unsafe { real!(REAL_SLEEP as fn(c_uint) -> c_uint)(seconds) }
}
