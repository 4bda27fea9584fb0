//! `UnixListener` and `UnixStream` under simulation.

use super::name::{bind_with_file, current_host, target};
use super::{
    addr_of, cred_of, local_addr, model_addr, peer_addr, poll_ready, poll_unix, take_error,
    tokio_addr, try_unix, SocketAddr, UCred,
};
use crate::io::{Interest, Ready};
use crate::simulation::net::shared::{debug_addrs, refuse_std, stream_io, NetStream};
use crate::simulation::net::{check_running, new_stream_ready, with_net, Dir, Handle};
use sim_net::{SocketId, UnixAddr};
use std::future::poll_fn;
use std::io;
use std::net::Shutdown;
use std::path::Path;
use std::task::{Context, Poll};

/// A Unix socket which can accept connections from other Unix sockets (on
/// the same simulated node).
pub struct UnixListener {
    handle: Handle,
}

debug_addrs!(UnixListener, local: local_addr);

impl UnixListener {
    /// Creates a new `UnixListener` bound to the specified path (its socket
    /// file is made on the current node's simulated disk).
    #[track_caller]
    pub fn bind<P>(path: P) -> io::Result<UnixListener>
    where
        P: AsRef<Path>,
    {
        let addr = SocketAddr(addr_of(path.as_ref())?);
        UnixListener::bind_addr(&addr)
    }

    /// Creates a new `UnixListener` bound to the specified address.
    #[track_caller]
    pub fn bind_addr(socket_addr: &SocketAddr) -> io::Result<UnixListener> {
        crate::simulation::runtime::check_io();
        check_running()?;
        let addr = model_addr(&socket_addr.0);
        bind_with_file(current_host(), &addr, |file| {
            UnixListener::listen_on(addr.clone(), file)
        })
    }

    /// A listener bound to `addr`, whose socket file (for a path) is
    /// `file`, made already.
    #[track_caller]
    pub(super) fn listen_on(addr: UnixAddr, file: Option<u64>) -> io::Result<UnixListener> {
        crate::simulation::runtime::check_io();
        check_running()?;
        let id = with_net(|net, host, _| net.unix_listen(host, addr, file))?;
        Ok(UnixListener {
            handle: Handle::new(id),
        })
    }

    /// Returns the local socket address of this listener.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr(self.handle.id)
    }

    /// Returns the value of the `SO_ERROR` option (always `None` for a
    /// listener).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        take_error(self.handle.id)
    }

    /// Accepts a new incoming connection to this listener.
    ///
    /// # Cancel safety
    ///
    /// This method is cancel safe: if it does not complete, no connection
    /// was accepted.
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// Polls to accept a new incoming connection to this listener.
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(UnixStream, SocketAddr)>> {
        let id = self.handle.id;
        poll_unix(cx, id, Dir::Read, |net, _| net.unix_accept(id)).map(|r| {
            r.map(|(s, from)| {
                // As Tokio: an accepted stream is assumed readable and
                // writable until an operation finds otherwise.
                let stream = UnixStream::from_handle(Handle::new(s), [true, true]);
                (stream, tokio_addr(from))
            })
        })
    }
}

/// A structure representing a connected Unix socket (on the simulated
/// node's namespace).
pub struct UnixStream {
    handle: Handle,
}

debug_addrs!(UnixStream, local: local_addr, peer: peer_addr);

impl UnixStream {
    fn from_handle(handle: Handle, ready: [bool; 2]) -> UnixStream {
        if ready != [false; 2] {
            new_stream_ready(handle.id, ready);
        }
        UnixStream { handle }
    }

    pub(crate) fn id(&self) -> SocketId {
        self.handle.id
    }

    /// Connects to the socket named by `path` (a socket file on the current
    /// node's simulated disk, or an abstract name).
    pub async fn connect<P>(path: P) -> io::Result<UnixStream>
    where
        P: AsRef<Path>,
    {
        let addr = SocketAddr(addr_of(path.as_ref())?);
        UnixStream::connect_addr(&addr).await
    }

    /// Connects to the socket at the specified address.
    pub async fn connect_addr(socket_addr: &SocketAddr) -> io::Result<UnixStream> {
        check_running()?;
        // A Unix connect completes at once: the connection waits in the
        // listener's backlog until accepted.
        let to = target(current_host(), &model_addr(&socket_addr.0))?;
        let id = with_net(|net, host, now| net.unix_connect(host, &to, now))?;
        Ok(UnixStream::from_handle(Handle::new(id), [false; 2]))
    }

    /// Creates an unnamed pair of connected sockets.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        check_running()?;
        let (a, b) = with_net(|net, host, _| net.unix_pair(host));
        Ok((
            UnixStream::from_handle(Handle::new(a), [false; 2]),
            UnixStream::from_handle(Handle::new(b), [false; 2]),
        ))
    }

    /// Returns the socket address of the local half of this connection.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr(self.id())
    }

    /// Returns the socket address of the remote half of this connection.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        peer_addr(self.id())
    }

    /// Returns the effective credentials of the process which called
    /// `connect` or `pair()` (in simulation: the simulated process of the
    /// node, uid and gid 1000, pid `1000 + node index`).
    pub fn peer_cred(&self) -> io::Result<UCred> {
        let id = self.id();
        with_net(|net, _, _| net.unix_peer_host(id)).map(cred_of)
    }

    /// Returns the value of the `SO_ERROR` option.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        take_error(self.id())
    }
}

impl NetStream for UnixStream {
    fn sock(&self) -> SocketId {
        self.id()
    }

    fn poll_ready_id(id: SocketId, cx: &mut Context<'_>, interest: Interest) -> Poll<Ready> {
        poll_ready(cx, id, interest)
    }

    fn poll_read_id(id: SocketId, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>> {
        poll_unix(cx, id, Dir::Read, |net, now| net.unix_read(id, dst, now))
    }

    fn poll_write_id(id: SocketId, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        poll_unix(cx, id, Dir::Write, |net, now| net.unix_write(id, data, now))
    }

    fn try_read_id(id: SocketId, buf: &mut [u8]) -> io::Result<usize> {
        try_unix(id, Dir::Read, |net, now| net.unix_read(id, buf, now))
    }

    fn try_write_id(id: SocketId, data: &[u8]) -> io::Result<usize> {
        try_unix(id, Dir::Write, |net, now| net.unix_write(id, data, now))
    }

    /// `NotConnected` is not an error (as Tokio's).
    fn shutdown_id(id: SocketId, how: Shutdown) -> io::Result<()> {
        match with_net(|net, _, now| net.unix_shutdown(id, how, now)) {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }
}

stream_io!(UnixStream);
refuse_std!(UnixListener, std::os::unix::net::UnixListener);
refuse_std!(UnixStream, std::os::unix::net::UnixStream);

impl AsRef<Self> for UnixStream {
    fn as_ref(&self) -> &Self {
        self
    }
}

// Tokio's descriptor traits: the socket's live descriptor (net/fd.rs).
crate::simulation::net::fd::live_descriptor!(UnixListener, |s| super::live_fd(s.handle.id));
crate::simulation::net::fd::live_descriptor!(UnixStream, |s| super::live_fd(s.id()));
crate::simulation::unsupported::raw_io!(UnixStream, "UnixStream");
