//! What Tokio's TCP and Unix socket types share, written once.
//!
//! Tokio gives `TcpStream` and `UnixStream` the same readiness and
//! non-blocking I/O methods and the same four halves, and `UdpSocket` and
//! `UnixDatagram` the same buffer-filling receives. Each kind here says
//! only how it calls the model ([`NetStream`]: which readiness, which read
//! and write, which cached-readiness rule); the macros write Tokio's
//! methods on top, once for both:
//!
//! - [`stream_io!`]: `ready`, `readable`, `writable`, `poll_*_ready`, the
//!   `try_read*`/`try_write*` family, `AsyncRead`, `AsyncWrite`;
//! - [`stream_halves!`]: `split`, `into_split` and the halves
//!   (`ReadHalf`, `WriteHalf`, `OwnedReadHalf`, `OwnedWriteHalf`,
//!   `ReuniteError`), in the module that invokes it (`tokio::net::tcp`,
//!   `tokio::net::unix`);
//! - [`datagram_bufs!`]: `recv`, `try_recv`, `poll_recv` and the `*_buf*`
//!   receives, over each kind's `recv_from` family;
//! - [`refuse_std!`]: `from_std` and `into_std` where a simulated socket
//!   has no OS socket to give or take.

use super::{poll_ready_with, Cache, Dir};
use crate::io::{Interest, ReadBuf, Ready};
use sim_net::{Net, Readiness, SocketId};
use std::io;
use std::task::{Context, Poll};

