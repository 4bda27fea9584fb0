//! Unix-domain sockets under simulation (`tokio::net::{UnixListener,
//! UnixStream, UnixDatagram}` and `tokio::net::unix`).
//!
//! Unix sockets are local IPC, so they are not part of the `sim_net` model:
//! no link, no delay, no fault applies to them. `table.rs` is their whole
//! model: a table of sockets (ids never reused, so a closed socket's id can
//! never name another) and, per node, a namespace from names to sockets.
//! Every operation is one step against the table with the core borrowed; a
//! pending one leaves the task's waker on a socket's list (reading or
//! writing), and every change wakes the lists it may unblock, through the
//! ordinary `Waker::wake` (the executor's wake path), after the borrow is
//! released.
//!
//! Semantics follow Linux's `af_unix.c` (errno values are Linux's):
//!
//! - A name is a key in the node's namespace: the file system (real or
//!   simulated) is never touched. A relative path is taken from `/` (the
//!   simulated working directory), without resolving `.`/`..`.
//! - Binding a name that an open socket holds fails with `EADDRINUSE`. A
//!   pathname whose socket closed stays behind (as the socket file does):
//!   connecting to it fails with `ECONNREFUSED`, a name never bound with
//!   `ENOENT`. Unlike Linux (where the file must be unlinked first), a new
//!   bind takes over such a stale name: there is no file to unlink, and
//!   `std::fs::remove_file` never reaches the simulated namespace. An
//!   abstract name disappears with its socket, as in Linux.
//! - A stream is two byte buffers of [`SNDBUF`] bytes each: a write takes
//!   what fits and waits when nothing does. A writer that found no room
//!   stays blocked (not writable, its writes wait) until the reader has
//!   drained the buffer to a quarter of [`SNDBUF`]: Linux signals write
//!   space only then (`unix_writable`), and Tokio learns of it only from
//!   that signal. The buffer counts payload bytes; Linux also counts each
//!   write's overhead, so it takes fewer (180,224 bytes in 4 KiB writes). Closing a socket shuts its peer
//!   down both ways (reads drain, then end; writes fail with `EPIPE`); if
//!   the closed socket had unread bytes, or had not been accepted yet, the
//!   peer's next read that finds nothing fails once with `ECONNRESET` (also
//!   reported by `take_error`).
//! - A listener's backlog holds 1024 connections (Tokio's); a connect past
//!   it fails with `EAGAIN` (`WouldBlock`), as a non-blocking Linux
//!   connect does.
//! - Datagrams keep their boundaries; a short buffer truncates one. A
//!   receiver holds at most [`MAX_DGRAM_QLEN`]` + 1` datagrams; a sender
//!   then waits (`WouldBlock` from `try_send`). After `shutdown(Read)` a
//!   datagram socket still hands out what it had queued, then reports
//!   read-closed readiness but never ends: Linux's non-blocking `recvmsg`
//!   answers `EAGAIN` (only `SOCK_SEQPACKET` reads 0), so a receive waits
//!   and `try_recv` is `WouldBlock`; sends to it fail with `EPIPE`.
//! - A node's kill or crash closes every Unix socket made on that node
//!   (wherever the handle lives), as process exit does; a socket's later
//!   operations fail with `EBADF`.
//! - `peer_cred` reports the simulated process: uid and gid 1000 (the
//!   owner of every simulated file), pid `1000 + node index`.

mod dgram;
pub mod pipe;
mod socket;
mod split;
mod stream;
mod table;

pub use dgram::UnixDatagram;
pub use socket::UnixSocket;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::{UnixListener, UnixStream};

/// Tokio's (documented as unintentionally public, hidden) module.
#[doc(hidden)]
pub mod datagram {}

use super::super::executor::{current, expect_current};
use super::super::node::NodeId;
use crate::io::{Interest, Ready};
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr as StdSocketAddr;
use std::path::Path;
use std::task::{Context, Poll, Waker};
pub(crate) use table::Table;
use table::{Dir, Kind, Step};

/// A type representing user ID.
#[allow(non_camel_case_types)]
pub type uid_t = u32;

/// A type representing group ID.
#[allow(non_camel_case_types)]
pub type gid_t = u32;

/// A type representing process and process group IDs.
#[allow(non_camel_case_types)]
pub type pid_t = i32;

