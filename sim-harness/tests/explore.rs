//! Guided exploration (`#[sim::test(explore = n)]`, `SIM_EXPLORE`): runs
//! branch from the moments where earlier runs reached something new, so a
//! bug behind several rare decisions in a row is found in far fewer runs
//! than independent seeds need; the exploration is a function of its seed
//! (whatever `SIM_JOBS` is), and its failure replays from its tape.

#![cfg(simulation)]

mod common;

use std::time::Duration;

/// A bug five rare decisions deep: each of 10 steps moves the stage on
/// with p = 1/16 (a draw of the run's own), and the run fails at stage 5.
/// About one seed in 4,000 gets there; each stage reached is a new
/// `state!`.
async fn five_rare_steps_deep() {
    let mut stage = 0u32;
    for i in 0..10 {
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
        if sim::fork_seed(&format!("step {i}")) % 16 == 0 {
            stage += 1;
        }
        sim::state!("stage", stage);
        assert!(stage < 5, "five rare steps");
    }
}

/// The test as a child process runs it (see `child`): explores when
/// `SIM_CHILD_EXPLORE` is set, and passes at once otherwise.
#[sim::test(explore = 300)]
async fn child_explores() {
    if std::env::var("SIM_CHILD_EXPLORE").is_ok() {
        five_rare_steps_deep().await;
    }
}

fn child(env: &[(&str, &str)]) -> (bool, String) {
    let mut env = env.to_vec();
    env.insert(0, ("SIM_CHILD_EXPLORE", "1"));
    let c = common::child("child_explores", &env);
    (c.ok, c.text())
}

fn line_after<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line:\n{text}"))
}

/// The same 300 runs as independent seeds do not find the bug; the
/// exploration does, says which of its runs failed and how it was made,
/// and that run replays from its tape: the same failure, the same
/// fingerprint, in a fresh process.
#[test]
fn exploration_finds_a_bug_five_rare_steps_deep_and_its_tape_replays_it() {
    let (ok, seeds) = child(&[("SIM_SEEDS", "0..300"), ("SIM_EXPLORE", "0")]);
    assert!(ok, "300 independent seeds do not get five deep:\n{seeds}");

    let (ok, text) = child(&[("SIM_JOBS", "1")]);
    assert!(!ok, "the exploration finds it within 300 runs:\n{text}");
    let how = line_after(&text, "sim: child_explores: exploration: ");
    assert!(how.contains("a branch of seed "), "{how}");
    assert!(text.contains("five rare steps"), "{text}");
    assert!(
        line_after(&text, "sim: replays in fresh processes: ").starts_with("replays exactly"),
        "{text}"
    );
    let replay = line_after(&text, "sim: replay: ");
    let tape = replay
        .strip_prefix("SIM_TAPE=")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("the replay line names the tape: {replay}"));
    let reproduced = line_after(&text, "sim: reproduced when run again: ");

    let (ok, replayed) = child(&[("SIM_TAPE", tape), ("SIM_REPLAYS", "0")]);
    assert!(!ok, "{replayed}");
    assert!(replayed.contains("five rare steps"), "{replayed}");
    assert_eq!(
        line_after(&replayed, "sim: reproduced when run again: "),
        reproduced,
        "the tape is the explored run: {replayed}"
    );
}

/// The exploration is a function of its seed: one job or two, the same
/// run fails, found the same way, with the same fingerprint; another
/// exploration seed is another exploration.
#[test]
fn an_exploration_is_the_same_whatever_the_jobs() {
    let found = |env: &[(&str, &str)]| {
        let mut env = env.to_vec();
        env.push(("SIM_REPLAYS", "0"));
        let (ok, text) = child(&env);
        assert!(!ok, "{text}");
        (
            line_after(&text, "sim: child_explores: exploration: ").to_string(),
            line_after(&text, "sim: reproduced when run again: ").to_string(),
        )
    };
    let one = found(&[("SIM_JOBS", "1")]);
    assert_eq!(found(&[("SIM_JOBS", "2")]), one);
    let (_, other) = child(&[("SIM_JOBS", "2"), ("SIM_SEED", "1"), ("SIM_REPLAYS", "0")]);
    assert!(
        !other.contains(&one.0),
        "another exploration seed explores otherwise:\n{other}"
    );
}

