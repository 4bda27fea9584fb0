//! `UnixSocket` under simulation: a Unix socket configured (bound) before
//! it becomes a listener, a connected stream or a datagram socket.

use super::name::{bind_with_file, current_host};
use super::{addr_of, model_addr, UnixDatagram, UnixListener, UnixStream};
use crate::simulation::net::with_net;
use sim_net::{UnixAddr, UnixName};
use std::fmt;
use std::io;
use std::os::unix::net::SocketAddr as StdSocketAddr;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// A Unix socket that has not yet been converted to a [`UnixStream`],
/// [`UnixDatagram`], or [`UnixListener`] (on the simulated node's
/// namespace).
///
/// As on Linux, `bind` to a path makes the socket file at once. A stream
/// socket's abstract name is taken when it becomes a listener or connects
/// (Linux takes it at `bind`; `bind` checks that it is free); a datagram
/// socket's at `bind`. The `listen` backlog is the model's.
pub struct UnixSocket {
    inner: Inner,
    /// A stream socket's live descriptor, once asked for (net/fd.rs).
    fd: OnceLock<i32>,
}

enum Inner {
    /// What `bind` gave, if anything.
    /// (A mutex, not a cell: Tokio's socket is `Sync` and unwind-safe.)
    Stream(Mutex<Option<Bound>>),
    Datagram(UnixDatagram),
}

/// A stream socket's `bind`: its address, and for a path the socket file
/// made for it.
#[derive(Debug)]
struct Bound {
    addr: StdSocketAddr,
    file: Option<u64>,
}

impl fmt::Debug for UnixSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Stream(local) => f
                .debug_struct("UnixSocket")
                .field("type", &"stream")
                .field("local", &*lock(local))
                .finish(),
            Inner::Datagram(d) => f
                .debug_struct("UnixSocket")
                .field("type", &"datagram")
                .field("socket", d)
                .finish(),
        }
    }
}

impl UnixSocket {
    /// Creates a new Unix datagram socket.
    pub fn new_datagram() -> io::Result<UnixSocket> {
        Ok(UnixSocket {
            inner: Inner::Datagram(UnixDatagram::unbound()?),
            fd: OnceLock::new(),
        })
    }

    /// Creates a new Unix stream socket.
    pub fn new_stream() -> io::Result<UnixSocket> {
        crate::simulation::net::check_running()?;
        Ok(UnixSocket {
            inner: Inner::Stream(Mutex::new(None)),
            fd: OnceLock::new(),
        })
    }

    /// Binds the socket to the given address.
    pub fn bind(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let addr = addr_of(path.as_ref())?;
        match &self.inner {
            Inner::Datagram(d) => d.bind_to(addr),
            Inner::Stream(local) => {
                let mut local = lock(local);
                let name = model_addr(&addr);
                let file = bind_with_file(current_host(), &name, |file| {
                    if local.is_some() {
                        // Linux: a socket binds once (`EINVAL`, after
                        // making the file, which it unlinks again).
                        return Err(io::Error::from_raw_os_error(22));
                    }
                    check_abstract_free(&name)?;
                    Ok(file)
                })?;
                *local = Some(Bound { addr, file });
                Ok(())
            }
        }
    }

    /// Converts the socket into a `UnixListener`.
    pub fn listen(self, backlog: u32) -> io::Result<UnixListener> {
        let _ = backlog;
        match self.inner {
            Inner::Datagram(_) => Err(io::Error::other(
                "listen cannot be called on a datagram socket",
            )),
            Inner::Stream(local) => match local.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Bound { addr, file }) => UnixListener::listen_on(model_addr(&addr), file),
                // Linux autobinds an unbound listener to an abstract name.
                None => UnixListener::listen_on(UnixAddr::Unnamed, None),
            },
        }
    }

    /// Establishes a Unix connection with a peer at the specified socket
    /// address.
    pub async fn connect(self, path: impl AsRef<Path>) -> io::Result<UnixStream> {
        match self.inner {
            Inner::Datagram(_) => Err(io::Error::other(
                "connect cannot be called on a datagram socket",
            )),
            Inner::Stream(local) => {
                let local = local.into_inner().unwrap_or_else(|e| e.into_inner());
                let local = local.map(|b| (model_addr(&b.addr), b.file));
                if let Some((name, _)) = &local {
                    // Still free (Linux would have taken it at `bind`).
                    check_abstract_free(name)?;
                }
                // Completes in its first poll: nothing runs in between.
                let stream = UnixStream::connect(path).await?;
                if let Some((name, file)) = local {
                    let id = stream.id();
                    with_net(|net, _, _| net.unix_bind_client(id, name, file))?;
                }
                Ok(stream)
            }
        }
    }

    /// Converts the socket into a [`UnixDatagram`].
    pub fn datagram(self) -> io::Result<UnixDatagram> {
        match self.inner {
            Inner::Stream(_) => Err(io::Error::other(
                "datagram cannot be called on a stream socket",
            )),
            Inner::Datagram(d) => Ok(d),
        }
    }
}

/// `EADDRINUSE` if `addr` is an abstract name an open socket of the current
/// node holds (a path's socket file is the disk's to refuse).
fn check_abstract_free(addr: &UnixAddr) -> io::Result<()> {
    let UnixAddr::Abstract(name) = addr else {
        return Ok(());
    };
    let name = UnixName::Abstract(name.clone());
    with_net(|net, host, _| net.unix_check_free(host, &name))
}

/// The bound address; a panic elsewhere while it was held changes nothing
/// it guards.
fn lock(m: &Mutex<Option<Bound>>) -> MutexGuard<'_, Option<Bound>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// A datagram socket shows its socket's live descriptor; a stream socket,
// made only at `connect`/`listen`, a number of its own (net/fd.rs).
crate::simulation::net::fd::live_descriptor!(UnixSocket, |s| match &s.inner {
    Inner::Datagram(d) => std::os::fd::AsRawFd::as_raw_fd(d),
    Inner::Stream(_) => *s.fd.get_or_init(crate::simulation::net::fd::live_unmade_fd),
});

const NO_KERNEL_SOCKET: &str = "a simulated Unix socket has no kernel socket behind it";

impl std::os::fd::FromRawFd for UnixSocket {
    #[track_caller]
    unsafe fn from_raw_fd(_fd: std::os::fd::RawFd) -> UnixSocket {
        crate::simulation::unsupported::refuse_panic(
            "UnixSocket::from_raw_fd",
            "a descriptor is a real OS socket, which cannot join the simulated node",
            "Create it with UnixSocket::new_stream or new_datagram",
        )
    }
}

impl std::os::fd::IntoRawFd for UnixSocket {
    #[track_caller]
    fn into_raw_fd(self) -> std::os::fd::RawFd {
        crate::simulation::unsupported::refuse_panic(
            "UnixSocket::into_raw_fd",
            NO_KERNEL_SOCKET,
            "Keep the UnixSocket and use its own methods",
        )
    }
}
