//! Sweeps across machines: n shards of a run, each with `SIM_SHARD=k/n`
//! and `SIM_RESULTS=<dir>`, merged by `cargo xtask merge-results`, give
//! exactly the unsharded run's results: the same record for every seed
//! (outcome, class, message, fingerprint, steps, virtual time, replay,
//! site tallies), the same failing seeds, the same coverage.
//!
//! A binary of its own: it runs itself again as child processes (each
//! shard is a process, as on separate machines), and its catalog of
//! sometimes-sites is the binary's. The merge is xtask's own code
//! (`xtask/src/merge/model.rs`, std only), included here so the test
//! checks the command's logic without building xtask inside a test.
#![cfg(simulation)]

mod common;
#[allow(dead_code)]
#[path = "../../xtask/src/json.rs"]
mod json;
#[allow(dead_code)]
#[path = "../../xtask/src/merge/model.rs"]
mod model;

use model::{add_file, check, Merged, TestMerge};
use sim_runtime::time::{sleep, Duration};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SEEDS: u64 = 24;

/// The planted bug: seeds 1 mod 4 fail (only when the parent asks, so a
/// plain `cargo test` of this binary passes).
fn planted(seed: u64) -> bool {
    seed % 4 == 1
}

/// The child of the tests below: two tasks race (the schedule decides who
/// wins), a site that holds on some seeds, one that never does, and the
/// planted failure.
#[sim::test(seeds = 0..24)]
async fn child_sweep() {
    let winner = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for id in 1..=2u64 {
        let winner = winner.clone();
        tasks.push(sim_runtime::spawn(async move {
            sleep(Duration::from_millis(sim::seed() % 3)).await;
            let _ = winner.compare_exchange(0, id, Ordering::SeqCst, Ordering::SeqCst);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    sim::sometimes!(winner.load(Ordering::SeqCst) == 2, "the second task wins");
    sim::sometimes!(sim::seed() > 1_000, "a seed above a thousand");
    if std::env::var("SHARDS_PLANT").is_ok() {
        assert!(!planted(sim::seed()), "planted: seeds 1 mod 4 fail");
    }
    if std::env::var("SHARDS_LEAVE").is_ok() {
        sim_runtime::spawn(std::future::pending::<()>());
    }
    if std::env::var("SHARDS_ABORT").is_ok_and(|s| s == sim::seed().to_string()) {
        std::process::abort();
    }
}

/// Runs the child with `env`; whether it passed, and its output.
fn child(env: &[(&str, &str)]) -> (bool, String) {
    let mut env = env.to_vec();
    env.insert(0, ("SHARDS_PLANT", "1"));
    let c = common::child("child_sweep", &env);
    (c.ok, c.text())
}

/// A fresh directory under cargo's temporary directory for this target.
fn fresh(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("shards")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The files of `dir` with extension `ext`, in name order.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    v.sort();
    v
}

/// The merge of every JSON-lines file in `dir` (as merge-results does it).
fn merge(dir: &Path) -> Merged {
    let mut m = Merged::default();
    for f in files(dir, ".jsonl") {
        let text = std::fs::read_to_string(&f).unwrap();
        add_file(&mut m, &f.display().to_string(), &text).unwrap();
    }
    check(&mut m);
    m
}

fn only(m: &Merged) -> &TestMerge {
    assert_eq!(m.tests.len(), 1, "one test: {:?}", m.tests.keys());
    m.tests.values().next().unwrap()
}

#[test]
fn three_shards_merged_equal_the_unsharded_run() {
    let whole_dir = fresh("whole");
    let parts_dir = fresh("parts");
    let (ok, text) = child(&[("SIM_RESULTS", whole_dir.to_str().unwrap())]);
    assert!(!ok, "the planted seeds fail the unsharded run: {text}");
    for k in 1..=3 {
        // Each shard with its own job count: results never depend on it.
        let shard = format!("{k}/3");
        let jobs = k.to_string();
        let (ok, text) = child(&[
            ("SIM_RESULTS", parts_dir.to_str().unwrap()),
            ("SIM_SHARD", &shard),
            ("SIM_JOBS", &jobs),
        ]);
        assert!(!ok, "every shard has a planted seed: {text}");
    }
    let names: Vec<String> = files(&parts_dir, "")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "sim-harness.shards.child_sweep.shard-1-of-3.jsonl",
            "sim-harness.shards.child_sweep.shard-1-of-3.junit.xml",
            "sim-harness.shards.child_sweep.shard-2-of-3.jsonl",
            "sim-harness.shards.child_sweep.shard-2-of-3.junit.xml",
            "sim-harness.shards.child_sweep.shard-3-of-3.jsonl",
            "sim-harness.shards.child_sweep.shard-3-of-3.junit.xml",
        ]
    );

    let (whole, parts) = (merge(&whole_dir), merge(&parts_dir));
    let (w, p) = (only(&whole), only(&parts));
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    assert_eq!(w.n, Some(1));
    assert_eq!(p.n, Some(3));
    assert_eq!(
        whole.tests.keys().collect::<Vec<_>>(),
        parts.tests.keys().collect::<Vec<_>>()
    );
    // Every seed's record, whole: the same seeds, outcomes, fingerprints,
    // steps, virtual times, replay commands and site tallies.
    assert_eq!(
        w.seeds.keys().copied().collect::<Vec<_>>(),
        (0..SEEDS).collect::<Vec<_>>()
    );
    assert_eq!(w.seeds, p.seeds);
    let planted_seeds: Vec<u64> = (0..SEEDS).filter(|&s| planted(s)).collect();
    assert_eq!(w.failing(), planted_seeds);
    assert_eq!(p.failing(), planted_seeds);
    // Each shard ran exactly the seeds SIM_SHARD gives it.
    for (seed, k) in &p.seed_shard {
        assert_eq!(*k, seed % 3 + 1, "seed {seed}");
    }
    // Coverage: the same tallies per site, the same sites never covered.
    assert_eq!(
        w.sites.keys().collect::<Vec<_>>(),
        p.sites.keys().collect::<Vec<_>>()
    );
    for (site, c) in &w.sites {
        let q = &p.sites[site];
        assert_eq!(
            (c.reached, c.held, c.seeds_held),
            (q.reached, q.held, q.seeds_held),
            "{site:?}"
        );
    }
    let missed = |t: &TestMerge| -> Vec<String> {
        t.sites
            .iter()
            .filter(|((.., kind), c)| c.missed(kind).is_some())
            .map(|((_, _, name, _), _)| name.clone())
            .collect()
    };
    assert_eq!(missed(w), ["a seed above a thousand"]);
    assert_eq!(missed(p), missed(w));
    let second = p
        .sites
        .iter()
        .find(|((_, _, name, _), _)| name == "the second task wins")
        .map(|(_, c)| c)
        .expect("the site is in the catalog");
    assert!(second.held > 0 && second.held < SEEDS, "{second:?}");
    // The report names the first failure and its replay, which replays
    // that seed alone (no shard in it).
    let text = model::render(&parts);
    assert!(
        text.contains("FAILED: 6 seed(s): 1, 5, 9, 13, 17, 21"),
        "{text}"
    );
    assert!(text.contains("first failure: seed 1 (shard 2/3)"), "{text}");
    let replay = p.seeds[&1].get("replay").as_str().unwrap();
    assert!(replay.starts_with("SIM_SEED=1 "), "{replay}");
    assert!(!replay.contains("SIM_SHARD"), "{replay}");
    assert!(text.contains(&format!("replay: {replay}")), "{text}");
    assert!(!parts.ok());

    // JUnit: per shard, one case for the test and one per failing seed.
    let xml = std::fs::read_to_string(
        parts_dir.join("sim-harness.shards.child_sweep.shard-2-of-3.junit.xml"),
    )
    .unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    // Shard 2/3 runs 1, 4, 7, …, 22: seeds 1 and 13 are planted.
    assert_eq!(xml.matches("<testcase ").count(), 1 + 2, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1 + 2, "{xml}");
    assert!(xml.contains("name=\"child_sweep seed 13\""), "{xml}");
    assert!(
        xml.contains("2 of 8 seed(s) failed; first: seed 1 (assertion)"),
        "{xml}"
    );

    // A shard left out is named, with the variable to rerun it.
    std::fs::remove_file(parts_dir.join("sim-harness.shards.child_sweep.shard-3-of-3.jsonl"))
        .unwrap();
    let gap = merge(&parts_dir);
    let problems = &only(&gap).problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("8 planned seed(s) never ran: 2, 5, 8")
            && problems[0].contains("run it with SIM_SHARD=3/3"),
        "{problems:?}"
    );
}

#[test]
fn results_directory_must_be_a_directory() {
    let dir = fresh("not-a-dir");
    let file = dir.join("file");
    std::fs::write(&file, "").unwrap();
    let (ok, text) = child(&[("SIM_RESULTS", file.to_str().unwrap())]);
    assert!(!ok);
    assert!(text.contains("names a file, not a directory"), "{text}");
    assert!(
        text.contains("e.g. SIM_RESULTS=target/sim-results"),
        "{text}"
    );
}

/// A sweep longer than `SIM_SEEDS_PER_PROCESS` runs its seeds in batches,
/// each in a fresh process, and concludes exactly as the sweep in one
/// process does: the same record for every seed, the same failing seeds,
/// the same coverage, the same report head.
#[test]
fn a_sweep_in_batches_of_fresh_processes_equals_the_sweep_in_one() {
    let one_dir = fresh("one-process");
    let batched_dir = fresh("batched");
    // Each seed leaves a task running: the warning is the sweep's, once.
    let (ok, one_text) = child(&[
        ("SIM_RESULTS", one_dir.to_str().unwrap()),
        ("SIM_SEEDS_PER_PROCESS", "0"),
        ("SHARDS_LEAVE", "1"),
    ]);
    assert!(!ok, "{one_text}");
    assert!(!one_text.contains("to a process"), "{one_text}");
    let (ok, text) = child(&[
        ("SIM_RESULTS", batched_dir.to_str().unwrap()),
        ("SIM_SEEDS_PER_PROCESS", "5"),
        ("SHARDS_LEAVE", "1"),
    ]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("sim: child_sweep: 24 seeds, 5 to a process (SIM_SEEDS_PER_PROCESS)"),
        "{text}"
    );
    // Five batches, each a sweep of its own in its own process.
    for batch in [
        "5 seeds (0..5)",
        "5 seeds (5..10)",
        "5 seeds (15..20)",
        "4 seeds (20..24)",
    ] {
        assert!(
            text.contains(&format!("sim: child_sweep: {batch},")),
            "{batch}: {text}"
        );
    }
    let (one, batched) = (merge(&one_dir), merge(&batched_dir));
    let (o, b) = (only(&one), only(&batched));
    assert!(b.problems.is_empty(), "{:?}", b.problems);
    assert_eq!(o.seeds, b.seeds);
    let planted_seeds: Vec<u64> = (0..SEEDS).filter(|&s| planted(s)).collect();
    assert_eq!(b.failing(), planted_seeds);
    for (site, c) in &o.sites {
        let q = &b.sites[site];
        assert_eq!((c.held, c.seeds_held), (q.held, q.seeds_held), "{site:?}");
    }
    let head = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| {
                l.starts_with("sim: child_sweep: 6 of") || l.starts_with("sim: first failure")
            })
            .map(str::to_string)
            .collect()
    };
    assert_eq!(head(&one_text).len(), 2, "{one_text}");
    assert_eq!(head(&text), head(&one_text));
    let warned = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains("the test body returned with tasks still running"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(warned(&text).len(), 1, "{text}");
    // The planted failures end before their task is spawned.
    assert!(warned(&text)[0].contains("in 18 of 24 seed(s)"), "{text}");
    assert_eq!(warned(&text), warned(&one_text));
}

/// A batch whose process dies mid-way fails the sweep, naming the seed it
/// never finished and how to run it alone.
#[test]
fn a_batch_that_crashes_names_its_unfinished_seed() {
    let (ok, text) = child(&[
        ("SIM_SEEDS_PER_PROCESS", "10"),
        ("SHARDS_ABORT", "14"),
        ("SIM_JOBS", "1"),
    ]);
    assert!(!ok);
    assert!(
        text.contains("the process that ran seeds 10..=19 ended (signal: 6 (SIGABRT))")
            && text.contains("with seed(s) 14, 15, 16, 17, 18, … unfinished")
            && text.contains("Run it alone: SIM_SEED=14 "),
        "{text}"
    );
}
