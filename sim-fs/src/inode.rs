//! Inodes: what a file, directory, symlink or socket file is, in the page
//! cache and on the durable medium.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::SystemTime;

/// An inode number. Never reused within one `Fs`.
pub type Ino = u64;

/// What an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    /// A Unix socket's file, made by `bind(2)` (`S_IFSOCK`): a name with
    /// no data, which the network model's socket holds by inode number.
    Socket,
}

/// A change to a file's data not yet made durable, in the order it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pending {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

impl Pending {
    pub(crate) fn apply(&self, data: &mut Vec<u8>) {
        match self {
            Pending::Write { offset, bytes } => write_at(data, *offset, bytes),
            Pending::SetLen(len) => data.resize(*len as usize, 0),
        }
    }
}

/// Writes `bytes` at `offset`, zero-filling any gap past the end.
pub(crate) fn write_at(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let offset = offset as usize;
    let end = offset + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset..end].copy_from_slice(bytes);
    assert!(data.len() >= end);
}

/// A regular file's bytes: what reads see (the page cache), what a crash
/// keeps (the durable medium), and the writes in between.
#[derive(Clone, Debug, Default)]
pub(crate) struct FileData {
    /// What reads see.
    pub data: Vec<u8>,
    /// What survives a crash.
    pub durable: Vec<u8>,
    /// Unsynced changes in order: `durable` with these applied is `data`,
    /// unless a failed sync dropped some of them (`lost_writeback`).
    pub pending: Vec<Pending>,
    /// A failed sync dropped writes from the writeback: the cache still
    /// shows them, the medium never will.
    pub lost_writeback: bool,
}

impl FileData {
    /// The oracle: replaying the unsynced changes on the durable bytes gives
    /// the cached bytes, unless writeback was lost.
    pub(crate) fn check(&self) {
        if self.lost_writeback {
            return;
        }
        let mut replay = self.durable.clone();
        for p in &self.pending {
            p.apply(&mut replay);
        }
        assert!(
            replay == self.data,
            "sim-fs: the durable bytes plus the pending writes differ from the page cache"
        );
    }

    /// Makes every pending change durable.
    pub(crate) fn sync(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            p.apply(&mut self.durable);
        }
        if !self.lost_writeback {
            assert!(self.durable == self.data);
        }
    }
}

/// A directory's entries, cached and durable.
#[derive(Clone, Debug, Default)]
pub(crate) struct DirData {
    pub entries: BTreeMap<OsString, Ino>,
    /// The entries as of the last sync of this directory.
    pub durable: BTreeMap<OsString, Ino>,
    /// The directory that holds this one (itself for the root).
    pub parent: Ino,
}

#[derive(Clone, Debug)]
pub(crate) enum Body {
    File(FileData),
    Dir(DirData),
    Symlink(PathBuf),
    Socket,
}

/// Metadata that `sync_all` makes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Permission bits (`0o7777`), without the file-type bits.
    pub mode: u32,
    pub accessed: SystemTime,
    pub modified: SystemTime,
    pub changed: SystemTime,
}

#[derive(Clone, Debug)]
pub(crate) struct Inode {
    pub body: Body,
    pub meta: Meta,
    pub durable_meta: Meta,
    pub created: SystemTime,
    /// Directory entries naming this inode (the root counts as named once;
    /// `stat` reports a directory's count as Linux does, from its
    /// subdirectories).
    pub links: u32,
    /// Open file descriptions referring to it.
    pub open: u32,
}

impl Inode {
    pub(crate) fn new(body: Body, mode: u32, now: SystemTime) -> Inode {
        let meta = Meta {
            mode,
            accessed: now,
            modified: now,
            changed: now,
        };
        Inode {
            body,
            meta,
            durable_meta: meta,
            created: now,
            links: 0,
            open: 0,
        }
    }

    pub(crate) fn kind(&self) -> FileKind {
        match self.body {
            Body::File(_) => FileKind::File,
            Body::Dir(_) => FileKind::Dir,
            Body::Symlink(_) => FileKind::Symlink,
            Body::Socket => FileKind::Socket,
        }
    }

    /// Bytes it occupies in the capacity accounting: a file's cached length.
    pub(crate) fn charged_bytes(&self) -> u64 {
        match &self.body {
            Body::File(f) => f.data.len() as u64,
            _ => 0,
        }
    }

    /// Whether it is still reachable: named by a directory, or open.
    pub(crate) fn is_live(&self) -> bool {
        self.links > 0 || self.open > 0
    }

    pub(crate) fn dir(&self) -> Option<&DirData> {
        match &self.body {
            Body::Dir(d) => Some(d),
            _ => None,
        }
    }

    pub(crate) fn dir_mut(&mut self) -> Option<&mut DirData> {
        match &mut self.body {
            Body::Dir(d) => Some(d),
            _ => None,
        }
    }

    pub(crate) fn file_mut(&mut self) -> Option<&mut FileData> {
        match &mut self.body {
            Body::File(f) => Some(f),
            _ => None,
        }
    }

    pub(crate) fn touch(&mut self, now: SystemTime) {
        self.meta.modified = now;
        self.meta.changed = now;
    }
}
