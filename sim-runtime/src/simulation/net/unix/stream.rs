//! `UnixListener` and `UnixStream` under simulation.

use super::split::{self, OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use super::{addr_of, poll_ready, poll_step, try_step, with, Handle, SocketAddr, Table, UCred};
use crate::io::{AsyncRead, AsyncWrite, Interest, ReadBuf, Ready};
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::Shutdown;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A Unix socket which can accept connections from other Unix sockets (on
/// the same simulated node).
pub struct UnixListener {
    handle: Handle,
}

impl fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixListener")
            .field("local", &self.local_addr().ok())
            .finish()
    }
}

impl UnixListener {
    /// Creates a new `UnixListener` bound to the specified path (a name in
    /// the current node's namespace; the file system is not touched).
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
        crate::simulation::net::check_running()?;
        let id = with(|t, node, _| t.listen(node, socket_addr.0.clone()))?;
        Ok(UnixListener {
            handle: Handle::new(id),
        })
    }

    /// Refused: a std listener is a real OS socket.
    #[track_caller]
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        drop(listener);
        super::super::refuse_std("UnixListener::from_std")
    }

    /// Refused: there is no OS socket behind a simulated listener.
    #[track_caller]
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixListener> {
        super::super::refuse_std("UnixListener::into_std")
    }

    /// Returns the local socket address of this listener.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let id = self.handle.id;
        with(|t, _, _| t.sock(id).map(|s| SocketAddr(s.local.clone())))
    }

    /// Returns the value of the `SO_ERROR` option (always `None` for a
    /// listener).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        let id = self.handle.id;
        with(|t, _, _| take_error(t, id))
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
        poll_step(cx, id, |t, _| t.accept(id)).map(|r| {
            r.map(|(s, from)| {
                (
                    UnixStream {
                        handle: Handle::new(s),
                    },
                    SocketAddr(from),
                )
            })
        })
    }
}

pub(super) fn take_error(t: &mut Table, id: u32) -> io::Result<Option<io::Error>> {
    let s = t.sock_mut(id)?;
    Ok(s.error.take().map(io::Error::from_raw_os_error))
}

/// A structure representing a connected Unix socket (on the simulated
/// node's namespace).
pub struct UnixStream {
    handle: Handle,
}

impl fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixStream")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

impl UnixStream {
    pub(crate) fn id(&self) -> u32 {
        self.handle.id
    }

    /// Connects to the socket named by `path` in the current node's
    /// namespace.
    pub async fn connect<P>(path: P) -> io::Result<UnixStream>
    where
        P: AsRef<Path>,
    {
        let addr = SocketAddr(addr_of(path.as_ref())?);
        UnixStream::connect_addr(&addr).await
    }

    /// Connects to the socket at the specified address.
    pub async fn connect_addr(socket_addr: &SocketAddr) -> io::Result<UnixStream> {
        crate::simulation::net::check_running()?;
        // A Unix connect completes at once: the connection waits in the
        // listener's backlog until accepted.
        let id = with(|t, node, wake| t.connect(node, &socket_addr.0, wake))?;
        Ok(UnixStream {
            handle: Handle::new(id),
        })
    }

