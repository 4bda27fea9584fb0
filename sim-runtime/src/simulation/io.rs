//! `tokio::io` under simulation: real Tokio's (its traits and utilities do
//! not depend on the executor, so their types match other crates'), except
//! `stdout()` and `stderr()`. Tokio's run each write on its blocking pool,
//! which a simulation does not have (a write would panic "there is no
//! reactor running"); these write in place, synchronously, to the same
//! file descriptors. Output never steers the run, so writing in place
//! changes nothing the seed decides. `stdin()` stays Tokio's: input from
//! outside is not part of a simulation. `unix::AsyncFd` is ours too: it
//! would register a real descriptor, so making one fails the run by name
//! (io/unix.rs).

pub use tokio::io::*;

// Ours, over the glob's: `AsyncFd` refused by name (io/unix.rs).
pub mod unix;

use super::core::executor;
use std::io::Write as _;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The process's standard output, written in place.
#[derive(Debug, Default)]
pub struct Stdout {
    _p: (),
}

/// The process's standard error, written in place.
#[derive(Debug, Default)]
pub struct Stderr {
    _p: (),
}

/// After a runtime shutdown a write fails as Tokio's does (its blocking
/// pool is gone): kind `Other`, `runtime::is_rt_shutdown_err` true.
/// Outside any runtime a write panics, as Tokio's does (it has no blocking
/// pool to run on).
#[track_caller]
fn check_running() -> std::io::Result<()> {
    if executor::expect_current().compat.shut_down() {
        return Err(std::io::Error::other(
            super::runtime::RUNTIME_SHUTTING_DOWN_ERROR,
        ));
    }
    Ok(())
}

/// A handle to the process's standard output.
pub fn stdout() -> Stdout {
    Stdout { _p: () }
}

/// A handle to the process's standard error.
pub fn stderr() -> Stderr {
    Stderr { _p: () }
}

/// `AsyncWrite` for a standard stream: each call in place on `$std()`.
macro_rules! write_in_place {
    ($ty:ty, $std:path) => {
        impl AsyncWrite for $ty {
            #[track_caller]
            fn poll_write(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                Poll::Ready(check_running().and_then(|()| $std().write(buf)))
            }

            fn poll_flush(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Ready($std().flush())
            }

            fn poll_shutdown(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                self.poll_flush(cx)
            }
        }
    };
}

write_in_place!(Stdout, std::io::stdout);
write_in_place!(Stderr, std::io::stderr);

/// The descriptors they write to, as Tokio's report: the process's own.
macro_rules! std_descriptor {
    ($ty:ty, $std:path) => {
        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&$std())
            }
        }

        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                // SAFETY: the process's standard output or error, open for
                // as long as the process runs, as std's own `as_fd` of it.
                unsafe {
                    std::os::fd::BorrowedFd::borrow_raw(std::os::fd::AsRawFd::as_raw_fd(self))
                }
            }
        }
    };
}

std_descriptor!(Stdout, std::io::stdout);
std_descriptor!(Stderr, std::io::stderr);
