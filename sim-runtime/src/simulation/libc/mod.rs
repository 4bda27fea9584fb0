//! The libc interposers: `#[no_mangle]` definitions of the C functions
//! through which std, common crates and C libraries reach clocks,
//! randomness, threads, signals, sockets, names and files. Inside a
//! simulation each answers from it; anywhere else it calls glibc's own
//! definition (`sys::Real`, found once with `dlsym(RTLD_NEXT, ..)`).
//!
//! - `sys`: clocks, randomness, OS threads, signals, the raw `syscall`.
//! - `net`: socket calls on std and socket2 sockets, `getaddrinfo`.
//! - `fs`: the file interface on a node's simulated disk.
//! - `cstate`: C libraries' per-process seeded state (SQLite's generator).
//! - `antithesis`: antithesis_sdk's platform library (`dlopen`, `dlsym`),
//!   answered by the simulation, and its per-site trackers.
//! - `thread`: OS threads, futexes, sleeps and yields (thread/).
//! - `refused`: starting a process: a failed run.
//! - `tls`: a thread whose thread-locals start fresh for every run on it
//!   (the harness's seed workers), through `__cxa_thread_atexit_impl` and
//!   the pthread keys.
//!
//! The descriptor tables these calls use are their drivers' (`fs::fd`,
//! `net::fd`): `tokio::fs::File::into_std` and `TcpStream::from_std` use the
//! same tables from the api layer, which may not import this one.
//!
//! Only x86_64 Linux with glibc is supported: elsewhere these modules define
//! no symbols, so the crate still builds, but std's nondeterminism is not
//! intercepted.

/// Casts a resolved glibc address (`sys::Real::get`) to its function type.
/// Used inside the caller's `unsafe` block, whose SAFETY comment covers it:
/// the pointer is glibc's definition of the function named in `$real`, whose
/// C signature is the one written at the call.
#[allow(unused_macros)]
macro_rules! real {
    ($real:ident as fn($($arg:ty),* $(,)?) -> $ret:ty) => {
        std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn($($arg),*) -> $ret>(
            $real.get(),
        )
    };
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod antithesis;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
mod aws_lc;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod cstate;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod fs;
pub(crate) mod net;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod pthread;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod refused;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod sys;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod thread;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod tls;