    /// Creates an unnamed pair of connected sockets.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        crate::simulation::net::check_running()?;
        let (a, b) = with(|t, node, _| t.stream_pair(node, super::unnamed(), super::unnamed()));
        Ok((
            UnixStream {
                handle: Handle::new(a),
            },
            UnixStream {
                handle: Handle::new(b),
            },
        ))
    }

    /// Refused: a std stream is a real OS socket.
    #[track_caller]
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        drop(stream);
        super::super::refuse_std("UnixStream::from_std")
    }

    /// Refused: there is no OS socket behind a simulated stream.
    #[track_caller]
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixStream> {
        super::super::refuse_std("UnixStream::into_std")
    }

    /// Waits for any of the requested ready states.
    pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        let id = self.id();
        Ok(poll_fn(|cx| poll_ready(cx, id, interest)).await)
    }

    /// Waits for the socket to become readable.
    pub async fn readable(&self) -> io::Result<()> {
        self.ready(Interest::READABLE).await.map(|_| ())
    }

    /// Polls for read readiness.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        poll_ready(cx, self.id(), Interest::READABLE).map(|_| Ok(()))
    }

    /// Tries to read data from the stream into the provided buffer.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let id = self.id();
        try_step(id, |t, wake| t.stream_read(id, buf, wake))
    }

    /// Tries to read data from the stream into the provided buffers.
    pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut tmp = vec![0u8; total];
        let n = self.try_read(&mut tmp)?;
        let mut off = 0;
        for b in bufs.iter_mut() {
            if off >= n {
                break;
            }
            let k = b.len().min(n - off);
            b[..k].copy_from_slice(&tmp[off..off + k]);
            off += k;
        }
        Ok(n)
    }

    /// Tries to read data into `buf`'s spare capacity.
    pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        crate::simulation::net::stream::read_into_buf(buf, |dst| self.try_read(dst))
    }

    /// Waits for the socket to become writable.
    pub async fn writable(&self) -> io::Result<()> {
        self.ready(Interest::WRITABLE).await.map(|_| ())
    }

    /// Polls for write readiness.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        poll_ready(cx, self.id(), Interest::WRITABLE).map(|_| Ok(()))
    }

    /// Tries to write a buffer to the stream.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let id = self.id();
        try_step(id, |t, wake| t.stream_write(id, buf, wake))
    }

    /// Tries to write several buffers to the stream.
    pub fn try_write_vectored(&self, buf: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.try_write(&crate::simulation::net::stream::gather(buf))
    }

    /// Returns the socket address of the local half of this connection.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with(|t, _, _| t.sock(id).map(|s| SocketAddr(s.local.clone())))
    }

    /// Returns the socket address of the remote half of this connection.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with(|t, _, _| t.dgram_peer_addr(id).map(SocketAddr))
    }

    /// Returns the effective credentials of the process which called
    /// `connect` or `pair()` (in simulation: the simulated process of the
    /// node, uid and gid 1000, pid `1000 + node index`).
    pub fn peer_cred(&self) -> io::Result<UCred> {
        let id = self.id();
        with(|t, _, _| match &t.sock(id)?.kind {
            super::Kind::Stream { peer_cred, .. } => Ok(*peer_cred),
            _ => Err(super::err(super::ENOTCONN)),
        })
    }

    /// Returns the value of the `SO_ERROR` option.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        let id = self.id();
        with(|t, _, _| take_error(t, id))
    }

    /// Shuts down the given directions; `NotConnected` is not an error (as
    /// Tokio's).
    pub(crate) fn shutdown_std(&self, how: Shutdown) -> io::Result<()> {
        let id = self.id();
        match with(|t, _, wake| t.shutdown(id, how, wake)) {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }

    /// Splits a `UnixStream` into a borrowed read half and write half.
    #[allow(clippy::needless_lifetimes)]
    pub fn split<'a>(&'a mut self) -> (ReadHalf<'a>, WriteHalf<'a>) {
        split::split(self)
    }

    /// Splits a `UnixStream` into owned halves; dropping the write half
    /// shuts the write direction down.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        split::split_owned(self)
    }

    pub(crate) fn poll_read_priv(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let id = self.id();
        let dst = buf.initialize_unfilled();
        match poll_step(cx, id, |t, wake| t.stream_read(id, dst, wake)) {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    pub(crate) fn poll_write_priv(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let id = self.id();
        poll_step(cx, id, |t, wake| t.stream_write(id, buf, wake))
    }

    pub(crate) fn poll_write_vectored_priv(
        &self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_priv(cx, &crate::simulation::net::stream::gather(bufs))
    }
}

impl AsyncRead for UnixStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_read_priv(cx, buf)
    }
}

impl AsyncWrite for UnixStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_priv(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored_priv(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shutdown_std(Shutdown::Write)?;
        Poll::Ready(Ok(()))
    }
}

impl AsRef<Self> for UnixStream {
    fn as_ref(&self) -> &Self {
        self
    }
}

// Tokio's descriptor traits: the socket's live descriptor (sockfd.rs).
crate::simulation::sockfd::live_descriptor!(UnixListener, |s| {
    crate::simulation::sockfd::live_unix_fd(s.handle.id)
});
crate::simulation::sockfd::live_descriptor!(UnixStream, |s| {
    crate::simulation::sockfd::live_unix_fd(s.id())
});
crate::simulation::unsupported::raw_io!(UnixStream, "UnixStream");