/// How a stream kind calls the model; [`stream_io!`] and
/// [`stream_halves!`] write Tokio's methods over it.
pub(crate) trait NetStream {
    /// The stream's socket in the model.
    fn sock(&self) -> SocketId;
    /// Readiness for `interest`: ready, or pending with the waker left.
    fn poll_ready_id(id: SocketId, cx: &mut Context<'_>, interest: Interest) -> Poll<Ready>;
    /// A read into `dst`, waiting.
    fn poll_read_id(id: SocketId, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>>;
    /// A write of `data`, waiting.
    fn poll_write_id(id: SocketId, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>>;
    /// A read that does not wait (`WouldBlock`).
    fn try_read_id(id: SocketId, buf: &mut [u8]) -> io::Result<usize>;
    /// A write that does not wait (`WouldBlock`).
    fn try_write_id(id: SocketId, data: &[u8]) -> io::Result<usize>;
    /// `shutdown(2)`, as the stream's `AsyncWrite::poll_shutdown` reports it.
    fn shutdown_id(id: SocketId, how: std::net::Shutdown) -> io::Result<()>;
}

/// Polls readiness for `interest` with `f` (see [`ready_from`]): pending
/// leaves the waker on the read list, or the write list for a write-only
/// interest, and on both for both, so whichever side changes first wakes
/// the task.
pub(crate) fn poll_interest(
    cx: &mut Context<'_>,
    sock: SocketId,
    interest: Interest,
    mut f: impl FnMut(&mut Net, u64, &mut [bool; 2]) -> (Option<Ready>, Option<u64>),
) -> Poll<Ready> {
    let dir = if interest.is_readable() {
        Dir::Read
    } else {
        Dir::Write
    };
    let r = poll_ready_with(cx, sock, dir, &mut f);
    if r.is_pending() && interest.is_readable() && interest.is_writable() {
        let _ = poll_ready_with(cx, sock, Dir::Write, &mut f);
    }
    r
}

/// Tokio's readiness from the model's: a direction is ready if the model
/// says so or Tokio still has it cached (`sticky`, per direction). Under
/// [`Cache::ClearOnWait`] what the model says ready is cached too (Tokio
/// keeps a readiness event until an operation would block). Answers
/// `(ready, wake_at)` for [`super::poll_ready_with`].
pub(crate) fn ready_from(
    r: Readiness,
    interest: Interest,
    sticky: &mut [bool; 2],
    cache: Cache,
) -> (Option<Ready>, Option<u64>) {
    if cache == Cache::ClearOnWait {
        sticky[0] |= r.readable;
        sticky[1] |= r.writable;
    }
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

/// Polls `f` into `buf`'s unfilled part, advancing it by what `f` read;
/// `f`'s other answer (a sender's address) is the result.
pub(crate) fn fill<X>(
    buf: &mut ReadBuf<'_>,
    f: impl FnOnce(&mut [u8]) -> Poll<io::Result<(usize, X)>>,
) -> Poll<io::Result<X>> {
    match f(buf.initialize_unfilled()) {
        Poll::Ready(Ok((n, x))) => {
            buf.advance(n);
            Poll::Ready(Ok(x))
        }
        Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        Poll::Pending => Poll::Pending,
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

/// Reads with `read` into one buffer as long as `bufs`, then spreads what
/// it read over them.
pub(crate) fn scatter(
    bufs: &mut [io::IoSliceMut<'_>],
    read: impl FnOnce(&mut [u8]) -> io::Result<usize>,
) -> io::Result<usize> {
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    let mut tmp = vec![0u8; total];
    let n = read(&mut tmp)?;
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

/// `bufs` in one buffer.
pub(crate) fn gather(bufs: &[io::IoSlice<'_>]) -> Vec<u8> {
    let mut v = Vec::with_capacity(bufs.iter().map(|b| b.len()).sum());
    for b in bufs {
        v.extend_from_slice(b);
    }
    v
}

/// `AsyncRead` for a [`NetStream`] `s` (`$get`: a stream or a half's).
pub(crate) fn poll_read<S: NetStream>(
    s: &S,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    let id = s.sock();
    fill(buf, |dst| {
        S::poll_read_id(id, cx, dst).map(|r| r.map(|n| (n, ())))
    })
}

/// `AsyncWrite::poll_write` for a [`NetStream`].
pub(crate) fn poll_write<S: NetStream>(
    s: &S,
    cx: &mut Context<'_>,
    buf: &[u8],
) -> Poll<io::Result<usize>> {
    S::poll_write_id(s.sock(), cx, buf)
}

/// `AsyncWrite::poll_shutdown` for a [`NetStream`]: the write direction.
pub(crate) fn shutdown_write<S: NetStream>(s: &S) -> io::Result<()> {
    S::shutdown_id(s.sock(), std::net::Shutdown::Write)
}

/// `AsyncWrite::poll_write_vectored` for a [`NetStream`]: one write.
pub(crate) fn poll_write_vectored<S: NetStream>(
    s: &S,
    cx: &mut Context<'_>,
    bufs: &[io::IoSlice<'_>],
) -> Poll<io::Result<usize>> {
    S::poll_write_id(s.sock(), cx, &gather(bufs))
}

/// `AsyncRead` (`read`) or `AsyncWrite` (`write`) for `$t`, a
/// [`NetStream`] or a half, whose stream `$get` gives (with `$s` the
/// value); a successful `poll_shutdown` runs `$on_shutdown` with `$h` the
/// value.
macro_rules! async_io {
    (read $t:ty, $s:ident => $get:expr) => {
        impl $crate::io::AsyncRead for $t {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut $crate::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let $s = &*self;
                $crate::simulation::net::shared::poll_read($get, cx, buf)
            }
        }
    };
    (write $t:ty, $s:ident => $get:expr, |$h:ident| $on_shutdown:expr) => {
        impl $crate::io::AsyncWrite for $t {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $s = &*self;
                $crate::simulation::net::shared::poll_write($get, cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $s = &*self;
                $crate::simulation::net::shared::poll_write_vectored($get, cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let $h = std::pin::Pin::into_inner(self);
                let r = {
                    let $s = &*$h;
                    $crate::simulation::net::shared::shutdown_write($get)
                };
                if r.is_ok() {
                    $on_shutdown;
                }
                std::task::Poll::Ready(r)
            }
        }
    };
}
pub(crate) use async_io;

/// Tokio's readiness and non-blocking I/O methods and `AsyncRead` /
/// `AsyncWrite` for a [`NetStream`].
macro_rules! stream_io {
    ($ty:ident) => {
        impl $ty {
            /// Waits for any of the requested ready states.
            pub async fn ready(
                &self,
                interest: $crate::io::Interest,
            ) -> std::io::Result<$crate::io::Ready> {
                use $crate::simulation::net::shared::NetStream;
                let id = self.sock();
                Ok(std::future::poll_fn(|cx| Self::poll_ready_id(id, cx, interest)).await)
            }

            /// Waits for the socket to become readable.
            pub async fn readable(&self) -> std::io::Result<()> {
                self.ready($crate::io::Interest::READABLE).await.map(|_| ())
            }

            /// Polls for read readiness.
            pub fn poll_read_ready(
                &self,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                use $crate::simulation::net::shared::NetStream;
                Self::poll_ready_id(self.sock(), cx, $crate::io::Interest::READABLE).map(|_| Ok(()))
            }

            /// Tries to read into `buf` without waiting.
            pub fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                use $crate::simulation::net::shared::NetStream;
                Self::try_read_id(self.sock(), buf)
            }

            /// Tries to read into `bufs` without waiting.
            pub fn try_read_vectored(
                &self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                $crate::simulation::net::shared::scatter(bufs, |dst| self.try_read(dst))
            }

            /// Tries to read into `buf`'s spare capacity without waiting.
            pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
                $crate::simulation::net::shared::read_into_buf(buf, |dst| self.try_read(dst))
            }

            /// Waits for the socket to become writable.
            pub async fn writable(&self) -> std::io::Result<()> {
                self.ready($crate::io::Interest::WRITABLE).await.map(|_| ())
            }

            /// Polls for write readiness.
            pub fn poll_write_ready(
                &self,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                use $crate::simulation::net::shared::NetStream;
                Self::poll_ready_id(self.sock(), cx, $crate::io::Interest::WRITABLE).map(|_| Ok(()))
            }

            /// Tries to write `buf` without waiting.
            pub fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
                use $crate::simulation::net::shared::NetStream;
                Self::try_write_id(self.sock(), buf)
            }

            /// Tries to write `bufs` without waiting.
            pub fn try_write_vectored(
                &self,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::io::Result<usize> {
                self.try_write(&$crate::simulation::net::shared::gather(bufs))
            }
        }

        $crate::simulation::net::shared::async_io!(read $ty, s => s);
        $crate::simulation::net::shared::async_io!(write $ty, s => s, |_h| {});
    };
}
pub(crate) use stream_io;

/// `split` and `into_split` for the [`NetStream`] `$stream`, whose
/// addresses are `$addr`s, and Tokio's halves, in the invoking module.
macro_rules! stream_halves {
    ($stream:ident, $addr:ty) => {
        impl $stream {
            /// Splits the stream into a borrowed read half and write half.
            pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
                (ReadHalf(&*self), WriteHalf(&*self))
            }

            /// Splits the stream into owned halves; dropping the write half
            /// shuts the write direction down.
            pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
                let arc = std::sync::Arc::new(self);
                (
                    OwnedReadHalf { inner: arc.clone() },
                    OwnedWriteHalf {
                        inner: arc,
                        shutdown_on_drop: true,
                    },
                )
            }
        }

        #[doc = concat!("Borrowed read half of a [`", stringify!($stream), "`], from `split`.")]
        #[derive(Debug)]
        pub struct ReadHalf<'a>(&'a $stream);

        #[doc = concat!("Borrowed write half of a [`", stringify!($stream), "`], from `split`.")]
        #[derive(Debug)]
        pub struct WriteHalf<'a>(&'a $stream);

        #[doc = concat!("Owned read half of a [`", stringify!($stream), "`], from `into_split`.")]
        #[derive(Debug)]
        pub struct OwnedReadHalf {
            inner: std::sync::Arc<$stream>,
        }

        #[doc = concat!("Owned write half of a [`", stringify!($stream), "`], from `into_split`; ")]
        /// dropping it shuts the write direction down (unless
        /// [`OwnedWriteHalf::forget`] was called).
        #[derive(Debug)]
        pub struct OwnedWriteHalf {
            inner: std::sync::Arc<$stream>,
            shutdown_on_drop: bool,
        }

        /// Error of `reunite`: the halves came from different streams.
        #[derive(Debug)]
        pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

        impl std::fmt::Display for ReuniteError {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "tried to reunite halves that are not from the same socket"
                )
            }
        }

        impl std::error::Error for ReuniteError {}

        fn reunite(
            read: OwnedReadHalf,
            write: OwnedWriteHalf,
        ) -> Result<$stream, ReuniteError> {
            if std::sync::Arc::ptr_eq(&read.inner, &write.inner) {
                write.forget();
                // Only two Arcs existed, and the write half's is gone.
                Ok(std::sync::Arc::try_unwrap(read.inner)
                    .expect(concat!(stringify!($stream), ": try_unwrap failed in reunite")))
            } else {
                Err(ReuniteError(read, write))
            }
        }

        impl OwnedReadHalf {
            /// Puts the halves back together; fails if they are from
            /// different streams.
            pub fn reunite(self, other: OwnedWriteHalf) -> Result<$stream, ReuniteError> {
                reunite(self, other)
            }
        }

        impl OwnedWriteHalf {
            /// Puts the halves back together; fails if they are from
            /// different streams.
            pub fn reunite(self, other: OwnedReadHalf) -> Result<$stream, ReuniteError> {
                reunite(other, self)
            }

            /// Drops the half without shutting the write direction down.
            pub fn forget(mut self) {
                self.shutdown_on_drop = false;
                drop(self);
            }
        }

        impl Drop for OwnedWriteHalf {
            fn drop(&mut self) {
                use $crate::simulation::net::shared::NetStream;
                if self.shutdown_on_drop && $crate::simulation::core::executor::current().is_some() {
                    let _ = $stream::shutdown_id(self.inner.sock(), std::net::Shutdown::Write);
                }
            }
        }

        $crate::simulation::net::shared::stream_halves!(@side ReadHalf<'_>, s => s.0, $stream, $addr);
        $crate::simulation::net::shared::stream_halves!(@side WriteHalf<'_>, s => s.0, $stream, $addr);
        $crate::simulation::net::shared::stream_halves!(@side OwnedReadHalf, s => &*s.inner, $stream, $addr);
        $crate::simulation::net::shared::stream_halves!(@side OwnedWriteHalf, s => &*s.inner, $stream, $addr);
        $crate::simulation::net::shared::stream_halves!(@read ReadHalf<'_>, s => s.0);
        $crate::simulation::net::shared::stream_halves!(@read OwnedReadHalf, s => &*s.inner);
        $crate::simulation::net::shared::stream_halves!(@write WriteHalf<'_>, s => s.0, |_h| {});
        // Shut down once: dropping the half need not do it again.
        $crate::simulation::net::shared::stream_halves!(@write OwnedWriteHalf, s => &*s.inner,
            |h| h.shutdown_on_drop = false);
    };
    // What both halves have: readiness, addresses, the stream by reference.
    (@side $t:ty, $s:ident => $get:expr, $stream:ident, $addr:ty) => {
        impl $t {
            /// Waits for any of the requested ready states.
            pub async fn ready(
                &self,
                interest: $crate::io::Interest,
            ) -> std::io::Result<$crate::io::Ready> {
                let $s = self;
                $get.ready(interest).await
            }

            /// Returns the socket address of the remote half of this connection.
            pub fn peer_addr(&self) -> std::io::Result<$addr> {
                let $s = self;
                $get.peer_addr()
            }

            /// Returns the socket address of the local half of this connection.
            pub fn local_addr(&self) -> std::io::Result<$addr> {
                let $s = self;
                $get.local_addr()
            }
        }

        impl AsRef<$stream> for $t {
            fn as_ref(&self) -> &$stream {
                let $s = self;
                $get
            }
        }
    };
    (@read $t:ty, $s:ident => $get:expr) => {
        impl $t {
            /// Waits for the socket to become readable.
            pub async fn readable(&self) -> std::io::Result<()> {
                let $s = self;
                $get.readable().await
            }

            /// Tries to read into `buf` without waiting.
            pub fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                let $s = self;
                $get.try_read(buf)
            }

            /// Tries to read into `bufs` without waiting.
            pub fn try_read_vectored(
                &self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                let $s = self;
                $get.try_read_vectored(bufs)
            }

            /// Tries to read into `buf`'s spare capacity without waiting.
            pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
                let $s = self;
                $get.try_read_buf(buf)
            }
        }

        $crate::simulation::net::shared::async_io!(read $t, $s => $get);
    };
    (@write $t:ty, $s:ident => $get:expr, |$h:ident| $on_shutdown:expr) => {
        impl $t {
            /// Waits for the socket to become writable.
            pub async fn writable(&self) -> std::io::Result<()> {
                let $s = self;
                $get.writable().await
            }

            /// Tries to write `buf` without waiting.
            pub fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
                let $s = self;
                $get.try_write(buf)
            }

            /// Tries to write `bufs` without waiting.
            pub fn try_write_vectored(&self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                let $s = self;
                $get.try_write_vectored(bufs)
            }
        }

        $crate::simulation::net::shared::async_io!(write $t, $s => $get, |$h| $on_shutdown);
    };
}
pub(crate) use stream_halves;

/// Tokio's receives for the datagram socket type `$ty`, whose senders'
/// addresses are `$addr`s, given how it receives from the model: waiting
/// (`$poll`, with the socket `$id`, the context `$cx` and the buffer
/// `$dst`), and not (`$try`, with `$tid` and `$buf`: `WouldBlock`).
macro_rules! datagram_bufs {
    (
        $ty:ident, $addr:ty,
        poll: |$id:ident, $cx:ident, $dst:ident| $poll:expr,
        try: |$tid:ident, $buf:ident| $try:expr $(,)?
    ) => {
        impl $ty {
            fn poll_recv_model(
                &self,
                $cx: &mut std::task::Context<'_>,
                $dst: &mut [u8],
            ) -> std::task::Poll<std::io::Result<(usize, $addr)>> {
                let $id = self.id();
                $poll
            }

            /// Receives a datagram and the address it came from.
            pub async fn recv_from(&self, buf: &mut [u8]) -> std::io::Result<(usize, $addr)> {
                std::future::poll_fn(|cx| self.poll_recv_model(cx, buf)).await
            }

            /// Polls to receive a datagram and the address it came from.
            pub fn poll_recv_from(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut $crate::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<$addr>> {
                $crate::simulation::net::shared::fill(buf, |dst| self.poll_recv_model(cx, dst))
            }

            /// Tries to receive a datagram and its sender without waiting.
            pub fn try_recv_from(&self, $buf: &mut [u8]) -> std::io::Result<(usize, $addr)> {
                let $tid = self.id();
                $try
            }

            /// Receives a datagram.
            pub async fn recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.recv_from(buf).await.map(|(n, _)| n)
            }

            /// Tries to receive a datagram without waiting.
            pub fn try_recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.try_recv_from(buf).map(|(n, _)| n)
            }

            /// Polls to receive a datagram.
            pub fn poll_recv(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut $crate::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.poll_recv_from(cx, buf).map(|r| r.map(|_| ()))
            }

            /// Tries to receive a datagram into `buf`'s spare capacity
            /// without waiting.
            pub fn try_recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
                $crate::simulation::net::shared::read_into_buf(buf, |dst| self.try_recv(dst))
            }

            /// Receives a datagram into `buf`'s spare capacity.
            pub async fn recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
                self.recv_buf_from(buf).await.map(|(n, _)| n)
            }

            /// Tries to receive a datagram and its sender into `buf`'s spare
            /// capacity without waiting.
            pub fn try_recv_buf_from<B: bytes::BufMut>(
                &self,
                buf: &mut B,
            ) -> std::io::Result<(usize, $addr)> {
                let mut from = None;
                let n = $crate::simulation::net::shared::read_into_buf(buf, |dst| {
                    let (n, a) = self.try_recv_from(dst)?;
                    from = Some(a);
                    Ok(n)
                })?;
                Ok((n, from.expect("set on success")))
            }

            /// Receives a datagram and its sender into `buf`'s spare
            /// capacity.
            pub async fn recv_buf_from<B: bytes::BufMut>(
                &self,
                buf: &mut B,
            ) -> std::io::Result<(usize, $addr)> {
                let want = buf.remaining_mut().min(64 * 1024);
                let mut tmp = vec![0u8; want];
                let (n, from) = self.recv_from(&mut tmp).await?;
                buf.put_slice(&tmp[..n]);
                Ok((n, from))
            }
        }
    };
}
pub(crate) use datagram_bufs;

