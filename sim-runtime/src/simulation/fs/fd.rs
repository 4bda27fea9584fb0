//! File descriptors that simulated code opens through libc (`std::fs`,
//! redb, SQLite, a WAL of its own): the node's simulated disk behind the
//! libc file interface.
//!
//! Inside a simulation, on a node (the test body is node `main`), every
//! path a file call names is a path on that node's [`sim_fs::Fs`], the same
//! disk `tokio::fs` uses: std and tokio see one disk, with its page cache,
//! durable image, faults, kill and crash. The descriptor the call returns
//! is a number from [`FD_FILE`] up (past anything the kernel hands out, and
//! apart from the socket stubs of net/fd.rs), never reused within a run; it
//! names the model's descriptor on the disk of the node that opened it.
//! The table is the simulation thread's, emptied when a simulation starts,
//! so seeds running in parallel in one process each have their own.
//!
//! A dead process touches no disk. While a killed or crashed node's tasks
//! are dropped (the node is already dead), their destructors' file calls
//! (a store that commits and syncs on drop) do nothing: writes and syncs
//! report success, reads fail with `EIO`, opens fail with `EIO`. Neither a
//! power loss nor SIGKILL runs a destructor, so nothing they do may reach
//! the disk. A descriptor of an earlier incarnation used by a later one
//! (kept in a static) is `EBADF`, as in a fresh process.
//!
//! Three device files are served without a disk: `/dev/urandom` and
//! `/dev/random` read from the seeded stream (as `getrandom` does),
//! `/dev/null` and `/dev/zero` behave as Linux's. The host's CA roots are
//! served read-only where the node's disk has no such name (host.rs).
//!
//! Outside a simulation, on another thread, or inside [`hooks::on_real_disk`],
//! every call is the real one.

use crate::simulation::core::executor::{current, Exec};
use crate::simulation::core::hooks;
use crate::simulation::core::node::NodeId;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

/// The first simulated file descriptor (net/fd.rs's stubs end below it).
pub(crate) const FD_FILE: i32 = crate::simulation::net::fd::FD_BASE + (1 << 28);
/// One past the last: net/fd.rs's live socket descriptors start here.
pub(crate) const FD_FILE_END: i32 = crate::simulation::net::fd::FD_LIVE;

/// An errno.
pub(crate) type Errno = i32;
pub(crate) type Res<T> = Result<T, Errno>;

/// What a simulated descriptor names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A file or directory on the node's disk.
    File(sim_fs::Fd),
    /// `/dev/urandom` or `/dev/random`: the seeded stream.
    Random,
    /// `/dev/null`.
    Null,
    /// `/dev/zero`.
    Zero,
    /// A host file or directory (host.rs): its open file description.
    Host(u32),
}

#[derive(Clone, Copy, Debug)]
struct Handle {
    node: NodeId,
    incarnation: u32,
    kind: Kind,
    cloexec: bool,
    /// The number of a `tokio::fs::File`'s model descriptor, lent by
    /// `AsRawFd`: closing it leaves the model's descriptor to the `File`.
    borrowed: bool,
}

thread_local! {
    static TABLE: RefCell<BTreeMap<i32, Handle>> = const { RefCell::new(BTreeMap::new()) };
    static NEXT: Cell<i32> = const { Cell::new(FD_FILE) };
}

hooks::carried!(
    TABLE_CARRIED: (BTreeMap<i32, Handle>, i32),
    take: || (TABLE.with(|t| std::mem::take(&mut *t.borrow_mut())), NEXT.with(Cell::get)),
    put: |(t, n): (BTreeMap<i32, Handle>, i32)| {
        TABLE.with(|c| *c.borrow_mut() = t);
        NEXT.with(|c| c.set(n));
    },
);

#[linkme::distributed_slice(hooks::INTERPOSERS)]
static TABLE_PER_SIMULATION: hooks::Interposer = hooks::Interposer {
    start: reset,
    stop: hooks::Interposer::nothing,
};

/// Empties the table: a new simulation starts with no files open.
fn reset() {
    let _ = TABLE.try_with(|t| t.borrow_mut().clear());
    let _ = NEXT.try_with(|n| n.set(FD_FILE));
}

/// Whether `fd` is in the simulated files' range (one comparison: every
/// real descriptor is below it).
#[inline]
pub(crate) fn in_range(fd: i32) -> bool {
    (FD_FILE..FD_FILE_END).contains(&fd)
}

