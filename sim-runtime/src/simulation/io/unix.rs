//! `tokio::io::unix` under simulation: `AsyncFd` and its guards, with
//! Tokio's signatures, refused.
//!
//! An `AsyncFd` registers a real descriptor with the OS's readiness
//! notification (epoll) and does its I/O through it: nothing a seed
//! controls, and a simulated socket has no kernel socket to register. Every
//! constructor fails the run as a forbidden operation naming the call
//! (unsupported.rs), so no `AsyncFd` (and no guard) ever exists: its other
//! methods are unreachable, which their bodies prove (`match never {}`).

use crate::io::{Interest, Ready};
use crate::simulation::unsupported::refuse;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::task::{Context, Poll};

/// No value: an `AsyncFd` is never made.
enum Never {}

const WHY: &str = "an AsyncFd registers a real descriptor with the OS's readiness \
     notification and does its I/O through it, outside the simulation (a simulated socket has \
     no kernel socket to register)";
const INSTEAD: &str = "Use tokio::net's types, which are simulated; put other descriptor-based \
     I/O behind a trait of the service and give the simulation a fake";

/// Refuses to make an `AsyncFd` (the run fails). On a runtime built
/// without `enable_io`, Tokio's panic at the caller comes first, as Tokio's.
#[track_caller]
fn register_error<T>(call: &str, inner: T) -> AsyncFdRegisterError<T> {
    crate::simulation::runtime::check_io();
    AsyncFdRegisterError {
        inner,
        cause: refuse(call, WHY, INSTEAD),
    }
}

/// Tokio's `AsyncFd`: never made under simulation.
pub struct AsyncFd<T: AsRawFd> {
    inner: T,
    never: Never,
}

impl<T: AsRawFd> AsyncFd<T> {
    #[deprecated = "unsound due to lack of I/O safety; use `AsyncFd::register` instead (see https://github.com/tokio-rs/tokio/pull/8587)"]
    #[track_caller]
    pub fn new(inner: T) -> io::Result<Self> {
        Err(register_error("AsyncFd::new", inner).cause)
    }

    #[deprecated = "unsound due to lack of I/O safety; use `AsyncFd::register_with_interest` instead (see https://github.com/tokio-rs/tokio/pull/8587)"]
    #[track_caller]
    pub fn with_interest(inner: T, _interest: Interest) -> io::Result<Self> {
        Err(register_error("AsyncFd::with_interest", inner).cause)
    }

    #[deprecated = "unsound due to lack of I/O safety; use `AsyncFd::register` instead (see https://github.com/tokio-rs/tokio/pull/8587)"]
    #[track_caller]
    pub fn try_new(inner: T) -> Result<Self, AsyncFdRegisterError<T>> {
        Err(register_error("AsyncFd::try_new", inner))
    }

    #[deprecated = "unsound due to lack of I/O safety; use `AsyncFd::register_with_interest` instead (see https://github.com/tokio-rs/tokio/pull/8587)"]
    #[track_caller]
    pub fn try_with_interest(
        inner: T,
        _interest: Interest,
    ) -> Result<Self, AsyncFdRegisterError<T>> {
        Err(register_error("AsyncFd::try_with_interest", inner))
    }

    /// # Safety
    ///
    /// Tokio's contract (the descriptor stays open while registered);
    /// nothing is registered here.
    #[track_caller]
    pub unsafe fn register(inner: T) -> Result<Self, AsyncFdRegisterError<T>> {
        Err(register_error("AsyncFd::register", inner))
    }

    /// # Safety
    ///
    /// As `register`.
    #[track_caller]
    pub unsafe fn register_with_interest(
        inner: T,
        _interest: Interest,
    ) -> Result<Self, AsyncFdRegisterError<T>> {
        Err(register_error("AsyncFd::register_with_interest", inner))
    }

    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    pub fn into_inner(self) -> T {
        match self.never {}
    }

