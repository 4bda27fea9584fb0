//! `read_dir`, `ReadDir` and `DirEntry`.

use super::metadata::{self, FileType, Metadata};
use super::std_op;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::task::{Context, Poll};

/// Lists a directory. The listing is taken when `read_dir` runs (Tokio
/// reads it in chunks as you go; entries added or removed meanwhile may or
/// may not appear there, so a program cannot rely on either). Entries come
/// in name order; `.` and `..` are not listed.
///
/// It is std's `read_dir`, served from the node's disk by the interposers
/// (libc/fs/dir.rs), read to the end and closed at once: each entry's
/// type is std's `FileType`, from the listing as on Linux (metadata.rs).
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    let path = path.as_ref().to_path_buf();
    let listed = std_op("tokio::fs::read_dir", move || metadata::list(&path)).await?;
    let entries = listed
        .into_iter()
        .map(|e| DirEntry {
            path: e.path,
            name: e.name,
            ino: e.ino,
            file_type: e.file_type,
        })
        .collect();
    Ok(ReadDir { entries })
}

/// The entries of a directory, as Tokio's `ReadDir`.
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct ReadDir {
    entries: VecDeque<DirEntry>,
}

impl ReadDir {
    /// The next entry, or `None` at the end.
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        Ok(self.entries.pop_front())
    }

    pub fn poll_next_entry(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<Option<DirEntry>>> {
        Poll::Ready(Ok(self.entries.pop_front()))
    }
}

/// An entry of a directory listing, as Tokio's `DirEntry`.
#[derive(Debug)]
pub struct DirEntry {
    path: PathBuf,
    name: OsString,
    ino: u64,
    file_type: FileType,
}

impl DirEntry {
    /// The directory's path as given to `read_dir`, joined with the name.
    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }

    pub fn file_name(&self) -> OsString {
        self.name.clone()
    }

    /// The entry's metadata, not following a symlink (as std's).
    pub async fn metadata(&self) -> io::Result<Metadata> {
        super::symlink_metadata(self.path()).await
    }

    /// The entry's type, as listed (no system call, as on Linux).
    pub async fn file_type(&self) -> io::Result<FileType> {
        Ok(self.file_type)
    }

    pub fn ino(&self) -> u64 {
        self.ino
    }
}
