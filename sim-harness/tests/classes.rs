//! Every failure class of the harness: its wording in the report, the
//! rerun verdict, the replay line, and the trace file.
#![cfg(simulation)]

use sim::__private::{run, Options, Seeds};
use sim_runtime::time::{sleep, Duration};
use std::sync::atomic::{AtomicU64, Ordering};

mod common;
use common::report;

fn options(name: &'static str, seeds: Seeds) -> Options {
    common::options(name, file!(), seeds)
}

fn assert_common(r: &str, seed: u64) {
    assert!(r.contains(&format!("first failure — seed {seed} ")), "{r}");
    assert!(r.contains("step "), "{r}");
    assert!(r.contains("virtual time "), "{r}");
    assert!(r.contains(&format!("replay: SIM_SEED={seed} ")), "{r}");
    assert!(r.contains("reproduced when run again: yes"), "{r}");
}

#[test]
fn assertion_in_the_body_names_the_seed_and_the_trace() {
    let r = report(
        options("classes::assertion", Seeds::Range(0, 4)),
        || async {
            tracing::info!(answer = 41, "about to check");
            sleep(Duration::from_millis(5)).await;
            assert_eq!(sim::seed() % 2, 1, "even seeds are wrong");
        },
    );
    assert!(r.contains("2 of 4 seed(s) failed: 0, 2"), "{r}");
    assert!(r.contains("class: assertion"), "{r}");
    assert!(r.contains("even seeds are wrong"), "{r}");
    assert_common(&r, 0);
    // The trace: the service's event, stamped with virtual time and node.
    assert!(
        r.contains("main       INFO  classes: about to check answer=41"),
        "{r}"
    );
    let path = r
        .lines()
        .find_map(|l| l.strip_prefix("sim: trace: "))
        .and_then(|l| l.split(" (").next())
        .expect("the report names the trace file");
    let text = std::fs::read_to_string(path).expect("the trace file exists");
    assert!(text.contains("about to check"), "{text}");
    assert!(text.contains("even seeds are wrong"), "{text}");
}

/// A passing seed's trace is never read, so its events are not formatted
/// (trace.rs); a failing seed's are, from a second run of it.
#[test]
fn only_failing_seeds_build_trace_text() {
    static FORMATTED: AtomicU64 = AtomicU64::new(0);
    struct Counted;
    impl std::fmt::Debug for Counted {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            FORMATTED.fetch_add(1, Ordering::SeqCst);
            f.write_str("counted")
        }
    }
    let body = || async {
        tracing::info!(value = ?Counted, "an event");
        sleep(Duration::from_millis(1)).await;
        assert_ne!(sim::seed(), 7, "seed 7 is wrong");
    };
    run(options("classes::untraced", Seeds::Range(0, 7)), body);
    assert_eq!(
        FORMATTED.load(Ordering::SeqCst),
        0,
        "seven passing seeds formatted their events"
    );
    let r = report(options("classes::traced", Seeds::Range(0, 9)), body);
    assert!(r.contains("1 of 9 seed(s) failed: 7"), "{r}");
    assert!(r.contains("INFO  classes: an event value=counted"), "{r}");
    assert!(FORMATTED.load(Ordering::SeqCst) > 0);
}

/// A sweep where most seeds fail traces the lowest sixteen of them (each
/// costs a second run) and says how to get another's.
#[test]
fn traces_are_written_for_the_first_sixteen_failing_seeds() {
    let start = std::time::SystemTime::now();
    let r = report(
        options("classes::many_failing", Seeds::Range(0, 20)),
        || async {
            tracing::info!("a failing seed's event");
            assert_eq!(sim::seed(), 99, "every seed fails");
        },
    );
    assert!(r.contains("20 of 20 seed(s) failed"), "{r}");
    assert!(
        r.contains("sim: traces: written for the first 16 of the 20 failing seeds"),
        "{r}"
    );
    let first = r
        .lines()
        .find_map(|l| l.strip_prefix("sim: trace: "))
        .and_then(|l| l.split(" (").next())
        .expect("the report names the trace file");
    let dir = std::path::Path::new(first).parent().expect("a directory");
    let fifteen = std::fs::read_to_string(dir.join("15.trace")).expect("seed 15's trace");
    assert!(fifteen.contains("a failing seed's event"), "{fifteen}");
    // (A file from an earlier run of this test may be there, older.)
    let written = std::fs::metadata(dir.join("16.trace")).and_then(|m| m.modified());
    assert!(
        !written.is_ok_and(|t| t >= start),
        "seed 16 is past the first sixteen"
    );
}

