//! The file system: the inode table and the namespace operations (create,
//! link, rename, remove, stat, read a directory).

use crate::errno::*;
use crate::faults::{Faults, Fired};
use crate::file::Desc;
use crate::inode::{Body, DirData, FileData, FileKind, Ino, Inode};
use crate::journal::{abs, Op};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The permission mask applied to modes given at creation (the usual
/// `umask` of 022).
pub const UMASK: u32 = 0o022;
/// The length `stat` reports for a directory (ext4's block).
pub const DIR_LEN: u64 = 4096;

/// What `stat` says about an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub ino: Ino,
    pub kind: FileKind,
    /// Permission bits (`0o7777`), without the file-type bits.
    pub mode: u32,
    pub nlink: u64,
    pub len: u64,
    pub accessed: SystemTime,
    pub modified: SystemTime,
    pub changed: SystemTime,
    pub created: SystemTime,
}

impl Stat {
    /// `st_mode`: the file-type bits and the permission bits.
    pub fn st_mode(&self) -> u32 {
        let kind = match self.kind {
            FileKind::File => 0o100_000,
            FileKind::Dir => 0o040_000,
            FileKind::Symlink => 0o120_000,
            FileKind::Socket => 0o140_000,
        };
        kind | self.mode
    }
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: OsString,
    pub ino: Ino,
    pub kind: FileKind,
}

/// One node's file system: in memory, synchronous, deterministic.
#[derive(Debug)]
pub struct Fs {
    pub(crate) inodes: BTreeMap<Ino, Inode>,
    pub(crate) root: Ino,
    pub(crate) next_ino: Ino,
    /// Open file descriptions (what `dup` shares: the cursor and flags).
    pub(crate) descs: BTreeMap<u64, Desc>,
    pub(crate) next_desc: u64,
    /// File descriptors, each naming a description. Never reused.
    pub(crate) fds: BTreeMap<u64, u64>,
    pub(crate) next_fd: u64,
    pub(crate) faults: Faults,
    /// File bytes held by live inodes (checked against capacity).
    pub(crate) used_bytes: u64,
    pub(crate) fired: Vec<Fired>,
    /// The operations a crash can undo, when an observer asked for them
    /// (journal.rs); `None` (and never built) otherwise.
    pub(crate) journal: Option<Vec<crate::journal::Op>>,
}

impl Fs {
    /// A fresh disk holding `/` and `/tmp` (mode 0o1777), created at `now`.
    pub fn new(now: SystemTime) -> Fs {
        let root = 1;
        let mut root_inode = Inode::new(Body::Dir(DirData::default()), 0o755, now);
        root_inode.dir_mut().unwrap().parent = root;
        root_inode.links = 1;
        let mut fs = Fs {
            inodes: BTreeMap::from([(root, root_inode)]),
            root,
            next_ino: root + 1,
            descs: BTreeMap::new(),
            next_desc: 1,
            fds: BTreeMap::new(),
            next_fd: 3,
            faults: Faults::default(),
            used_bytes: 0,
            fired: Vec::new(),
            journal: None,
        };
        fs.create_dir(Path::new("/tmp"), 0o1777, now)
            .expect("sim-fs: a fresh disk has room for /tmp");
        fs.set_mode(Path::new("/tmp"), 0o1777, now).unwrap();
        // A fresh disk is a formatted one: all of it is durable.
        fs.sync_everything();
        fs.check();
        fs
    }

    /// The fault plan in force.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Replaces the fault plan.
    pub fn set_faults(&mut self, faults: Faults) {
        faults.validate();
        self.faults = faults;
    }

    /// The faults that fired since the last call, oldest first.
    pub fn take_fired(&mut self) -> Vec<Fired> {
        std::mem::take(&mut self.fired)
    }

    /// Bytes of file data held (what the capacity limits).
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// Inodes held, live or kept for a crash to bring back.
    pub fn inode_count(&self) -> usize {
        self.inodes.len()
    }

    pub(crate) fn inode(&self, ino: Ino) -> &Inode {
        self.inodes
            .get(&ino)
            .expect("sim-fs: an inode in use exists")
    }

