//! Running a test binary, one test at a time, with deadlines.

use super::libtest::{is_informative, parse_libtest, shorten};
use super::options::Options;
use crate::proc::{run_with_timeout, Finished};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Verdict {
    Passed,
    Ignored,
    /// The first lines of its failure output.
    Failed(Vec<String>),
}

impl Verdict {
    pub(super) fn is_failure(&self) -> bool {
        matches!(self, Verdict::Failed(_))
    }
}

/// Deadlines of a test run.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    /// One run of a test binary.
    pub(super) binary: Duration,
    /// One test without progress.
    pub(super) test: Duration,
}

pub(super) struct FileRun {
    pub(super) tests: BTreeMap<String, Verdict>,
    /// How the whole binary ended, if not normally.
    pub(super) crash: Option<String>,
    pub(super) elapsed: Duration,
}

impl FileRun {
    pub(super) fn summary(&self) -> String {
        let passed = self
            .tests
            .values()
            .filter(|v| **v == Verdict::Passed)
            .count();
        let failed = self.tests.values().filter(|v| v.is_failure()).count();
        let mut s = format!("{passed} passed, {failed} failed");
        if let Some(c) = &self.crash {
            let _ = write!(s, " (binary {c})");
        }
        s
    }
}

/// The environment of a simulated test: none of the caller's `SIM_*`
/// settings, so the report does not depend on the shell.
pub(super) fn test_env(opts: &Options) -> Vec<(String, Option<String>)> {
    let mut env: Vec<(String, Option<String>)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("SIM_"))
        .map(|(k, _)| (k, None))
        .collect();
    if let Some(s) = &opts.seeds {
        env.push(("SIM_SEEDS".into(), Some(s.clone())));
    }
    env
}

pub(super) fn command(exe: &Path, cwd: &Path, env: &[(String, Option<String>)]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.current_dir(cwd).env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

pub(super) fn list_tests(exe: &Path, cwd: &Path) -> Result<Vec<String>> {
    let mut list = Command::new(exe);
    list.current_dir(cwd)
        .args(["--list", "--format", "terse"])
        .stdin(Stdio::null());
    let text = crate::cmd::stdout(&mut list, &format!("{} --list", exe.display()))
        .map_err(Error::Failed)?;
    Ok(text
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect())
}

/// Runs a test binary one test at a time (so a crash or a hang names its
/// test: the last one started), resuming after each crash or hang with the
/// tests that have a verdict skipped.
pub(super) fn run_file(
    exe: &Path,
    cwd: &Path,
    logs: &Path,
    name: &str,
    label: &str,
    env: &[(String, Option<String>)],
    limits: Limits,
) -> Result<FileRun> {
    let listed = list_tests(exe, cwd)?;
    let mut tests: BTreeMap<String, Verdict> = BTreeMap::new();
    let mut crashes = Vec::new();
    let mut elapsed = Duration::ZERO;
    for attempt in 0.. {
        let suffix = if attempt == 0 {
            String::new()
        } else {
            format!("-{attempt}")
        };
        let out = logs.join(format!("{label}-{name}{suffix}.stdout"));
        let err = logs.join(format!("{label}-{name}{suffix}.stderr"));
        let mut cmd = command(exe, cwd, env);
        cmd.args(["--color", "never", "--test-threads", "1"]);
        if !tests.is_empty() {
            cmd.arg("--exact");
            for t in tests.keys() {
                cmd.args(["--skip", t]);
            }
        }
        let fin = run_with_timeout(cmd, &out, &err, limits.binary, Some(limits.test))?;
        elapsed += fin.elapsed;
        let text = fs::read_to_string(&out).unwrap_or_default();
        let before = tests.len();
        tests.extend(parse_libtest(&text));
        if matches!(fin.status.map(|s| s.code()), Some(Some(0 | 101))) {
            break;
        }
        crashes.push(fin.describe());
        match running_test(&text) {
            Some(t) if !tests.contains_key(&t) => {
                tests.insert(t, Verdict::Failed(crash_excerpt(&fin, &text, &err)));
            }
            // No progress at all: give up on the rest rather than loop.
            _ if tests.len() == before => {
                for t in &listed {
                    tests
                        .entry(t.clone())
                        .or_insert_with(|| Verdict::Failed(crash_excerpt(&fin, &text, &err)));
                }
            }
            _ => {}
        }
        if listed.iter().all(|t| tests.contains_key(t)) {
            break;
        }
    }
    // A crash cuts the failure details libtest prints at the end: get them
    // by running those tests alone.
    let bare: Vec<String> = tests
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Failed(l) if l.is_empty()))
        .map(|(t, _)| t.clone())
        .collect();
    for t in bare {
        let out = logs.join(format!("{label}-{name}--{}.stdout", file_safe(&t)));
        let err = logs.join(format!("{label}-{name}--{}.stderr", file_safe(&t)));
        let mut cmd = command(exe, cwd, env);
        cmd.args([t.as_str(), "--exact", "--color", "never"]);
        let fin = run_with_timeout(cmd, &out, &err, limits.binary, Some(limits.test))?;
        let text = fs::read_to_string(&out).unwrap_or_default();
        let again = match parse_libtest(&text).remove(&t) {
            Some(Verdict::Failed(l)) if !l.is_empty() => l,
            Some(Verdict::Passed) => vec!["failed in the full run, passed when run alone".into()],
            _ => crash_excerpt(&fin, &text, &err),
        };
        tests.insert(t, Verdict::Failed(again));
    }
    let crash = (!crashes.is_empty()).then(|| {
        let mut uniq: Vec<String> = Vec::new();
        for c in crashes {
            if !uniq.contains(&c) {
                uniq.push(c);
            }
        }
        uniq.join(", ")
    });
    Ok(FileRun {
        tests,
        crash,
        elapsed,
    })
}

/// The test that was running when the output stops: its `test NAME ... `
/// line has no verdict.
pub(super) fn running_test(text: &str) -> Option<String> {
    let line = text.lines().rev().find(|l| l.starts_with("test "))?;
    let (name, result) = line.strip_prefix("test ")?.split_once(" ...")?;
    let verdict = result.trim_start().split([',', ' ']).next().unwrap_or("");
    if matches!(verdict, "ok" | "FAILED" | "ignored") {
        return None;
    }
    Some(
        name.strip_suffix(" - should panic")
            .unwrap_or(name)
            .to_string(),
    )
}

pub(super) fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

pub(super) fn crash_excerpt(fin: &Finished, stdout: &str, stderr: &Path) -> Vec<String> {
    let mut lines = vec![format!("the test binary {}", fin.describe())];
    let err = fs::read_to_string(stderr).unwrap_or_default();
    let tail = |text: &str| -> Vec<String> {
        let keep: Vec<String> = text
            .lines()
            .filter(|l| is_informative(l) && !l.starts_with("running ") && !l.starts_with("test "))
            .map(shorten)
            .collect();
        let n = keep.len();
        keep.into_iter().skip(n.saturating_sub(6)).collect()
    };
    lines.extend(tail(stdout));
    lines.extend(tail(&err));
    lines
}