#[test]
fn panic_in_a_node_task() {
    let r = report(options("classes::panic", Seeds::One(3)), || async {
        sim::node("worker").start(|| async {
            sleep(Duration::from_millis(10)).await;
            panic!("the worker gave up");
        });
        sleep(Duration::from_secs(1)).await;
    });
    assert!(r.contains("class: panic"), "{r}");
    assert!(r.contains("the worker gave up"), "{r}");
    assert_common(&r, 3);
}

#[test]
fn restart_on_panic_keeps_the_run_going() {
    static STARTS: AtomicU64 = AtomicU64::new(0);
    run(
        options("classes::restart_on_panic", Seeds::One(4)),
        || async {
            STARTS.store(0, Ordering::SeqCst);
            sim::node("flaky").restart_on_panic().start(|| async {
                if STARTS.fetch_add(1, Ordering::SeqCst) < 2 {
                    sleep(Duration::from_millis(10)).await;
                    panic!("not yet");
                }
                std::future::pending::<()>().await;
            });
            sleep(Duration::from_secs(1)).await;
            assert_eq!(STARTS.load(Ordering::SeqCst), 3, "two panics, three starts");
        },
    );
}

#[test]
fn deadlock_names_the_stuck_tasks() {
    let r = report(options("classes::deadlock", Seeds::One(5)), || async {
        let (_tx, rx) = sim_runtime::sync::oneshot::channel::<()>();
        let (tx2, rx2) = sim_runtime::sync::oneshot::channel::<()>();
        sim::node("waiter").start(move || {
            let _keep = &tx2;
            async { std::future::pending::<()>().await }
        });
        drop(rx2);
        let _ = rx.await;
    });
    assert!(r.contains("class: deadlock"), "{r}");
    assert!(r.contains("on node 'waiter'"), "{r}");
    assert_common(&r, 5);
}

#[test]
fn livelock_is_the_virtual_time_limit() {
    let mut o = options("classes::livelock", Seeds::One(6));
    o.time_limit_ms = Some(1_000);
    let r = report(o, || async {
        loop {
            sleep(Duration::from_millis(100)).await;
        }
    });
    assert!(r.contains("class: livelock"), "{r}");
    assert_common(&r, 6);
}

#[test]
fn step_limit() {
    let mut o = options("classes::step_limit", Seeds::One(7));
    o.step_limit = Some(500);
    let r = report(o, || async {
        loop {
            sim_runtime::task::yield_now().await;
        }
    });
    assert!(r.contains("class: step limit"), "{r}");
    assert_common(&r, 7);
}

#[test]
fn leak_when_strict() {
    let mut o = options("classes::leak", Seeds::One(8));
    o.strict = true;
    let r = report(o, || async {
        sim::node("forgotten").start(std::future::pending::<()>);
    });
    assert!(r.contains("class: leak"), "{r}");
    assert!(r.contains("on node 'forgotten'"), "{r}");
    assert_common(&r, 8);
}

#[test]
fn liveness_after_healing() {
    let r = report(options("classes::liveness", Seeds::One(9)), || async {
        sim::eventually("the counter reaches 1", Duration::from_secs(5), || async {
            false
        })
        .await;
    });
    assert!(r.contains("class: liveness"), "{r}");
    assert!(
        r.contains("the counter reaches 1: no progress within 5s"),
        "{r}"
    );
    assert_common(&r, 9);
}

#[test]
fn nondeterminism_names_the_first_divergent_decision() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let mut o = options("classes::nondeterminism", Seeds::One(10));
    o.check_determinism = true;
    let r = report(o, || async {
        // State outside the seed: each run sleeps a different time.
        let n = RUNS.fetch_add(1, Ordering::SeqCst);
        sleep(Duration::from_millis(1 + n)).await;
    });
    assert!(r.contains("class: nondeterminism"), "{r}");
    assert!(r.contains("first difference at decision #"), "{r}");
    // Its rerun is not the same failure either.
    assert!(r.contains("reproduced when run again: NO"), "{r}");
}

#[test]
fn passing_seeds_pass_and_the_check_passes_deterministic_runs() {
    let mut o = options("classes::passing", Seeds::Range(0, 8));
    o.check_determinism = true;
    run(o, || async {
        let n = sim::node("a").start(|| async {
            sleep(Duration::from_millis(3)).await;
        });
        sleep(Duration::from_millis(10)).await;
        n.crash();
        n.restart();
    });
}