    pub(crate) fn inode_mut(&mut self, ino: Ino) -> &mut Inode {
        self.inodes
            .get_mut(&ino)
            .expect("sim-fs: an inode in use exists")
    }

    pub(crate) fn dir(&self, ino: Ino) -> &DirData {
        self.inode(ino)
            .dir()
            .expect("sim-fs: path resolution only walks directories")
    }

    pub(crate) fn dir_mut(&mut self, ino: Ino) -> &mut DirData {
        self.inode_mut(ino)
            .dir_mut()
            .expect("sim-fs: path resolution only walks directories")
    }

    pub(crate) fn alloc(&mut self, body: Body, mode: u32, now: SystemTime) -> Ino {
        let ino = self.next_ino;
        self.next_ino += 1;
        let prev = self
            .inodes
            .insert(ino, Inode::new(body, mode & 0o7777, now));
        assert!(prev.is_none(), "sim-fs: inode numbers are never reused");
        ino
    }

    /// Adds `name → ino` to `dir`.
    pub(crate) fn link_entry(&mut self, dir: Ino, name: OsString, ino: Ino, now: SystemTime) {
        let d = self.dir_mut(dir);
        let prev = d.entries.insert(name, ino);
        assert!(prev.is_none(), "sim-fs: linking over an existing entry");
        self.inode_mut(dir).touch(now);
        let was_live = self.inode(ino).is_live();
        let i = self.inode_mut(ino);
        i.links += 1;
        i.meta.changed = now;
        if !was_live {
            self.used_bytes += self.inode(ino).charged_bytes();
        }
        if let Body::Dir(d) = &mut self.inode_mut(ino).body {
            d.parent = dir;
        }
    }

    /// Removes `name` from `dir`, releasing the inode it named.
    pub(crate) fn unlink_entry(&mut self, dir: Ino, name: &OsString, now: SystemTime) -> Ino {
        let ino = self
            .dir_mut(dir)
            .entries
            .remove(name)
            .expect("sim-fs: unlinking an entry that exists");
        self.inode_mut(dir).touch(now);
        let i = self.inode_mut(ino);
        assert!(i.links > 0);
        i.links -= 1;
        i.meta.changed = now;
        self.release_if_dead(ino);
        ino
    }

    /// An inode no directory names and nobody has open no longer counts
    /// against the capacity. Its storage is freed at once unless a durable
    /// entry still names it (a crash would bring it back); then it stays
    /// until that entry goes (see `collect_garbage`).
    pub(crate) fn release_if_dead(&mut self, ino: Ino) {
        let i = self.inode(ino);
        if !i.is_live() {
            let bytes = i.charged_bytes();
            assert!(self.used_bytes >= bytes);
            self.used_bytes -= bytes;
            let durably_named = self
                .inodes
                .values()
                .filter_map(Inode::dir)
                .any(|d| d.durable.values().any(|&e| e == ino));
            if !durably_named {
                self.inodes.remove(&ino);
            }
        }
    }

    /// Frees dead inodes that no durable directory entry names.
    pub(crate) fn collect_garbage(&mut self) {
        let mut named = std::collections::BTreeSet::new();
        for i in self.inodes.values() {
            if let Some(d) = i.dir() {
                named.extend(d.durable.values().copied());
            }
        }
        self.inodes
            .retain(|ino, i| i.is_live() || named.contains(ino));
    }

    /// Checks the namespace is writable by its owner (the simulated process
    /// is never root).
    fn check_writable_dir(&self, dir: Ino) -> io::Result<()> {
        if self.inode(dir).meta.mode & 0o200 == 0 {
            return fail(EACCES);
        }
        Ok(())
    }

    // ----- namespace operations -------------------------------------------

    /// `stat` (`follow`) or `lstat`.
    pub fn stat(&self, path: &Path, follow: bool) -> io::Result<Stat> {
        let ino = self.lookup(path, follow)?;
        Ok(self.stat_ino(ino))
    }

