//! Open files: descriptors, their shared cursors, and the data path
//! (read, write, seek, set_len, sync).

use crate::errno::*;
use crate::faults::{Fired, IoOp};
use crate::fs::{new_file, Stat, UMASK};
use crate::inode::{write_at, Body, FileKind, Ino, Pending};
use crate::journal::{abs, Op};
use crate::Fs;
use std::io::{self, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A file descriptor. Never reused within one `Fs`, so a stale one is
/// `EBADF`, never someone else's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fd(pub u64);

/// `open(2)`'s flags, as `std::fs::OpenOptions` sets them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenFlags {
    pub read: bool,
    pub write: bool,
    pub append: bool,
    pub truncate: bool,
    pub create: bool,
    pub create_new: bool,
    /// Permission bits for a created file, before the [`UMASK`].
    pub mode: u32,
    /// `O_DIRECTORY`: fail with `ENOTDIR` unless a directory.
    pub directory: bool,
    /// `O_NOFOLLOW`: fail with `ELOOP` if the last component is a symlink.
    pub nofollow: bool,
    /// `O_SYNC`/`O_DSYNC`: each write is durable before it returns.
    pub sync_writes: bool,
    /// The flags come from `open(2)` itself: Linux's rules apply, not
    /// std's checks of the combination (a read-only `O_CREAT` creates the
    /// file, as C programs' lock files expect).
    pub raw: bool,
}

/// `O_DIRECTORY`, `O_NOFOLLOW`, `O_DSYNC` and `O_SYNC` on Linux x86_64.
pub const O_DIRECTORY: i32 = 0o200_000;
pub const O_NOFOLLOW: i32 = 0o400_000;
pub const O_DSYNC: i32 = 0o10_000;
pub const O_SYNC: i32 = 0o4_010_000;

impl OpenFlags {
    /// Applies the `custom_flags` this model understands; the others (such
    /// as `O_CLOEXEC`, `O_NOATIME`, `O_DIRECT`) change nothing it models.
    pub fn with_custom_flags(mut self, flags: i32) -> OpenFlags {
        self.directory |= flags & O_DIRECTORY != 0;
        self.nofollow |= flags & O_NOFOLLOW != 0;
        self.sync_writes |= flags & O_DSYNC != 0;
        self
    }
}

/// An open file description: what `dup` (and `try_clone`) share.
#[derive(Clone, Debug)]
pub(crate) struct Desc {
    pub ino: Ino,
    pub pos: u64,
    pub read: bool,
    pub write: bool,
    pub append: bool,
    pub sync_writes: bool,
    /// The absolute path it was opened by, for fault rules.
    pub path: PathBuf,
    /// Descriptors naming it.
    pub refs: u32,
    /// Its `flock` lock: `Some(true)` exclusive, `Some(false)` shared.
    pub lock: Option<bool>,
}

/// How a descriptor was opened (`fcntl(F_GETFL)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub read: bool,
    pub write: bool,
    pub append: bool,
    pub sync_writes: bool,
}

/// A `flock(2)` request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lock {
    Shared,
    Exclusive,
    Unlock,
}

