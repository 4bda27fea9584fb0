//! Running a child process with a deadline, its output sent to files.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child ended.
#[derive(Debug)]
pub struct Finished {
    /// `None` if it was killed (deadline or stall).
    pub status: Option<ExitStatus>,
    pub elapsed: Duration,
    /// Killed because its stdout did not grow for this long.
    pub stalled: Option<Duration>,
}

impl Finished {
    /// "exit code 101", "killed by signal 6 (SIGABRT)", "timed out after 120 s".
    pub fn describe(&self) -> String {
        use std::os::unix::process::ExitStatusExt;
        match self.status {
            None => match self.stalled {
                Some(d) => format!("hung (no progress for {} s; killed)", d.as_secs()),
                None => format!("timed out after {} s", self.elapsed.as_secs()),
            },
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig)),
                _ => format!("{s}"),
            },
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        _ => "",
    }
}

/// Runs `cmd` with stdout and stderr written to the given files; kills it
/// (only it, by its own handle) when `timeout` passes, or when its stdout
/// has not grown for `stall`. On Linux the child is also killed if we die
/// first (killed ourselves, say by a CI timeout), so that a hung test binary
/// is never left behind.
pub fn run_with_timeout(
    mut cmd: Command,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
    stall: Option<Duration>,
) -> std::io::Result<Finished> {
    cmd.stdin(Stdio::null())
        .stdout(File::create(stdout)?)
        .stderr(File::create(stderr)?);
    die_with_parent(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let mut pause = Duration::from_millis(5);
    let (mut size, mut progress) = (0, Instant::now());
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Finished {
                status: Some(status),
                elapsed: start.elapsed(),
                stalled: None,
            });
        }
        let now_size = std::fs::metadata(stdout).map(|m| m.len()).unwrap_or(0);
        if now_size != size {
            (size, progress) = (now_size, Instant::now());
        }
        let stalled = stall.filter(|s| progress.elapsed() >= *s);
        if start.elapsed() >= timeout || stalled.is_some() {
            // The child may have exited in between; either way it is gone
            // after `wait`.
            let _ = child.kill();
            child.wait()?;
            return Ok(Finished {
                status: None,
                elapsed: start.elapsed(),
                stalled,
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Makes the child get SIGKILL when the thread that spawned it exits
/// (`PR_SET_PDEATHSIG`).
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    const PR_SET_PDEATHSIG: i32 = 1;
    const SIGKILL: u64 = 9;
    extern "C" {
        fn prctl(option: i32, ...) -> i32;
        fn getppid() -> i32;
    }
    let parent = std::process::id() as i32;
    // SAFETY: `prctl` and `getppid` are async-signal-safe and touch no
    // memory of ours; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // We may have died before the call: then no signal comes.
            if getppid() != parent {
                return Err(std::io::Error::other("the parent exited"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_: &mut Command) {}
