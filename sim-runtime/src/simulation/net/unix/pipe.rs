//! `tokio::net::unix::pipe`: Unix pipes.
//!
//! An anonymous pipe (`pipe()`) is simulated: a one-way byte stream on the
//! current node, made of a Unix stream pair (`UnixStream::pair`), so it
//! behaves as a pipe does where it matters (bytes in order, end of file
//! once the sender is gone, `EPIPE` for the sender once the receiver is
//! gone, readiness as Tokio reports it). What needs a kernel pipe is
//! refused clearly (unsupported.rs): named pipes (the simulated disk has no
//! FIFOs), pipes handed in as files or descriptors, descriptors taken out,
//! raw I/O through the descriptor.

use super::UnixStream;
use crate::io::{AsyncRead, AsyncWrite, Interest, ReadBuf, Ready};
use crate::simulation::unsupported::{refuse, RAW_IO};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

const NO_KERNEL_PIPE: &str = "a simulated pipe has no kernel pipe behind it";
const REAL_PIPE: &str = "a file or descriptor is a real OS pipe, outside the simulation";
const USE_PIPE: &str = "Make the pipe with tokio::net::unix::pipe::pipe()";

/// Creates a new anonymous pipe on the current node.
pub fn pipe() -> io::Result<(Sender, Receiver)> {
    let (tx, rx) = UnixStream::pair()?;
    Ok((Sender { inner: tx }, Receiver { inner: rx }))
}

/// Options for opening a named pipe (FIFO): Tokio's builder; opening one is
/// refused (the simulated disk has no FIFOs).
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    read_write: bool,
    unchecked: bool,
}

impl OpenOptions {
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    pub fn read_write(&mut self, value: bool) -> &mut Self {
        self.read_write = value;
        self
    }

    pub fn unchecked(&mut self, value: bool) -> &mut Self {
        self.unchecked = value;
        self
    }

    /// Refused: named pipes are not simulated.
    #[track_caller]
    pub fn open_receiver<P: AsRef<Path>>(&self, _path: P) -> io::Result<Receiver> {
        Err(refuse(
            "tokio::net::unix::pipe::OpenOptions::open_receiver",
            "named pipes (FIFOs) are not simulated: the simulated disk has none",
            "Use tokio::net::unix::pipe::pipe() or a UnixStream between the two ends",
        ))
    }

    /// Refused: named pipes are not simulated.
    #[track_caller]
    pub fn open_sender<P: AsRef<Path>>(&self, _path: P) -> io::Result<Sender> {
        Err(refuse(
            "tokio::net::unix::pipe::OpenOptions::open_sender",
            "named pipes (FIFOs) are not simulated: the simulated disk has none",
            "Use tokio::net::unix::pipe::pipe() or a UnixStream between the two ends",
        ))
    }
}

/// The constructors and conversions both ends share: each refused.
macro_rules! kernel_only {
    ($t:ident) => {
        impl $t {
            #[track_caller]
            pub fn from_file(_file: File) -> io::Result<$t> {
                Err(refuse(
                    concat!("pipe::", stringify!($t), "::from_file"),
                    REAL_PIPE,
                    USE_PIPE,
                ))
            }

            #[track_caller]
            pub fn from_owned_fd(_fd: OwnedFd) -> io::Result<$t> {
                Err(refuse(
                    concat!("pipe::", stringify!($t), "::from_owned_fd"),
                    REAL_PIPE,
                    USE_PIPE,
                ))
            }

            #[track_caller]
            pub fn from_file_unchecked(_file: File) -> io::Result<$t> {
                Err(refuse(
                    concat!("pipe::", stringify!($t), "::from_file_unchecked"),
                    REAL_PIPE,
                    USE_PIPE,
                ))
            }

            #[track_caller]
            pub fn from_owned_fd_unchecked(_fd: OwnedFd) -> io::Result<$t> {
                Err(refuse(
                    concat!("pipe::", stringify!($t), "::from_owned_fd_unchecked"),
                    REAL_PIPE,
                    USE_PIPE,
                ))
            }

            #[track_caller]
            pub fn into_blocking_fd(self) -> io::Result<OwnedFd> {
                Err(refuse(
                    concat!("pipe::", stringify!($t), "::into_blocking_fd"),
                    NO_KERNEL_PIPE,
                    "Keep the pipe end and use its own methods",
                ))
            }

            #[track_caller]
            pub fn into_nonblocking_fd(self) -> io::Result<OwnedFd> {
                Err(refuse(
                    concat!("pipe::", stringify!($t), "::into_nonblocking_fd"),
                    NO_KERNEL_PIPE,
                    "Keep the pipe end and use its own methods",
                ))
            }

            /// Raw I/O through the descriptor: refused.
            #[track_caller]
            pub fn try_io<R>(&self, _f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
                Err(refuse(
                    concat!("pipe::", stringify!($t), "::try_io"),
                    RAW_IO.0,
                    RAW_IO.1,
                ))
            }

            pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
                self.inner.ready(interest).await
            }
        }

        // The live descriptor of the stream underneath (net/fd.rs).
        impl std::os::fd::AsRawFd for $t {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&self.inner)
            }
        }

        impl std::os::fd::AsFd for $t {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(&self.inner)
            }
        }
    };
}

/// The writing end of a pipe.
#[derive(Debug)]
pub struct Sender {
    inner: UnixStream,
}

/// The reading end of a pipe.
#[derive(Debug)]
pub struct Receiver {
    inner: UnixStream,
}

kernel_only!(Sender);
kernel_only!(Receiver);

impl Sender {
    pub async fn writable(&self) -> io::Result<()> {
        self.inner.writable().await
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_write_ready(cx)
    }

    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.try_write(buf)
    }

    pub fn try_write_vectored(&self, buf: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.inner.try_write_vectored(buf)
    }
}

impl Receiver {
    pub async fn readable(&self) -> io::Result<()> {
        self.inner.readable().await
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_read_ready(cx)
    }

    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.try_read(buf)
    }

    pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        self.inner.try_read_vectored(bufs)
    }

    pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        self.inner.try_read_buf(buf)
    }
}

impl AsyncWrite for Sender {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// As Tokio's: a pipe has no write shutdown; dropping the sender ends it.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Receiver {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}
