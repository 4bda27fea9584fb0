//! Running a child process with a deadline, its output sent to files.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child ended.
#[derive(Debug)]
pub struct Finished {
    /// `None` if it was killed at the deadline.
    pub status: Option<ExitStatus>,
    pub elapsed: Duration,
}

impl Finished {
    /// "exit code 101", "killed by signal 6 (SIGABRT)", "timed out after 120 s".
    pub fn describe(&self, timeout: Duration) -> String {
        use std::os::unix::process::ExitStatusExt;
        match self.status {
            None => format!("timed out after {} s", timeout.as_secs()),
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
/// (only it, by its own handle) when `timeout` passes.
pub fn run_with_timeout(
    mut cmd: Command,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
) -> std::io::Result<Finished> {
    cmd.stdin(Stdio::null())
        .stdout(File::create(stdout)?)
        .stderr(File::create(stderr)?);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Finished {
                status: Some(status),
                elapsed: start.elapsed(),
            });
        }
        if start.elapsed() >= timeout {
            // The child may have exited in between; either way it is gone
            // after `wait`.
            let _ = child.kill();
            child.wait()?;
            return Ok(Finished {
                status: None,
                elapsed: start.elapsed(),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}