/// A run doomed by its second step: a draw picks a mode, one in four bad,
/// and the run fails at its end, ten steps later, if the mode is bad.
#[sim::test(seeds = 0..40)]
async fn child_doomed_early() {
    if std::env::var("SIM_CHILD_DOOMED").is_err() {
        return;
    }
    sim_runtime::time::sleep(Duration::from_millis(1)).await;
    let bad = sim::fork_seed("mode") % 4 == 0;
    for i in 0..10 {
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
        let _ = sim::fork_seed(&format!("noise {i}"));
    }
    assert!(!bad, "doomed by an early choice");
}

/// The report says when the failure became inevitable: branches from
/// before the mode's draw fail one time in four at most, and from the step
/// after it, all of them.
#[test]
fn the_report_says_when_the_failure_became_inevitable() {
    let c = common::child(
        "child_doomed_early",
        &[
            ("SIM_CHILD_DOOMED", "1"),
            ("SIM_REPLAYS", "0"),
            ("SIM_SHRINK", "off"),
        ],
    );
    let text = c.text();
    assert!(!c.ok, "{text}");
    let table = line_after(&text, "sim: branches failing the same way, by step: ");
    let rates: Vec<(u64, u32)> = table
        .split_whitespace()
        .map(|p| {
            let (step, rate) = p.split_once(':').unwrap();
            (
                step.parse().unwrap(),
                rate.split('/').next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert!(
        rates[0].1 < 4,
        "before the draw the failure is not settled: {table}"
    );
    let likely = line_after(&text, "sim: the failure became likely at step ");
    let certain = line_after(&text, "sim: and certain from step ");
    let step = |l: &str| l.split_whitespace().next().unwrap().parse::<u64>().unwrap();
    assert!(step(certain) <= 3, "certain once the mode is drawn: {text}");
    assert!(step(likely) <= step(certain), "{text}");
    assert!(
        rates
            .iter()
            .filter(|(s, _)| *s >= step(certain))
            .all(|(_, r)| *r == 4),
        "{table}"
    );
}

/// An exploration checks coverage as a sweep does: with `coverage = "all"`
/// a site no run reached fails it.
#[test]
fn an_exploration_checks_coverage() {
    let mut opts = common::options("explore::coverage", file!(), sim::__private::Seeds::One(0));
    opts.explore = Some(16);
    opts.coverage = true;
    let r = common::report(opts, || async {
        sim::reachable!("every run");
        if sim::seed() == u64::MAX {
            sim::reachable!("no run");
        }
    });
    assert!(r.contains("sim: class: coverage"), "{r}");
    assert!(r.contains("\"no run\""), "{r}");
    assert!(!r.contains("\"every run\""), "{r}");
    assert!(r.contains("not covered by the 16 run(s)"), "{r}");
}

/// An exploration with the determinism check runs each run again from the
/// tape it wrote: a body whose decisions depend on state outside the run
/// (here a counter of runs) fails as nondeterminism, naming the first
/// decision that differs; a deterministic one passes.
#[test]
fn an_exploration_checks_determinism() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let mut opts = common::options(
        "explore::nondeterminism",
        file!(),
        sim::__private::Seeds::One(0),
    );
    opts.explore = Some(8);
    opts.check_determinism = true;
    let r = common::report(opts, || async {
        let n = RUNS.fetch_add(1, Ordering::SeqCst);
        sim_runtime::time::sleep(Duration::from_millis(1 + n)).await;
    });
    assert!(r.contains("class: nondeterminism"), "{r}");
    assert!(r.contains("first difference at decision #"), "{r}");
    assert!(r.contains("exploration: run 1 "), "{r}");

    let mut opts = common::options(
        "explore::deterministic",
        file!(),
        sim::__private::Seeds::One(0),
    );
    opts.explore = Some(16);
    opts.check_determinism = true;
    sim::__private::run(opts, || async {
        sim_runtime::time::sleep(Duration::from_millis(1 + sim::seed() % 5)).await;
        sim::state!("seed mod 3", sim::seed() % 3);
    });
}

/// `SIM_RESULTS` records a sweep's seeds for merging; an exploration is no
/// set of seeds, so the two together are refused, saying what to do.
#[test]
fn an_exploration_refuses_sim_results() {
    let (ok, text) = child(&[("SIM_RESULTS", "target/sim-results-explore-test")]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("SIM_RESULTS records a sweep's seeds"),
        "{text}"
    );
    assert!(
        text.contains("SIM_EXPLORE=0 to sweep the seeds instead"),
        "{text}"
    );
}
