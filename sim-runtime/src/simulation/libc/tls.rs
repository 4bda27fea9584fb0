//! A thread that runs seed after seed, each as if on a new thread: its
//! thread-locals start as they were when the thread began, and what a run
//! left in them is destroyed when it ends, as a thread's exit would.
//!
//! Every seed must find a thread's locals fresh (rand's `ThreadRng`, the
//! keys of std's `RandomState`, a user's `thread_local!`), or its run would
//! depend on which seeds ran before it on that worker. A fresh OS thread
//! per seed gives that at about 46 µs a seed (docs/perf.md), more than a
//! small seed's whole run. A [`Fresh`] thread gives it without a thread:
//!
//! - [`begin`], first thing on a thread the harness started, copies the
//!   executable's block of static thread-locals (its `PT_TLS` segment, as
//!   this thread holds it) and notes which pthread keys hold a value;
//! - from then on, `__cxa_thread_atexit_impl` (where std and C++ register
//!   a thread-local's destructor) keeps the destructors on the thread's own
//!   list instead of glibc's;
//! - [`reset_fresh_thread`], after each run, runs those destructors (last
//!   registered first, as glibc does at a thread's exit), then clears the
//!   pthread keys set since (calling their destructors, as glibc does
//!   after the thread-locals'), and copies the block back. The simulator's
//!   own caches (`core::hooks::KEPT`: capacity, no state of a run) are
//!   moved out first and back in after, as a long-lived thread keeps them.
//!
//! What the block held when the thread began is std's own (the thread's
//! `Thread` handle, libtest's output capture, the stack guard) and is the
//! same after every reset. glibc's own thread-locals (`errno`, malloc's
//! cache) live in libc's block and are kept, as they carry no state of a
//! program's. Thread-locals of other shared objects are kept too: only the
//! executable's are reset (a `dlopen`ed library's would not be).
//! Destructors registered through glibc before [`begin`] run at the
//! thread's real exit, as before.

use super::sys::Real;
use crate::simulation::core::hooks::{Slot, KEPT};
use libc::{c_int, c_void, pthread_key_t};
use std::cell::Cell;
use std::ptr::null_mut;

use crate::simulation::thread::spin::SpinCell;

type Dtor = unsafe extern "C" fn(*mut c_void);

static REAL_CXA_THREAD_ATEXIT_IMPL: Real = Real::new(c"__cxa_thread_atexit_impl");
static REAL_PTHREAD_KEY_CREATE: Real = Real::new(c"pthread_key_create");
static REAL_PTHREAD_KEY_DELETE: Real = Real::new(c"pthread_key_delete");

/// Every live pthread key made through [`pthread_key_create`], with its
/// destructor.
static KEYS: SpinCell<Vec<(pthread_key_t, Option<Dtor>)>> = SpinCell::new(Vec::new());

/// glibc runs a thread's key destructors up to this many rounds
/// (`PTHREAD_DESTRUCTOR_ITERATIONS`), for destructors that set keys again.
const ROUNDS: usize = 4;

thread_local! {
    /// The calling thread's [`Fresh`] state, null on any other thread.
    /// `const` and without a destructor: reading it registers nothing,
    /// and it is readable while the thread's locals are destroyed.
    static FRESH: Cell<*mut State> = const { Cell::new(null_mut()) };
}

struct State {
    /// The executable's thread-local block on this thread.
    block: *mut u8,
    /// Its bytes when the thread began.
    image: Box<[u8]>,
    /// Destructors registered since, in order.
    dtors: Vec<(Dtor, *mut c_void)>,
    /// The keys that held a value when the thread began: std's own.
    kept_keys: Vec<pthread_key_t>,
}

/// Held by a thread whose thread-locals [`reset_fresh_thread`] makes new
/// again. Dropped, it destroys what the last run left and lets glibc take
/// registrations again.
pub struct Fresh {
    state: *mut State,
}

