//! Environment-driven behaviour of `#[tokio::test]`, checked by running
//! this test binary again as a child process with the variables set.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

fn child(test: &str, envs: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    for var in [
        "SIM_SEED",
        "SIM_SEEDS",
        "SIM_CHECK_DETERMINISM",
        "SIM_SCHEDULE",
        "SIM_EARLY_TIMERS",
        "SIM_YIELD_AHEAD",
        "SIM_THREAD_PER_SEED",
        "RUST_BACKTRACE",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[sim_runtime::test(crate = "sim_runtime")]
async fn child_sleeps_a_seeded_time() {
    let ms = sim_runtime::sim::fork_seed("child") % 50;
    sim_runtime::time::sleep(std::time::Duration::from_millis(ms)).await;
}

/// A body that is *not* a function of the seed: it yields as many times as
/// a process-wide counter says, so a second run differs.
#[sim_runtime::test(crate = "sim_runtime")]
async fn child_nondeterministic() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let n = RUNS.fetch_add(1, Ordering::SeqCst);
    for _ in 0..(3 + n) {
        sim_runtime::task::yield_now().await;
    }
}

#[sim_runtime::test(crate = "sim_runtime")]
async fn child_fails_on_seed_3() {
    assert_ne!(sim_runtime::sim::seed(), 3, "seed 3 is the unlucky one");
}

thread_local! {
    static TOUCHED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts its own runs in a thread-local and says on which OS thread.
#[sim_runtime::test(crate = "sim_runtime")]
async fn child_touches_a_thread_local() {
    let n = TOUCHED.with(|t| {
        t.set(t.get() + 1);
        t.get()
    });
    println!("touched {n} on {:?}", std::thread::current().id());
}

/// A `#[tokio::test]`'s seeds run on one worker whose thread-locals are made
/// new around each run: every seed sees the thread-local fresh, on the same
/// OS thread. `SIM_THREAD_PER_SEED=1` gives each seed a thread of its own;
/// a malformed value is refused.
#[test]
fn a_tokio_tests_seeds_share_a_worker_and_each_sees_its_thread_locals_fresh() {
    let threads = |text: &str| -> Vec<String> {
        text.lines()
            // libtest's "test NAME ... " may open the first line.
            .filter_map(|l| l.split_once("touched ").map(|(_, rest)| rest))
            .map(|rest| {
                let (n, on) = rest.split_once(" on ").expect("touched N on ID");
                assert_eq!(n, "1", "a seed saw what the one before left:\n{text}");
                on.to_string()
            })
            .collect()
    };
    let (ok, text) = child(
        "env::child_touches_a_thread_local",
        &[("SIM_SEEDS", "0..4")],
    );
    assert!(ok, "{text}");
    let on = threads(&text);
    assert_eq!(on.len(), 4, "{text}");
    assert!(on.iter().all(|t| *t == on[0]), "one worker: {on:?}");
    let (ok, text) = child(
        "env::child_touches_a_thread_local",
        &[("SIM_SEEDS", "0..4"), ("SIM_THREAD_PER_SEED", "1")],
    );
    assert!(ok, "{text}");
    let mut on = threads(&text);
    assert_eq!(on.len(), 4, "{text}");
    on.sort();
    on.dedup();
    assert_eq!(on.len(), 4, "a thread per seed: {on:?}");
    let (ok, text) = child(
        "env::child_touches_a_thread_local",
        &[("SIM_THREAD_PER_SEED", "yes")],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("SIM_THREAD_PER_SEED=\"yes\" is malformed. Accepted forms: 1"),
        "{text}"
    );
}

#[test]
fn sim_seeds_runs_every_seed_with_a_replay_line() {
    let (ok, text) = child("env::child_sleeps_a_seeded_time", &[("SIM_SEEDS", "0..5")]);
    assert!(ok, "{text}");
    for s in 0..5 {
        assert!(
            text.contains(&format!("seed {s} · replay: SIM_SEED={s} ")),
            "{text}"
        );
    }
    assert!(
        text.contains("--test it -- env::child_sleeps_a_seeded_time --exact"),
        "{text}"
    );
}

/// A replay line carries the variables that steer the run: without
/// `SIM_SCHEDULE=pct3` it would replay another strategy's run.
#[test]
fn the_replay_line_carries_the_steering_variables() {
    let (ok, text) = child(
        "env::child_fails_on_seed_3",
        &[
            ("SIM_SEEDS", "3"),
            ("SIM_SCHEDULE", "pct3"),
            ("SIM_EARLY_TIMERS", "off"),
        ],
    );
    assert!(!ok);
    assert!(
        text.contains(
            "sim: replay with: SIM_SEED=3 SIM_SCHEDULE=pct3 SIM_EARLY_TIMERS=off RUSTFLAGS="
        ),
        "{text}"
    );
    let (_, plain) = child("env::child_fails_on_seed_3", &[("SIM_SEEDS", "3")]);
    assert!(
        plain.contains("sim: replay with: SIM_SEED=3 RUSTFLAGS="),
        "{plain}"
    );
}

#[test]
fn sweep_stops_at_the_first_failing_seed_and_names_it() {
    let (ok, text) = child("env::child_fails_on_seed_3", &[("SIM_SEEDS", "0..10")]);
    assert!(!ok);
    assert!(text.contains("seed 3 is the unlucky one"), "{text}");
    assert!(text.contains("sim: replay with: SIM_SEED=3 "), "{text}");
    assert!(
        !text.contains("seed 4 · replay"),
        "the sweep went on after the failure: {text}"
    );
}

#[test]
fn sim_seed_wins_over_sim_seeds() {
    let (ok, text) = child(
        "env::child_fails_on_seed_3",
        &[("SIM_SEEDS", "0..10"), ("SIM_SEED", "7")],
    );
    assert!(ok, "{text}");
    assert!(text.contains("seed 7 · replay"), "{text}");
}

#[test]
fn determinism_check_passes_a_deterministic_body() {
    let (ok, text) = child(
        "env::child_sleeps_a_seeded_time",
        &[("SIM_SEEDS", "0..3"), ("SIM_CHECK_DETERMINISM", "1")],
    );
    assert!(ok, "{text}");
}

#[test]
fn determinism_check_names_the_first_divergent_decision() {
    let (ok, text) = child(
        "env::child_nondeterministic",
        &[("SIM_CHECK_DETERMINISM", "1")],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("nondeterminism: seed 0 made different decisions"),
        "{text}"
    );
    assert!(text.contains("first difference at decision #"), "{text}");
    assert!(
        text.contains("first run:") && text.contains("second run:"),
        "{text}"
    );
}

#[test]
fn malformed_variables_are_clear_errors() {
    let (ok, text) = child("env::child_sleeps_a_seeded_time", &[("SIM_SEEDS", "five")]);
    assert!(!ok);
    assert!(text.contains("SIM_SEEDS=\"five\" is malformed"), "{text}");
    assert!(text.contains("accepted forms"), "{text}");
    let (ok, text) = child("env::child_sleeps_a_seeded_time", &[("SIM_SEED", "-1")]);
    assert!(!ok);
    assert!(text.contains("SIM_SEED=\"-1\" is not a seed"), "{text}");
}

/// A plain test that builds its own runtime, as many crates' tests do.
#[test]
fn child_builds_its_own_runtime() {
    let rt = sim_runtime::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        sim_runtime::time::sleep(std::time::Duration::from_millis(1)).await;
    });
}

