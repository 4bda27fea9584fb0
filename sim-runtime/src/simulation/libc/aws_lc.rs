//! AWS-LC's randomness from the seed (aws-lc-rs: rustls's and reqwest's
//! default crypto provider).
//!
//! AWS-LC seeds each thread's generator from a tree of DRBGs rooted in CPU
//! jitter entropy (timed with `rdtsc`) and mixes `RDRAND` into every draw:
//! neither is a call the simulation sees, so keys, nonces and session
//! tickets differed from run to run of a seed. AWS-LC picks its entropy
//! source through two statics of its own (`entropy_source_methods_override`
//! and `allow_entropy_source_methods_override`, the hook its tests use):
//! found in the executable's symbol table (cstate.rs), they are pointed at
//! [`SEEDED`], whose seed and extra entropy come from `getrandom` (the
//! seed's stream inside a simulation, the kernel's outside) and which has
//! no prediction-resistance source (no `RDRAND`). Installed once per
//! process, before the first simulation's code runs, and kept: a thread's
//! generator made outside any simulation draws from the kernel as before.
//! (Simulations of an executable with AWS-LC take turns all the same, for
//! its static locks: cstate.rs.)

use libc::{c_int, c_void};
use std::sync::atomic::{compiler_fence, AtomicBool, Ordering};

/// AWS-LC's `struct entropy_source_methods` (its
/// `crypto/fipsmodule/rand/entropy/internal.h`).
#[repr(C)]
struct Methods {
    initialize: unsafe extern "C" fn(*mut c_void) -> c_int,
    zeroize_thread: unsafe extern "C" fn(*mut c_void),
    free_thread: unsafe extern "C" fn(*mut c_void),
    get_seed: unsafe extern "C" fn(*const c_void, *mut u8) -> c_int,
    get_extra_entropy: Option<unsafe extern "C" fn(*const c_void, *mut u8) -> c_int>,
    get_prediction_resistance: Option<unsafe extern "C" fn(*const c_void, *mut u8) -> c_int>,
    /// `OVERRIDDEN_ENTROPY_SOURCE`.
    id: c_int,
}

/// `CTR_DRBG_ENTROPY_LEN`: what `get_seed` and `get_extra_entropy` fill.
const ENTROPY_LEN: usize = 48;

static SEEDED: Methods = Methods {
    initialize: ready,
    zeroize_thread: nothing,
    free_thread: nothing,
    get_seed: fill,
    get_extra_entropy: Some(fill),
    get_prediction_resistance: None,
    id: 0,
};

/// `initialize`: nothing to set up.
extern "C" fn ready(_: *mut c_void) -> c_int {
    1
}

/// `zeroize_thread` and `free_thread`: no per-thread state.
extern "C" fn nothing(_: *mut c_void) {}

/// Fills AWS-LC's `ENTROPY_LEN`-byte buffer from `getrandom`: 1, or 0 (AWS-LC
/// then aborts, as for any failed entropy source) if it cannot.
///
/// # Safety
///
/// `out` is writable for `ENTROPY_LEN` bytes (AWS-LC's contract).
unsafe extern "C" fn fill(_: *const c_void, out: *mut u8) -> c_int {
    let mut done = 0;
    while done < ENTROPY_LEN {
        // SAFETY: the caller's contract; `getrandom` writes at most the
        // length asked. Inside a simulation it is the interposer.
        let n = unsafe { libc::getrandom(out.add(done).cast(), ENTROPY_LEN - done, 0) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return 0;
        }
        done += n as usize;
    }
    1
}

/// Points every copy of AWS-LC in the executable at [`SEEDED`] (once per
/// process): the methods' pointers first, then the flags that make AWS-LC
/// read them, so no thread finds a flag set with no methods.
///
/// # Safety
///
/// `methods` are the addresses of AWS-LC's `entropy_source_methods_override`
/// (a pointer) and `allow` of its `allow_entropy_source_methods_override`
/// (an `int`), statics for the whole process.
pub(super) unsafe fn install(methods: &[usize], allow: &[usize]) {
    static DONE: AtomicBool = AtomicBool::new(false);
    if methods.is_empty() || allow.is_empty() || DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    for &at in methods {
        // SAFETY: the caller's contract; AWS-LC reads it only once the flag
        // below is set.
        unsafe { (at as *mut *const Methods).write_volatile(&SEEDED) };
    }
    compiler_fence(Ordering::SeqCst);
    std::sync::atomic::fence(Ordering::SeqCst);
    for &at in allow {
        // SAFETY: the caller's contract.
        unsafe { (at as *mut c_int).write_volatile(1) };
    }
}