/// Where a path call of this thread goes: the simulation and node whose
/// disk serves it, or `None` for the real disk.
pub(crate) struct Ctx {
    exec: Rc<Exec>,
    node: NodeId,
}

/// The context of a path call made now, or `None` when it goes to the real
/// disk (no simulation on this thread, or inside [`hooks::on_real_disk`]).
#[inline]
pub(crate) fn context() -> Option<Ctx> {
    if hooks::real_disk() {
        return None;
    }
    let exec = current()?;
    let node = exec.current_node();
    Some(Ctx { exec, node })
}

/// Fails the run as a forbidden operation: a file call the simulation
/// cannot serve honestly (`call` names it, `why` says why). Called from C
/// functions: never panics; the message also goes to stderr at once.
pub(crate) fn refuse(call: &str, why: &str) {
    let msg =
        format!("sim: {call} is not supported in simulation: {why} (see docs/breakage.md#files)");
    let line = format!("{msg}\n");
    // SAFETY: `line` is a valid byte slice for its whole length.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    if let Some(exec) = current() {
        if let Some(mut core) = exec.try_core_mut() {
            core.fail(crate::simulation::core::report::Class::Forbidden, msg);
        }
    }
}

/// Whether `fd` is one of this thread's simulated descriptors.
pub(crate) fn is_open(fd: i32) -> bool {
    in_range(fd) && handle(fd).is_ok()
}

fn handle(fd: i32) -> Res<Handle> {
    TABLE
        .try_with(|t| t.try_borrow().ok().and_then(|t| t.get(&fd).copied()))
        .ok()
        .flatten()
        .ok_or(libc::EBADF)
}