/// The simulated process's user and group (the owner of simulated files).
pub(crate) const SIM_UID: uid_t = 1000;
pub(crate) const SIM_GID: gid_t = 1000;
/// The simulated process id of node `n` is `SIM_PID_BASE + n`.
pub(crate) const SIM_PID_BASE: pid_t = 1000;

/// Linux's default socket send buffer (`net.core.wmem_default`): a stream's
/// buffer per direction, and the bound on one datagram (less 32 bytes).
pub(crate) const SNDBUF: usize = 212_992;
/// Linux's `net.unix.max_dgram_qlen`: a receiver is full past this many.
pub(crate) const MAX_DGRAM_QLEN: usize = 10;
/// Tokio's listen backlog.
const BACKLOG: usize = 1024;

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EBADF: i32 = 9;
const EAGAIN: i32 = 11;
const EINVAL: i32 = 22;
const EPIPE: i32 = 32;
const EMSGSIZE: i32 = 90;
const EPROTOTYPE: i32 = 91;
const EADDRINUSE: i32 = 98;
const ECONNRESET: i32 = 104;
const ENOTCONN: i32 = 107;
const ECONNREFUSED: i32 = 111;

fn err(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// An address associated with a Tokio Unix socket: a thin wrapper around
/// [`std::os::unix::net::SocketAddr`], as Tokio's.
#[derive(Clone)]
pub struct SocketAddr(pub(crate) StdSocketAddr);

impl SocketAddr {
    /// Returns `true` if the address is unnamed.
    pub fn is_unnamed(&self) -> bool {
        self.0.is_unnamed()
    }

    /// Returns the contents of this address if it is a `pathname` address.
    pub fn as_pathname(&self) -> Option<&Path> {
        self.0.as_pathname()
    }

    /// Returns the contents of this address if it is in the abstract
    /// namespace.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn as_abstract_name(&self) -> Option<&[u8]> {
        #[cfg(target_os = "android")]
        use std::os::android::net::SocketAddrExt;
        #[cfg(target_os = "linux")]
        use std::os::linux::net::SocketAddrExt;
        self.0.as_abstract_name()
    }
}

impl fmt::Debug for SocketAddr {
    fn fmt(&self, fmt: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(fmt)
    }
}

impl From<StdSocketAddr> for SocketAddr {
    fn from(value: StdSocketAddr) -> Self {
        SocketAddr(value)
    }
}

impl From<SocketAddr> for StdSocketAddr {
    fn from(value: SocketAddr) -> Self {
        value.0
    }
}

/// Credentials of a process.
#[derive(Copy, Clone, Eq, PartialEq, Hash, Debug)]
pub struct UCred {
    pid: Option<pid_t>,
    uid: uid_t,
    gid: gid_t,
}

impl UCred {
    /// Gets UID (user ID) of the process.
    pub fn uid(&self) -> uid_t {
        self.uid
    }

    /// Gets GID (group ID) of the process.
    pub fn gid(&self) -> gid_t {
        self.gid
    }

    /// Gets PID (process ID) of the process.
    pub fn pid(&self) -> Option<pid_t> {
        self.pid
    }
}

fn cred_of(node: NodeId) -> UCred {
    UCred {
        pid: Some(SIM_PID_BASE + node.0 as pid_t),
        uid: SIM_UID,
        gid: SIM_GID,
    }
}

/// The unnamed address.
pub(crate) fn unnamed() -> StdSocketAddr {
    StdSocketAddr::from_pathname("").expect("the empty path is the unnamed address")
}

/// Tokio's path to address conversion: a leading NUL names the abstract
/// namespace (Linux).
pub(crate) fn addr_of(path: &Path) -> io::Result<StdSocketAddr> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        #[cfg(target_os = "android")]
        use std::os::android::net::SocketAddrExt;
        #[cfg(target_os = "linux")]
        use std::os::linux::net::SocketAddrExt;
        let bytes = path.as_os_str().as_bytes();
        if let Some(name) = bytes.strip_prefix(b"\0") {
            return StdSocketAddr::from_abstract_name(name);
        }
    }
    StdSocketAddr::from_pathname(path)
}

// ----- the binding to the executor -------------------------------------------

/// Runs `f` on the table as the current node, then wakes what it woke.
fn with<R>(f: impl FnOnce(&mut Table, NodeId, &mut Vec<Waker>) -> R) -> R {
    let exec = expect_current();
    let node = exec.current_node();
    let mut wake = Vec::new();
    let r = {
        let mut core = exec.core_mut();
        f(&mut super::network(&mut core).unix, node, &mut wake)
    };
    for w in wake {
        w.wake();
    }
    r
}

