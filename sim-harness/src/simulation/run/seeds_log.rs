//! Which seed is running, for a run that never gets to its report.
//!
//! A sweep of many seeds writes one line per seed as it starts (the seed,
//! its strategy, the command that replays it) and one as it ends to
//! `target/sim/<test>/seeds.log` (`seeds.shard-k-of-n.log` for a shard),
//! each written straight to the file: a process that crashes or is killed
//! leaves the file behind, and the seeds started and never ended are the
//! ones in flight. On stderr the sweep says once which seeds it runs and
//! where that log is, then its report (run/report.rs) — never a line per
//! seed before it. A hang needs neither: the runtime's watchdog names the
//! hung simulation's seed itself.
//!
//! A run of one seed (`SIM_SEED`, a replay, a tape, a test of one seed)
//! prints its line on stderr instead, before the seed runs, as the one
//! thing a person replaying it needs to see.
//!
//! Two sweeps of the same test at once (a test binary that runs itself
//! again as a child, two terminals) never share a log: a sweep holds a
//! lock on its log while it runs, and one that finds `seeds.log` locked
//! writes `seeds.2.log` (and so on). The start line names the file.

use super::plan::{self, Plan};
use crate::simulation::seed::{trace_dir, Options};
use sim_runtime::sim::Class;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where a sweep's per-seed lines go.
pub(super) struct SeedsLog {
    /// The open log, or `None`: the lines go to stderr (one seed, or the
    /// log could not be created).
    file: Option<(PathBuf, Mutex<File>)>,
    name: String,
}

impl SeedsLog {
    /// Opens the log of `plan`'s sweep (truncating the last one) and says
    /// on stderr what the sweep runs; for one seed, nothing.
    pub(super) fn open(opts: &Options, plan: &Plan) -> SeedsLog {
        let name = plan.name.clone();
        if plan.seeds.len() <= 1 {
            return SeedsLog { file: None, name };
        }
        let stem = match plan::shard() {
            Some((k, n)) => format!("seeds.shard-{k}-of-{n}"),
            None => "seeds".to_string(),
        };
        let dir = trace_dir(opts, &name);
        let head = format!(
            "sim: {name}: {} seeds ({}), {} job(s)",
            plan.seeds.len(),
            describe(&plan.seeds),
            plan.jobs
        );
        let opened = std::fs::create_dir_all(&dir)
            .and_then(|_| open_unshared(&dir, &stem))
            .and_then(|(path, mut f)| writeln!(f, "{head}").map(|_| (path, f)));
        match opened {
            Ok((path, f)) => {
                eprintln!(
                    "{head} · a line per seed as it starts and ends (a crash's seed is the one \
                     never ended): {}",
                    path.display()
                );
                SeedsLog {
                    file: Some((path, Mutex::new(f))),
                    name,
                }
            }
            Err(e) => {
                eprintln!(
                    "{head} · could not write {}: {e}; a line per seed goes here instead",
                    dir.join(format!("{stem}.log")).display()
                );
                SeedsLog { file: None, name }
            }
        }
    }

    /// Before a seed runs: `line` names it and its replay command.
    pub(super) fn starting(&self, line: &str) {
        self.write(line, true);
    }

    /// After a seed ran (kept in the log only).
    pub(super) fn ended(&self, seed: u64, class: Option<Class>) {
        let line = match class {
            None => format!("sim: {} seed {seed} passed", self.name),
            Some(c) => format!("sim: {} seed {seed} failed: {c}", self.name),
        };
        self.write(&line, false);
    }

    /// Writes `line` to the log, unbuffered (a `File` writes at once), or
    /// to stderr when there is none and `on_stderr`.
    fn write(&self, line: &str, on_stderr: bool) {
        match &self.file {
            Some((path, f)) => {
                let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = writeln!(f, "{line}") {
                    eprintln!("sim: could not write {}: {e}: {line}", path.display());
                }
            }
            None if on_stderr => eprintln!("{line}"),
            None => {}
        }
    }
}

/// Opens `<stem>.log` in `dir`, or `<stem>.2.log`, … when another sweep
/// holds it, locked for as long as the file is open, and empty.
fn open_unshared(dir: &Path, stem: &str) -> std::io::Result<(PathBuf, File)> {
    const AT_ONCE_MAX: u32 = 64;
    for n in 1..=AT_ONCE_MAX {
        let path = match n {
            1 => dir.join(format!("{stem}.log")),
            n => dir.join(format!("{stem}.{n}.log")),
        };
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        if lock(&f) {
            f.set_len(0)?;
            return Ok((path, f));
        }
    }
    Err(std::io::Error::other(format!(
        "{AT_ONCE_MAX} sweeps of this test hold a log of their own"
    )))
}

/// Takes the file's lock without waiting; whether it got it (another
/// process's or another open file's lock says no). The OS drops it when the
/// file closes, also when the process dies.
#[cfg(unix)]
fn lock(f: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: `f` owns the descriptor, open for the whole call; `flock`
    // reads nothing else.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(not(unix))]
fn lock(_: &File) -> bool {
    true
}

/// The seeds, short: `0..400` when they are a range, else the first ten.
fn describe(seeds: &[u64]) -> String {
    let (first, last) = (seeds[0], seeds[seeds.len() - 1]);
    if seeds.windows(2).all(|w| w[0].checked_add(1) == Some(w[1])) {
        return match last.checked_add(1) {
            Some(end) => format!("{first}..{end}"),
            None => format!("{first}..={last}"),
        };
    }
    let shown: Vec<String> = seeds.iter().take(10).map(u64::to_string).collect();
    let more = if seeds.len() > 10 { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::{describe, open_unshared};

    #[cfg(unix)]
    #[test]
    fn a_second_sweep_at_once_gets_a_log_of_its_own() {
        let dir = std::env::temp_dir().join(format!("sim-seeds-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (first, _held) = open_unshared(&dir, "seeds").unwrap();
        let (second, f) = open_unshared(&dir, "seeds").unwrap();
        assert_eq!(first, dir.join("seeds.log"));
        assert_eq!(second, dir.join("seeds.2.log"));
        drop(f);
        let (again, _) = open_unshared(&dir, "seeds").unwrap();
        assert_eq!(again, second, "a closed log is free again");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn seeds_are_described_as_a_range_or_a_short_list() {
        assert_eq!(describe(&[0, 1, 2, 3]), "0..4");
        assert_eq!(describe(&[1, 4, 7]), "1, 4, 7");
        let many: Vec<u64> = (0..30).map(|i| i * 2).collect();
        assert_eq!(describe(&many), "0, 2, 4, 6, 8, 10, 12, 14, 16, 18, …");
    }
}