impl Fs {
    /// `open(2)`, with std's checks of the flag combination first.
    pub fn open(&mut self, path: &Path, flags: OpenFlags, now: SystemTime) -> io::Result<Fd> {
        let writable = flags.write || flags.append;
        if !flags.read && !writable {
            return fail(EINVAL);
        }
        if !flags.raw && (flags.truncate || flags.create || flags.create_new) && !writable {
            return fail(EINVAL);
        }
        if !flags.raw && flags.append && flags.truncate && !flags.create_new {
            return fail(EINVAL);
        }
        let follow = !flags.create_new && !flags.nofollow;
        let r = self.resolve(path, follow)?;
        let ino = match r.ino {
            Some(ino) => {
                if flags.create_new {
                    return fail(EEXIST);
                }
                let i = self.inode(ino);
                match i.kind() {
                    FileKind::Symlink => return fail(ELOOP),
                    FileKind::Dir if writable => return fail(EISDIR),
                    FileKind::File | FileKind::Socket if flags.directory => return fail(ENOTDIR),
                    _ => {}
                }
                if flags.read && i.meta.mode & 0o400 == 0 {
                    return fail(EACCES);
                }
                if writable && i.meta.mode & 0o200 == 0 {
                    return fail(EACCES);
                }
                if i.kind() == FileKind::Socket {
                    // A socket file passes the permission checks, then has
                    // no `open` of its own (Linux's `sock_no_open`); it is
                    // never truncated.
                    return fail(ENXIO);
                }
                if flags.truncate {
                    self.truncate_ino(ino, 0, now)?;
                }
                ino
            }
            None => {
                if !flags.create && !flags.create_new {
                    return fail(ENOENT);
                }
                let Some(name) = r.name else {
                    return fail(EISDIR);
                };
                if r.trailing_slash {
                    return fail(EISDIR);
                }
                if self.inode(r.parent).meta.mode & 0o200 == 0 {
                    return fail(EACCES);
                }
                let ino = self.alloc(new_file(), flags.mode & !UMASK, now);
                self.link_entry(r.parent, name, ino, now);
                self.journal(|| Op::Create(abs(path)));
                ino
            }
        };
        let desc = self.next_desc;
        self.next_desc += 1;
        self.descs.insert(
            desc,
            Desc {
                ino,
                pos: 0,
                read: flags.read,
                write: writable,
                append: flags.append,
                sync_writes: flags.sync_writes,
                path: crate::path::absolute(path),
                refs: 0,
                lock: None,
            },
        );
        self.inode_mut(ino).open += 1;
        Ok(self.new_fd(desc))
    }

    fn new_fd(&mut self, desc: u64) -> Fd {
        let fd = self.next_fd;
        self.next_fd += 1;
        self.fds.insert(fd, desc);
        self.descs.get_mut(&desc).unwrap().refs += 1;
        Fd(fd)
    }

    fn desc(&self, fd: Fd) -> io::Result<&Desc> {
        match self.fds.get(&fd.0) {
            Some(d) => Ok(&self.descs[d]),
            None => fail(EBADF),
        }
    }

    fn desc_mut(&mut self, fd: Fd) -> io::Result<&mut Desc> {
        match self.fds.get(&fd.0) {
            Some(d) => Ok(self.descs.get_mut(d).unwrap()),
            None => fail(EBADF),
        }
    }

    /// Whether `fd` is open.
    pub fn is_open(&self, fd: Fd) -> bool {
        self.fds.contains_key(&fd.0)
    }

    /// The path `fd` was opened by.
    pub fn fd_path(&self, fd: Fd) -> io::Result<PathBuf> {
        Ok(self.desc(fd)?.path.clone())
    }

    /// How `fd` was opened (`fcntl(F_GETFL)`).
    pub fn access(&self, fd: Fd) -> io::Result<Access> {
        let d = self.desc(fd)?;
        Ok(Access {
            read: d.read,
            write: d.write,
            append: d.append,
            sync_writes: d.sync_writes,
        })
    }

    /// `fcntl(F_SETFL)`: the flags Linux lets it change that the model
    /// knows (`O_APPEND`).
    pub fn set_append(&mut self, fd: Fd, append: bool) -> io::Result<()> {
        self.desc_mut(fd)?.append = append;
        Ok(())
    }

    /// The entries of the directory `fd` names (without `.` and `..`), in
    /// name order.
    pub fn read_dir_fd(&self, fd: Fd) -> io::Result<Vec<crate::DirEntry>> {
        let ino = self.desc(fd)?.ino;
        let Some(d) = self.inode(ino).dir() else {
            return fail(ENOTDIR);
        };
        Ok(d.entries
            .iter()
            .map(|(name, &ino)| crate::DirEntry {
                name: name.clone(),
                ino,
                kind: self.inode(ino).kind(),
            })
            .collect())
    }

    /// The inode `fd` names.
    pub fn fd_ino(&self, fd: Fd) -> io::Result<Ino> {
        Ok(self.desc(fd)?.ino)
    }