    pub(crate) fn stat_ino(&self, ino: Ino) -> Stat {
        let i = self.inode(ino);
        let (len, nlink) = match &i.body {
            Body::File(f) => (f.data.len() as u64, u64::from(i.links)),
            Body::Symlink(t) => (t.as_os_str().len() as u64, u64::from(i.links)),
            Body::Socket => (0, u64::from(i.links)),
            Body::Dir(d) => {
                let subdirs = d
                    .entries
                    .values()
                    .filter(|&&e| matches!(self.inode(e).body, Body::Dir(_)))
                    .count() as u64;
                (DIR_LEN, if i.links == 0 { 0 } else { 2 + subdirs })
            }
        };
        Stat {
            ino,
            kind: i.kind(),
            mode: i.meta.mode,
            nlink,
            len,
            accessed: i.meta.accessed,
            modified: i.meta.modified,
            changed: i.meta.changed,
            created: i.created,
        }
    }

    /// `mkdir`: `mode` is masked by [`UMASK`].
    pub fn create_dir(&mut self, path: &Path, mode: u32, now: SystemTime) -> io::Result<()> {
        let r = self.resolve(path, false)?;
        let (Some(name), None) = (r.name, r.ino) else {
            return fail(EEXIST);
        };
        self.check_writable_dir(r.parent)?;
        let ino = self.alloc(Body::Dir(DirData::default()), mode & !UMASK, now);
        self.link_entry(r.parent, name, ino, now);
        self.journal(|| Op::Mkdir(abs(path)));
        Ok(())
    }

    /// `unlink`.
    pub fn remove_file(&mut self, path: &Path, now: SystemTime) -> io::Result<()> {
        let r = self.resolve(path, false)?;
        let Some(ino) = r.ino else {
            return fail(ENOENT);
        };
        let Some(name) = r.name else {
            return fail(EISDIR);
        };
        if self.inode(ino).kind() == FileKind::Dir {
            return fail(EISDIR);
        }
        self.check_writable_dir(r.parent)?;
        self.unlink_entry(r.parent, &name, now);
        self.journal(|| Op::Unlink(abs(path)));
        Ok(())
    }

    /// `rmdir`.
    pub fn remove_dir(&mut self, path: &Path, now: SystemTime) -> io::Result<()> {
        let r = self.resolve(path, false)?;
        let Some(ino) = r.ino else {
            return fail(ENOENT);
        };
        if self.inode(ino).kind() != FileKind::Dir {
            return fail(ENOTDIR);
        }
        let Some(name) = r.name else {
            return fail(if ino == self.root { EBUSY } else { EINVAL });
        };
        if !self.dir(ino).entries.is_empty() {
            return fail(ENOTEMPTY);
        }
        self.check_writable_dir(r.parent)?;
        self.unlink_entry(r.parent, &name, now);
        self.journal(|| Op::Rmdir(abs(path)));
        Ok(())
    }

    /// Removes `path` and, for a directory, everything below it (as std's
    /// `remove_dir_all`: a symlink is removed, not followed).
    pub fn remove_dir_all(&mut self, path: &Path, now: SystemTime) -> io::Result<()> {
        let ino = self.lookup(path, false)?;
        match self.inode(ino).kind() {
            FileKind::Symlink => self.remove_file(path, now),
            FileKind::File | FileKind::Socket => fail(ENOTDIR),
            FileKind::Dir => {
                let names: Vec<OsString> = self.dir(ino).entries.keys().cloned().collect();
                for name in names {
                    let child = path.join(&name);
                    match self.inode(self.dir(ino).entries[&name]).kind() {
                        FileKind::Dir => self.remove_dir_all(&child, now)?,
                        _ => self.remove_file(&child, now)?,
                    }
                }
                self.remove_dir(path, now)
            }
        }
    }