    pub fn poll_read_ready<'a>(
        &'a self,
        _cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        match self.never {}
    }

    pub fn poll_read_ready_mut<'a>(
        &'a mut self,
        _cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        match self.never {}
    }

    pub fn poll_write_ready<'a>(
        &'a self,
        _cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        match self.never {}
    }

    pub fn poll_write_ready_mut<'a>(
        &'a mut self,
        _cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        match self.never {}
    }

    pub async fn ready(&self, _interest: Interest) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        match self.never {}
    }

    pub async fn ready_mut(
        &mut self,
        _interest: Interest,
    ) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        match self.never {}
    }

    pub async fn readable<'a>(&'a self) -> io::Result<AsyncFdReadyGuard<'a, T>> {
        match self.never {}
    }

    pub async fn readable_mut<'a>(&'a mut self) -> io::Result<AsyncFdReadyMutGuard<'a, T>> {
        match self.never {}
    }

    pub async fn writable<'a>(&'a self) -> io::Result<AsyncFdReadyGuard<'a, T>> {
        match self.never {}
    }

    pub async fn writable_mut<'a>(&'a mut self) -> io::Result<AsyncFdReadyMutGuard<'a, T>> {
        match self.never {}
    }

    pub async fn async_io<R>(
        &self,
        _interest: Interest,
        _f: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        match self.never {}
    }

    pub async fn async_io_mut<R>(
        &mut self,
        _interest: Interest,
        _f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        match self.never {}
    }

    pub fn try_io<R>(
        &self,
        _interest: Interest,
        _f: impl FnOnce(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        match self.never {}
    }

    pub fn try_io_mut<R>(
        &mut self,
        _interest: Interest,
        _f: impl FnOnce(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        match self.never {}
    }
}

impl<T: AsRawFd> AsRawFd for AsyncFd<T> {
    fn as_raw_fd(&self) -> RawFd {
        match self.never {}
    }
}

impl<T: AsRawFd> AsFd for AsyncFd<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self.never {}
    }
}

impl<T: fmt::Debug + AsRawFd> fmt::Debug for AsyncFd<T> {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.never {}
    }
}

/// Tokio's read/write readiness guard: never made under simulation.
pub struct AsyncFdReadyGuard<'a, T: AsRawFd> {
    async_fd: &'a AsyncFd<T>,
}

/// Tokio's mutable readiness guard: never made under simulation.
pub struct AsyncFdReadyMutGuard<'a, T: AsRawFd> {
    async_fd: &'a mut AsyncFd<T>,
}

impl<'a, Inner: AsRawFd> AsyncFdReadyGuard<'a, Inner> {
    pub fn clear_ready(&mut self) {
        match self.async_fd.never {}
    }

    pub fn clear_ready_matching(&mut self, _ready: Ready) {
        match self.async_fd.never {}
    }

    pub fn retain_ready(&mut self) {
        match self.async_fd.never {}
    }

    pub fn ready(&self) -> Ready {
        match self.async_fd.never {}
    }

    pub fn try_io<R>(
        &mut self,
        _f: impl FnOnce(&'a AsyncFd<Inner>) -> io::Result<R>,
    ) -> Result<io::Result<R>, TryIoError> {
        match self.async_fd.never {}
    }

    pub fn get_ref(&self) -> &'a AsyncFd<Inner> {
        self.async_fd
    }

    pub fn get_inner(&self) -> &'a Inner {
        self.async_fd.get_ref()
    }
}

impl<Inner: AsRawFd> AsyncFdReadyMutGuard<'_, Inner> {
    pub fn clear_ready(&mut self) {
        match self.async_fd.never {}
    }

    pub fn clear_ready_matching(&mut self, _ready: Ready) {
        match self.async_fd.never {}
    }

    pub fn retain_ready(&mut self) {
        match self.async_fd.never {}
    }

    pub fn ready(&self) -> Ready {
        match self.async_fd.never {}
    }

    pub fn try_io<R>(
        &mut self,
        _f: impl FnOnce(&mut AsyncFd<Inner>) -> io::Result<R>,
    ) -> Result<io::Result<R>, TryIoError> {
        match self.async_fd.never {}
    }

    pub fn get_ref(&self) -> &AsyncFd<Inner> {
        self.async_fd
    }

    pub fn get_mut(&mut self) -> &mut AsyncFd<Inner> {
        self.async_fd
    }

    pub fn get_inner(&self) -> &Inner {
        self.async_fd.get_ref()
    }

    pub fn get_inner_mut(&mut self) -> &mut Inner {
        self.async_fd.get_mut()
    }
}

impl<T: fmt::Debug + AsRawFd> fmt::Debug for AsyncFdReadyGuard<'_, T> {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.async_fd.never {}
    }
}

impl<T: fmt::Debug + AsRawFd> fmt::Debug for AsyncFdReadyMutGuard<'_, T> {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.async_fd.never {}
    }
}

/// Tokio's error of a failed registration: the value handed in, and why.
pub struct AsyncFdRegisterError<T> {
    inner: T,
    cause: io::Error,
}

impl<T> AsyncFdRegisterError<T> {
    /// The value handed in, and the error.
    pub fn into_parts(self) -> (T, io::Error) {
        (self.inner, self.cause)
    }
}

impl<T> fmt::Display for AsyncFdRegisterError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.cause.fmt(f)
    }
}

impl<T> fmt::Debug for AsyncFdRegisterError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.cause.fmt(f)
    }
}

impl<T> std::error::Error for AsyncFdRegisterError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

/// Tokio's "the I/O would block" marker of a guard's `try_io`.
#[derive(Debug)]
pub struct TryIoError(());

impl<T> From<AsyncFdRegisterError<T>> for io::Error {
    fn from(err: AsyncFdRegisterError<T>) -> io::Error {
        err.cause
    }
}
