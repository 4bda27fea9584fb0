//! `TcpStream`: one end of a simulated TCP connection.

use super::addr::{resolve, ToSocketAddrs};
use super::split::{self, OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use super::{poll_net, poll_ready_with, try_net, with_net, Dir, Handle};
use crate::io::{AsyncRead, AsyncWrite, Interest, ReadBuf, Ready};
use sim_net::SocketId;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// Socket options a real socket would remember.
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub nodelay: bool,
    pub linger: Option<Option<Duration>>,
    pub ttl: Option<u32>,
    pub quickack: bool,
}

/// The shared part of a stream: its socket and options.
#[derive(Debug)]
pub(crate) struct Inner {
    pub handle: Handle,
    pub options: Mutex<Options>,
}

impl Inner {
    pub(crate) fn id(&self) -> SocketId {
        self.handle.id
    }
}

/// A TCP stream between a local and a remote socket, on the simulated
/// network.
pub struct TcpStream {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

/// Connects a socket that the model already started connecting.
pub(crate) async fn finish_connect(handle: Handle) -> io::Result<TcpStream> {
    let id = handle.id;
    poll_fn(|cx| poll_net(cx, id, Dir::Write, |net, now| net.tcp_poll_connect(id, now))).await?;
    // Connected: writable (the connect waited for that), not yet readable.
    Ok(TcpStream::from_handle(handle, [false, true]))
}

impl TcpStream {
    pub(crate) fn from_handle(handle: Handle, ready: [bool; 2]) -> TcpStream {
        super::new_stream_ready(handle.id, ready);
        TcpStream {
            inner: Arc::new(Inner {
                handle,
                options: Mutex::new(Options::default()),
            }),
        }
    }

    pub(crate) fn id(&self) -> SocketId {
        self.inner.id()
    }

    /// Opens a TCP connection to a remote host; each resolved address is
    /// tried in turn until one connects.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        super::check_running()?;
        let addrs = resolve(&addr)?;
        let mut last = None;
        for addr in addrs {
            let started = with_net(|net, host, now| net.tcp_connect(host, None, addr, now));
            match started {
                Ok(id) => match finish_connect(Handle::new(id)).await {
                    Ok(s) => return Ok(s),
                    Err(e) => last = Some(e),
                },
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any address",
            )
        }))
    }

    /// Refused: a std stream is a real OS socket, or (made inside the
    /// simulation) one whose `connect` was refused, so never connected.
    #[track_caller]
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        drop(stream);
        super::refuse_std("TcpStream::from_std")
    }

    /// Refused: there is no OS socket behind a simulated stream.
    #[track_caller]
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        super::refuse_std("TcpStream::into_std")
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with_net(|net, _, _| net.local_addr(id))
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with_net(|net, _, _| net.peer_addr(id))
    }

    /// The socket's pending error (`SO_ERROR`); the simulation reports
    /// errors on the next read or write instead, so this is `None`.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        Ok(None)
    }

    pub(crate) fn poll_read_id(
        id: SocketId,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let dst = buf.initialize_unfilled();
        // A fault point of the runtime's own may make the read short (as
        // TCP may): see `poll_net_read`.
        let len = dst.len();
        match super::poll_net_read(cx, id, len, |net, now, limit| {
            net.tcp_read(id, &mut dst[..limit], false, now)
        }) {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    pub(crate) fn poll_peek_id(
        id: SocketId,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        let dst = buf.initialize_unfilled();
        match poll_net(cx, id, Dir::Read, |net, now| {
            net.tcp_read(id, dst, true, now)
        }) {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(n))
            }
            other => other,
        }
    }

    pub(crate) fn poll_write_id(
        id: SocketId,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        // A fault point of the runtime's own may slow this write's delivery.
        let r = super::slow_delivery(id, data, cx);
        if let Poll::Ready(Ok(n)) = &r {
            tracing::trace!(target: "sim::net", socket = id.as_u64(), bytes = n, "sent");
        }
        r
    }

    pub(crate) fn poll_write_vectored_id(
        id: SocketId,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let data = gather(bufs);
        Self::poll_write_id(id, cx, &data)
    }

    pub(crate) fn try_read_id(id: SocketId, buf: &mut [u8]) -> io::Result<usize> {
        try_net(id, Dir::Read, |net, now| net.tcp_read(id, buf, false, now))
    }

    pub(crate) fn try_write_id(id: SocketId, data: &[u8]) -> io::Result<usize> {
        try_net(id, Dir::Write, |net, now| net.tcp_write(id, data, now))
    }

    pub(crate) async fn ready_id(id: SocketId, interest: Interest) -> io::Result<Ready> {
        let dir = if interest.is_readable() {
            Dir::Read
        } else {
            Dir::Write
        };
        Ok(poll_fn(|cx| {
            let r = poll_ready_with(cx, id, dir, |net, now, sticky| {
                readiness(net, id, interest, now, sticky)
            });
            if r.is_pending() && interest.is_readable() && interest.is_writable() {
                // Both lists: whichever side changes first wakes us.
                let _ = poll_ready_with(cx, id, Dir::Write, |net, now, sticky| {
                    readiness(net, id, interest, now, sticky)
                });
            }
            r
        })
        .await)
    }

    pub(crate) fn poll_ready_id(
        id: SocketId,
        cx: &mut Context<'_>,
        interest: Interest,
    ) -> Poll<io::Result<()>> {
        let dir = if interest.is_readable() {
            Dir::Read
        } else {
            Dir::Write
        };
        poll_ready_with(cx, id, dir, |net, now, sticky| {
            readiness(net, id, interest, now, sticky)
        })
        .map(|_| Ok(()))
    }

    /// Waits until the stream is ready for any of `interest`.
    pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        Self::ready_id(self.id(), interest).await
    }

    pub async fn readable(&self) -> io::Result<()> {
        self.ready(Interest::READABLE).await.map(|_| ())
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Self::poll_ready_id(self.id(), cx, Interest::READABLE)
    }

    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        Self::try_read_id(self.id(), buf)
    }

    pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        try_read_vectored_id(self.id(), bufs)
    }

    /// Reads into `buf`'s spare capacity without waiting.
    pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        read_into_buf(buf, |dst| self.try_read(dst))
    }

    pub async fn writable(&self) -> io::Result<()> {
        self.ready(Interest::WRITABLE).await.map(|_| ())
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Self::poll_ready_id(self.id(), cx, Interest::WRITABLE)
    }

    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        Self::try_write_id(self.id(), buf)
    }

    pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        Self::try_write_id(self.id(), &gather(bufs))
    }

    /// Receives data without removing it from the queue.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let id = self.id();
        poll_fn(|cx| {
            poll_net(cx, id, Dir::Read, |net, now| {
                net.tcp_read(id, buf, true, now)
            })
        })
        .await
    }

    pub fn poll_peek(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        Self::poll_peek_id(self.id(), cx, buf)
    }

    pub fn nodelay(&self) -> io::Result<bool> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .nodelay)
    }

    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .nodelay = nodelay;
        Ok(())
    }

    pub fn linger(&self) -> io::Result<Option<Duration>> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .linger
            .flatten())
    }

    pub fn quickack(&self) -> io::Result<bool> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .quickack)
    }

    pub fn set_quickack(&self, quickack: bool) -> io::Result<()> {
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .quickack = quickack;
        Ok(())
    }

    #[deprecated = "`SO_LINGER` causes the socket to block the thread on drop"]
    pub fn set_linger(&self, dur: Option<Duration>) -> io::Result<()> {
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .linger = Some(dur);
        // A zero linger makes close send a RST instead of a FIN.
        self.inner.handle.abort_on_close.store(
            dur == Some(Duration::ZERO),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(())
    }

    /// Sets `SO_LINGER` to zero: closing the socket resets the connection.
    pub fn set_zero_linger(&self) -> io::Result<()> {
        #[allow(deprecated)]
        self.set_linger(Some(Duration::ZERO))
    }

    pub fn ttl(&self) -> io::Result<u32> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ttl
            .unwrap_or(64))
    }

    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        if ttl == 0 || ttl > 255 {
            return Err(io::Error::from_raw_os_error(22));
        }
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ttl = Some(ttl);
        Ok(())
    }

    /// Splits into a borrowed read half and write half.
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        split::split(self)
    }

    /// Splits into owned halves; dropping the write half shuts the write
    /// direction down.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        split::into_split(self)
    }

    pub(crate) fn shutdown_id(id: SocketId, how: Shutdown) -> io::Result<()> {
        let (r, w) = match how {
            Shutdown::Read => (true, false),
            Shutdown::Write => (false, true),
            Shutdown::Both => (true, true),
        };
        with_net(|net, _, now| net.tcp_shutdown(id, r, w, now))
    }
}

