//! Reading the report sim-harness prints when a `#[sim::test]` fails
//! (written by `sim-harness/src/simulation/run.rs`): `cargo xtask
//! canaries` and `cargo xtask sweep` both take it apart, so it is read in
//! one place. So is a sweep's log of the seeds it starts and ends
//! (`run/seeds_log.rs`), which names the seeds a killed run was running.

use std::path::PathBuf;

/// The report of one failing test.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Seeds that failed.
    pub failed: u64,
    /// Seeds the harness ran.
    pub total: u64,
    /// The first failing seed.
    pub first: Option<u64>,
    /// The first failure's strategy (`pct3+early`).
    pub strategy: String,
    /// The first failure's class (`nondeterminism`, `deadlock`, ...).
    pub class: String,
    /// What `sim: reproduced when run again:` says.
    pub reproduced: String,
    /// The replay command, as printed.
    pub replay: String,
    /// The report's lines from its first up to the trace.
    pub head: Vec<String>,
}

/// The report for the test `name` in `text` (a test binary's output):
/// `None` if there is none (the test passed, or did not run), an error if
/// its first line cannot be read.
pub fn parse(text: &str, name: &str) -> Option<Result<Report, String>> {
    let head = format!("sim: {name}: ");
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(&head) && l.contains(" seed(s) failed: "))?;
    let first_line = lines[start];
    let counts = first_line[head.len()..]
        .split_once(" seed(s) failed: ")
        .and_then(|(counts, list)| {
            let (failed, total) = counts.split_once(" of ")?;
            Some((failed.parse().ok()?, total.parse().ok()?, list))
        });
    let Some((failed, total, list)) = counts else {
        return Some(Err(format!("malformed report line: {first_line}")));
    };
    let mut r = Report {
        failed,
        total,
        first: list.split(',').next().and_then(|s| s.trim().parse().ok()),
        ..Report::default()
    };
    let mut in_head = true;
    for l in &lines[start..] {
        if l.starts_with("sim: trace: ") {
            in_head = false;
        }
        if in_head {
            r.head.push(l.to_string());
        }
        if let Some(rest) = l.strip_prefix("sim: first failure — ") {
            r.strategy = rest
                .split(" · ")
                .find_map(|p| p.strip_prefix("strategy "))
                .unwrap_or_default()
                .to_string();
        } else if let Some(rest) = l.strip_prefix("sim: class: ") {
            r.class = rest.to_string();
        } else if let Some(rest) = l.strip_prefix("sim: reproduced when run again: ") {
            r.reproduced = rest.to_string();
        } else if let Some(rest) = l.strip_prefix("sim: replay: ") {
            r.replay = rest.to_string();
            break;
        }
    }
    Some(Ok(r))
}

/// The log of the seeds `name`'s sweep starts and ends, as the sweep's
/// start line in `text` names it; `None` for a run of one seed (its line
/// is in `text`) or a sweep that never started.
pub fn seeds_log(text: &str, name: &str) -> Option<PathBuf> {
    let head = format!("sim: {name}: ");
    text.lines()
        .filter(|l| l.starts_with(&head) && l.contains(" · a line per seed as it starts and ends"))
        .find_map(|l| l.rsplit_once("): "))
        .map(|(_, path)| PathBuf::from(path))
}

/// The lines of the seeds `log` says started and never ended: what a
/// sweep that died was running, each with its replay command.
pub fn in_flight<'a>(log: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("sim: {name} seed ");
    let mut started: Vec<(&str, &str)> = Vec::new();
    for l in log.lines() {
        let Some((seed, rest)) = l.strip_prefix(&prefix).and_then(|r| r.split_once(' ')) else {
            continue;
        };
        if rest.starts_with("(strategy ") {
            started.push((seed, l));
        } else {
            started.retain(|(s, _)| *s != seed);
        }
    }
    started.into_iter().map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "\
running 1 test
test acked ... FAILED

---- acked stdout ----
sim: acked: 300 seeds (0..300), 2 job(s) · a line per seed as it starts and ends (a crash's seed is the one never ended): /w/target/sim/acked/seeds.log

thread 'acked' panicked at sim-harness/src/simulation/run.rs:1:1:
sim: acked: 2 of 300 seed(s) failed: 3, 41
sim: first failure — seed 3 · strategy pct3+early · step 120 · virtual time 1.000000000s
sim: class: deadlock
    nothing runnable
sim: trace: target/sim/acked/3.trace (5 line(s); the last 5:)
    step 1
sim: reproduced when run again: yes: the same failure with the same fingerprint (0x01)
sim: replay: SIM_SEED=3 SIM_SCHEDULE=pct3 cargo test -p kv --test sim -- acked --exact
sim: not part of the report
";

    #[test]
    fn reads_every_field_of_a_report() {
        let r = parse(REPORT, "acked").unwrap().unwrap();
        assert_eq!((r.failed, r.total, r.first), (2, 300, Some(3)));
        assert_eq!(r.strategy, "pct3+early");
        assert_eq!(r.class, "deadlock");
        assert!(r.reproduced.starts_with("yes: the same failure"));
        assert!(r.replay.starts_with("SIM_SEED=3 SIM_SCHEDULE=pct3 "));
        assert_eq!(r.head.len(), 4);
        assert_eq!(r.head[0], "sim: acked: 2 of 300 seed(s) failed: 3, 41");
    }

    #[test]
    fn a_sweeps_log_names_the_seeds_in_flight() {
        assert_eq!(
            seeds_log(REPORT, "acked"),
            Some(PathBuf::from("/w/target/sim/acked/seeds.log"))
        );
        assert_eq!(seeds_log(REPORT, "other"), None);
        let log = "\
sim: acked: 300 seeds (0..300), 2 job(s)
sim: acked seed 0 (strategy random) · replay: SIM_SEED=0 cargo test
sim: acked seed 1 (strategy pct2) · replay: SIM_SEED=1 cargo test
sim: acked seed 0 passed
sim: acked seed 2 (strategy pct3) · replay: SIM_SEED=2 cargo test
sim: acked seed 1 failed: deadlock
sim: acked seed 3 (strategy fifo) · replay: SIM_SEED=3 cargo test
";
        assert_eq!(
            in_flight(log, "acked"),
            [
                "sim: acked seed 2 (strategy pct3) · replay: SIM_SEED=2 cargo test",
                "sim: acked seed 3 (strategy fifo) · replay: SIM_SEED=3 cargo test"
            ]
        );
    }

    #[test]
    fn no_report_and_a_malformed_one_are_told_apart() {
        assert!(parse(REPORT, "other").is_none());
        assert!(parse("test acked ... ok\n", "acked").is_none());
        let bad = "sim: acked: two of 300 seed(s) failed: 3\n";
        assert!(parse(bad, "acked").unwrap().is_err());
    }
}
