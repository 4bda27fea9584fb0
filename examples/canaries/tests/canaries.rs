//! The catalog in `cargo test`: each planted bug is found by the portfolio
//! within its bound and its first failing seed reproduces with the same
//! fingerprint; each fix passes the same seeds and more; the two bugs that
//! need a particular strategy are missed without it (uniform random misses
//! the run-ahead bug, a run without early timers misses the timeout that
//! fires mid-computation). `cargo xtask canaries` measures every strategy
//! over 200 seeds; this is the bounded check CI runs. The eight hard canaries
//! (`Canary::first` set) hide for hundreds to thousands of seeds: their
//! known first failing seed runs alone, and their fix passes 200 seeds.
#![cfg(simulation)]

use canaries::{Variant, CATALOG};
use sim::__private::{run, Options, Seeds};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Seeds each fix must pass (at least; the bound if larger).
const FIXED_SEEDS: u64 = 60;
/// Seeds each hard canary's fix must pass here (`cargo xtask canaries
/// --hard` measures thousands).
const HARD_FIXED_SEEDS: u64 = 200;

/// The options of `name`'s own test (`tests/sweep.rs`), so that a report's
/// replay line runs the same scenario with the same settings.
fn options(name: &'static str, seeds: Seeds) -> Options {
    Options {
        name: Box::leak(format!("sweep::{name}").into_boxed_str()),
        file: "tests/sweep.rs",
        package: "canaries",
        crate_name: "sweep",
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds,
        time_limit_ms: Some(60_000),
        ..Options::default()
    }
}

/// Runs `name`'s buggy or fixed scenario with `opts`: the harness's report
/// if it failed.
fn report_of(opts: Options, name: &'static str, variant: Variant) -> Option<String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        run(opts, move || canaries::scenario(name, variant))
    }));
    match outcome {
        Ok(()) => None,
        Err(p) => Some(match p.downcast::<String>() {
            Ok(s) => *s,
            Err(p) => p
                .downcast_ref::<&str>()
                .map_or_else(|| "a non-string panic".into(), |s| s.to_string()),
        }),
    }
}

/// Sweeps `name` against `variant`; the harness's report if a seed failed.
fn sweep(
    name: &'static str,
    variant: Variant,
    seeds: (u64, u64),
    schedule: Option<&'static str>,
    early_timers: Option<bool>,
) -> Option<String> {
    let opts = Options {
        schedule,
        early_timers,
        ..options(name, Seeds::Range(seeds.0, seeds.1))
    };
    report_of(opts, name, variant)
}

/// Explores `name`'s planted bug from exploration seed 0 with a budget of
/// `budget` runs: the report of the failure it must find, which names the
/// exploration's run.
fn explored(name: &'static str, budget: u64) -> String {
    let opts = Options {
        explore: Some(budget),
        ..options(name, Seeds::One(0))
    };
    let report = report_of(opts, name, Variant::Buggy)
        .unwrap_or_else(|| panic!("{name}: the exploration finds it within {budget} runs"));
    assert!(report.contains("exploration: run "), "{name}: {report}");
    report
}

/// The first failing seed, from the report's first line
/// (`sim: <name>: K of N seed(s) failed: s1, s2, …`).
fn first_failing_seed(report: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.split_once(" seed(s) failed: "))
        .and_then(|(_, list)| list.split(',').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no failing seed in the report:\n{report}"))
}

/// `(faults, steps)` of a size in a shrunk line (`2 fault(s), 340 steps,
/// 1.3s of virtual time`).
fn size(text: &str) -> (u64, u64) {
    let number = |unit: &str| -> u64 {
        let at = text
            .find(unit)
            .unwrap_or_else(|| panic!("no `{unit}` in `{text}`"));
        text[..at]
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no number before `{unit}` in `{text}`"))
    };
    (number(" fault(s)"), number(" steps"))
}

