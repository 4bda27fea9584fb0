//! `Metadata`, `FileType` and `FileTimes` in Tokio's shapes.
//!
//! Tokio returns `std::fs::Metadata` and `std::fs::FileType`, which only
//! the standard library can construct. The simulation returns its own types
//! with the same method names (and the `MetadataExt`/`FileTypeExt` methods
//! as inherent ones), a deliberate difference listed in ARCHITECTURE.md.
//! `Permissions` is std's own (`PermissionsExt::from_mode` builds it).

use sim_fs::{FileKind, Stat};
use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::time::{SystemTime, UNIX_EPOCH};

/// The owner of every simulated file (the simulated process is never
/// root).
const UID: u32 = 1000;
const GID: u32 = 1000;
/// The simulated disk's device number.
const DEV: u64 = 0x5153;
const BLOCK: u64 = 4096;

/// Metadata about a file, as `std::fs::Metadata` reports it.
#[derive(Clone)]
pub struct Metadata {
    stat: Stat,
}

impl Metadata {
    pub(crate) fn new(stat: Stat) -> Metadata {
        Metadata { stat }
    }

    pub fn file_type(&self) -> FileType {
        FileType(self.stat.kind)
    }

    pub fn is_dir(&self) -> bool {
        self.stat.kind == FileKind::Dir
    }

    pub fn is_file(&self) -> bool {
        self.stat.kind == FileKind::File
    }

    pub fn is_symlink(&self) -> bool {
        self.stat.kind == FileKind::Symlink
    }

    #[allow(clippy::len_without_is_empty)] // std's shape
    pub fn len(&self) -> u64 {
        self.stat.len
    }

    pub fn permissions(&self) -> std::fs::Permissions {
        std::fs::Permissions::from_mode(self.stat.st_mode())
    }

    pub fn modified(&self) -> io::Result<SystemTime> {
        Ok(self.stat.modified)
    }

    pub fn accessed(&self) -> io::Result<SystemTime> {
        Ok(self.stat.accessed)
    }

    pub fn created(&self) -> io::Result<SystemTime> {
        Ok(self.stat.created)
    }

    // `std::os::unix::fs::MetadataExt`, as inherent methods.

    pub fn dev(&self) -> u64 {
        DEV
    }

    pub fn ino(&self) -> u64 {
        self.stat.ino
    }

    pub fn mode(&self) -> u32 {
        self.stat.st_mode()
    }

    pub fn nlink(&self) -> u64 {
        self.stat.nlink
    }

    pub fn uid(&self) -> u32 {
        UID
    }

    pub fn gid(&self) -> u32 {
        GID
    }

    pub fn rdev(&self) -> u64 {
        0
    }

    pub fn size(&self) -> u64 {
        self.stat.len
    }

    pub fn atime(&self) -> i64 {
        secs(self.stat.accessed)
    }

    pub fn atime_nsec(&self) -> i64 {
        nanos(self.stat.accessed)
    }

    pub fn mtime(&self) -> i64 {
        secs(self.stat.modified)
    }

    pub fn mtime_nsec(&self) -> i64 {
        nanos(self.stat.modified)
    }

    pub fn ctime(&self) -> i64 {
        secs(self.stat.changed)
    }

    pub fn ctime_nsec(&self) -> i64 {
        nanos(self.stat.changed)
    }

    pub fn blksize(&self) -> u64 {
        BLOCK
    }

    pub fn blocks(&self) -> u64 {
        // 512-byte units, as st_blocks.
        self.stat.len.div_ceil(BLOCK) * (BLOCK / 512)
    }
}

fn secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::from(d.subsec_nanos()))
        .unwrap_or(0)
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metadata")
            .field("file_type", &self.file_type())
            .field("permissions", &self.permissions())
            .field("len", &self.len())
            .field("modified", &self.stat.modified)
            .field("accessed", &self.stat.accessed)
            .field("created", &self.stat.created)
            .finish_non_exhaustive()
    }
}

/// A file's type, as `std::fs::FileType` reports it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileType(pub(crate) FileKind);

impl FileType {
    pub fn is_dir(&self) -> bool {
        self.0 == FileKind::Dir
    }

    pub fn is_file(&self) -> bool {
        self.0 == FileKind::File
    }

    pub fn is_symlink(&self) -> bool {
        self.0 == FileKind::Symlink
    }

    // `std::os::unix::fs::FileTypeExt`: the simulated disk has none of
    // these.

    pub fn is_block_device(&self) -> bool {
        false
    }

    pub fn is_char_device(&self) -> bool {
        false
    }

    pub fn is_fifo(&self) -> bool {
        false
    }

    pub fn is_socket(&self) -> bool {
        false
    }
}

impl fmt::Debug for FileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileType")
            .field("is_file", &self.is_file())
            .field("is_dir", &self.is_dir())
            .field("is_symlink", &self.is_symlink())
            .finish_non_exhaustive()
    }
}

/// Times to set on a file with [`File::set_times`](super::File::set_times).
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