/// `from_std` and `into_std`, refused (`refuse_std`): a std socket is a
/// real OS socket, which cannot join the simulation, and a simulated one
/// has none behind it. `into` alone for types whose `from_std` takes the
/// sockets std made inside the simulation (net/fd.rs).
macro_rules! refuse_std {
    ($ty:ident, $std:ty) => {
        impl $ty {
            /// Refused: a std socket is a real OS socket (or, made inside
            /// the simulation, one that never joined it).
            #[track_caller]
            pub fn from_std(socket: $std) -> std::io::Result<$ty> {
                drop(socket);
                $crate::simulation::net::refuse_std(concat!(stringify!($ty), "::from_std"))
            }
        }
        $crate::simulation::net::shared::refuse_std!($ty, $std, into);
    };
    ($ty:ident, $std:ty, into) => {
        impl $ty {
            /// Refused: there is no OS socket behind a simulated one.
            #[track_caller]
            pub fn into_std(self) -> std::io::Result<$std> {
                $crate::simulation::net::refuse_std(concat!(stringify!($ty), "::into_std"))
            }
        }
    };
}
pub(crate) use refuse_std;

/// `Debug` for a socket type: its name and its addresses (`None` where
/// asking fails), as `name: method` pairs.
macro_rules! debug_addrs {
    ($ty:ident, $($name:ident: $method:ident),+) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($name), &self.$method().ok()))+
                    .finish()
            }
        }
    };
}
pub(crate) use debug_addrs;
