//! `UnixStream` halves, borrowed (`split`) and owned (`into_split`).

use super::{SocketAddr, UnixStream};
use crate::io::{AsyncRead, AsyncWrite, Interest, ReadBuf, Ready};
use std::error::Error;
use std::fmt;
use std::io;
use std::net::Shutdown;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Borrowed read half of a [`UnixStream`], created by [`UnixStream::split`].
#[derive(Debug)]
pub struct ReadHalf<'a>(&'a UnixStream);

/// Borrowed write half of a [`UnixStream`], created by [`UnixStream::split`];
/// `poll_shutdown` shuts the write direction down.
#[derive(Debug)]
pub struct WriteHalf<'a>(&'a UnixStream);

pub(crate) fn split(stream: &mut UnixStream) -> (ReadHalf<'_>, WriteHalf<'_>) {
    (ReadHalf(stream), WriteHalf(stream))
}

/// Owned read half of a [`UnixStream`], created by [`UnixStream::into_split`].
#[derive(Debug)]
pub struct OwnedReadHalf {
    inner: Arc<UnixStream>,
}

/// Owned write half of a [`UnixStream`], created by
/// [`UnixStream::into_split`]; dropping it shuts the write direction down
/// (unless [`OwnedWriteHalf::forget`] was called).
#[derive(Debug)]
pub struct OwnedWriteHalf {
    inner: Arc<UnixStream>,
    shutdown_on_drop: bool,
}

pub(crate) fn split_owned(stream: UnixStream) -> (OwnedReadHalf, OwnedWriteHalf) {
    let arc = Arc::new(stream);
    let read = OwnedReadHalf {
        inner: Arc::clone(&arc),
    };
    let write = OwnedWriteHalf {
        inner: arc,
        shutdown_on_drop: true,
    };
    (read, write)
}

fn reunite(read: OwnedReadHalf, write: OwnedWriteHalf) -> Result<UnixStream, ReuniteError> {
    if Arc::ptr_eq(&read.inner, &write.inner) {
        write.forget();
        // Only two Arcs exist and the write half's is gone.
        Ok(Arc::try_unwrap(read.inner).expect("UnixStream: try_unwrap failed in reunite"))
    } else {
        Err(ReuniteError(read, write))
    }
}

/// Error indicating that two halves were not from the same socket, and thus
/// could not be reunited.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tried to reunite halves that are not from the same socket"
        )
    }
}

impl Error for ReuniteError {}

macro_rules! read_side {
    ($t:ty, $s:ident => $stream:expr) => {
        impl $t {
            /// Waits for any of the requested ready states.
            pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
                let $s = self;
                $stream.ready(interest).await
            }

            /// Waits for the socket to become readable.
            pub async fn readable(&self) -> io::Result<()> {
                let $s = self;
                $stream.readable().await
            }

            /// Tries to read data from the stream into the provided buffer.
            pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
                let $s = self;
                $stream.try_read(buf)
            }

            /// Tries to read data into `buf`'s spare capacity.
            pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
                let $s = self;
                $stream.try_read_buf(buf)
            }

            /// Tries to read data from the stream into the provided buffers.
            pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
                let $s = self;
                $stream.try_read_vectored(bufs)
            }

            /// Returns the socket address of the remote half of this connection.
            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                let $s = self;
                $stream.peer_addr()
            }

            /// Returns the socket address of the local half of this connection.
            pub fn local_addr(&self) -> io::Result<SocketAddr> {
                let $s = self;
                $stream.local_addr()
            }
        }

        impl AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                let $s = &*self;
                $stream.poll_read_priv(cx, buf)
            }
        }
    };
}

macro_rules! write_side {
    ($t:ty, $s:ident => $stream:expr) => {
        impl $t {
            /// Waits for any of the requested ready states.
            pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
                let $s = self;
                $stream.ready(interest).await
            }

            /// Waits for the socket to become writable.
            pub async fn writable(&self) -> io::Result<()> {
                let $s = self;
                $stream.writable().await
            }

            /// Tries to write a buffer to the stream.
            pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
                let $s = self;
                $stream.try_write(buf)
            }

            /// Tries to write several buffers to the stream.
            pub fn try_write_vectored(&self, buf: &[io::IoSlice<'_>]) -> io::Result<usize> {
                let $s = self;
                $stream.try_write_vectored(buf)
            }

            /// Returns the socket address of the remote half of this connection.
            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                let $s = self;
                $stream.peer_addr()
            }

            /// Returns the socket address of the local half of this connection.
            pub fn local_addr(&self) -> io::Result<SocketAddr> {
                let $s = self;
                $stream.local_addr()
            }
        }
    };
}

read_side!(ReadHalf<'_>, s => s.0);
write_side!(WriteHalf<'_>, s => s.0);
read_side!(OwnedReadHalf, s => s.inner);
write_side!(OwnedWriteHalf, s => s.inner);

impl AsyncWrite for WriteHalf<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write_priv(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write_vectored_priv(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.shutdown_std(Shutdown::Write).into()
    }
}

impl OwnedReadHalf {
    /// Attempts to put the two halves of a `UnixStream` back together.
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<UnixStream, ReuniteError> {
        reunite(self, other)
    }
}

impl OwnedWriteHalf {
    /// Attempts to put the two halves of a `UnixStream` back together.
    pub fn reunite(self, other: OwnedReadHalf) -> Result<UnixStream, ReuniteError> {
        reunite(other, self)
    }

    /// Destroys the write half without shutting down the write direction.
    pub fn forget(mut self) {
        self.shutdown_on_drop = false;
        drop(self);
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        if self.shutdown_on_drop && crate::simulation::executor::current().is_some() {
            let _ = self.inner.shutdown_std(Shutdown::Write);
        }
    }
}

impl AsyncWrite for OwnedWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_write_priv(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_write_vectored_priv(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let res = self.inner.shutdown_std(Shutdown::Write);
        if res.is_ok() {
            Pin::into_inner(self).shutdown_on_drop = false;
        }
        res.into()
    }
}

impl AsRef<UnixStream> for ReadHalf<'_> {
    fn as_ref(&self) -> &UnixStream {
        self.0
    }
}

impl AsRef<UnixStream> for WriteHalf<'_> {
    fn as_ref(&self) -> &UnixStream {
        self.0
    }
}

impl AsRef<UnixStream> for OwnedReadHalf {
    fn as_ref(&self) -> &UnixStream {
        &self.inner
    }
}

impl AsRef<UnixStream> for OwnedWriteHalf {
    fn as_ref(&self) -> &UnixStream {
        &self.inner
    }
}