/// Makes the calling thread a [`Fresh`] one, or `None` where it cannot be
/// (another platform, an executable without thread-locals, a thread that
/// is one already): the caller then starts a new OS thread per run.
///
/// Call it first thing on a thread the caller started, before any code
/// whose thread-locals it wants fresh: thread-locals alive at this point
/// are copied back as they were now at every reset, so one that changes
/// afterwards would have its old bytes put back.
pub fn begin() -> Option<Fresh> {
    if !FRESH.with(Cell::get).is_null() {
        return None;
    }
    let (block, len) = executable_block()?;
    let kept_keys = KEYS.with(|keys| {
        keys.iter()
            // SAFETY: a live key (deleted ones leave the list).
            .filter(|(k, _)| !unsafe { libc::pthread_getspecific(*k) }.is_null())
            .map(|(k, _)| *k)
            .collect()
    });
    let state = Box::into_raw(Box::new(State {
        block,
        image: Box::default(),
        dtors: Vec::new(),
        kept_keys,
    }));
    FRESH.with(|f| f.set(state));
    // The image is taken with `FRESH` set, so every reset keeps it set.
    // SAFETY: `block` is this thread's block of `len` bytes
    // (`executable_block`), readable; `state` is ours, just made.
    unsafe {
        (*state).image = std::slice::from_raw_parts(block, len).into();
    }
    Some(Fresh { state })
}

/// Whether the calling thread is a [`Fresh`] one.
pub fn on_fresh_thread() -> bool {
    !FRESH.with(Cell::get).is_null()
}

/// On a [`Fresh`] thread, destroys what the run left in the thread's
/// locals and puts them back as they were when the thread began; elsewhere
/// nothing.
///
/// Call it where no thread-local is borrowed (not inside a
/// `LocalKey::with`): after it, every one is new.
pub fn reset_fresh_thread() {
    let state = FRESH.with(Cell::get);
    if state.is_null() {
        return;
    }
    // The simulator's own caches stay (core::hooks::KEPT): capacity only.
    let mut kept: Vec<Slot> = KEPT
        .iter()
        .map(|k| {
            let mut slot = None;
            (k.out)(&mut slot);
            slot
        })
        .collect();
    destroy(state);
    // SAFETY: `state` is this thread's (set by `begin`, freed only after
    // it is cleared), `block` its block and `image` as long; nothing
    // borrows a thread-local (the caller's contract), and their
    // destructors have run.
    unsafe {
        let s = &*state;
        std::ptr::copy_nonoverlapping(s.image.as_ptr(), s.block, s.image.len());
    }
    for (k, slot) in KEPT.iter().zip(&mut kept) {
        (k.into)(slot);
    }
}

/// Runs the destructors registered since the thread began, and those of
/// the pthread keys set since, until none is left.
fn destroy(state: *mut State) {
    for _ in 0..ROUNDS {
        let mut ran = false;
        // One at a time: a destructor may register another.
        // SAFETY: `state` is this thread's; no reference into it is held
        // while a destructor runs.
        while let Some((dtor, obj)) = unsafe { (*state).dtors.pop() } {
            ran = true;
            // SAFETY: registered for `obj` on this thread, not yet run.
            unsafe { dtor(obj) };
        }
        ran |= clear_keys(state);
        if !ran {
            return;
        }
    }
}

/// Clears each key set since the thread began and calls its destructor;
/// `true` if any was set.
fn clear_keys(state: *mut State) -> bool {
    let keys = KEYS.with(|keys| keys.clone());
    let mut any = false;
    for (key, dtor) in keys {
        // SAFETY: `state` is this thread's; read only.
        if unsafe { (*state).kept_keys.contains(&key) } {
            continue;
        }
        // SAFETY: a key made by `pthread_key_create` and not deleted.
        let value = unsafe { libc::pthread_getspecific(key) };
        if value.is_null() {
            continue;
        }
        any = true;
        // SAFETY: as above; as glibc does, the value is cleared before its
        // destructor runs.
        unsafe { libc::pthread_setspecific(key, null_mut()) };
        if let Some(dtor) = dtor {
            // SAFETY: the key's destructor, on its value.
            unsafe { dtor(value) };
        }
    }
    any
}

impl Drop for Fresh {
    fn drop(&mut self) {
        reset_fresh_thread();
        FRESH.with(|f| f.set(null_mut()));
        // SAFETY: made by `begin`, no longer reachable through `FRESH`.
        drop(unsafe { Box::from_raw(self.state) });
    }
}

