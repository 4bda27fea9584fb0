//! The `tokio::fs` and `std::fs` conformance suites, and the simulated
//! disk's own tests.
//!
//! `conformance` is one set of tests compiled twice: in production against
//! real Tokio on a real temporary directory (`tempfile`), and under
//! `--cfg simulation` against the simulated disk, asserting the same
//! observable outcomes — contents, lengths, kinds, listings, cursors, and
//! for every error both its `ErrorKind` and its raw errno.
//! `std_conformance` is the same through `std::fs` and the
//! `std::os::unix::fs` extensions (positioned reads and writes, locks,
//! custom open flags, `MetadataExt`, timestamps), called inside the
//! runtime's `block_on`: in a simulation that is on a node, so the libc
//! calls std makes reach the node's simulated disk (intercept_fs).
//!
//! Where the two differ, the difference is a named exception, and these are
//! all of them:
//!
//! - `EXCEPTION_ROOT_BYPASSES_PERMISSIONS` (see
//!   [`exception_root_bypasses_permissions`]): a real process running as
//!   root may open a read-only file for writing; the simulated process is
//!   never root, so it always gets `EACCES`.
//! - `EXCEPTION_DIRECTORY_LENGTH` (no code: not asserted): a directory's
//!   length is file-system specific (ext4 4096, tmpfs varies); the
//!   simulation reports 4096, the suite never compares it.
//! - `EXCEPTION_READ_DIR_ORDER` (no code: listings are sorted before they are
//!   compared): real `read_dir` order is arbitrary; the simulation lists in
//!   name order.
//! - `EXCEPTION_ALLOCATED_BLOCKS` (no code: bounded, not compared): the
//!   blocks a file occupies (`st_blocks`) are file-system specific (ext4
//!   allocates 4096-byte blocks, so 8 for a 5-byte file); the simulation
//!   reports the length rounded up to 512-byte units. Both report an
//!   `st_blksize` of 4096 and at least the length.
//!
//! `durability` and `faults` (simulation only) test what has no production
//! counterpart: crashes, kills, the page cache, injected faults, latency,
//! and that a simulated run never reaches the real disk. `std_interop`
//! (simulation only) checks that `std::fs` and `tokio::fs` on one node are
//! one disk (one file open through both at once) and that a crash treats
//! what `std::fs` wrote as it treats `tokio::fs`'s writes.
//!
//! `gaps` holds what Tokio's own tests (`cargo xtask compat`) found missing
//! from the simulated disk, in both modes where the outcome does not depend
//! on who runs it.

/// Names the failure-mode rows (the tables in sim-net's and sim-fs's crate
/// docs) a test checks; `cargo xtask tidy` reads the claims from the source.
/// (Only the simulation-only suites claim rows.)
#[cfg_attr(not(simulation), allow(unused_macros))]
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}

mod conformance;
#[cfg(simulation)]
mod durability;
#[cfg(simulation)]
mod faults;
mod gaps;
mod std_conformance;
#[cfg(simulation)]
mod std_interop;

use std::future::Future;
use std::io;
use std::path::PathBuf;

/// Linux's errno values the suite expects (x86_64).
pub mod errno {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const EBADF: i32 = 9;
    pub const EACCES: i32 = 13;
    pub const EEXIST: i32 = 17;
    pub const ENOTDIR: i32 = 20;
    pub const EISDIR: i32 = 21;
    pub const EINVAL: i32 = 22;
    pub const ENOSPC: i32 = 28;
    pub const ENAMETOOLONG: i32 = 36;
    pub const ENOTEMPTY: i32 = 39;
    pub const ELOOP: i32 = 40;
    pub const EIO: i32 = 5;
}

/// `open(2)` flags the suite passes through `custom_flags` (x86_64 Linux).
pub mod oflag {
    pub const O_RDWR: i32 = 0o2;
    pub const O_DSYNC: i32 = 0o10000;
    pub const O_DIRECTORY: i32 = 0o200000;
    pub const O_NOFOLLOW: i32 = 0o400000;
    pub const O_SYNC: i32 = 0o4010000;
}

/// Whether a real process here may open a read-only file for writing: as
/// root it may (`CAP_DAC_OVERRIDE`); the simulated process never is root.
#[cfg(not(simulation))]
pub fn exception_root_bypasses_permissions() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe");
    std::fs::write(&probe, b"").unwrap();
    let mut perm = std::fs::metadata(&probe).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&probe, perm).unwrap();
    std::fs::OpenOptions::new().write(true).open(&probe).is_ok()
}

/// See [`exception_root_bypasses_permissions`].
#[cfg(simulation)]
pub fn exception_root_bypasses_permissions() -> bool {
    EXCEPTION_ROOT_BYPASSES_PERMISSIONS
}

/// The simulated process is never root: permission bits always apply.
#[cfg(simulation)]
pub const EXCEPTION_ROOT_BYPASSES_PERMISSIONS: bool = false;

/// The runtime both modes build: real Tokio in production, a simulation
/// (seed from `SIM_SEED`, fixed by default) under `--cfg simulation`.
pub fn rt() -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `test` with a fresh, empty base directory: a real temporary
/// directory in production, `/tmp/conformance` on the simulated disk.
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
    let base = PathBuf::from("/tmp/conformance");
    rt().block_on(async move {
        sim_runtime::fs::create_dir_all(&base).await.unwrap();
        test(base).await
    });
}

/// Asserts `r` failed with `kind` and the raw errno `code`.
#[track_caller]
pub fn assert_err<T: std::fmt::Debug>(r: io::Result<T>, kind: io::ErrorKind, code: i32) {
    let e = r.expect_err("expected an error");
    assert_eq!(e.kind(), kind, "{e}");
    assert_eq!(e.raw_os_error(), Some(code), "{e}");
}

/// Asserts `r` failed with the raw errno `code` (for kinds std has not
/// stabilised, such as `ELOOP`'s and `ENAMETOOLONG`'s).
#[track_caller]
pub fn assert_errno<T: std::fmt::Debug>(r: io::Result<T>, code: i32) {
    let e = r.expect_err("expected an error");
    assert_eq!(e.raw_os_error(), Some(code), "{e}");
}