/// Reads with `read` into `buf`'s spare capacity (at most 64 KiB at once),
/// then advances it.
pub(crate) fn read_into_buf<B: bytes::BufMut>(
    buf: &mut B,
    read: impl FnOnce(&mut [u8]) -> io::Result<usize>,
) -> io::Result<usize> {
    let want = buf.remaining_mut().min(64 * 1024);
    let mut tmp = vec![0u8; want];
    let n = read(&mut tmp)?;
    buf.put_slice(&tmp[..n]);
    Ok(n)
}

pub(crate) fn try_read_vectored_id(
    id: SocketId,
    bufs: &mut [io::IoSliceMut<'_>],
) -> io::Result<usize> {
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    let mut tmp = vec![0u8; total];
    let n = TcpStream::try_read_id(id, &mut tmp)?;
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

pub(crate) fn gather(bufs: &[io::IoSlice<'_>]) -> Vec<u8> {
    let mut v = Vec::with_capacity(bufs.iter().map(|b| b.len()).sum());
    for b in bufs {
        v.extend_from_slice(b);
    }
    v
}

fn readiness(
    net: &mut sim_net::Net,
    id: SocketId,
    interest: Interest,
    now: u64,
    sticky: [bool; 2],
) -> (Option<Ready>, Option<u64>) {
    let r = net.tcp_readiness(id, now);
    let mut ready = Ready::EMPTY;
    if interest.is_readable() && (r.readable || sticky[0]) {
        ready |= Ready::READABLE;
        if r.read_closed {
            ready |= Ready::READ_CLOSED;
        }
    }
    if interest.is_writable() && (r.writable || sticky[1]) {
        ready |= Ready::WRITABLE;
        if r.write_closed {
            ready |= Ready::WRITE_CLOSED;
        }
    }
    if ready.is_empty() {
        (None, r.wake_at)
    } else {
        (Some(ready), None)
    }
}

impl AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        TcpStream::poll_read_id(self.id(), cx, buf)
    }
}

impl AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        TcpStream::poll_write_id(self.id(), cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        TcpStream::poll_write_vectored_id(self.id(), cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(TcpStream::shutdown_id(self.id(), Shutdown::Write))
    }
}
