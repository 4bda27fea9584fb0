//! `UnixDatagram` under simulation.

use super::{addr_of, poll_ready, poll_step, try_step, with, Handle, SocketAddr};
use crate::io::{Interest, ReadBuf, Ready};
use std::fmt;
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

impl fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixDatagram")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

impl UnixDatagram {
    fn id(&self) -> u32 {
        self.handle.id
    }

    /// Binds this socket to `addr` (`UnixSocket::bind`).
    pub(super) fn bind_to(&self, addr: std::os::unix::net::SocketAddr) -> io::Result<()> {
        let id = self.id();
        with(|t, _, _| t.bind(id, addr))
    }

    fn new() -> io::Result<UnixDatagram> {
        crate::simulation::net::check_running()?;
        let id = with(|t, node, _| t.dgram(node));
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

    /// Creates a new `UnixDatagram` bound to the specified path (a name in
    /// the current node's namespace; the file system is not touched).
    pub fn bind<P>(path: P) -> io::Result<UnixDatagram>
    where
        P: AsRef<Path>,
    {
        let addr = addr_of(path.as_ref())?;
        let sock = UnixDatagram::new()?;
        let id = sock.id();
        with(|t, _, _| t.bind(id, addr))?;
        Ok(sock)
    }

    /// Creates an unnamed pair of connected sockets.
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let a = UnixDatagram::new()?;
        let b = UnixDatagram::new()?;
        let (ia, ib) = (a.id(), b.id());
        with(|t, _, _| {
            for (me, other) in [(ia, ib), (ib, ia)] {
                if let super::Kind::Dgram { peer, .. } = &mut t.sock_mut(me)?.kind {
                    *peer = Some((other, super::unnamed()));
                }
            }
            io::Result::Ok(())
        })?;
        Ok((a, b))
    }

    /// Refused: a std socket is a real OS socket.
    #[track_caller]
    pub fn from_std(datagram: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        drop(datagram);
        super::super::refuse_std("UnixDatagram::from_std")
    }

    /// Refused: there is no OS socket behind a simulated socket.
    #[track_caller]
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixDatagram> {
        super::super::refuse_std("UnixDatagram::into_std")
    }

    /// Creates a new `UnixDatagram` which is not bound to any address.
    pub fn unbound() -> io::Result<UnixDatagram> {
        UnixDatagram::new()
    }

    /// Connects the socket to the specified address: `send` goes there and
    /// only its datagrams are received.
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        let addr = addr_of(path.as_ref())?;
        let id = self.id();
        with(|t, _, _| t.dgram_connect(id, &addr))
    }

    /// Sends data on the socket to the socket's peer.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_send(cx, buf)).await
    }

    /// Tries to send a datagram to the peer without waiting.
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        let id = self.id();
        try_step(id, |t, wake| t.dgram_send(id, buf, None, wake))
    }

    /// Tries to send a datagram to the peer without waiting.
    pub fn try_send_to<P>(&self, buf: &[u8], target: P) -> io::Result<usize>
    where
        P: AsRef<Path>,
    {
        let to = addr_of(target.as_ref())?;
        let id = self.id();
        try_step(id, |t, wake| t.dgram_send(id, buf, Some(&to), wake))
    }

    /// Receives data from the socket.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv_from(buf).await.map(|(n, _)| n)
    }

    /// Tries to receive a datagram from the peer without waiting.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_recv_from(buf).map(|(n, _)| n)
    }

    /// Tries to receive data into `buf`'s spare capacity without waiting.
    pub fn try_recv_buf_from<B: bytes::BufMut>(
        &self,
        buf: &mut B,
    ) -> io::Result<(usize, SocketAddr)> {
        let mut from = None;
        let n = crate::simulation::net::stream::read_into_buf(buf, |dst| {
            let (n, a) = self.try_recv_from(dst)?;
            from = Some(a);
            Ok(n)
        })?;
        Ok((n, from.expect("set on success")))
    }

    /// Receives from the socket into `buf`'s spare capacity.
    pub async fn recv_buf_from<B: bytes::BufMut>(
        &self,
        buf: &mut B,
    ) -> io::Result<(usize, SocketAddr)> {
        let want = buf.remaining_mut().min(64 * 1024);
        let mut tmp = vec![0u8; want];
        let (n, from) = self.recv_from(&mut tmp).await?;
        buf.put_slice(&tmp[..n]);
        Ok((n, from))
    }

    /// Tries to receive data into `buf`'s spare capacity without waiting.
    pub fn try_recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        self.try_recv_buf_from(buf).map(|(n, _)| n)
    }

    /// Receives from the socket into `buf`'s spare capacity.
    pub async fn recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        self.recv_buf_from(buf).await.map(|(n, _)| n)
    }

    /// Sends data on the socket to the specified address.
    pub async fn send_to<P>(&self, buf: &[u8], target: P) -> io::Result<usize>
    where
        P: AsRef<Path>,
    {
        let to = addr_of(target.as_ref())?;
        let id = self.id();
        poll_fn(|cx| poll_step(cx, id, |t, wake| t.dgram_send(id, buf, Some(&to), wake))).await
    }

    /// Receives a datagram and the address it came from.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let id = self.id();
        poll_fn(|cx| poll_step(cx, id, |t, wake| t.dgram_recv(id, buf, wake)))
            .await
            .map(|(n, a)| (n, SocketAddr(a)))
    }

    /// Polls to receive a datagram and the address it came from.
    pub fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        let id = self.id();
        let dst = buf.initialize_unfilled();
        match poll_step(cx, id, |t, wake| t.dgram_recv(id, dst, wake)) {
            Poll::Ready(Ok((n, from))) => {
                buf.advance(n);
                Poll::Ready(Ok(SocketAddr(from)))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
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
        let to = match addr_of(target.as_ref()) {
            Ok(to) => to,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let id = self.id();
        poll_step(cx, id, |t, wake| t.dgram_send(id, buf, Some(&to), wake))
    }

    /// Polls to send a datagram to the peer.
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let id = self.id();
        poll_step(cx, id, |t, wake| t.dgram_send(id, buf, None, wake))
    }

    /// Polls to receive a datagram.
    pub fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.poll_recv_from(cx, buf).map(|r| r.map(|_| ()))
    }

    /// Tries to receive a datagram and its sender without waiting.
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let id = self.id();
        try_step(id, |t, wake| t.dgram_recv(id, buf, wake)).map(|(n, a)| (n, SocketAddr(a)))
    }

    /// Returns the local address that this socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with(|t, _, _| t.sock(id).map(|s| SocketAddr(s.local.clone())))
    }

    /// Returns the address of this socket's peer (`NotConnected` if none).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with(|t, _, _| t.dgram_peer_addr(id).map(SocketAddr))
    }

    /// Returns the value of the `SO_ERROR` option.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        let id = self.id();
        with(|t, _, _| super::stream::take_error(t, id))
    }

    /// Shuts down the read, write, or both halves of this connection.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        let id = self.id();
        with(|t, _, wake| t.shutdown(id, how, wake))
    }
}

// Tokio's descriptor traits: the socket's live descriptor (sockfd.rs).
crate::simulation::sockfd::live_descriptor!(UnixDatagram, |s| {
    crate::simulation::sockfd::live_unix_fd(s.id())
});
crate::simulation::unsupported::raw_io!(UnixDatagram, "UnixDatagram");