    /// `rename`: replaces an existing destination atomically, as Linux does.
    pub fn rename(&mut self, from: &Path, to: &Path, now: SystemTime) -> io::Result<()> {
        let src = self.resolve(from, false)?;
        let Some(src_ino) = src.ino else {
            return fail(ENOENT);
        };
        let dst = self.resolve(to, false)?;
        let (Some(src_name), Some(dst_name)) = (src.name, dst.name) else {
            return fail(EBUSY);
        };
        let src_kind = self.inode(src_ino).kind();
        if src_kind != FileKind::Dir && (src.trailing_slash || dst.trailing_slash) {
            return fail(ENOTDIR);
        }
        if src_kind == FileKind::Dir {
            // A directory cannot move below itself.
            let mut d = dst.parent;
            loop {
                if d == src_ino {
                    return fail(EINVAL);
                }
                if d == self.root {
                    break;
                }
                d = self.dir(d).parent;
            }
        }
        if let Some(dst_ino) = dst.ino {
            if dst_ino == src_ino {
                return Ok(());
            }
            match (src_kind, self.inode(dst_ino).kind()) {
                (FileKind::Dir, FileKind::Dir) if !self.dir(dst_ino).entries.is_empty() => {
                    return fail(ENOTEMPTY);
                }
                (FileKind::Dir, FileKind::Dir) => {}
                (FileKind::Dir, _) => return fail(ENOTDIR),
                (_, FileKind::Dir) => return fail(EISDIR),
                _ => {}
            }
        }
        self.check_writable_dir(src.parent)?;
        self.check_writable_dir(dst.parent)?;
        if dst.ino.is_some() {
            self.unlink_entry(dst.parent, &dst_name, now);
        }
        // Move the entry: the inode keeps its one name throughout, so it
        // never looks dead to the capacity accounting.
        let ino = self.dir_mut(src.parent).entries.remove(&src_name).unwrap();
        assert_eq!(ino, src_ino);
        self.inode_mut(src.parent).touch(now);
        let prev = self.dir_mut(dst.parent).entries.insert(dst_name, ino);
        assert!(prev.is_none(), "sim-fs: the destination entry was removed");
        self.inode_mut(dst.parent).touch(now);
        let moved = self.inode_mut(ino);
        moved.meta.changed = now;
        if let Body::Dir(d) = &mut moved.body {
            d.parent = dst.parent;
        }
        self.journal(|| Op::Rename {
            from: abs(from),
            to: abs(to),
        });
        Ok(())
    }

    /// `link`: a new name for a file (never a directory: `EPERM`). A
    /// symlink is linked itself, not followed (`linkat` without a flag).
    pub fn hard_link(&mut self, original: &Path, link: &Path, now: SystemTime) -> io::Result<()> {
        let ino = self.lookup(original, false)?;
        if self.inode(ino).kind() == FileKind::Dir {
            return fail(EPERM);
        }
        let r = self.resolve(link, false)?;
        let (Some(name), None) = (r.name, r.ino) else {
            return fail(EEXIST);
        };
        if r.trailing_slash {
            return fail(ENOENT);
        }
        self.check_writable_dir(r.parent)?;
        self.link_entry(r.parent, name, ino, now);
        self.journal(|| Op::Link {
            original: abs(original),
            link: abs(link),
        });
        Ok(())
    }

    /// `symlink`: `target` is stored as given, resolved only when followed.
    pub fn symlink(&mut self, target: &Path, link: &Path, now: SystemTime) -> io::Result<()> {
        if target.as_os_str().is_empty() {
            return fail(ENOENT);
        }
        let r = self.resolve(link, false)?;
        let (Some(name), None) = (r.name, r.ino) else {
            return fail(EEXIST);
        };
        self.check_writable_dir(r.parent)?;
        let ino = self.alloc(Body::Symlink(target.to_path_buf()), 0o777, now);
        self.link_entry(r.parent, name, ino, now);
        self.journal(|| Op::Symlink(abs(link)));
        Ok(())
    }