/// Blocks its OS thread when run as the child of the test below: a spin
/// loop, which no hand-off can take over (a blocking std call is a
/// simulated wait now, and one that nothing can end is a deadlock).
#[sim::test(seed = 11)]
async fn child_blocks_its_thread() {
    if std::env::var("SIM_HANG_TIMEOUT").is_ok() {
        let never = std::sync::atomic::AtomicBool::new(false);
        while !never.load(std::sync::atomic::Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    }
}

#[test]
fn hang_is_reported_as_inconclusive_never_a_pass() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["child_blocks_its_thread", "--exact", "--nocapture"])
        .env("SIM_HANG_TIMEOUT", "2s")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "a hang must not pass: {text}");
    assert!(text.contains("sim: hang (inconclusive)"), "{text}");
    assert!(
        text.contains("SIM_SEED=11"),
        "the replay line names the seed: {text}"
    );
}

/// Seeds 0..3; when run as the child of the tests below, seed 2 fails:
/// always (`SIM_CHILD_FAIL=always`), or only when earlier seeds ran in the
/// same process (`SIM_CHILD_FAIL=after_others`: a static carries state from
/// seed to seed, which a rerun in the same process cannot see), or by a
/// forbidden operation (`SIM_CHILD_FAIL=forbidden`: a class whose name has
/// a space).
#[sim::test(seeds = 0..3)]
async fn child_fails_on_seed_two() {
    static SEEDS_IN_THIS_PROCESS: std::sync::atomic::AtomicU64 =
        std::sync::atomic::AtomicU64::new(0);
    let before = SEEDS_IN_THIS_PROCESS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    sleep(Duration::from_millis(1)).await;
    match std::env::var("SIM_CHILD_FAIL").as_deref() {
        Ok("always") => assert_ne!(sim::seed(), 2, "seed 2 fails"),
        Ok("after_others") if before >= 2 => assert_ne!(sim::seed(), 2, "seed 2 fails"),
        Ok("forbidden") if sim::seed() == 2 => {
            let started = sim_runtime::process::Command::new("true").status().await;
            assert!(started.is_err(), "a process is never started");
        }
        _ => {}
    }
}

#[test]
fn a_failing_seed_replays_exactly_in_fresh_processes_and_names_its_build() {
    let (ok, text) = child(
        "child_fails_on_seed_two",
        &[("SIM_CHILD_FAIL", "always"), ("SIM_JOBS", "1")],
    );
    assert!(!ok, "{text}");
    assert!(text.contains("reproduced when run again: yes"), "{text}");
    assert!(
        text.contains("replays in fresh processes: replays exactly (3 of 3"),
        "{text}"
    );
    assert!(text.contains("sim: build: commit "), "{text}");
    assert!(text.contains("rustc "), "{text}");
}

/// The replays compare the class, not its first word: a forbidden
/// operation with the original fingerprint replays exactly.
#[test]
fn a_class_with_a_space_in_its_name_replays_exactly() {
    let (ok, text) = child(
        "child_fails_on_seed_two",
        &[
            ("SIM_CHILD_FAIL", "forbidden"),
            ("SIM_JOBS", "1"),
            ("SIM_REPLAYS", "2"),
        ],
    );
    assert!(!ok, "{text}");
    assert!(text.contains("class: forbidden operation"), "{text}");
    assert!(
        text.contains("replays in fresh processes: replays exactly (2 of 2"),
        "{text}"
    );
}

#[test]
fn state_that_outlives_a_seed_shows_as_replays_k_of_n() {
    // In the sweep, seed 2 runs after seeds 0 and 1 and fails; rerun in
    // the same process it fails again; alone in a fresh process it passes.
    let (ok, text) = child(
        "child_fails_on_seed_two",
        &[
            ("SIM_CHILD_FAIL", "after_others"),
            ("SIM_JOBS", "1"),
            ("SIM_REPLAYS", "2"),
        ],
    );
    assert!(!ok, "{text}");
    assert!(text.contains("reproduced when run again: yes"), "{text}");
    assert!(
        text.contains("replays in fresh processes: replays 0 of 2: NOT deterministic"),
        "{text}"
    );
}

/// Passes for every seed (the child of the tests below).
#[sim::test(seeds = 0..3)]
async fn child_passes() {
    sleep(Duration::from_millis(1)).await;
}

fn child(test: &str, env: &[(&str, &str)]) -> (bool, String) {
    let c = common::child(test, env);
    (c.ok, c.text())
}