    /// `flock(2)`, never blocking: a lock is held by the open file
    /// description (shared by `dup`), and a request that another
    /// description's lock on the same inode refuses fails with `EAGAIN`
    /// (`EWOULDBLOCK`). Converting one's own lock is allowed, and as on
    /// Linux it is not atomic: the lock held is removed first, so a refused
    /// conversion leaves the description holding none. Closing the
    /// description's last descriptor releases it.
    pub fn flock(&mut self, fd: Fd, lock: Lock) -> io::Result<()> {
        let desc = *self.fds.get(&fd.0).ok_or_else(|| err(EBADF))?;
        let ino = self.descs[&desc].ino;
        let want = match lock {
            Lock::Unlock => None,
            Lock::Shared => Some(false),
            Lock::Exclusive => Some(true),
        };
        let held = &mut self.descs.get_mut(&desc).unwrap().lock;
        if *held == want {
            return Ok(());
        }
        *held = None;
        let Some(want) = want else {
            return Ok(());
        };
        let refused = self
            .descs
            .iter()
            .filter(|&(&k, d)| k != desc && d.ino == ino)
            .filter_map(|(_, d)| d.lock)
            .any(|held| held || want);
        if refused {
            return fail(EAGAIN);
        }
        self.descs.get_mut(&desc).unwrap().lock = Some(want);
        Ok(())
    }

