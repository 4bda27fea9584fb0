//! What a sweep prints and what it leaves behind: one line on stderr when
//! it starts (which seeds, how many jobs, where its log is), then its
//! report, and never a line per seed before the report; the per-seed
//! lines in `target/sim/<test>/seeds.log`, every seed in it, so a killed
//! process still names the seed it was running. A run of one seed prints
//! that seed's line on stderr.
//!
//! A binary of its own: it runs itself again as child processes (one
//! aborts), reading what each printed and left. One child at a time, and
//! `child_sweep` is one seed unless a child is given `SIM_SEEDS`: a sweep
//! that started after a child's ended would take its free log over before
//! the test read it.
#![cfg(simulation)]

mod common;

use sim_runtime::time::{sleep, Duration};
use std::path::PathBuf;

const SEEDS: u64 = 40;

/// Fails every seed (the child of the tests below; only when the parent
/// asks, so a plain `cargo test` of this binary passes): with
/// `SWEEP_OUTPUT=fail` by an assertion, with `SWEEP_OUTPUT=abort` by
/// ending the process on seed 7, with `SWEEP_OUTPUT=hang` by blocking its
/// OS thread on seed 3.
#[sim::test(seed = 0)]
async fn child_sweep() {
    sleep(Duration::from_millis(1)).await;
    match std::env::var("SWEEP_OUTPUT").as_deref() {
        Ok("fail") => panic!("every seed fails"),
        Ok("abort") if sim::seed() == 7 => std::process::abort(),
        Ok("hang") if sim::seed() == 3 => {
            // A spin loop: no hand-off can take it over.
            let never = std::sync::atomic::AtomicBool::new(false);
            while !never.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
        Ok("ids") => eprintln!("SEED-THREAD {:?}", std::thread::current().id()),
        _ => {}
    }
}

/// Runs `child_sweep` with `env`; whether it passed, and its stderr.
fn child(env: &[(&str, &str)]) -> (bool, String) {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // Nothing but the report: no shrinking, no replays in fresh processes.
    let mut env = env.to_vec();
    env.splice(0..0, [("SIM_SHRINK", "off"), ("SIM_REPLAYS", "0")]);
    let c = common::child("child_sweep", &env);
    (c.ok, c.stderr)
}

/// The log the start line names.
fn log_named_in(stderr: &str) -> (String, PathBuf) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("sim: child_sweep: ") && l.contains(" a line per seed "))
        .unwrap_or_else(|| panic!("no start line:\n{stderr}"));
    let (_, path) = line.rsplit_once("): ").unwrap();
    (line.to_string(), PathBuf::from(path))
}

/// The seeds with a line in `log` that starts with `sim: child_sweep seed
/// <n>` followed by `what`.
fn seeds_in(log: &str, what: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| l.strip_prefix("sim: child_sweep seed "))
        .filter_map(|l| {
            let (seed, rest) = l.split_once(' ')?;
            rest.starts_with(what).then(|| seed.parse().ok())?
        })
        .collect()
}

#[test]
fn a_failing_sweep_prints_its_report_first_and_logs_every_seed() {
    let (ok, stderr) = child(&[
        ("SWEEP_OUTPUT", "fail"),
        ("SIM_SEEDS", "0..40"),
        ("SIM_JOBS", "2"),
    ]);
    assert!(!ok, "{stderr}");
    let (start, path) = log_named_in(&stderr);
    assert!(
        start.starts_with(&format!(
            "sim: child_sweep: {SEEDS} seeds (0..{SEEDS}), 2 job(s)"
        )),
        "{start}"
    );
    assert!(
        path.ends_with("target/sim/child_sweep/seeds.log"),
        "{start}"
    );
    let report = stderr
        .find(&format!(
            "sim: child_sweep: {SEEDS} of {SEEDS} seed(s) failed: 0, 1, 2"
        ))
        .unwrap_or_else(|| panic!("no report:\n{stderr}"));
    assert!(
        !stderr.contains("sim: child_sweep seed "),
        "a per-seed line on stderr:\n{}",
        &stderr[..report]
    );
    let log = std::fs::read_to_string(&path).unwrap();
    let all: Vec<u64> = (0..SEEDS).collect();
    let mut started = seeds_in(&log, "(strategy ");
    started.sort_unstable();
    assert_eq!(started, all, "{log}");
    let mut failed = seeds_in(&log, "failed: assertion");
    failed.sort_unstable();
    assert_eq!(failed, all, "{log}");
    assert!(
        log.contains("· replay: SIM_SEED=13 "),
        "each seed's replay command: {log}"
    );
}