    /// `readlink`.
    pub fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let ino = self.lookup(path, false)?;
        match &self.inode(ino).body {
            Body::Symlink(t) => Ok(t.clone()),
            _ => fail(EINVAL),
        }
    }

    /// `realpath`: the absolute path with every symlink, `.` and `..`
    /// resolved; the path must exist.
    pub fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let r = self.resolve(path, true)?;
        let Some(ino) = r.ino else {
            return fail(ENOENT);
        };
        if self.inode(ino).kind() == FileKind::Dir {
            return Ok(self.dir_path(ino));
        }
        let name = r.name.expect("sim-fs: a non-directory is reached by name");
        Ok(self.dir_path(r.parent).join(name))
    }

    /// `chmod`: the permission bits of what `path` names (following
    /// symlinks).
    pub fn set_mode(&mut self, path: &Path, mode: u32, now: SystemTime) -> io::Result<()> {
        let ino = self.lookup(path, true)?;
        self.set_mode_ino(ino, mode, now);
        Ok(())
    }

    pub(crate) fn set_mode_ino(&mut self, ino: Ino, mode: u32, now: SystemTime) {
        let m = &mut self.inode_mut(ino).meta;
        m.mode = mode & 0o7777;
        m.changed = now;
    }

    /// `utimensat`: access and modification times (`None` leaves one as it
    /// is).
    pub fn set_times(
        &mut self,
        path: &Path,
        accessed: Option<SystemTime>,
        modified: Option<SystemTime>,
        now: SystemTime,
    ) -> io::Result<()> {
        let ino = self.lookup(path, true)?;
        self.set_times_ino(ino, accessed, modified, now);
        Ok(())
    }

    pub(crate) fn set_times_ino(
        &mut self,
        ino: Ino,
        accessed: Option<SystemTime>,
        modified: Option<SystemTime>,
        now: SystemTime,
    ) {
        let m = &mut self.inode_mut(ino).meta;
        if let Some(a) = accessed {
            m.accessed = a;
        }
        if let Some(t) = modified {
            m.modified = t;
        }
        m.changed = now;
    }

    /// The entries of a directory (without `.` and `..`), in name order.
    pub fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let ino = self.lookup(path, true)?;
        let Some(d) = self.inode(ino).dir() else {
            return fail(ENOTDIR);
        };
        Ok(d.entries
            .iter()
            .map(|(name, &ino)| DirEntry {
                name: name.clone(),
                ino,
                kind: self.inode(ino).kind(),
            })
            .collect())
    }

    /// Makes everything durable, as a clean unmount would (used for the
    /// fresh disk).
    pub(crate) fn sync_everything(&mut self) {
        for i in self.inodes.values_mut() {
            i.durable_meta = i.meta;
            match &mut i.body {
                Body::File(f) => f.sync(),
                Body::Dir(d) => d.durable = d.entries.clone(),
                Body::Symlink(_) | Body::Socket => {}
            }
        }
    }

    /// Checks every invariant of the model (slow: for tests and after
    /// crashes).
    pub fn check(&self) {
        let root = self.inode(self.root);
        assert_eq!(root.dir().unwrap().parent, self.root);
        let mut links: BTreeMap<Ino, u32> = BTreeMap::new();
        links.insert(self.root, 1);
        let mut used = 0;
        for (&ino, i) in &self.inodes {
            assert!(ino < self.next_ino);
            if let Body::Dir(d) = &i.body {
                for (name, &child) in &d.entries {
                    assert!(!name.is_empty());
                    *links.entry(child).or_default() += 1;
                    let c = self.inode(child);
                    if let Some(cd) = c.dir() {
                        assert_eq!(cd.parent, ino, "sim-fs: a directory's parent names it");
                    }
                }
            }
            if let Body::File(f) = &i.body {
                f.check();
            }
            if i.is_live() {
                used += i.charged_bytes();
            }
        }
        for (&ino, i) in &self.inodes {
            let named = links.get(&ino).copied().unwrap_or(0);
            assert_eq!(i.links, named, "sim-fs: inode {ino}'s link count");
            if i.kind() == FileKind::Dir {
                assert!(named <= 1, "sim-fs: a directory has one name");
            }
        }
        let mut open: BTreeMap<Ino, u32> = BTreeMap::new();
        for d in self.descs.values() {
            assert!(d.refs > 0);
            *open.entry(d.ino).or_default() += 1;
        }
        for (&ino, i) in &self.inodes {
            assert_eq!(i.open, open.get(&ino).copied().unwrap_or(0));
        }
        assert_eq!(used, self.used_bytes, "sim-fs: capacity accounting");
        for (&fd, desc) in &self.fds {
            assert!(fd < self.next_fd);
            assert!(
                self.descs.contains_key(desc),
                "sim-fs: an fd names a description"
            );
        }
        for (&id, d) in &self.descs {
            let fds = self.fds.values().filter(|&&x| x == id).count() as u32;
            assert_eq!(d.refs, fds, "sim-fs: a description's fd count");
        }
    }
}

/// A file's bytes as a new inode body.
pub(crate) fn new_file() -> Body {
    Body::File(FileData::default())
}