    /// `fallocate(2)` in its default mode: the file is at least
    /// `offset + len` bytes long afterwards (zeros, taking room as
    /// `set_len` does); a shorter range changes nothing.
    pub fn allocate(&mut self, fd: Fd, offset: u64, len: u64, now: SystemTime) -> io::Result<()> {
        let d = self.desc(fd)?;
        if !d.write {
            return fail(EBADF);
        }
        let ino = d.ino;
        let Body::File(f) = &self.inode(ino).body else {
            return fail(if self.inode(ino).kind() == FileKind::Dir {
                EISDIR
            } else {
                EINVAL
            });
        };
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= i64::MAX as u64)
            .ok_or_else(|| err(EINVAL))?;
        if end <= f.data.len() as u64 {
            return Ok(());
        }
        self.eio_rule(fd, IoOp::Write)?;
        self.truncate_ino(ino, end, now)?;
        if self.desc(fd)?.sync_writes {
            self.sync_ino(ino, true);
        }
        Ok(())
    }

    /// `dup(2)`: a new descriptor sharing the description (and cursor).
    pub fn dup(&mut self, fd: Fd) -> io::Result<Fd> {
        let desc = *self.fds.get(&fd.0).ok_or_else(|| err(EBADF))?;
        Ok(self.new_fd(desc))
    }

    /// `close(2)`.
    pub fn close(&mut self, fd: Fd) -> io::Result<()> {
        let Some(desc) = self.fds.remove(&fd.0) else {
            return fail(EBADF);
        };
        let d = self.descs.get_mut(&desc).unwrap();
        assert!(d.refs > 0);
        d.refs -= 1;
        if d.refs == 0 {
            let ino = d.ino;
            self.descs.remove(&desc);
            let i = self.inode_mut(ino);
            assert!(i.open > 0);
            i.open -= 1;
            self.release_if_dead(ino);
        }
        Ok(())
    }

    /// Closes every descriptor (the process died).
    pub fn close_all(&mut self) {
        let fds: Vec<u64> = self.fds.keys().copied().collect();
        for fd in fds {
            self.close(Fd(fd)).expect("sim-fs: closing an open fd");
        }
        assert!(self.descs.is_empty());
    }

    /// Fails with `EIO` (recording it) when a rule covers `op` on `fd`.
    fn eio_rule(&mut self, fd: Fd, op: IoOp) -> io::Result<()> {
        let d = self.desc(fd)?;
        if self.faults.eio_hits(op, &d.path) {
            let ino = d.ino;
            self.fired.push(Fired::Eio(op, ino));
            return fail(EIO);
        }
        Ok(())
    }

    /// `read(2)` at the cursor, advancing it.
    pub fn read(&mut self, fd: Fd, buf: &mut [u8]) -> io::Result<usize> {
        self.read_inner(fd, buf, None)
    }

    /// `pread(2)`: at `offset`, leaving the cursor where it is.
    pub fn read_at(&mut self, fd: Fd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.read_inner(fd, buf, Some(offset))
    }

    fn read_inner(&mut self, fd: Fd, buf: &mut [u8], at: Option<u64>) -> io::Result<usize> {
        let d = self.desc(fd)?;
        if !d.read {
            return fail(EBADF);
        }
        let (ino, pos) = (d.ino, at.unwrap_or(d.pos));
        let Body::File(f) = &self.inode(ino).body else {
            return fail(EISDIR);
        };
        let len = f.data.len() as u64;
        self.eio_rule(fd, IoOp::Read)?;
        let Body::File(f) = &self.inode(ino).body else {
            unreachable!()
        };
        let n = if pos >= len {
            0
        } else {
            assert!(pos < len && len as usize == f.data.len());
            let n = buf.len().min((len - pos) as usize);
            buf[..n].copy_from_slice(&f.data[pos as usize..pos as usize + n]);
            n
        };
        if at.is_none() {
            self.desc_mut(fd)?.pos = pos + n as u64;
        }
        Ok(n)
    }

    /// Bytes a growth of `ino` by `growth` may take (the rest is `ENOSPC`).
    fn room(&self, growth: u64) -> u64 {
        match self.faults.capacity_bytes {
            None => growth,
            Some(cap) => growth.min(cap.saturating_sub(self.used_bytes)),
        }
    }

    /// `write(2)` at the cursor (at the end in append mode), advancing it.
    /// Near the capacity it writes what fits (a short write); with no room
    /// at all it fails with `ENOSPC`.
    pub fn write(&mut self, fd: Fd, data: &[u8], now: SystemTime) -> io::Result<usize> {
        self.write_inner(fd, data, None, now)
    }

    /// `pwrite(2)`: at `offset`, leaving the cursor where it is. As on
    /// Linux, a descriptor opened for appending writes at the end anyway.
    pub fn write_at(
        &mut self,
        fd: Fd,
        data: &[u8],
        offset: u64,
        now: SystemTime,
    ) -> io::Result<usize> {
        self.write_inner(fd, data, Some(offset), now)
    }

    fn write_inner(
        &mut self,
        fd: Fd,
        data: &[u8],
        at: Option<u64>,
        now: SystemTime,
    ) -> io::Result<usize> {
        let d = self.desc(fd)?;
        if !d.write {
            return fail(EBADF);
        }
        let (ino, append, sync_writes) = (d.ino, d.append, d.sync_writes);
        let Body::File(f) = &self.inode(ino).body else {
            return fail(EISDIR);
        };
        let len = f.data.len() as u64;
        let pos = if append { len } else { at.unwrap_or(d.pos) };
        self.eio_rule(fd, IoOp::Write)?;
        if data.is_empty() {
            return Ok(0);
        }
        let end = pos
            .checked_add(data.len() as u64)
            .ok_or_else(|| err(EINVAL))?;
        let growth = end.saturating_sub(len);
        let room = self.room(growth);
        // What fits: every byte over existing data, plus `room` new ones.
        let n = data.len().saturating_sub((growth - room) as usize);
        if n == 0 {
            self.fired.push(Fired::NoSpace(ino));
            return fail(ENOSPC);
        }
        let bytes = &data[..n];
        let i = self.inode_mut(ino);
        let f = i.file_mut().unwrap();
        write_at(&mut f.data, pos, bytes);
        // Read back what was written.
        assert!(f.data[pos as usize..pos as usize + n] == *bytes);
        f.pending.push(Pending::Write {
            offset: pos,
            bytes: bytes.to_vec(),
        });
        i.touch(now);
        let new_len = pos + n as u64;
        let grew = new_len.saturating_sub(len);
        assert!(grew <= room);
        if i.is_live() {
            self.used_bytes += grew;
        }
        if at.is_none() {
            self.desc_mut(fd)?.pos = new_len;
        }
        if sync_writes {
            self.sync_ino(ino, true);
        }
        Ok(n)
    }

    /// `lseek(2)`.
    pub fn seek(&mut self, fd: Fd, to: SeekFrom) -> io::Result<u64> {
        let d = self.desc(fd)?;
        let len = match &self.inode(d.ino).body {
            Body::File(f) => f.data.len() as u64,
            _ => 0,
        };
        let (base, off) = match to {
            SeekFrom::Start(n) => (0, i128::from(n)),
            SeekFrom::End(n) => (len, i128::from(n)),
            SeekFrom::Current(n) => (d.pos, i128::from(n)),
        };
        let pos = i128::from(base) + off;
        if pos < 0 || pos > i128::from(i64::MAX) {
            return fail(EINVAL);
        }
        self.desc_mut(fd)?.pos = pos as u64;
        Ok(pos as u64)
    }

    /// The cursor of `fd`.
    pub fn position(&self, fd: Fd) -> io::Result<u64> {
        Ok(self.desc(fd)?.pos)
    }

    /// `ftruncate(2)`: needs a descriptor open for writing (`EINVAL`
    /// otherwise, as Linux).
    pub fn set_len(&mut self, fd: Fd, len: u64, now: SystemTime) -> io::Result<()> {
        let d = self.desc(fd)?;
        if !d.write {
            return fail(EINVAL);
        }
        let ino = d.ino;
        if self.inode(ino).kind() != FileKind::File {
            return fail(EINVAL);
        }
        if len > i64::MAX as u64 {
            return fail(EINVAL);
        }
        self.eio_rule(fd, IoOp::Write)?;
        self.truncate_ino(ino, len, now)?;
        if self.desc(fd)?.sync_writes {
            self.sync_ino(ino, true);
        }
        Ok(())
    }

    fn truncate_ino(&mut self, ino: Ino, len: u64, now: SystemTime) -> io::Result<()> {
        let old = self.inode(ino).charged_bytes();
        let growth = len.saturating_sub(old);
        if self.room(growth) < growth {
            self.fired.push(Fired::NoSpace(ino));
            return fail(ENOSPC);
        }
        let i = self.inode_mut(ino);
        let live = i.is_live();
        let f = i.file_mut().expect("sim-fs: truncating a regular file");
        f.data.resize(len as usize, 0);
        assert_eq!(f.data.len() as u64, len);
        f.pending.push(Pending::SetLen(len));
        i.touch(now);
        if live {
            self.used_bytes = self.used_bytes - old + len;
        }
        Ok(())
    }

    /// `fsync(2)` (`data_only = false`) or `fdatasync(2)`. For a file: its
    /// bytes and length become durable, and with `fsync` its metadata. For
    /// a directory: its entries become durable.
    ///
    /// A failed sync (an `EIO` rule, or one of `failing_syncs`) makes
    /// nothing durable and, as Linux does since 4.13, drops the file's
    /// pending writes from the writeback: the page cache still shows them,
    /// but no later sync will make them durable.
    pub fn sync(&mut self, fd: Fd, data_only: bool) -> io::Result<()> {
        let ino = self.desc(fd)?.ino;
        let failed = match self.eio_rule(fd, IoOp::Sync) {
            Err(e) => Some(e),
            Ok(()) if self.faults.failing_syncs > 0 => {
                self.faults.failing_syncs -= 1;
                self.fired.push(Fired::SyncFailed(ino));
                Some(err(EIO))
            }
            Ok(()) => None,
        };
        match &failed {
            Some(_) => {
                if let Some(f) = self.inode_mut(ino).file_mut() {
                    if !f.pending.is_empty() {
                        f.pending.clear();
                        f.lost_writeback = true;
                    }
                }
            }
            None => self.sync_ino(ino, data_only),
        }
        if self.journal.is_some() {
            let op = Op::Sync {
                path: self.desc(fd)?.path.clone(),
                data_only,
                dir: self.inode(ino).kind() == FileKind::Dir,
                ok: failed.is_none(),
            };
            self.journal(|| op);
        }
        failed.map_or(Ok(()), Err)
    }

    fn sync_ino(&mut self, ino: Ino, data_only: bool) {
        let i = self.inode_mut(ino);
        if !data_only {
            i.durable_meta = i.meta;
        }
        match &mut i.body {
            Body::File(f) => f.sync(),
            Body::Dir(d) => {
                d.durable = d.entries.clone();
                self.collect_garbage();
            }
            Body::Symlink(_) | Body::Socket => {}
        }
    }

    /// `fstat(2)`.
    pub fn fstat(&self, fd: Fd) -> io::Result<Stat> {
        Ok(self.stat_ino(self.desc(fd)?.ino))
    }

    /// `fchmod(2)`.
    pub fn fset_mode(&mut self, fd: Fd, mode: u32, now: SystemTime) -> io::Result<()> {
        let ino = self.desc(fd)?.ino;
        self.set_mode_ino(ino, mode, now);
        Ok(())
    }

    /// `futimens(2)`.
    pub fn fset_times(
        &mut self,
        fd: Fd,
        accessed: Option<SystemTime>,
        modified: Option<SystemTime>,
        now: SystemTime,
    ) -> io::Result<()> {
        let ino = self.desc(fd)?.ino;
        self.set_times_ino(ino, accessed, modified, now);
        Ok(())
    }
}