/// Such a runtime is one simulation: several seeds in SIM_SEEDS are refused
/// (never one seed run silently), one seed is taken, SIM_SEED wins.
#[test]
fn an_own_runtime_refuses_several_seeds_and_takes_one() {
    let (ok, text) = child(
        "env::child_builds_its_own_runtime",
        &[("SIM_SEEDS", "0..30")],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("SIM_SEEDS names 30 seeds, but this code builds its own runtime"),
        "{text}"
    );
    assert!(text.contains("SIM_SEED=$s cargo sim test"), "{text}");
    let (ok, text) = child("env::child_builds_its_own_runtime", &[("SIM_SEEDS", "7")]);
    assert!(ok, "{text}");
    assert!(text.contains("sim: runtime seed 7 "), "{text}");
    let (ok, text) = child(
        "env::child_builds_its_own_runtime",
        &[("SIM_SEEDS", "0..30"), ("SIM_SEED", "4")],
    );
    assert!(ok, "{text}");
    assert!(text.contains("sim: runtime seed 4 "), "{text}");
}

#[sim_runtime::test(crate = "sim_runtime")]
async fn child_blocks_its_thread() {
    if std::env::var("SIM_HANG_TIMEOUT").is_ok() {
        // A spin loop: no hand-off the simulation could take over.
        let never = std::sync::atomic::AtomicBool::new(false);
        while !never.load(std::sync::atomic::Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    }
}

#[test]
fn a_task_blocking_its_thread_is_reported_as_a_hang() {
    let (ok, text) = child(
        "env::child_blocks_its_thread",
        &[("SIM_HANG_TIMEOUT", "2s")],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("sim: hang (inconclusive): the main future on node #0"),
        "{text}"
    );
    assert!(text.contains("blocked its OS thread"), "{text}");
}

#[sim_runtime::test(crate = "sim_runtime")]
async fn child_waits_on_a_std_channel_forever() {
    if std::env::var("SIM_CHILD").is_ok() {
        let (_tx, rx) = std::sync::mpsc::channel::<()>();
        let _ = rx.recv();
    }
}

/// A task that blocks the executor's thread on a std channel nobody will
/// ever send on is a deadlock (the futex wait is the simulation's), not a
/// hang: the report says so and the process fails.
#[test]
fn a_task_blocked_forever_on_a_std_channel_is_a_deadlock() {
    let (ok, text) = child(
        "env::child_waits_on_a_std_channel_forever",
        &[("SIM_CHILD", "1")],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("sim: deadlock: a task blocked the executor's thread in user code"),
        "{text}"
    );
}

#[sim_runtime::test(crate = "sim_runtime")]
async fn child_spins_in_a_thread() {
    if std::env::var("SIM_HANG_TIMEOUT").is_ok() {
        let t = std::thread::spawn(|| {
            let never = std::sync::atomic::AtomicBool::new(false);
            while !never.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let _ = sim_runtime::task::spawn_blocking(move || t.join()).await;
    }
}

/// A simulated thread that spins without a hand-off point is reported as
/// such: which thread, where it was started, and its stack.
#[test]
fn a_thread_spinning_without_a_hand_off_is_named_in_the_hang() {
    let (ok, text) = child(
        "env::child_spins_in_a_thread",
        &[("SIM_HANG_TIMEOUT", "2s")],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("sim: hang (inconclusive): simulated OS thread 1"),
        "{text}"
    );
    assert!(text.contains("without reaching a hand-off point"), "{text}");
    assert!(
        text.contains("started at ") && text.contains("tests/it/env.rs:"),
        "{text}"
    );
    assert!(text.contains("its stack now"), "{text}");
    assert!(text.contains("child_spins_in_a_thread"), "{text}");
}
