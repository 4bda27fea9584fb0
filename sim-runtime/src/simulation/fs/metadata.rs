//! Metadata as Tokio returns it: std's `Metadata` and `FileType` (and
//! std's `Permissions`), and Tokio's own `FileTimes`.
//!
//! std's types have no public constructor: only std's own calls make them.
//! Inside a simulation those calls (`statx`, `fstat`, `readdir`) are served
//! from the node's simulated disk by the libc interposers (libc/fs/),
//! so the simulated `tokio::fs` gets its metadata as Tokio does, by calling
//! std: Tokio in `spawn_blocking`, the simulation after the operation's
//! gate ([`super::std_op`]). The model operation std's call reaches is the
//! one `tokio::fs` made itself before (`stat`, `fstat`, a listing), through
//! the same `fs::apply`, so faults, latency and fingerprints are unchanged
//! (no fault fires on these operations). This file is the only one of
//! `tokio::fs` that calls std's file functions.

use std::ffi::OsString;
pub(crate) use std::fs::{FileType, Metadata};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd};
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// std's `metadata` (`follow`) or `symlink_metadata` of `path`.
pub(crate) fn stat(path: &Path, follow: bool) -> io::Result<Metadata> {
    if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    }
}

/// std's `File::metadata` of the open file `fd` names (`statx`, or
/// `fstat`), leaving it open.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Metadata> {
    // SAFETY: `fd` is open for the whole call (it is borrowed), and
    // `ManuallyDrop` keeps std's `File` from closing it.
    let file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd.as_raw_fd()) });
    file.metadata()
}

/// One entry of a directory as std lists it.
pub(crate) struct Listed {
    /// The directory's path as given, joined with the name.
    pub(crate) path: PathBuf,
    pub(crate) name: OsString,
    pub(crate) ino: u64,
    pub(crate) file_type: FileType,
}

/// std's `read_dir` of `path`, read to the end (and so closed).
pub(crate) fn list(path: &Path) -> io::Result<Vec<Listed>> {
    std::fs::read_dir(path)?
        .map(|e| {
            let e = e?;
            Ok(Listed {
                path: e.path(),
                name: e.file_name(),
                ino: e.ino(),
                // From the entry's `d_type`, which the simulated listing
                // always gives: no further call.
                file_type: e.file_type()?,
            })
        })
        .collect()
}

/// Panics unless std's file calls made now are served from the node's
/// simulated disk: they are on x86_64 Linux with glibc (where the
/// interposers exist), on a simulation thread, outside
/// `sim::fs::on_real_disk`. `call` names the `tokio::fs` call.
pub(crate) fn assert_std_reaches_disk(call: &str) {
    let interposed = cfg!(all(
        target_os = "linux",
        target_arch = "x86_64",
        target_env = "gnu"
    ));
    assert!(
        interposed,
        "sim: {call} needs std's file calls served from the simulated disk, which only \
         x86_64 Linux with glibc does (see the README's platform note)"
    );
    assert!(
        super::fd::context().is_some(),
        "sim: {call} was called inside sim::fs::on_real_disk, where std's file calls reach \
         the real disk; await tokio::fs calls outside that scope"
    );
}

/// Times to set on a file with [`File::set_times`](super::File::set_times):
/// Tokio's own type (it has `set_created` only on Windows and Apple
/// systems).
#[derive(Debug, Clone, Default)]
#[must_use = "must be applied to a file via `File::set_times` to have any effect"]
pub struct FileTimes {
    pub(crate) accessed: Option<SystemTime>,
    pub(crate) modified: Option<SystemTime>,
}

impl FileTimes {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_accessed(mut self, t: SystemTime) -> Self {
        self.accessed = Some(t);
        self
    }

    pub fn set_modified(mut self, t: SystemTime) -> Self {
        self.modified = Some(t);
        self
    }
}
