//! Unix-domain sockets under simulation (`tokio::net::{UnixListener,
//! UnixStream, UnixDatagram, UnixSocket}` and `tokio::net::unix`).
//!
//! The model is `sim_net`'s (its crate docs state the rules, under **Unix
//! sockets**): a Unix socket is a socket of the network model, on no link,
//! so it shares everything in `super` with TCP and UDP: the handle that
//! closes it, the waiter lists, the notifications that wake them, and
//! Tokio's readiness and I/O methods and stream halves (`super::shared`).
//! What is Unix-only is here: addresses (std's `SocketAddr` for the
//! model's `UnixAddr`), path names as socket files on the node's simulated
//! disk (`name.rs`), credentials, the check that the runtime still runs
//! before each wait, and Tokio's cached readiness as Unix sockets keep it
//! (`Cache::ClearOnWait`).
//!
//! `peer_cred` reports the simulated process: uid and gid 1000 (the owner
//! of every simulated file), pid `1000 + node index`.

mod dgram;
mod name;
pub mod pipe;
mod socket;
mod split;
mod stream;

pub use dgram::UnixDatagram;
pub use socket::UnixSocket;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::{UnixListener, UnixStream};

/// Tokio's (documented as unintentionally public, hidden) module.
#[doc(hidden)]
pub mod datagram {}

use super::shared::{poll_interest, ready_from};
use super::{poll_net_with, try_net_with, with_net, Cache, Dir};
use crate::io::{Interest, Ready};
use sim_net::{HostId, Net, Progress, SocketId, UnixAddr};
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr as StdSocketAddr;
use std::path::Path;
use std::task::{Context, Poll};

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
const SIM_UID: uid_t = 1000;
const SIM_GID: gid_t = 1000;
/// The simulated process id of node `n` is `SIM_PID_BASE + n`.
const SIM_PID_BASE: pid_t = 1000;

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

/// The credentials of the simulated process on `host` (node `host`).
fn cred_of(host: HostId) -> UCred {
    UCred {
        pid: Some(SIM_PID_BASE + host.0 as pid_t),
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

/// The model's address for std's.
fn model_addr(addr: &StdSocketAddr) -> UnixAddr {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        #[cfg(target_os = "android")]
        use std::os::android::net::SocketAddrExt;
        #[cfg(target_os = "linux")]
        use std::os::linux::net::SocketAddrExt;
        if let Some(name) = addr.as_abstract_name() {
            return UnixAddr::Abstract(name.to_vec());
        }
    }
    match addr.as_pathname() {
        Some(path) => UnixAddr::Path(path.as_os_str().as_bytes().to_vec()),
        None => UnixAddr::Unnamed,
    }
}

/// Tokio's address for the model's (which it was given, or autobound).
fn tokio_addr(addr: UnixAddr) -> SocketAddr {
    SocketAddr(match addr {
        UnixAddr::Unnamed => unnamed(),
        UnixAddr::Path(path) => {
            StdSocketAddr::from_pathname(Path::new(std::ffi::OsStr::from_bytes(&path)))
                .expect("the model's path came from a std address")
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        UnixAddr::Abstract(name) => {
            #[cfg(target_os = "android")]
            use std::os::android::net::SocketAddrExt;
            #[cfg(target_os = "linux")]
            use std::os::linux::net::SocketAddrExt;
            StdSocketAddr::from_abstract_name(name)
                .expect("an abstract name of the model fits an address")
        }
        // No abstract namespace to show: std cannot say one.
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        UnixAddr::Abstract(_) => unnamed(),
    })
}

// ----- the binding: `super`'s, with the Unix rules ---------------------------

/// Polls a model call on Unix socket `id` (`super::poll_net`): after Tokio's
/// check that the runtime still runs, with Unix sockets' cached readiness.
fn poll_unix<T>(
    cx: &mut Context<'_>,
    id: SocketId,
    dir: Dir,
    f: impl FnOnce(&mut Net, u64) -> Progress<T>,
) -> Poll<io::Result<T>> {
    super::check_running()?;
    poll_net_with(cx, id, dir, Cache::ClearOnWait, f)
}

/// A model call on Unix socket `id` that must not wait (`super::try_net`).
fn try_unix<T>(
    id: SocketId,
    dir: Dir,
    f: impl FnOnce(&mut Net, u64) -> Progress<T>,
) -> io::Result<T> {
    try_net_with(id, dir, Cache::ClearOnWait, f)
}

/// Polls readiness for `interest`.
fn poll_ready(cx: &mut Context<'_>, id: SocketId, interest: Interest) -> Poll<Ready> {
    poll_interest(cx, id, interest, |net, _, sticky| {
        ready_from(net.unix_readiness(id), interest, sticky, Cache::ClearOnWait)
    })
}

fn local_addr(id: SocketId) -> io::Result<SocketAddr> {
    with_net(|net, _, _| net.unix_local_addr(id)).map(tokio_addr)
}

fn peer_addr(id: SocketId) -> io::Result<SocketAddr> {
    with_net(|net, _, _| net.unix_peer_addr(id)).map(tokio_addr)
}

fn take_error(id: SocketId) -> io::Result<Option<io::Error>> {
    with_net(|net, _, _| net.unix_take_error(id))
}

/// Tokio's live descriptor of Unix socket `id` (net/fd.rs).
fn live_fd(id: SocketId) -> i32 {
    crate::simulation::net::fd::live_fd(id.index())
}