/// Polls a step: ready, or pending with the waker left where it said.
/// As Tokio's I/O, a step spends a unit of the task's budget (given back
/// when it has to wait).
fn poll_step<T>(
    cx: &mut Context<'_>,
    own: u32,
    f: impl FnOnce(&mut Table, &mut Vec<Waker>) -> Step<T>,
) -> Poll<io::Result<T>> {
    // As Tokio's: once the runtime shut down, I/O fails at once.
    crate::simulation::net::check_running()?;
    let coop = std::task::ready!(crate::task::coop::poll_proceed(cx));
    let r = with(|t, _, wake| match f(t, wake) {
        Step::Done(r) => Poll::Ready(r),
        Step::Wait(id, dir) => {
            t.would_block(own, dir);
            t.register(id, dir, cx.waker());
            Poll::Pending
        }
    });
    if r.is_ready() {
        crate::simulation::executor::progress(coop);
    }
    r
}

/// A step of socket `own` that must not wait: `WouldBlock` instead.
fn try_step<T>(own: u32, f: impl FnOnce(&mut Table, &mut Vec<Waker>) -> Step<T>) -> io::Result<T> {
    with(|t, _, wake| match f(t, wake) {
        Step::Done(r) => r,
        Step::Wait(_, dir) => {
            t.would_block(own, dir);
            // As Tokio's `try_*` when its readiness is not set: a
            // `WouldBlock` without an errno.
            Err(io::ErrorKind::WouldBlock.into())
        }
    })
}

/// Polls readiness for `interest`.
fn poll_ready(cx: &mut Context<'_>, id: u32, interest: Interest) -> Poll<Ready> {
    with(|t, _, _| {
        let (r, write_on) = t.cached_readiness(id);
        let mut want = Ready::EMPTY;
        if interest.is_readable() {
            want |= Ready::READABLE | Ready::READ_CLOSED;
        }
        if interest.is_writable() {
            want |= Ready::WRITABLE | Ready::WRITE_CLOSED;
        }
        let got = r & want;
        if !got.is_empty() {
            return Poll::Ready(got);
        }
        if interest.is_readable() {
            t.register(id, Dir::Read, cx.waker());
        }
        if interest.is_writable() {
            t.register(write_on, Dir::Write, cx.waker());
        }
        Poll::Pending
    })
}

/// A Unix socket of the table, closed when dropped.
#[derive(Debug)]
pub(crate) struct Handle {
    pub(crate) id: u32,
    exec: u64,
}

impl Handle {
    fn new(id: u32) -> Handle {
        Handle {
            id,
            exec: expect_current().id,
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let Some(exec) = current() else {
            return;
        };
        if exec.id != self.exec {
            return;
        }
        let mut wake = Vec::new();
        super::network(&mut exec.core_mut())
            .unix
            .close(self.id, false, &mut wake);
        for w in wake {
            w.wake();
        }
    }
}

/// The node's process died (kill or crash): the kernel closes its Unix
/// sockets. Called by `net::on_kill`/`net::on_crash` with the core borrowed.
pub(crate) fn on_node_death(table: &mut Table, node: NodeId) -> Vec<Waker> {
    let mut wake = Vec::new();
    table.close_node(node, &mut wake);
    wake
}

/// Tokio's `TryFrom<std::os::unix::net::…>` conversions exist and refuse, as
/// `from_std` does.
macro_rules! refuse_try_from {
    ($($ours:ty => $std:ty, $what:literal;)*) => {$(
        impl TryFrom<$std> for $ours {
            type Error = io::Error;
            #[track_caller]
            fn try_from(value: $std) -> Result<Self, Self::Error> {
                drop(value);
                super::refuse_std($what)
            }
        }
    )*};
}

refuse_try_from! {
    UnixListener => std::os::unix::net::UnixListener, "UnixListener::try_from(std::os::unix::net::UnixListener)";
    UnixStream => std::os::unix::net::UnixStream, "UnixStream::try_from(std::os::unix::net::UnixStream)";
    UnixDatagram => std::os::unix::net::UnixDatagram, "UnixDatagram::try_from(std::os::unix::net::UnixDatagram)";
}