fn errno(e: io::Error) -> Errno {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// A node's state as file calls need it.
enum Life {
    /// Alive, in this incarnation.
    Alive(u32),
    /// Dead (its tasks are being dropped, or it stays down).
    Dead,
}

/// Runs `f` on `node`'s disk in `exec`. `EIO` (with a line on stderr) when
/// the simulation's state is borrowed: a file call from inside the
/// simulator itself, which it never makes on purpose.
fn on_disk<R>(
    exec: &Exec,
    node: NodeId,
    f: impl FnOnce(Life, &mut sim_fs::Fs, SystemTime) -> Res<R>,
) -> Res<R> {
    let Some(mut core) = exec.try_core_mut() else {
        let msg = b"sim: a file call was made while the simulation's state was in use \
(from inside the simulator); it fails with EIO\n";
        // SAFETY: `msg` is a valid byte slice for its whole length.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        return Err(libc::EIO);
    };
    let n = core.node(node);
    let life = if n.alive {
        Life::Alive(n.incarnation)
    } else {
        Life::Dead
    };
    let out = super::apply(exec, &mut core, node, |fs, now| f(life, fs, now));
    drop(core);
    super::journal::flush(exec);
    out
}

/// The device file `path` names, if it is one the simulation serves.
pub(crate) fn device(path: &Path) -> Option<Kind> {
    match path.as_os_str().as_encoded_bytes() {
        b"/dev/urandom" | b"/dev/random" => Some(Kind::Random),
        b"/dev/null" => Some(Kind::Null),
        b"/dev/zero" => Some(Kind::Zero),
        _ => None,
    }
}

fn insert(node: NodeId, incarnation: u32, kind: Kind, cloexec: bool) -> Res<i32> {
    insert_handle(node, incarnation, kind, cloexec, false)
}

fn insert_handle(
    node: NodeId,
    incarnation: u32,
    kind: Kind,
    cloexec: bool,
    borrowed: bool,
) -> Res<i32> {
    let fd = NEXT
        .try_with(|n| {
            let fd = n.get();
            if fd >= FD_FILE_END {
                return None;
            }
            n.set(fd + 1);
            Some(fd)
        })
        .ok()
        .flatten()
        .ok_or(libc::EMFILE)?;
    TABLE
        .try_with(|t| {
            t.borrow_mut().insert(
                fd,
                Handle {
                    node,
                    incarnation,
                    kind,
                    cloexec,
                    borrowed,
                },
            )
        })
        .map_err(|_| libc::EMFILE)?;
    Ok(fd)
}

/// The flags of `open(2)` as the model takes them.
pub(crate) fn open_flags(flags: i32, mode: u32) -> Res<sim_fs::OpenFlags> {
    if flags & libc::O_TMPFILE == libc::O_TMPFILE {
        // Callers (tempfile) fall back to a named file that they unlink.
        return Err(libc::EOPNOTSUPP);
    }
    let (read, write) = match flags & libc::O_ACCMODE {
        libc::O_RDONLY => (true, false),
        libc::O_WRONLY => (false, true),
        libc::O_RDWR => (true, true),
        _ => return Err(libc::EINVAL),
    };
    let create = flags & libc::O_CREAT != 0;
    Ok(sim_fs::OpenFlags {
        read,
        write,
        append: flags & libc::O_APPEND != 0,
        truncate: flags & libc::O_TRUNC != 0,
        create,
        create_new: create && flags & libc::O_EXCL != 0,
        mode,
        raw: true,
        ..sim_fs::OpenFlags::default()
    }
    .with_custom_flags(flags))
}

impl Ctx {
    /// The absolute path `path` names relative to `dirfd` (`AT_FDCWD`: the
    /// node's working directory, `/`).
    pub(crate) fn at(&self, dirfd: i32, path: &Path) -> Res<PathBuf> {
        if path.as_os_str().is_empty() {
            return Err(libc::ENOENT);
        }
        if path.is_absolute() || dirfd == libc::AT_FDCWD {
            return Ok(Path::new("/").join(path));
        }
        Ok(self.fd_path(dirfd)?.join(path))
    }

    /// The path the simulated descriptor `fd` was opened by.
    pub(crate) fn fd_path(&self, fd: i32) -> Res<PathBuf> {
        let h = handle(fd)?;
        let Kind::File(mfd) = h.kind else {
            return Err(libc::ENOTDIR);
        };
        on_disk(&self.exec, h.node, |_, fs, _| {
            fs.fd_path(mfd).map_err(errno)
        })
    }

    /// Runs a path operation on this node's disk. A dead node's calls (its
    /// destructors, while it is torn down) fail with `EIO` and change
    /// nothing.
    pub(crate) fn path_op<R>(
        &self,
        f: impl FnOnce(&mut sim_fs::Fs, SystemTime) -> io::Result<R>,
    ) -> Res<R> {
        on_disk(&self.exec, self.node, |life, fs, now| match life {
            Life::Dead => Err(libc::EIO),
            Life::Alive(_) => f(fs, now).map_err(errno),
        })
    }

    /// `open(2)` of an absolute `path`.
    pub(crate) fn open(&self, path: &Path, flags: i32, mode: u32) -> Res<i32> {
        let cloexec = flags & libc::O_CLOEXEC != 0;
        if let Some(kind) = device(path) {
            return insert(self.node, 0, kind, cloexec);
        }
        let oflags = open_flags(flags, mode)?;
        let (opened, incarnation) = on_disk(&self.exec, self.node, |life, fs, now| match life {
            Life::Dead => Err(libc::EIO),
            Life::Alive(inc) => Ok((fs.open(path, oflags, now).map_err(errno), inc)),
        })?;
        match opened {
            Ok(mfd) => insert(self.node, incarnation, Kind::File(mfd), cloexec),
            // What the node's disk does not have, the host's read-only
            // files may (host.rs).
            Err(libc::ENOENT) => match super::host::open(path, flags) {
                Some(Ok(id)) => insert(self.node, incarnation, Kind::Host(id), cloexec)
                    .inspect_err(|_| super::host::close(id)),
                Some(Err(e)) => Err(e),
                None => Err(libc::ENOENT),
            },
            Err(e) => Err(e),
        }
    }

    /// The `st_dev` of this node's disk: a function of the seed and the
    /// node, so that a C library keying state by (device, inode) in one
    /// process (SQLite's lock table) tells apart the disks of two nodes.
    /// Two simulations of the same seed would share values, which is one
    /// reason simulations take turns while such a library is linked
    /// (libc/cstate.rs).
    pub(crate) fn dev(&self) -> u64 {
        dev_of(&self.exec, self.node)
    }
}

/// The device number of `node`'s disk, as `stat` reports it: a number no
/// real block device uses, different for each run in the process and each
/// incarnation of the node. A C library that keeps process-wide state per
/// file (SQLite's table of open inodes and their locks) may keep an entry
/// of a node that died with a thread inside it (its threads never run
/// again, so nothing closes it); a restarted node, or the next run in the
/// process, then meets fresh numbers, as a new process would meet no
/// stale state. No decision of the run depends on the number.
fn dev_of(exec: &Exec, node: NodeId) -> u64 {
    // Never borrowed here (every caller's disk call has returned); 0 keeps
    // a C caller from aborting on a panic if that ever changed.
    let incarnation = exec.try_core_mut().map_or(0, |c| c.node(node).incarnation);
    let label = format!("fs.dev.{}.{}.{}", exec.id, node.0, incarnation);
    0x5100_0000_0000 | crate::simulation::core::seed::child(0x5eed, &label) & 0xffff_ffff
}

/// What an operation on a descriptor of a dead process returns.
pub(crate) enum Dead<R> {
    /// Pretend it worked, with this value (writes, syncs).
    Ok(R),
    /// Fail with this errno (reads, anything that would answer).
    Err(Errno),
}

/// A simulated descriptor's target, for an operation on it.
pub(crate) enum Target {
    File {
        node: NodeId,
    },
    Device(Kind),
    /// A host file's open file description (host.rs).
    Host(u32),
}

/// Runs `f` on the model's descriptor behind `fd`, on the disk of the node
/// that opened it. `dead` answers for a descriptor whose process is dead;
/// one of an earlier incarnation of a live node is `EBADF`.
pub(crate) fn with_file<R>(
    fd: i32,
    dead: Dead<R>,
    f: impl FnOnce(&mut sim_fs::Fs, sim_fs::Fd, SystemTime) -> io::Result<R>,
) -> Res<R> {
    let h = handle(fd)?;
    let Kind::File(mfd) = h.kind else {
        return Err(libc::EINVAL);
    };
    let exec = current().ok_or(libc::EBADF)?;
    on_disk(&exec, h.node, |life, fs, now| match life {
        Life::Dead => match dead {
            Dead::Ok(v) => Ok(v),
            Dead::Err(e) => Err(e),
        },
        Life::Alive(inc) if inc != h.incarnation => Err(libc::EBADF),
        Life::Alive(_) => f(fs, mfd, now).map_err(errno),
    })
}

/// What `fd` names.
pub(crate) fn target(fd: i32) -> Res<Target> {
    let h = handle(fd)?;
    match h.kind {
        Kind::File(_) => Ok(Target::File { node: h.node }),
        Kind::Host(id) => Ok(Target::Host(id)),
        k => Ok(Target::Device(k)),
    }
}

/// The `st_dev` of the disk `fd` is on.
pub(crate) fn dev(fd: i32) -> Res<u64> {
    let h = handle(fd)?;
    let exec = current().ok_or(libc::EBADF)?;
    Ok(dev_of(&exec, h.node))
}

/// `read(2)` (`at`: `pread(2)`).
pub(crate) fn read(fd: i32, buf: &mut [u8], at: Option<u64>) -> Res<usize> {
    match target(fd)? {
        Target::Device(Kind::Random) => {
            if !crate::simulation::core::hooks::fill_random(buf) {
                return Err(libc::EIO);
            }
            Ok(buf.len())
        }
        Target::Device(Kind::Zero) => {
            buf.fill(0);
            Ok(buf.len())
        }
        Target::Device(_) => Ok(0),
        Target::Host(id) => super::host::read(id, buf, at),
        Target::File { .. } => with_file(fd, Dead::Err(libc::EIO), |fs, mfd, _| match at {
            None => fs.read(mfd, buf),
            Some(off) => fs.read_at(mfd, buf, off),
        }),
    }
}

/// `write(2)` (`at`: `pwrite(2)`).
pub(crate) fn write(fd: i32, data: &[u8], at: Option<u64>) -> Res<usize> {
    match target(fd)? {
        Target::Device(_) => Ok(data.len()),
        // Opened for reading only (host.rs refuses any other open).
        Target::Host(_) => Err(libc::EBADF),
        Target::File { .. } => with_file(fd, Dead::Ok(data.len()), |fs, mfd, now| match at {
            None => fs.write(mfd, data, now),
            Some(off) => fs.write_at(mfd, data, off, now),
        }),
    }
}

/// `close(2)`. A dead process's descriptors close without touching the
/// disk (its death closed them in the model).
pub(crate) fn close(fd: i32) -> Res<()> {
    let h = handle(fd)?;
    let _ = TABLE.try_with(|t| t.borrow_mut().remove(&fd));
    if h.borrowed {
        return Ok(());
    }
    if let Kind::Host(id) = h.kind {
        super::host::close(id);
    }
    if let Kind::File(mfd) = h.kind {
        let Some(exec) = current() else {
            return Ok(());
        };
        on_disk(&exec, h.node, |life, fs, _| match life {
            Life::Alive(inc) if inc == h.incarnation => fs.close(mfd).map_err(errno),
            _ => Ok(()),
        })?;
    }
    Ok(())
}

/// The model's descriptor behind the simulated file `fd`, taken out of
/// the table with its ownership (`tokio::fs::File::from_std`): the number
/// is closed, the model's descriptor stays open.
pub(crate) fn take_model(fd: i32) -> Res<(NodeId, sim_fs::Fd)> {
    let h = handle(fd)?;
    let Kind::File(mfd) = h.kind else {
        return Err(libc::EINVAL);
    };
    if h.borrowed {
        return Err(libc::EBADF);
    }
    let _ = TABLE.try_with(|t| t.borrow_mut().remove(&fd));
    Ok((h.node, mfd))
}

/// A simulated descriptor for the model's descriptor `mfd` on `node`'s
/// disk, owning it (`into_std`) or lent (`borrowed`: `AsRawFd`).
pub(crate) fn adopt(node: NodeId, mfd: sim_fs::Fd, borrowed: bool) -> Res<i32> {
    let exec = current().ok_or(libc::EBADF)?;
    let incarnation = exec
        .try_core_mut()
        .map(|c| c.node(node).incarnation)
        .ok_or(libc::EBADF)?;
    insert_handle(node, incarnation, Kind::File(mfd), true, borrowed)
}

/// Forgets a lent number (its `File` is dropped).
pub(crate) fn forget(fd: i32) {
    let _ = TABLE.try_with(|t| {
        if let Ok(mut t) = t.try_borrow_mut() {
            t.remove(&fd);
        }
    });
}

/// `dup(2)`.
pub(crate) fn dup(fd: i32, cloexec: bool) -> Res<i32> {
    let h = handle(fd)?;
    match h.kind {
        Kind::File(_) => {
            let mfd = with_file(fd, Dead::Err(libc::EBADF), |fs, mfd, _| fs.dup(mfd))?;
            insert(h.node, h.incarnation, Kind::File(mfd), cloexec)
        }
        Kind::Host(id) => {
            super::host::dup(id)?;
            insert(h.node, h.incarnation, h.kind, cloexec).inspect_err(|_| super::host::close(id))
        }
        k => insert(h.node, h.incarnation, k, cloexec),
    }
}

/// The incarnation of the node that opened `fd`.
pub(crate) fn incarnation(fd: i32) -> Res<u32> {
    Ok(handle(fd)?.incarnation)
}

/// `FD_CLOEXEC` of `fd`.
pub(crate) fn cloexec(fd: i32) -> Res<bool> {
    Ok(handle(fd)?.cloexec)
}

pub(crate) fn set_cloexec(fd: i32, on: bool) -> Res<()> {
    TABLE
        .try_with(|t| {
            t.borrow_mut()
                .get_mut(&fd)
                .map(|h| h.cloexec = on)
                .ok_or(libc::EBADF)
        })
        .map_err(|_| libc::EBADF)?
}

/// `fcntl(F_GETFL)`.
pub(crate) fn status_flags(fd: i32) -> Res<i32> {
    match target(fd)? {
        Target::Device(_) => Ok(libc::O_RDWR),
        Target::Host(_) => Ok(libc::O_RDONLY),
        Target::File { .. } => {
            let a = with_file(fd, Dead::Err(libc::EBADF), |fs, mfd, _| fs.access(mfd))?;
            let mode = match (a.read, a.write) {
                (true, true) => libc::O_RDWR,
                (false, true) => libc::O_WRONLY,
                _ => libc::O_RDONLY,
            };
            Ok(mode
                | if a.append { libc::O_APPEND } else { 0 }
                | if a.sync_writes { libc::O_DSYNC } else { 0 })
        }
    }
}

/// `fstat(2)`'s answer for a device file.
pub(crate) fn device_stat(kind: Kind) -> (u32, u64) {
    // Linux's character devices: mem (1), minors 3 null, 5 zero, 8
    // random, 9 urandom.
    let minor = match kind {
        Kind::Null => 3,
        Kind::Zero => 5,
        _ => 9,
    };
    (libc::S_IFCHR | 0o666, (1 << 8) | minor)
}
