//! `UnixSocket` under simulation: a Unix socket configured (bound) before
//! it becomes a listener, a connected stream or a datagram socket.

use super::{addr_of, with, SocketAddr, UnixDatagram, UnixListener, UnixStream};
use std::cell::RefCell;
use std::fmt;
use std::io;
use std::os::unix::net::SocketAddr as StdSocketAddr;
use std::path::Path;

/// A Unix socket that has not yet been converted to a [`UnixStream`],
/// [`UnixDatagram`], or [`UnixListener`] (on the simulated node's
/// namespace).
///
/// A stream socket's name is taken when it becomes a listener or connects
/// (Linux takes it at `bind`; `bind` checks that it is free); a datagram
/// socket's at `bind`, as on Linux. The `listen` backlog is the model's.
pub struct UnixSocket {
    inner: Inner,
}

enum Inner {
    /// The address `bind` gave, if any.
    Stream(RefCell<Option<StdSocketAddr>>),
    Datagram(UnixDatagram),
}

impl fmt::Debug for UnixSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Stream(local) => f
                .debug_struct("UnixSocket")
                .field("type", &"stream")
                .field("local", &local.borrow())
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
        })
    }

    /// Creates a new Unix stream socket.
    pub fn new_stream() -> io::Result<UnixSocket> {
        crate::simulation::net::check_running()?;
        Ok(UnixSocket {
            inner: Inner::Stream(RefCell::new(None)),
        })
    }

    /// Binds the socket to the given address.
    pub fn bind(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let addr = addr_of(path.as_ref())?;
        match &self.inner {
            Inner::Datagram(d) => d.bind_to(addr),
            Inner::Stream(local) => {
                if local.borrow().is_some() {
                    // Linux: a socket binds once.
                    return Err(io::Error::from_raw_os_error(super::EINVAL));
                }
                with(|t, node, _| t.check_free(node, &addr))?;
                *local.borrow_mut() = Some(addr);
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
            Inner::Stream(local) => match local.into_inner() {
                Some(addr) => UnixListener::bind_addr(&SocketAddr(addr)),
                // Linux autobinds an unbound listener to an abstract name.
                None => UnixListener::bind_addr(&SocketAddr(super::unnamed())),
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
                let local = local.into_inner();
                if let Some(addr) = &local {
                    // Still free (Linux would have taken it at `bind`).
                    with(|t, node, _| t.check_free(node, addr))?;
                }
                // Completes in its first poll: nothing runs in between.
                let stream = UnixStream::connect(path).await?;
                if let Some(addr) = local {
                    let id = stream.id();
                    with(|t, _, _| t.name_client(id, addr))?;
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
