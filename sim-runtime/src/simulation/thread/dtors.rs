//! A simulated thread's thread-local destructors, on a list of the
//! simulation's own instead of glibc's.
//!
//! glibc keeps a thread's destructors (std's and C++'s thread-locals, one
//! node each) on a list it frees only on the thread's exit path, which runs
//! them all: the program's code. A thread killed where it stands
//! (`gate::exit_thread_now`) never takes that path, so every killed thread
//! kept its list for the rest of the process (about 1.9 KB a seed in the
//! soak of docs/perf.md: 14 nodes a thread, 11 of them the simulation's
//! carried thread-locals).
//!
//! Here a simulated thread's registrations (libc/tls.rs's
//! `__cxa_thread_atexit_impl`) go on its own list, and glibc holds one
//! destructor of ours that runs the list, last registered first, exactly
//! where glibc would have run them: a thread that ends runs them all as
//! before. A killed thread's list is freed by its killer once the thread
//! is gone, without running any of it (the frozen-disk rule), and on the
//! killer's thread: a block freed by the dying thread itself would only
//! join that thread's malloc cache, which dies with it.

use libc::{c_int, c_void};
use std::cell::{Cell, UnsafeCell};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

type Dtor = unsafe extern "C" fn(*mut c_void);

/// A thread's destructors, in the order they were registered.
pub(crate) struct Dtors(UnsafeCell<Vec<(Dtor, *mut c_void)>>);

/// Lists made and not yet freed, in the whole process.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many simulated threads' lists are allocated now: those of threads
/// still running (a killed thread's is freed once it is joined).
pub(crate) fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

thread_local! {
    /// This simulated thread's list (null on any other thread, and once
    /// its list has run). `const` and without a destructor: reading it
    /// registers nothing and works while the thread's locals are destroyed.
    static MINE: Cell<*mut Dtors> = const { Cell::new(null_mut()) };
}

unsafe extern "C" {
    /// glibc's registration, as our interposer (libc/tls.rs) passes it on
    /// while `MINE` is null.
    fn __cxa_thread_atexit_impl(dtor: Dtor, obj: *mut c_void, dso: *mut c_void) -> c_int;
}

/// Keeps `dtor(obj)` on the calling simulated thread's list; `false` on any
/// other thread (the caller registers it with glibc).
pub(crate) fn keep(dtor: Dtor, obj: *mut c_void) -> bool {
    let list = MINE.with(Cell::get);
    if list.is_null() {
        return false;
    }
    // SAFETY: the list is this thread's own; nothing else touches it while
    // the thread lives, and no reference into it is held across this push.
    unsafe { (*(*list).0.get()).push((dtor, obj)) };
    true
}

/// Gives the calling thread (a simulated thread, before its first
/// thread-local) its list, and glibc the one destructor that runs it.
/// Returns the list, for its killer to free ([`forget`]).
pub(crate) fn install() -> *mut Dtors {
    let list = Box::into_raw(Box::new(Dtors(UnsafeCell::new(Vec::new()))));
    LIVE.fetch_add(1, Ordering::Relaxed);
    // Registered while `MINE` is still null: glibc's. The DSO is named by
    // an address in it (glibc looks its object up; a null one it takes
    // for an object already seen, and faults on its first call).
    let dso = run as *const () as *mut c_void;
    // SAFETY: `run` takes the list back once, at the thread's exit; `dso`
    // is an address of this object.
    unsafe { __cxa_thread_atexit_impl(run, list.cast(), dso) };
    MINE.with(|m| m.set(list));
    list
}

/// At the thread's exit (glibc's destructor pass): runs its list, last
/// registered first, then frees it.
///
/// # Safety
///
/// `p` is the list [`install`] made on this thread, run once.
unsafe extern "C" fn run(p: *mut c_void) {
    let list = p.cast::<Dtors>();
    // One at a time: a destructor may register another, which goes on the
    // list and runs in this same pass.
    // SAFETY: the list is this thread's; no reference into it is held
    // while a destructor runs.
    while let Some((dtor, obj)) = unsafe { (*(*list).0.get()).pop() } {
        // SAFETY: registered for `obj` on this thread, not yet run.
        unsafe { dtor(obj) };
    }
    // Later registrations go to glibc, which runs them in this same pass.
    MINE.with(|m| m.set(null_mut()));
    // SAFETY: made by `install`, no longer reachable through `MINE`; its
    // killer frees it only for a thread that never got here.
    drop(unsafe { Box::from_raw(list) });
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

/// Frees a killed thread's list without running it.
///
/// # Safety
///
/// `list` is what [`install`] returned on a thread that has ended without
/// reaching [`run`] (it was ended where it stood, and joined).
pub(crate) unsafe fn forget(list: *mut Dtors) {
    // SAFETY: the caller's contract: nothing else has it or will.
    drop(unsafe { Box::from_raw(list) });
    LIVE.fetch_sub(1, Ordering::Relaxed);
}