fn check(name: &'static str) {
    let canary = CATALOG
        .iter()
        .find(|c| c.name == name)
        .expect("the canary is in the catalog");
    // A hard canary's sweep from 0 takes hundreds to thousands of seeds:
    // run its known first failing seed alone.
    let seeds = canary.first.map_or((0, canary.bound), |f| (f, f + 1));
    let report = sweep(name, Variant::Buggy, seeds, None, None).unwrap_or_else(|| {
        panic!(
            "{name}: the portfolio did not find the planted bug in seeds {}..{}",
            seeds.0, seeds.1
        )
    });
    assert!(
        report.contains(
            "sim: reproduced when run again: yes: the same failure with the same fingerprint"
        ),
        "{name}: the first failing seed did not reproduce:\n{report}"
    );
    assert!(
        // `cargo test` or, under `cargo sim`, `cargo sim test`.
        report.contains(&format!(" test -p canaries --test sweep -- {name} --exact")),
        "{name}: the replay line does not name the sweep's test:\n{report}"
    );
    assert!(first_failing_seed(&report) < seeds.1);
    // Shrinking leaves a run no bigger than the seed's, failing the same way.
    let shrunk = report
        .lines()
        .find_map(|l| l.strip_prefix("sim: shrunk: "))
        .unwrap_or_else(|| panic!("{name}: the report has no shrunk line:\n{report}"));
    eprintln!("{name}: shrunk: {shrunk}");
    if let Some((before, after)) = shrunk.split_once(" → ") {
        let (before, after) = (size(before), size(after));
        assert!(
            after <= before,
            "{name}: the shrunk run is bigger than the seed's: {shrunk}"
        );
    } else {
        assert!(shrunk.starts_with("nothing smaller"), "{name}: {shrunk}");
    }
    let fixed_seeds = match canary.first {
        // `CANARIES_HARD_FIXED_SEEDS` sweeps more (tuning a hard canary).
        Some(_) => std::env::var("CANARIES_HARD_FIXED_SEEDS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(HARD_FIXED_SEEDS),
        None => FIXED_SEEDS.max(canary.bound),
    };
    if let Some(report) = sweep(name, Variant::Fixed, (0, fixed_seeds), None, None) {
        panic!("{name}: the fixed program failed:\n{report}");
    }
}

macro_rules! found_and_fixed {
    ($($bug:ident),* $(,)?) => {$(
        #[test]
        fn $bug() {
            check(stringify!($bug));
        }
    )*};
}

found_and_fixed!(
    lost_update,
    missed_wakeup,
    lock_order,
    retry_forever,
    run_ahead,
    partial_batch,
    acked_write,
    unsynced_ack,
    eof_as_miss,
    rejected_fill,
    yield_ahead,
    thread_lost_update,
);

// The hard eight: their known first failing seed, then 200 seeds of the fix.
#[rustfmt::skip]
found_and_fixed!(
    stale_term,
    torn_log,
    depth3,
    healed_retry,
    drifted_lease,
    compact_crash,
    skewed_pair,
    stale_forward,
);

/// The two-lock deadlock's report prints its cycle: each transfer waits
/// for the account lock the other holds, which the simulator cannot see
/// inside `tokio::sync::Mutex`; the report finds it by dropping each task
/// in a forked copy and names the guard whose drop woke the other.
#[test]
fn lock_order_report_prints_the_cycle_through_both_locks() {
    let report = sweep("lock_order", Variant::Buggy, (0, 3), None, None)
        .expect("the two opposite transfers deadlock within 3 seeds");
    assert!(report.contains("sim: class: deadlock"), "{report}");
    let cycle = report
        .lines()
        .position(|l| l.trim_start().starts_with("cycle: task "))
        .unwrap_or_else(|| panic!("no cycle in the report:\n{report}"));
    let lines: Vec<&str> = report.lines().collect();
    for hop in &lines[cycle + 1..cycle + 3] {
        assert!(
            hop.contains("waits for what task ")
                && hop.contains("releases its tokio::sync::mutex::MutexGuard<i64>)"),
            "each hop of the cycle names the other transfer's guard:\n{report}"
        );
    }
}

#[test]
fn every_canary_has_a_check_here_and_a_scenario() {
    let here = include_str!("canaries.rs");
    let sweep = include_str!("sweep.rs");
    for c in CATALOG {
        assert!(
            here.contains(&format!("    {},\n", c.name)),
            "{} has no check in tests/canaries.rs",
            c.name
        );
        assert!(
            sweep.contains(&format!("    {},\n", c.name)),
            "{} has no sweep in tests/sweep.rs",
            c.name
        );
    }
    assert!(CATALOG.len() >= 10);
}

/// The run-ahead bug needs 16 hand-offs before the handler's first step:
/// uniform random misses it in 200 seeds, PCT finds it within its bound.
#[test]
fn run_ahead_needs_pct() {
    assert_eq!(
        sweep("run_ahead", Variant::Buggy, (0, 200), Some("random"), None),
        None,
        "uniform random found the run-ahead bug: the canary no longer needs PCT"
    );
    for depth in ["pct2", "pct3", "pct4"] {
        let report = sweep("run_ahead", Variant::Buggy, (0, 20), Some(depth), None)
            .unwrap_or_else(|| panic!("{depth} did not find the run-ahead bug in 20 seeds"));
        assert!(report.contains(&format!("strategy {depth}")), "{report}");
    }
}

/// The yield run-ahead bug needs the order of a multi-thread runtime: one
/// task 21 steps ahead of another that yielded once. Uniform random (about
/// 2^-20 per seed) misses it in 200 seeds; PCT finds it within 20 seeds.
/// FIFO, Tokio's current-thread order, can never produce it.
#[test]
fn yield_ahead_needs_pct() {
    assert_eq!(
        sweep(
            "yield_ahead",
            Variant::Buggy,
            (0, 200),
            Some("random"),
            None
        ),
        None,
        "uniform random found the yield run-ahead bug"
    );
    assert_eq!(
        sweep("yield_ahead", Variant::Buggy, (0, 50), Some("fifo"), None),
        None,
        "FIFO (Tokio's current-thread order) ran a yielder ahead"
    );
    for depth in ["pct2", "pct3", "pct4"] {
        let report = sweep("yield_ahead", Variant::Buggy, (0, 20), Some(depth), None)
            .unwrap_or_else(|| panic!("{depth} did not find the yield run-ahead bug in 20 seeds"));
        assert!(report.contains(&format!("strategy {depth}")), "{report}");
    }
}

/// The timeout fires mid-computation only with early timers: without them
/// the clock waits for the computation, on every seed.
#[test]
fn partial_batch_needs_early_timers() {
    assert_eq!(
        sweep("partial_batch", Variant::Buggy, (0, 200), None, Some(false)),
        None,
        "a timeout fired mid-computation without early timers"
    );
    let report = sweep("partial_batch", Variant::Buggy, (0, 30), None, Some(true))
        .expect("early timers fire the timeout mid-computation within 30 seeds");
    assert!(report.contains("+ early timers"), "{report}");
}

/// The fault point is what finds the rejected fill: with fault points off
/// (`SIM_BUGGIFY=off` in a child run) no seed fails.
#[test]
fn rejected_fill_needs_its_fault_point() {
    if std::env::var("CANARIES_CHILD").is_ok() {
        // In the child: fault points are off.
        assert_eq!(
            sweep("rejected_fill", Variant::Buggy, (0, 200), None, None),
            None
        );
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["rejected_fill_needs_its_fault_point", "--exact"])
        .env("CANARIES_CHILD", "1")
        .env("SIM_BUGGIFY", "off")
        .env_remove("SIM_SEED")
        .env_remove("SIM_SEEDS")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "with fault points off the rejected fill was found:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = sweep("rejected_fill", Variant::Buggy, (0, 60), None, None)
        .expect("found with fault points on");
    assert!(
        report.contains("sim: fault points active: cache.admission_rejects"),
        "{report}"
    );
}

/// `compact_crash` needs a compaction, then a crash drawn as the run goes
/// in the few milliseconds before the next sync: seeds 0..1000 miss it,
/// and an exploration of the same budget finds it, by branching from the
/// runs that wrote the most and from the first compaction (`sim::state!`,
/// `sim::sometimes!`).
#[test]
fn exploration_finds_compact_crash_where_as_many_seeds_do_not() {
    assert!(
        sweep("compact_crash", Variant::Buggy, (0, 1000), None, None).is_none(),
        "no seed below 1000 finds it (the first is 3314)"
    );
    let report = explored("compact_crash", 1000);
    assert!(report.contains("lost in the crash"), "{report}");
}

/// `skewed_pair` needs two clocks behind at once, each set as the run goes
/// (the first failing seed is 8052): an exploration branches from the runs
/// where one clock fell behind (`sim::state!` of the clocks behind) and
/// finds it in far fewer runs than seeds.
#[test]
fn exploration_finds_skewed_pair_where_as_many_seeds_do_not() {
    assert!(
        sweep("skewed_pair", Variant::Buggy, (0, 1000), None, None).is_none(),
        "no seed below 1000 finds it (the first is 8052)"
    );
    let report = explored("skewed_pair", 1000);
    assert!(report.contains("two clocks behind"), "{report}");
}

/// CI's fast check of the explorer on the other hard canaries: an
/// exploration from seed 0 finds each within its bound (measured from seed
/// 0: stale_forward 67, stale_term 684, torn_log 150, depth3 44,
/// healed_retry 108, drifted_lease 1,011). drifted_lease marks no progress
/// and draws its clocks up front, so the explorer runs a sweep's seeds in
/// order: its figure is the portfolio's first failing seed plus one. The
/// others draw their faults as the run goes and mark how far a run got
/// (`sim::state!`, `sim::sometimes!`), which the explorer climbs. An
/// exploration is a function of its seed, so a bound missed is the
/// explorer getting worse, not luck.
#[test]
fn exploration_finds_every_hard_canary_within_its_bound() {
    for (name, bound) in [
        // A write held behind a cut, arriving after its retry and the next
        // write: seeds 0..1497 miss it.
        ("stale_forward", 1_000),
        // A candidate paused through its timeout: seeds 0..4124 miss it.
        ("stale_term", 1_500),
        // The nemesis crashes early in most runs: seeds 0..10448 miss it;
        // the explorer climbs the records acknowledged to the rollover.
        ("torn_log", 500),
        // Seeds 0..1778 miss it; the explorer climbs the updater's marks.
        ("depth3", 200),
        // A cut held through the ledger's memory: seeds 0..2052 miss it.
        ("healed_retry", 300),
        ("drifted_lease", 1_500),
    ] {
        explored(name, bound);
    }
}