/// The seeds a run of `child_passes` started: a sweep's from the log its
/// start line names, one seed's from its line on stderr.
fn seeds_run(text: &str) -> Vec<u64> {
    let log = text
        .lines()
        .find(|l| l.starts_with("sim: child_passes: ") && l.contains(" a line per seed "))
        .and_then(|l| l.rsplit_once("): "))
        .map(|(_, path)| std::fs::read_to_string(path).unwrap());
    let mut seeds: Vec<u64> = text
        .lines()
        .chain(log.as_deref().unwrap_or_default().lines())
        .filter_map(|l| l.strip_prefix("sim: child_passes seed "))
        .filter(|l| l.contains(" (strategy "))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    seeds.sort_unstable();
    seeds
}

#[test]
fn environment_picks_the_seeds_shard_and_jobs() {
    // A shard of one is the whole run, with a log of its own: this
    // binary's own sweep of `child_passes` may take `seeds.log` over once
    // the child's has ended, before it is read.
    let (ok, text) = child("child_passes", &[("SIM_SHARD", "1/1")]);
    assert!(ok, "{text}");
    assert_eq!(seeds_run(&text), [0, 1, 2], "the attribute's seeds: {text}");
    let (ok, text) = child(
        "child_passes",
        &[
            ("SIM_SEEDS", "0..9"),
            ("SIM_SHARD", "2/3"),
            ("SIM_JOBS", "2"),
        ],
    );
    assert!(ok, "{text}");
    assert_eq!(
        seeds_run(&text),
        [1, 4, 7],
        "the second of three slices: {text}"
    );
    let (ok, text) = child("child_passes", &[("SIM_SEEDS", "3,7"), ("SIM_SEED", "5")]);
    assert!(ok, "{text}");
    assert_eq!(seeds_run(&text), [5], "SIM_SEED wins: {text}");
    assert!(
        text.contains("(strategy pct4"),
        "seed 5 is PCT at depth 4 in the portfolio: {text}"
    );
}

#[test]
fn malformed_settings_name_the_variable_and_the_forms() {
    let (ok, text) = child("child_passes", &[("SIM_SEEDS", "lots")]);
    assert!(!ok);
    assert!(text.contains("SIM_SEEDS=\"lots\" is malformed"), "{text}");
    assert!(text.contains("Accepted forms"), "{text}");
    let (ok, text) = child("child_passes", &[("SIM_JOBS", "0")]);
    assert!(!ok);
    assert!(text.contains("SIM_JOBS=0"), "{text}");
    let (ok, text) = child("child_passes", &[("SIM_SHARD", "4/3")]);
    assert!(!ok);
    assert!(text.contains("SIM_SHARD=\"4/3\" is out of range"), "{text}");
}

#[test]
fn swarm_dimensions_are_per_seed_independent_and_reported() {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<(u64, u64, bool, &'static str)>> = Mutex::new(Vec::new());
    let mut o = options("classes::swarm", Seeds::Range(0, 64));
    o.schedule = Some("random");
    let r = report(o, || async {
        let crashes = sim::swarm::range("crashes", 0..=3);
        let partitions = sim::swarm::flag("partitions");
        let mix = sim::swarm::pick("workload", &["reads", "writes", "mixed"]);
        SEEN.lock()
            .unwrap()
            .push((sim::seed(), crashes, partitions, mix));
        assert!(crashes < 3 || !partitions, "the planted bug needs both");
    });
    // The report prints the failing seed's configuration.
    assert!(
        r.contains("sim: swarm: crashes=3, partitions=true, workload="),
        "{r}"
    );
    let seen = SEEN.lock().unwrap().clone();
    // Every value of every dimension, zero included, is drawn somewhere.
    for c in 0..=3 {
        assert!(seen.iter().any(|s| s.1 == c), "crashes={c} never drawn");
    }
    for m in ["reads", "writes", "mixed"] {
        assert!(seen.iter().any(|s| s.3 == m), "{m} never drawn");
    }
    // The same seed draws the same configuration (the rerun of the first
    // failing seed ran it again). The runs after those two are shrinking's,
    // from changed tapes: other configurations of the same test.
    let first = seen.iter().find(|s| s.1 == 3 && s.2).unwrap().0;
    let runs: Vec<_> = seen.iter().filter(|s| s.0 == first).collect();
    assert!(runs.len() >= 2, "the failing seed ran twice");
    assert_eq!(
        (runs[0].1, runs[0].2, runs[0].3),
        (runs[1].1, runs[1].2, runs[1].3)
    );
}

/// Fails on some seeds, as its draws decide (the child of the tape tests
/// below; passes unless `SIM_CHILD_DRAWS` is set): a drawn number of tasks
/// sleep drawn times, and the run fails when the last one spawned is the
/// first to finish.
#[sim::test(seeds = 0..40)]
async fn child_fails_by_its_draws() {
    if std::env::var("SIM_CHILD_DRAWS").is_err() {
        return;
    }
    let mut rng = sim::Rng::from_seed(sim::fork_seed("tasks"));
    let n = 3 + rng.below(3);
    let (tx, mut rx) = sim_runtime::sync::mpsc::unbounded_channel();
    for i in 0..n {
        let tx = tx.clone();
        let d = rng.below(4);
        sim_runtime::spawn(async move {
            sleep(Duration::from_millis(d)).await;
            sim_runtime::task::yield_now().await;
            let _ = tx.send(i);
        });
    }
    drop(tx);
    let mut order = Vec::new();
    while let Some(i) = rx.recv().await {
        order.push(i);
    }
    assert_ne!(
        order[0],
        n - 1,
        "the last task spawned finished first: {order:?}"
    );
}

/// The line of `text` that starts with `prefix`, without it.
fn line_after<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line:\n{text}"))
}

