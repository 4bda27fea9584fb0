//! Injected faults: plain data, defaults none.

use std::path::{Path, PathBuf};

/// Which kind of operation an injected `EIO` hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoOp {
    /// Reading a file's bytes.
    Read,
    /// Writing a file's bytes, or changing its length.
    Write,
    /// `fsync`/`fdatasync` of a file or directory.
    Sync,
}

/// One `EIO` rule: operations of kind `op` on files under `path` (every
/// file of the disk when `None`) fail with `EIO` until the rule is removed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Eio {
    pub op: IoOp,
    /// An absolute path; the rule covers it and everything below it
    /// (component-wise prefix, as `Path::starts_with`).
    pub path: Option<PathBuf>,
}

/// A disk's fault plan. The default is no faults at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Persistent `EIO` rules.
    pub eio: Vec<Eio>,
    /// Bytes of file data the disk holds before writes fail with `ENOSPC`
    /// (`None`: unlimited).
    pub capacity_bytes: Option<u64>,
    /// The next this-many syncs fail with `EIO` (each failure uses one).
    pub failing_syncs: u32,
    /// A crash keeps a seeded prefix of each file's unsynced writes instead
    /// of none of them.
    pub torn_writes: bool,
}

impl Faults {
    /// Checks the plan is well-formed (panics with the reason otherwise).
    pub fn validate(&self) {
        for rule in &self.eio {
            if let Some(p) = &rule.path {
                assert!(
                    p.is_absolute(),
                    "sim-fs: an EIO rule's path must be absolute, got {p:?}"
                );
            }
        }
    }

    /// Whether an `EIO` rule covers `op` on `path`.
    pub(crate) fn eio_hits(&self, op: IoOp, path: &Path) -> bool {
        self.eio
            .iter()
            .any(|r| r.op == op && r.path.as_deref().is_none_or(|p| path.starts_with(p)))
    }
}

/// A fault that fired, for the caller's record (the runtime folds these
/// into the run's fingerprint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fired {
    /// An `EIO` rule failed an operation on this inode.
    Eio(IoOp, u64),
    /// A write or extension of this inode hit the capacity.
    NoSpace(u64),
    /// A one-shot failing sync hit this inode.
    SyncFailed(u64),
}

impl Fired {
    /// A stable number for the record.
    pub fn code(self) -> u64 {
        match self {
            Fired::Eio(op, ino) => ((op as u64 + 1) << 56) | ino,
            Fired::NoSpace(ino) => (8 << 56) | ino,
            Fired::SyncFailed(ino) => (9 << 56) | ino,
        }
    }
}
