//! The simulated disk: one node's file system as a synchronous,
//! deterministic data structure.
//!
//! No `async`, no thread-locals, no clock (every operation that stamps a
//! time takes `now`), no randomness of its own (a crash takes a seed), and
//! only ordered maps, so the same calls give the same state on every run.
//! `sim-runtime` binds it to `tokio::fs` under `--cfg simulation`, one
//! [`Fs`] per node.
//!
//! ```
//! use sim_fs::{Fs, OpenFlags};
//! use std::path::Path;
//! use std::time::{Duration, SystemTime};
//!
//! let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! let mut fs = Fs::new(now);
//! let create = OpenFlags { write: true, create: true, mode: 0o666, ..OpenFlags::default() };
//! let fd = fs.open(Path::new("/tmp/log"), create, now).unwrap();
//! fs.write(fd, b"acked", now).unwrap();
//! fs.sync(fd, true).unwrap(); // the bytes are durable...
//! fs.close(fd).unwrap();
//! fs.crash(7);                 // ...but the entry in /tmp was never synced
//! assert!(fs.stat(Path::new("/tmp/log"), true).is_err());
//! ```
//!
//! # The durability model (normative)
//!
//! The disk has two states: the **page cache**, which every operation reads
//! and writes, and the **durable image**, which is what a crash keeps.
//!
//! 1. A write, `set_len`, `truncate`, create, link, unlink, rename, mkdir,
//!    rmdir, chmod or utimes changes the page cache only. Reads, `stat` and
//!    directory listings always see the page cache.
//! 2. `sync_data` (`fdatasync`) of a file makes its bytes and its length
//!    durable. `sync_all` (`fsync`) also makes its metadata durable
//!    (permissions and timestamps). Syncing one file never makes another
//!    file's data, nor any directory entry, durable.
//! 3. A directory entry (a created, linked, renamed or removed name) is
//!    durable only once its directory is synced: open the directory with
//!    `File::open` and call `sync_all` or `sync_data`. As on ext4, a new
//!    file whose data was synced but whose directory was not can vanish in a
//!    crash, and a rename is durable once both directories are synced (until
//!    then a crash may show the old name, the new one, or both for a file).
//!    A directory that ends up durably named twice keeps its first name in
//!    walk order (name order, breadth first from `/`).
//! 4. A **kill** (the process dies, the machine stays up) closes every
//!    descriptor and changes nothing else: the page cache survives, and
//!    unsynced data is still there for the next process to read.
//! 5. A **crash** (the machine dies) replaces the page cache by the durable
//!    image: what no durable entry reaches is gone, every file holds its
//!    durable bytes and metadata. With **torn writes** on, each file also
//!    keeps a prefix of its unsynced changes, in the order they were made,
//!    the last kept write possibly cut at any byte; the prefix is drawn from
//!    the crash's seed and the inode number only. Without it, nothing
//!    unsynced survives.
//! 6. A **failed sync** (an `EIO` rule for syncs, or a one-shot failing
//!    sync) makes nothing durable and drops the file's pending changes from
//!    the writeback, as Linux has done since 4.13: the page cache still
//!    shows them and a later sync succeeds, but they will never become
//!    durable. Data that was acknowledged after a failed-then-retried sync
//!    is not safe.
//! 7. `O_SYNC`/`O_DSYNC` (`custom_flags`) makes each write durable as
//!    `sync_data` would, before it returns.
//! 8. A fresh disk holds `/` and `/tmp` (mode `1777`), both durable.
//!
//! # Other semantics
//!
//! - Errors are `io::Error::from_raw_os_error(errno)` with Linux's errno, so
//!   both `kind()` and `raw_os_error()` match a real Linux program's.
//! - The simulated process owns every file and is not root: opening for
//!   reading needs the owner's `r` bit, for writing its `w` bit, a
//!   directory needs its `w` bit to gain or lose entries, and its `x` bit
//!   for any lookup through it (`EACCES`).
//!   New files and directories get `mode & !0o022`.
//! - Paths resolve as on Linux: relative to `/`, `..` of `/` is `/`, at
//!   most 40 symlinks per resolution (`ELOOP`), names of at most 255 bytes
//!   (`ENAMETOOLONG`), a trailing slash requires a directory.
//! - Capacity (`ENOSPC`) counts the bytes of files that are named or open;
//!   a write near the limit is short, one with no room fails. Files are
//!   never sparse: extending with `set_len` takes room too.
//! - Timestamps: creation sets all four; a write or `set_len` sets
//!   modified and changed; a directory's change of entries sets its
//!   modified and changed. Reads never set accessed (as `noatime`).
//! - Directory listings are in name order; a directory's length is 4096.
//! - Socket files: a Unix socket's `bind` to a path creates one
//!   ([`Fs::bind_socket`]: `S_IFSOCK`, mode `0o777 & !UMASK`, no data),
//!   which the network model's socket holds by inode number; `connect` and
//!   `sendto` find it with [`Fs::find_socket`]. It is a directory entry like
//!   any other (rule 3; a kill keeps it), so it outlives its socket:
//!   binding its path again is `EADDRINUSE` until it is unlinked, and
//!   connecting to it `ECONNREFUSED`. Opening one with `open(2)` is
//!   `ENXIO`.
//! - An observer may ask for a journal of the operations a crash can undo
//!   ([`Op`]: create, mkdir, link, symlink, a socket file's bind, rename,
//!   unlink, rmdir, and each sync, failed or not) and for what a crash now
//!   would take away ([`AtRisk`], `Fs::at_risk`). Neither changes the disk
//!   or any answer.
//!
//! # Failure modes
//!
//! What happens if a fault strikes: each row is claimed by the test that
//! checks it (`cargo xtask failure-modes` lists them; `cargo xtask tidy`
//! fails on a row no test claims).
//!
//! | failure mode | what happens if | what the simulation does |
//! |---|---|---|
//! | `fs.crash.unsynced` | the machine crashes with unsynced writes and entries | the writes and the unsynced entries are gone (rule 5) |
//! | `fs.crash.rename` | the machine crashes around a rename | the rename survives once the directories are synced (rule 3) |
//! | `fs.crash.torn` | the machine crashes with torn writes on | a seeded prefix of the unsynced writes survives, the same on replay |
//! | `fs.kill` | the process is killed | the page cache survives, unsynced data included (rule 4) |
//! | `fs.kill.handles` | the process dies with files open | its descriptors are closed |
//! | `fs.eio.read` | reads under a path fail | `EIO` for those paths only |
//! | `fs.eio.write` | writes fail on the whole disk | `EIO` on every write |
//! | `fs.eio.sync` | a sync fails | nothing becomes durable and the changes leave the writeback (rule 6) |
//! | `fs.sync.fail-once` | one sync fails | that sync fails, the next succeeds |
//! | `fs.enospc` | the disk is full | a write near the limit is short, one with no room fails with `ENOSPC` |
//! | `fs.dsync` | a file is opened `O_DSYNC` | each write is durable before it returns (rule 7) |
//! | `fs.latency` | the disk is slow | every operation takes the set virtual time |
//! | `fs.isolation` | two nodes use the same path | each node has its own disk |
//! | `fs.real-disk` | a simulated run writes files | the real disk is never touched |
//! | `fs.std` | a service or a store writes through `std::fs` or libc | the same disk as `tokio::fs`, with its rules and faults (the runtime's interposers) |
//! | `fs.dead-process` | a killed or crashed process's destructors write or sync | nothing they do reaches the disk |
//! | `fs.socket.stale` | a process dies with a Unix socket bound to a path | its socket file stays (after a crash, if its directory was synced): a restart that binds the path again without unlinking it gets `EADDRINUSE` |
//! | `fs.heal` | the harness heals (`sim::heal_after`) | every disk fault of every node ends |
//! | `fs.write-behind` | a `tokio::fs::File` write is still in Tokio's blocking pool when another handle looks | the runtime (`fs/inflight.rs`) lands it before the file's next operation, and for a look at the same virtual instant as the seed decides; its error is the next `write`'s or `flush`'s |

mod crash;
mod errno;
mod faults;
mod file;
mod fs;
mod inode;
mod journal;
mod path;
mod socket;

pub use crash::CrashReport;
pub use errno::err;
pub use faults::{Eio, Faults, Fired, IoOp};
pub use file::{Access, Fd, Lock, OpenFlags, O_DIRECTORY, O_DSYNC, O_NOFOLLOW, O_SYNC};
pub use fs::{DirEntry, Fs, Stat, DIR_LEN, UMASK};
pub use inode::{FileKind, Ino};
pub use journal::{AtRisk, Op};
pub use path::{absolute, NAME_MAX, SYMLINK_FOLLOW_MAX};

/// Linux's errno values the model returns.
pub mod errnos {
    pub use crate::errno::{
        EACCES, EADDRINUSE, EAGAIN, EBADF, EBUSY, ECONNREFUSED, EEXIST, EINVAL, EIO, EISDIR, ELOOP,
        ENAMETOOLONG, ENOENT, ENOSPC, ENOTDIR, ENOTEMPTY, ENXIO, EOPNOTSUPP, EPERM,
    };
}

#[cfg(test)]
mod tests;
