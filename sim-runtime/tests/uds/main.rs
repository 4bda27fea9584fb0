//! The Unix-domain socket conformance suite: one set of tests for
//! `tokio::net::{UnixListener, UnixStream, UnixDatagram}` and
//! `tokio::net::unix`, compiled twice and asserting the same outcomes.
//!
//! - In a production build, `sim_runtime::net` is real Tokio and every test
//!   runs on real Unix sockets in a real temporary directory (`tempfile`).
//!   This is the reference: what the tests assert is what Linux does.
//! - Under `--cfg simulation`, the same tests run on the simulated sockets,
//!   whose path names are socket files on the node's simulated disk (in
//!   `/tmp/uds`, made for each test), with the seed from `SIM_SEED` or the
//!   fixed default.
//!
//! ```text
//! cargo test -p sim-runtime --test uds
//! RUSTFLAGS="--cfg simulation" CARGO_TARGET_DIR=target/sim cargo test -p sim-runtime --test uds
//! ```
//!
//! Errors are checked by kind and Linux errno. Where the simulation
//! deliberately differs, the difference is a named exception, and these are
//! all of them:
//!
//! - `EXCEPTION_ROOT_BYPASSES_PERMISSIONS`
//!   ([`exception_root_bypasses_permissions`]): a real process running as
//!   root may bind in a read-only directory and connect to a socket file it
//!   may not write; the simulated process is never root, so it always gets
//!   `EACCES`.
//! - `EXCEPTION_SIMULATED_CREDENTIALS` (`conformance::peer_cred_is_this_process`):
//!   `peer_cred` reports the real process's uid, gid and pid; the simulated
//!   process is uid 1000, gid 1000, pid `1000 + node index` (the main node
//!   is 0).
//!
//! - `EXCEPTION_PAIR_QUEUE_LENGTH` (`conformance::writable_stays_ready_until_a_send_would_block`):
//!   Linux skips the `net.unix.max_dgram_qlen` check when the receiver is
//!   connected back to the sender (a `UnixDatagram::pair`), so such a queue
//!   is bounded by the send buffer only (a few hundred small datagrams);
//!   the simulation bounds every datagram queue at 11.
//!
//! `files` checks the socket files a path bind makes against the file
//! system calls (`stat`, `read_dir`, `remove_file`, `open`) in both modes.
//! `sim_only` (simulation only) tests what has no production counterpart:
//! per-node namespaces and disks, node kills and crashes, and determinism.

/// Names the failure-mode rows (the tables in sim-net's and sim-fs's crate
/// docs) a test checks; `cargo xtask tidy` reads the claims from the source.
/// (Only the simulation-only suite claims rows.)
#[cfg_attr(not(simulation), allow(unused_macros))]
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}

mod conformance;
mod files;
mod pipe;
#[cfg(simulation)]
mod sim_only;

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Linux's errno values the suite expects (x86_64).
pub mod errno {
    pub const ENOENT: i32 = 2;
    pub const ENXIO: i32 = 6;
    pub const EACCES: i32 = 13;
    pub const ENOTDIR: i32 = 20;
    pub const EINVAL: i32 = 22;
    pub const EPIPE: i32 = 32;
    pub const EMSGSIZE: i32 = 90;
    pub const EPROTOTYPE: i32 = 91;
    pub const EADDRINUSE: i32 = 98;
    pub const ECONNRESET: i32 = 104;
    pub const ENOTCONN: i32 = 107;
    pub const ECONNREFUSED: i32 = 111;
}

/// Whether a real process here passes permission checks it should fail:
/// as root it does (`CAP_DAC_OVERRIDE`); the simulated process never is
/// root.
pub fn exception_root_bypasses_permissions() -> bool {
    !cfg!(simulation)
        && std::fs::metadata("/proc/self").is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid() == 0
        })
}

/// How long anything that must happen may take before the test fails
/// instead of hanging. Never a measurement.
pub const BOUND: Duration = Duration::from_secs(5);

/// The runtime both modes build (in simulation, a fresh simulation).
pub fn rt() -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `test` with a fresh, empty directory for socket paths: a real
/// temporary directory in production, `/tmp/uds` on the simulated disk.
pub fn with_dir<F, Fut>(test: F)
where
    F: FnOnce(PathBuf) -> Fut,
    Fut: Future<Output = ()>,
{
    #[cfg(not(simulation))]
    let tmp = tempfile::tempdir().unwrap();
    #[cfg(not(simulation))]
    let base = tmp.path().to_path_buf();
    #[cfg(simulation)]
    let base = PathBuf::from("/tmp/uds");
    rt().block_on(async move {
        // A no-op for the real temporary directory.
        sim_runtime::fs::create_dir_all(&base).await.unwrap();
        test(base).await
    });
}

/// Awaits `f`, failing the test if it does not finish within [`BOUND`].
pub async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    match sim_runtime::time::timeout(BOUND, f).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: did not happen within {BOUND:?}"),
    }
}

/// Polls `f` once: whether it is ready now, without waiting.
pub async fn poll_once<F: Future>(mut f: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx))).await
}

/// Asserts `r` failed with `kind` and the raw errno `code`.
#[track_caller]
pub fn assert_err<T: std::fmt::Debug>(r: io::Result<T>, kind: io::ErrorKind, code: i32) {
    let e = r.expect_err("expected an error");
    assert_eq!(e.kind(), kind, "{e}");
    assert_eq!(e.raw_os_error(), Some(code), "{e}");
}

/// Asserts `r` failed with the raw errno `code` (for errno values std
/// gives no stable kind, such as `EPROTOTYPE`'s).
#[track_caller]
pub fn assert_errno<T: std::fmt::Debug>(r: io::Result<T>, code: i32) {
    let e = r.expect_err("expected an error");
    assert_eq!(e.raw_os_error(), Some(code), "{e}");
}