/// The fingerprint in `reproduced when run again: yes: ... (0x...)`.
fn fingerprint_of(text: &str) -> String {
    let line = line_after(text, "sim: reproduced when run again: ");
    line.rsplit_once('(')
        .and_then(|(_, f)| f.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no fingerprint in `{line}`"))
        .to_string()
}

#[test]
fn a_failing_seed_writes_its_tape_which_replays_bit_identically() {
    let (ok, text) = child(
        "child_fails_by_its_draws",
        &[
            ("SIM_CHILD_DRAWS", "1"),
            ("SIM_JOBS", "1"),
            ("SIM_REPLAYS", "0"),
        ],
    );
    assert!(!ok, "some seed of 40 fails: {text}");
    let seeded = fingerprint_of(&text);
    let tape_line = line_after(&text, "sim: tape: ");
    let path = tape_line.split(" (").next().unwrap().to_string();
    assert!(path.ends_with(".tape"), "{tape_line}");
    assert!(
        tape_line.contains(" bytes of draws) · replay: SIM_TAPE="),
        "{tape_line}"
    );
    let file = std::fs::read(&path).unwrap();
    assert!(file.starts_with(b"sim-tape 1\ntest: "), "{path}");

    // The tape replays the seeded run: the same failure, the same
    // fingerprint, decision for decision.
    let (ok, replayed) = child(
        "child_fails_by_its_draws",
        &[
            ("SIM_CHILD_DRAWS", "1"),
            ("SIM_REPLAYS", "0"),
            ("SIM_TAPE", &path),
        ],
    );
    assert!(!ok, "{replayed}");
    assert_eq!(fingerprint_of(&replayed), seeded, "{replayed}");
    assert!(
        line_after(&replayed, "sim: tape: ").starts_with("replayed from "),
        "{replayed}"
    );
    assert!(
        replayed.contains("1 of 1 seed(s) failed"),
        "one run: {replayed}"
    );

    // Other draws are another run: the same header with every draw zero.
    let split = file.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let mut zeros = file.clone();
    zeros[split..].fill(0);
    let zeros_path = format!("{path}.zeros");
    std::fs::write(&zeros_path, &zeros).unwrap();
    let (_, other) = child(
        "child_fails_by_its_draws",
        &[
            ("SIM_CHILD_DRAWS", "1"),
            ("SIM_REPLAYS", "0"),
            ("SIM_TAPE", &zeros_path),
        ],
    );
    assert!(
        !other.contains(&seeded),
        "a tape of zeros is not the seeded run:\n{other}"
    );

    // A tape from another build, or for another test, is refused.
    let header = String::from_utf8_lossy(&file[..split]).to_string();
    let build = header.lines().find(|l| l.starts_with("build: ")).unwrap();
    let mut foreign = header
        .replace(build, "build: commit 000000000000 · rustc 0.0.0")
        .into_bytes();
    foreign.extend_from_slice(&file[split..]);
    let foreign_path = format!("{path}.foreign");
    std::fs::write(&foreign_path, &foreign).unwrap();
    let (ok, refused) = child(
        "child_fails_by_its_draws",
        &[("SIM_CHILD_DRAWS", "1"), ("SIM_TAPE", &foreign_path)],
    );
    assert!(!ok, "{refused}");
    assert!(
        refused.contains("was recorded by another build"),
        "{refused}"
    );
    assert!(
        refused.contains("recorded by: commit 000000000000"),
        "{refused}"
    );
    let (ok, refused) = child("child_passes", &[("SIM_TAPE", &path)]);
    assert!(!ok, "{refused}");
    assert!(refused.contains("was recorded by test `"), "{refused}");
}

#[test]
fn a_failing_seed_is_shrunk_and_the_report_tells_the_shrunk_story() {
    let (ok, text) = child(
        "child_fails_by_its_draws",
        &[
            ("SIM_CHILD_DRAWS", "1"),
            ("SIM_JOBS", "1"),
            ("SIM_REPLAYS", "0"),
        ],
    );
    assert!(!ok, "{text}");
    // `0 fault(s), 16 steps, 0.003000000s of virtual time → 0 fault(s),
    // 10 steps, ...`: fewer steps, and no more virtual time.
    let line = line_after(&text, "sim: shrunk: ");
    let (before, after) = line.split_once(" → ").unwrap_or_else(|| panic!("{line}"));
    let steps = |s: &str| -> u64 {
        s.split(", ")
            .nth(1)
            .unwrap()
            .strip_suffix(" steps")
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(steps(after) < steps(before), "{line}");
    assert!(
        line.contains("the story below is the shrunk run's"),
        "{line}"
    );
    assert!(
        text.contains(".shrunk.trace ("),
        "the shrunk run's trace: {text}"
    );
    assert!(
        text.contains("sim: timeline of the shrunk run: "),
        "the shrunk run's page: {text}"
    );
    // Its tape replays the shrunk run: the same assertion, as small.
    let path = line
        .split("SIM_TAPE=")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("no replay of the shrunk tape: {line}"));
    let (ok, replayed) = child(
        "child_fails_by_its_draws",
        &[
            ("SIM_CHILD_DRAWS", "1"),
            ("SIM_REPLAYS", "0"),
            ("SIM_TAPE", path),
        ],
    );
    assert!(!ok, "{replayed}");
    assert!(
        replayed.contains("the last task spawned finished first"),
        "{replayed}"
    );
    let first = line_after(&replayed, "sim: first failure — ");
    assert!(
        first.contains(&format!("· step {} ·", steps(after))),
        "the replay is the shrunk run ({after}): {first}"
    );
    // Off, the report tells the seed's story and says nothing of shrinking.
    let (_, off) = child(
        "child_fails_by_its_draws",
        &[
            ("SIM_CHILD_DRAWS", "1"),
            ("SIM_JOBS", "1"),
            ("SIM_REPLAYS", "0"),
            ("SIM_SHRINK", "off"),
        ],
    );
    assert!(!off.contains("sim: shrunk:"), "{off}");
}

/// A connect refused because its server's node has not listened yet is
/// named in the trace: which node, which port, and whether the seed's early
/// timers could have let the client's sleep end first.
#[test]
fn a_refused_connect_names_the_node_that_has_not_listened_yet() {
    let r = report(options("classes::refused", Seeds::One(6)), || async {
        sim::node("server").start(|| async {
            sleep(Duration::from_millis(50)).await;
            let l = sim_runtime::net::TcpListener::bind("0.0.0.0:7000")
                .await
                .unwrap();
            let _ = l.accept().await;
        });
        sim_runtime::net::TcpStream::connect("server:7000")
            .await
            .unwrap();
    });
    assert!(r.contains("connect to "), "{r}");
    assert!(
        r.contains(":7000 refused: node 'server' has no listener on port 7000 yet"),
        "{r}"
    );
}

/// A forbidden operation on seed 1 (a real socket through std::net).
#[sim::test(seeds = 1..2)]
async fn child_opens_a_real_socket() {
    if std::env::var("SIM_CHILD_FAIL").is_ok() {
        let _ = std::net::TcpStream::connect("127.0.0.1:9");
    }
    sleep(Duration::from_millis(1)).await;
}

/// The replays' verdict compares class and fingerprint whole: a class whose
/// name has a space ("forbidden operation") replays exactly when the fresh
/// processes end as the sweep did.
#[test]
fn a_forbidden_operation_replays_exactly() {
    let (ok, text) = child("child_opens_a_real_socket", &[("SIM_CHILD_FAIL", "1")]);
    assert!(!ok, "{text}");
    assert!(text.contains("class: forbidden operation"), "{text}");
    assert!(
        text.contains("replays in fresh processes: replays exactly (3 of 3"),
        "{text}"
    );
}