/// The executable's static thread-local block on the calling thread, and
/// its length: `None` if it has none.
fn executable_block() -> Option<(*mut u8, usize)> {
    let mut found: Option<(usize, usize)> = None;
    // SAFETY: the callback gets a valid `dl_phdr_info` for the duration of
    // each call; `data` is `found`, alive for the whole iteration.
    unsafe {
        libc::dl_iterate_phdr(
            Some(first_object),
            (&mut found as *mut Option<(usize, usize)>).cast(),
        );
    }
    found.map(|(block, len)| (block as *mut u8, len))
}

/// For the first object (the executable, as glibc lists it): its block on
/// the calling thread and its size, into the `Option` at `data`; then
/// stops the iteration.
///
/// # Safety
///
/// As `dl_iterate_phdr` calls it, with `data` the `Option<(usize, usize)>`
/// [`executable_block`] passed.
unsafe extern "C" fn first_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the loader passes a valid `info` whose `dlpi_phdr` has
    // `dlpi_phnum` entries; `data` is the caller's `Option`.
    unsafe {
        let info = &*info;
        let out = &mut *data.cast::<Option<(usize, usize)>>();
        let headers = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
        if let Some(tls) = headers.iter().find(|h| h.p_type == libc::PT_TLS) {
            if info.dlpi_tls_modid != 0 && !info.dlpi_tls_data.is_null() && tls.p_memsz > 0 {
                *out = Some((info.dlpi_tls_data as usize, tls.p_memsz as usize));
            }
        }
    }
    1
}

/// `__cxa_thread_atexit_impl`: where std and C++ register a thread-local's
/// destructor. On a [`Fresh`] thread it is kept for the next reset; on a
/// simulated thread, on the thread's own list (thread/dtors.rs); on any
/// other, glibc's.
///
/// # Safety
///
/// glibc's contract: `dtor` may be called once with `obj` when the thread
/// ends.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cxa_thread_atexit_impl(
    dtor: Dtor,
    obj: *mut c_void,
    dso: *mut c_void,
) -> c_int {
    let state = FRESH.with(Cell::get);
    if !state.is_null() {
        // SAFETY: this thread's state (set by `begin`, cleared before it
        // is freed); no reference into it is held across this call.
        unsafe { (*state).dtors.push((dtor, obj)) };
        return 0;
    }
    // A simulated thread's: its own list (thread/dtors.rs).
    if crate::simulation::thread::dtors::keep(dtor, obj) {
        return 0;
    }
    // SAFETY: glibc's definition, with the caller's arguments.
    unsafe {
        real!(REAL_CXA_THREAD_ATEXIT_IMPL as fn(Dtor, *mut c_void, *mut c_void) -> c_int)(
            dtor, obj, dso,
        )
    }
}

/// `pthread_key_create(3)`: glibc's, and the key noted with its destructor
/// so that a [`Fresh`] reset can clear what a run set.
///
/// # Safety
///
/// The C contract of `pthread_key_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_key_create(key: *mut pthread_key_t, dtor: Option<Dtor>) -> c_int {
    // SAFETY: glibc's definition, with the caller's arguments.
    let rc = unsafe {
        real!(REAL_PTHREAD_KEY_CREATE as fn(*mut pthread_key_t, Option<Dtor>) -> c_int)(key, dtor)
    };
    if rc == 0 {
        // SAFETY: glibc wrote the new key.
        let k = unsafe { *key };
        KEYS.with(|keys| {
            keys.retain(|(old, _)| *old != k);
            keys.push((k, dtor));
        });
    }
    rc
}

/// `pthread_key_delete(3)`: glibc's; the key is forgotten.
///
/// # Safety
///
/// The C contract of `pthread_key_delete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_key_delete(key: pthread_key_t) -> c_int {
    KEYS.with(|keys| keys.retain(|(k, _)| *k != key));
    // SAFETY: glibc's definition, with the caller's argument.
    unsafe { real!(REAL_PTHREAD_KEY_DELETE as fn(pthread_key_t) -> c_int)(key) }
}