#[test]
fn a_killed_sweep_leaves_the_seed_in_flight_in_its_log() {
    let (ok, stderr) = child(&[
        ("SWEEP_OUTPUT", "abort"),
        ("SIM_SEEDS", "0..40"),
        ("SIM_JOBS", "1"),
    ]);
    assert!(!ok, "{stderr}");
    let (_, path) = log_named_in(&stderr);
    let log = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        seeds_in(&log, "(strategy "),
        (0..=7).collect::<Vec<_>>(),
        "{log}"
    );
    assert_eq!(
        seeds_in(&log, "passed"),
        (0..7).collect::<Vec<_>>(),
        "{log}"
    );
    assert!(
        log.lines()
            .last()
            .unwrap()
            .starts_with("sim: child_sweep seed 7 (strategy "),
        "the last line names the seed that never ended: {log}"
    );
}

#[test]
fn a_hung_sweep_is_named_by_the_watchdog_and_its_log() {
    let (ok, stderr) = child(&[
        ("SWEEP_OUTPUT", "hang"),
        ("SIM_SEEDS", "0..10"),
        ("SIM_JOBS", "1"),
        ("SIM_HANG_TIMEOUT", "1s"),
    ]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("sim: hang (inconclusive)"), "{stderr}");
    assert!(
        stderr.contains(", seed 3. "),
        "the watchdog names the seed: {stderr}"
    );
    assert!(!stderr.contains("sim: child_sweep seed "), "{stderr}");
    let (_, path) = log_named_in(&stderr);
    let log = std::fs::read_to_string(&path).unwrap();
    assert_eq!(seeds_in(&log, "(strategy "), [0, 1, 2, 3], "{log}");
    assert_eq!(seeds_in(&log, "passed"), [0, 1, 2], "{log}");
}

#[test]
fn a_run_of_one_seed_prints_its_line() {
    let (ok, stderr) = child(&[("SIM_SEED", "5")]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("sim: child_sweep seed 5 (strategy ")
            && stderr.contains("· replay: SIM_SEED=5 "),
        "{stderr}"
    );
    assert!(!stderr.contains(" a line per seed "), "{stderr}");
}

#[test]
fn a_sweep_that_passes_prints_one_line() {
    let (ok, stderr) = child(&[("SIM_SEEDS", "0..12"), ("SIM_SHARD", "2/3")]);
    assert!(ok, "{stderr}");
    let (start, path) = log_named_in(&stderr);
    assert!(
        start.starts_with("sim: child_sweep: 4 seeds (1, 4, 7, 10), "),
        "{start}"
    );
    assert!(
        path.ends_with("target/sim/child_sweep/seeds.shard-2-of-3.log"),
        "a shard has a log of its own: {start}"
    );
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("sim: ")).count(),
        1,
        "{stderr}"
    );
    let log = std::fs::read_to_string(&path).unwrap();
    let mut passed = seeds_in(&log, "passed");
    passed.sort_unstable();
    assert_eq!(passed, [1, 4, 7, 10], "{log}");
}

/// By default a worker runs its seeds in turn on one OS thread (its
/// thread-locals made new after each); `SIM_THREAD_PER_SEED=1` starts a new
/// OS thread for every seed; any other value is refused, naming the forms.
#[test]
fn thread_per_seed_starts_a_thread_for_every_seed_and_a_bad_value_is_refused() {
    let threads = |extra: &[(&str, &str)]| {
        let mut env = vec![
            ("SWEEP_OUTPUT", "ids"),
            ("SIM_SEEDS", "0..6"),
            ("SIM_JOBS", "1"),
        ];
        env.extend_from_slice(extra);
        let (ok, stderr) = child(&env);
        assert!(ok, "{stderr}");
        let ids: std::collections::BTreeSet<&str> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("SEED-THREAD "))
            .collect();
        assert_eq!(
            stderr
                .lines()
                .filter(|l| l.starts_with("SEED-THREAD "))
                .count(),
            6,
            "{stderr}"
        );
        ids.len()
    };
    assert_eq!(threads(&[]), 1, "one worker ran the six seeds");
    assert_eq!(threads(&[("SIM_THREAD_PER_SEED", "1")]), 6);
    let (ok, stderr) = child(&[("SIM_THREAD_PER_SEED", "maybe")]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("SIM_THREAD_PER_SEED=\"maybe\" is malformed. Accepted forms: 1"),
        "{stderr}"
    );
}
