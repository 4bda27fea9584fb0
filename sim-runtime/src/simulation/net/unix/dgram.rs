//! `UnixDatagram` under simulation.

use super::name::{bind_with_file, socket_host, target};
use super::{
    addr_of, local_addr, model_addr, peer_addr, poll_ready, poll_unix, take_error, tokio_addr,
    try_unix, SocketAddr,
};
use crate::io::{Interest, Ready};
use crate::simulation::net::shared::{datagram_bufs, debug_addrs, refuse_std};
use crate::simulation::net::{check_running, with_net, Dir, Handle};
use sim_net::{SocketId, UnixName};
use std::future::poll_fn;
use std::io;
use std::net::Shutdown;
use std::path::Path;
use std::task::{Context, Poll};

/// An I/O object representing a Unix datagram socket (on the simulated
/// node's namespace).
pub struct UnixDatagram {
    handle: Handle,
}

debug_addrs!(UnixDatagram, local: local_addr, peer: peer_addr);

impl UnixDatagram {
    fn id(&self) -> SocketId {
        self.handle.id
    }

    /// Binds this socket to `addr` (`UnixSocket::bind`), making a path's
    /// socket file on the socket's node's disk.
    pub(super) fn bind_to(&self, addr: std::os::unix::net::SocketAddr) -> io::Result<()> {
        let (id, addr) = (self.id(), model_addr(&addr));
        bind_with_file(socket_host(id)?, &addr, |file| {
            with_net(|net, _, _| net.unix_bind(id, addr.clone(), file))
        })
    }

    /// What a connect or a send to `path` looks up (on the socket's node's
    /// disk, for a path).
    fn target(&self, path: &Path) -> io::Result<UnixName> {
        let addr = model_addr(&addr_of(path)?);
        target(socket_host(self.id())?, &addr)
    }

    fn new() -> io::Result<UnixDatagram> {
        check_running()?;
        let id = with_net(|net, host, _| net.unix_datagram(host));
        Ok(UnixDatagram {
            handle: Handle::new(id),
        })
    }

    /// Waits for any of the requested ready states.
    pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        let id = self.id();
        Ok(poll_fn(|cx| poll_ready(cx, id, interest)).await)
    }

    /// Waits for the socket to become writable.
    pub async fn writable(&self) -> io::Result<()> {
        self.ready(Interest::WRITABLE).await.map(|_| ())
    }

    /// Polls for write readiness.
    pub fn poll_send_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        poll_ready(cx, self.id(), Interest::WRITABLE).map(|_| Ok(()))
    }

    /// Waits for the socket to become readable.
    pub async fn readable(&self) -> io::Result<()> {
        self.ready(Interest::READABLE).await.map(|_| ())
    }

    /// Polls for read readiness.
    pub fn poll_recv_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        poll_ready(cx, self.id(), Interest::READABLE).map(|_| Ok(()))
    }

    /// Creates a new `UnixDatagram` bound to the specified path (its socket
    /// file is made on the current node's simulated disk).
    pub fn bind<P>(path: P) -> io::Result<UnixDatagram>
    where
        P: AsRef<Path>,
    {
        let addr = addr_of(path.as_ref())?;
        let sock = UnixDatagram::new()?;
        sock.bind_to(addr)?;
        Ok(sock)
    }

    /// Creates an unnamed pair of connected sockets.
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        check_running()?;
        let (a, b) = with_net(|net, host, _| net.unix_datagram_pair(host));
        Ok((
            UnixDatagram {
                handle: Handle::new(a),
            },
            UnixDatagram {
                handle: Handle::new(b),
            },
        ))
    }

    /// Creates a new `UnixDatagram` which is not bound to any address.
    pub fn unbound() -> io::Result<UnixDatagram> {
        UnixDatagram::new()
    }

    /// Connects the socket to the specified address: `send` goes there and
    /// only its datagrams are received.
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        let to = self.target(path.as_ref())?;
        let id = self.id();
        with_net(|net, _, _| net.unix_datagram_connect(id, &to))
    }

    /// Sends data on the socket to the socket's peer.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_send(cx, buf)).await
    }

    /// Tries to send a datagram to the peer without waiting.
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        let id = self.id();
        try_unix(id, Dir::Write, |net, now| net.unix_send(id, buf, None, now))
    }

    /// Tries to send a datagram to the peer without waiting.
    pub fn try_send_to<P>(&self, buf: &[u8], target: P) -> io::Result<usize>
    where
        P: AsRef<Path>,
    {
        let to = self.target(target.as_ref())?;
        let id = self.id();
        try_unix(id, Dir::Write, |net, now| {
            net.unix_send(id, buf, Some(&to), now)
        })
    }

    /// Sends data on the socket to the specified address.
    pub async fn send_to<P>(&self, buf: &[u8], target: P) -> io::Result<usize>
    where
        P: AsRef<Path>,
    {
        let to = self.target(target.as_ref())?;
        poll_fn(|cx| self.poll_send_model(cx, buf, Some(&to))).await
    }

    /// Polls to send a datagram to the specified address.
    pub fn poll_send_to<P>(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        target: P,
    ) -> Poll<io::Result<usize>>
    where
        P: AsRef<Path>,
    {
        let to = match self.target(target.as_ref()) {
            Ok(to) => to,
            Err(e) => return Poll::Ready(Err(e)),
        };
        self.poll_send_model(cx, buf, Some(&to))
    }

    /// Polls to send a datagram to the peer.
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_send_model(cx, buf, None)
    }

    fn poll_send_model(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        to: Option<&UnixName>,
    ) -> Poll<io::Result<usize>> {
        let id = self.id();
        poll_unix(cx, id, Dir::Write, |net, now| {
            net.unix_send(id, buf, to, now)
        })
    }

    /// Returns the local address that this socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr(self.id())
    }

    /// Returns the address of this socket's peer (`NotConnected` if none).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        peer_addr(self.id())
    }

    /// Returns the value of the `SO_ERROR` option.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        take_error(self.id())
    }

    /// Shuts down the read, write, or both halves of this connection.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        let id = self.id();
        with_net(|net, _, now| net.unix_shutdown(id, how, now))
    }
}

datagram_bufs!(
    UnixDatagram,
    SocketAddr,
    poll: |id, cx, dst| poll_unix(cx, id, Dir::Read, |net, now| net.unix_recv(id, dst, now))
        .map(|r| r.map(|(n, a)| (n, tokio_addr(a)))),
    try: |id, buf| try_unix(id, Dir::Read, |net, now| net.unix_recv(id, buf, now))
        .map(|(n, a)| (n, tokio_addr(a))),
);
refuse_std!(UnixDatagram, std::os::unix::net::UnixDatagram);

// Tokio's descriptor traits: the socket's live descriptor (net/fd.rs).
crate::simulation::net::fd::live_descriptor!(UnixDatagram, |s| super::live_fd(s.id()));
crate::simulation::unsupported::raw_io!(UnixDatagram, "UnixDatagram");
