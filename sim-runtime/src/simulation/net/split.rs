//! `TcpStream` halves, borrowed (`split`) and owned (`into_split`).

use super::stream::{gather, try_read_vectored_id, TcpStream};
use crate::io::{AsyncRead, AsyncWrite, Interest, ReadBuf, Ready};
use std::error::Error;
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Borrowed read half of a [`TcpStream`].
#[derive(Debug)]
pub struct ReadHalf<'a>(&'a TcpStream);

/// Borrowed write half of a [`TcpStream`].
#[derive(Debug)]
pub struct WriteHalf<'a>(&'a TcpStream);

pub(crate) fn split(stream: &mut TcpStream) -> (ReadHalf<'_>, WriteHalf<'_>) {
    (ReadHalf(&*stream), WriteHalf(&*stream))
}

/// Owned read half of a [`TcpStream`].
#[derive(Debug)]
pub struct OwnedReadHalf {
    inner: Arc<TcpStream>,
}

/// Owned write half of a [`TcpStream`]; dropping it shuts the write
/// direction down (unless [`OwnedWriteHalf::forget`] was called).
#[derive(Debug)]
pub struct OwnedWriteHalf {
    inner: Arc<TcpStream>,
    shutdown_on_drop: bool,
}

pub(crate) fn into_split(stream: TcpStream) -> (OwnedReadHalf, OwnedWriteHalf) {
    let arc = Arc::new(stream);
    (
        OwnedReadHalf { inner: arc.clone() },
        OwnedWriteHalf {
            inner: arc,
            shutdown_on_drop: true,
        },
    )
}

/// Error of [`OwnedReadHalf::reunite`]: the halves came from different
/// streams.
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

fn reunite(read: OwnedReadHalf, mut write: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
    if Arc::ptr_eq(&read.inner, &write.inner) {
        write.shutdown_on_drop = false;
        drop(read);
        let inner = write.inner.clone();
        drop(write);
        Ok(Arc::try_unwrap(inner).expect("TcpStream: try_unwrap failed in reunite"))
    } else {
        Err(ReuniteError(read, write))
    }
}

macro_rules! read_side {
    ($t:ty, $s:ident => $stream:expr) => {
        impl $t {
            pub async fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let $s = &*self;
                $stream.peek(buf).await
            }

            pub fn poll_peek(
                &mut self,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<usize>> {
                let $s = &*self;
                $stream.poll_peek(cx, buf)
            }

            pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
                let $s = self;
                $stream.ready(interest).await
            }

            pub async fn readable(&self) -> io::Result<()> {
                let $s = self;
                $stream.readable().await
            }

            pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
                let $s = self;
                $stream.try_read(buf)
            }

            pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
                let $s = self;
                try_read_vectored_id($stream.id(), bufs)
            }

            /// Reads into `buf`'s spare capacity without waiting.
            pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
                let $s = self;
                $stream.try_read_buf(buf)
            }

            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                let $s = self;
                $stream.peer_addr()
            }

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
                TcpStream::poll_read_id($stream.id(), cx, buf)
            }
        }
    };
}

macro_rules! write_side {
    ($t:ty, $s:ident => $stream:expr) => {
        impl $t {
            pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
                let $s = self;
                $stream.ready(interest).await
            }

            pub async fn writable(&self) -> io::Result<()> {
                let $s = self;
                $stream.writable().await
            }

            pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
                let $s = self;
                $stream.try_write(buf)
            }

            pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
                let $s = self;
                TcpStream::try_write_id($stream.id(), &gather(bufs))
            }

            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                let $s = self;
                $stream.peer_addr()
            }

            pub fn local_addr(&self) -> io::Result<SocketAddr> {
                let $s = self;
                $stream.local_addr()
            }
        }

        impl AsyncWrite for $t {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                let $s = &*self;
                TcpStream::poll_write_id($stream.id(), cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                let $s = &*self;
                TcpStream::poll_write_vectored_id($stream.id(), cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }

            fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                let $s = &*self;
                Poll::Ready(TcpStream::shutdown_id($stream.id(), Shutdown::Write))
            }
        }
    };
}

read_side!(ReadHalf<'_>, s => s.0);
write_side!(WriteHalf<'_>, s => s.0);
read_side!(OwnedReadHalf, s => s.inner);
write_side!(OwnedWriteHalf, s => s.inner);

impl OwnedReadHalf {
    /// Puts the halves back together; fails if they are from different
    /// streams.
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        reunite(self, other)
    }
}

impl OwnedWriteHalf {
    pub fn reunite(self, other: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
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
        if self.shutdown_on_drop && super::super::executor::current().is_some() {
            let _ = TcpStream::shutdown_id(self.inner.id(), Shutdown::Write);
        }
    }
}

impl AsRef<TcpStream> for ReadHalf<'_> {
    fn as_ref(&self) -> &TcpStream {
        self.0
    }
}

impl AsRef<TcpStream> for WriteHalf<'_> {
    fn as_ref(&self) -> &TcpStream {
        self.0
    }
}

impl AsRef<TcpStream> for OwnedReadHalf {
    fn as_ref(&self) -> &TcpStream {
        &self.inner
    }
}

impl AsRef<TcpStream> for OwnedWriteHalf {
    fn as_ref(&self) -> &TcpStream {
        &self.inner
    }
}
