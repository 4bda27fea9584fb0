//! `tokio::process` under simulation: the types and the builder exist, so a
//! service that starts child processes compiles and runs unchanged, but a
//! process is never started. A real child process is an effect outside the
//! simulation (its own clock, scheduler and I/O; nothing a seed replays), so
//! `spawn`, `status` and `output` inside a simulation fail the run as a
//! forbidden operation, with the fix, and return an `Unsupported` error to
//! the caller meanwhile. Outside any runtime they panic as Tokio's do.
//!
//! Put the process behind a trait of your service and give the simulation a
//! fake (docs/breakage.md).

use crate::simulation::core::executor;
use crate::simulation::core::report::Class;
use std::ffi::OsStr;
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::process::{Command as StdCommand, ExitStatus, Output, Stdio};
use std::task::{Context, Poll};

/// The message of the forbidden operation.
const NOT_SIMULATED: &str = "a simulated task tried to start an OS process \
     (tokio::process::Command); a child process runs outside the simulation's \
     control (its own clock, scheduler and I/O) and no seed can replay it. Put \
     the process behind a trait of the service and give the simulation a fake \
     (see docs/breakage.md).";

/// Refuses to start a process: fails the run (inside a simulation), panics
/// as Tokio does (outside any runtime).
#[track_caller]
fn refuse() -> io::Error {
    let exec = executor::expect_current();
    exec.core_mut().fail(Class::Forbidden, NOT_SIMULATED.into());
    io::Error::new(
        io::ErrorKind::Unsupported,
        "sim: processes are not simulated (tokio::process::Command); the run fails",
    )
}

/// Tokio's `process::Command`: a `std::process::Command` builder whose
/// `spawn` is refused under simulation.
#[derive(Debug)]
pub struct Command {
    std: StdCommand,
    kill_on_drop: bool,
}

impl Command {
    pub fn new<S: AsRef<OsStr>>(program: S) -> Command {
        Command::from(StdCommand::new(program))
    }

    pub fn as_std(&self) -> &StdCommand {
        &self.std
    }

    pub fn as_std_mut(&mut self) -> &mut StdCommand {
        &mut self.std
    }

    pub fn into_std(self) -> StdCommand {
        self.std
    }

    pub fn arg<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        self.std.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.std.args(args);
        self
    }

    pub fn env<K, V>(&mut self, key: K, val: V) -> &mut Command
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.std.env(key, val);
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.std.envs(vars);
        self
    }

    pub fn env_remove<K: AsRef<OsStr>>(&mut self, key: K) -> &mut Command {
        self.std.env_remove(key);
        self
    }

    pub fn env_clear(&mut self) -> &mut Command {
        self.std.env_clear();
        self
    }

    pub fn current_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Command {
        self.std.current_dir(dir);
        self
    }

    pub fn stdin<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.std.stdin(cfg);
        self
    }

    pub fn stdout<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.std.stdout(cfg);
        self
    }

    pub fn stderr<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.std.stderr(cfg);
        self
    }

    pub fn kill_on_drop(&mut self, kill_on_drop: bool) -> &mut Command {
        self.kill_on_drop = kill_on_drop;
        self
    }

    pub fn get_kill_on_drop(&self) -> bool {
        self.kill_on_drop
    }

    pub fn uid(&mut self, id: u32) -> &mut Command {
        std::os::unix::process::CommandExt::uid(&mut self.std, id);
        self
    }

    pub fn gid(&mut self, id: u32) -> &mut Command {
        std::os::unix::process::CommandExt::gid(&mut self.std, id);
        self
    }

    pub fn arg0<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        std::os::unix::process::CommandExt::arg0(&mut self.std, arg);
        self
    }

    /// # Safety
    ///
    /// As `std::os::unix::process::CommandExt::pre_exec` (never called
    /// under simulation: no process starts).
    pub unsafe fn pre_exec<F>(&mut self, f: F) -> &mut Command
    where
        F: FnMut() -> io::Result<()> + Send + Sync + 'static,
    {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { std::os::unix::process::CommandExt::pre_exec(&mut self.std, f) };
        self
    }

    pub fn process_group(&mut self, pgroup: i32) -> &mut Command {
        std::os::unix::process::CommandExt::process_group(&mut self.std, pgroup);
        self
    }

    /// Refused under simulation: fails the run (a forbidden operation) and
    /// returns `ErrorKind::Unsupported`.
    #[track_caller]
    pub fn spawn(&mut self) -> io::Result<Child> {
        Err(refuse())
    }

    /// As [`spawn`](Command::spawn): refused under simulation.
    #[track_caller]
    pub fn status(&mut self) -> impl Future<Output = io::Result<ExitStatus>> {
        let refused = refuse();
        async move { Err(refused) }
    }

    /// As [`spawn`](Command::spawn): refused under simulation.
    #[track_caller]
    pub fn output(&mut self) -> impl Future<Output = io::Result<Output>> {
        let refused = refuse();
        async move { Err(refused) }
    }
}

impl From<StdCommand> for Command {
    fn from(std: StdCommand) -> Command {
        Command {
            std,
            kill_on_drop: false,
        }
    }
}

/// No value of this type exists under simulation: nothing starts a process.
#[derive(Debug)]
enum Never {}

/// Tokio's `process::Child`. Under simulation no value of it exists (spawn
/// is refused), so its methods are never reached.
#[derive(Debug)]
pub struct Child {
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    never: Never,
}

impl Child {
    pub fn id(&self) -> Option<u32> {
        match self.never {}
    }

    pub fn start_kill(&mut self) -> io::Result<()> {
        match self.never {}
    }

    pub async fn kill(&mut self) -> io::Result<()> {
        match self.never {}
    }

    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self.never {}
    }

    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self.never {}
    }

    pub async fn wait_with_output(self) -> io::Result<Output> {
        match self.never {}
    }
}

macro_rules! child_pipe {
    ($name:ident, $std:ty) => {
        /// A child's standard stream (Tokio's type). Under simulation no value
        /// of it exists.
        #[derive(Debug)]
        pub struct $name {
            never: Never,
        }

        impl $name {
            /// Refused under simulation (the run fails): a std child pipe
            /// belongs to a real process.
            #[track_caller]
            pub fn from_std(_inner: $std) -> io::Result<Self> {
                Err(crate::simulation::unsupported::refuse(
                    concat!(stringify!($name), "::from_std"),
                    "a std child pipe belongs to a real process, which no seed can replay",
                    "Put the process behind a trait of the service and give the simulation a fake",
                ))
            }

            pub fn into_owned_fd(self) -> io::Result<std::os::fd::OwnedFd> {
                match self.never {}
            }
        }

        impl std::os::fd::AsRawFd for $name {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                match self.never {}
            }
        }

        impl std::os::fd::AsFd for $name {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                match self.never {}
            }
        }

        impl TryInto<Stdio> for $name {
            type Error = io::Error;
            fn try_into(self) -> io::Result<Stdio> {
                match self.never {}
            }
        }
    };
}

child_pipe!(ChildStdin, std::process::ChildStdin);
child_pipe!(ChildStdout, std::process::ChildStdout);
child_pipe!(ChildStderr, std::process::ChildStderr);

impl tokio::io::AsyncWrite for ChildStdin {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        match self.never {}
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.never {}
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.never {}
    }
}

impl tokio::io::AsyncRead for ChildStdout {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.never {}
    }
}

impl tokio::io::AsyncRead for ChildStderr {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.never {}
    }
}
