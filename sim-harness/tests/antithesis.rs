//! antithesis_sdk's macros, unmodified, inside a simulation: a failed
//! `assert_always!` fails every seed it fails in (the SDK reports a site's
//! first failure once per process; the runtime gives each run and each node
//! its own trackers), a `assert_sometimes!` that never held is in the
//! coverage report, a site counts once per node, the SDK's randomness is
//! the seed's, and its numeric guidance steers an exploration.
#![cfg(simulation)]

use sim::__private::{run, Options, Seeds};
use sim_runtime::time::{sleep, Duration};
use std::collections::BTreeMap;
use std::sync::Mutex;

mod common;
use common::{child, report};

fn options(name: &'static str, seeds: Seeds) -> Options {
    common::options(name, file!(), seeds)
}

#[test]
fn a_failed_assert_always_fails_every_seed_it_fails_in() {
    let r = report(
        options("antithesis::always", Seeds::Range(0, 9)),
        || async {
            sleep(Duration::from_millis(3)).await;
            let seed = sim::seed();
            antithesis_sdk::assert_always!(
                seed % 3 != 1,
                "the seed is not one more than a multiple of three",
                &serde_json::json!({ "seed": seed })
            );
        },
    );
    // Without a fresh tracker per run, only the first failing seed of the
    // process would fail, and its rerun would pass.
    assert!(r.contains("3 of 9 seed(s) failed: 1, 4, 7"), "{r}");
    assert!(r.contains("class: assertion"), "{r}");
    assert!(
        r.contains(
            "antithesis_sdk Always assertion \"the seed is not one more than a multiple of three\" \
             did not hold at sim-harness/tests/antithesis.rs:"
        ),
        "{r}"
    );
    assert!(r.contains("(details: {\"seed\":1})"), "{r}");
    assert!(r.contains("reproduced when run again: yes"), "{r}");
}

#[test]
fn a_reached_assert_unreachable_fails_the_seed() {
    let r = report(
        options("antithesis::unreachable", Seeds::Range(0, 4)),
        || async {
            if sim::seed() == 2 {
                antithesis_sdk::assert_unreachable!("seed two");
            }
        },
    );
    assert!(r.contains("1 of 4 seed(s) failed: 2"), "{r}");
    assert!(
        r.contains("antithesis_sdk assert_unreachable!(\"seed two\") was reached"),
        "{r}"
    );
}

#[test]
fn a_numeric_assertion_fails_as_its_comparison_does() {
    let r = report(
        options("antithesis::numeric", Seeds::Range(0, 6)),
        || async {
            let queued = sim::seed() * 3;
            antithesis_sdk::assert_always_less_than!(queued, 10u64, "the queue stays short");
        },
    );
    assert!(r.contains("2 of 6 seed(s) failed: 4, 5"), "{r}");
    assert!(r.contains("\"the queue stays short\" did not hold"), "{r}");
}

#[test]
fn a_sometimes_that_never_held_is_in_the_coverage_report() {
    let mut opts = options("antithesis::never", Seeds::Range(0, 4));
    opts.coverage = true;
    let r = report(opts, || async {
        antithesis_sdk::assert_sometimes!(sim::seed() > 100, "a seed above one hundred");
    });
    assert!(
        r.contains("\"a seed above one hundred\" at sim-harness/tests/antithesis.rs:"),
        "{r}"
    );
    assert!(r.contains("(never held)"), "{r}");
}

#[test]
fn the_sdks_randomness_is_the_seeds() {
    static DRAWN: Mutex<BTreeMap<(u32, u64), u64>> = Mutex::new(BTreeMap::new());
    for round in 0..2u32 {
        run(
            options("antithesis::random", Seeds::Range(0, 4)),
            move || async move {
                let v = antithesis_sdk::random::get_random();
                DRAWN.lock().unwrap().insert((round, sim::seed()), v);
            },
        );
    }
    let d = DRAWN.lock().unwrap();
    for seed in 0..4 {
        assert_eq!(d[&(0, seed)], d[&(1, seed)], "seed {seed} drew differently");
    }
    let mut firsts: Vec<u64> = (0..4).map(|s| d[&(0, s)]).collect();
    firsts.dedup();
    assert_eq!(firsts.len(), 4, "seeds drew the same: {firsts:?}");
}

/// Two nodes reach one site: it counts twice in the run, once per node,
/// as on the platform, where each node is a process with its own tracker.
#[sim::test(seeds = 0..3)]
async fn two_nodes_reach_one_site() {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    let started = std::sync::Arc::new(AtomicU32::new(0));
    for name in ["a", "b"] {
        let started = started.clone();
        sim::node(name).start(move || {
            let started = started.clone();
            async move {
                antithesis_sdk::assert_reachable!("a node started");
                started.fetch_add(1, SeqCst);
                sleep(Duration::from_secs(3600)).await;
            }
        });
    }
    while started.load(SeqCst) < 2 {
        sleep(Duration::from_millis(1)).await;
    }
}

#[test]
fn a_site_counts_once_per_node() {
    let dir = std::env::temp_dir().join(format!("sim-antithesis-results-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let c = child(
        "two_nodes_reach_one_site",
        &[("SIM_RESULTS", dir.to_str().unwrap())],
    );
    assert!(c.ok, "{}", c.text());
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a results file");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut seeds = 0;
    for line in text.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let site = v["coverage"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["site"] == "a node started")
            .unwrap_or_else(|| panic!("the site is in the seed's coverage: {line}"));
        assert_eq!(site["reached"], 2, "{line}");
        seeds += 1;
    }
    assert_eq!(seeds, 3, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bug five rare decisions deep (each of 10 steps moves the stage on
/// with p = 1/16; about one seed in 4,000 gets there), annotated only with
/// the SDK: numeric guidance says how close the run got.
async fn five_rare_steps_deep() {
    let mut stage = 0u32;
    for i in 0..10 {
        sleep(Duration::from_millis(1)).await;
        if sim::fork_seed(&format!("step {i}")) % 16 == 0 {
            stage += 1;
        }
        antithesis_sdk::assert_sometimes_greater_than!(stage, 4u32, "five stages");
        antithesis_sdk::assert_always!(stage < 5, "fewer than five stages");
    }
}

/// Explores when `SIM_CHILD_EXPLORE` is set; passes at once otherwise.
#[sim::test(explore = 300)]
async fn child_explores() {
    if std::env::var("SIM_CHILD_EXPLORE").is_ok() {
        five_rare_steps_deep().await;
    }
}

/// The same 300 runs as seeds do not get five deep; an exploration that
/// has only the SDK's guidance to go on does (each new best distance is a
/// moment to branch from).
#[test]
fn the_sdks_numeric_guidance_steers_an_exploration() {
    let seeds = child(
        "child_explores",
        &[
            ("SIM_CHILD_EXPLORE", "1"),
            ("SIM_SEEDS", "0..300"),
            ("SIM_EXPLORE", "0"),
        ],
    );
    assert!(
        seeds.ok,
        "300 seeds do not get five deep:\n{}",
        seeds.text()
    );
    let explored = child(
        "child_explores",
        &[("SIM_CHILD_EXPLORE", "1"), ("SIM_JOBS", "1")],
    );
    let text = explored.text();
    assert!(
        !explored.ok,
        "the exploration finds it within 300 runs:\n{text}"
    );
    assert!(
        text.contains("\"fewer than five stages\" did not hold"),
        "{text}"
    );
    assert!(
        text.contains("sim: child_explores: exploration: "),
        "{text}"
    );
}
