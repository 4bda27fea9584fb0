//! The key-value store under simulation: partitions and a crash of the
//! primary at seeded moments, then a failover to a backup.
//!
//! - The fixed store's history is linearizable on every seed: every
//!   acknowledged write is seen by the reads after it.
//! - The planted bug (acknowledge before replicating) is found within the
//!   same seeds as a linearizability violation of a few operations, and
//!   the harness's rerun of the failing seed reproduces it with the same
//!   fingerprint.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

// The scenario drives the simulation (`sim::node`, `sim::net`, …), which
// exists only under `--cfg simulation`.
#[cfg(simulation)]
mod scenario;

use kv::Replication;

/// Seeds of both sweeps. The planted bug is found well within them; the
/// bound is the regression guard.
#[sim::test(seeds = 0..200)]
async fn acked_writes_survive_failover() {
    scenario::acked_writes_survive_failover(Replication::AckAfterReplicate).await
}

/// The sweep of `tests/demo.rs` (the same scenario with the planted bug),
/// run here through the harness's runner, which panics with its report.
/// The options name the demo's test, so the report's replay line is the
/// command that replays the failure (`cargo xtask demo` runs it).
#[cfg(simulation)]
#[test]
fn planted_bug_is_found_and_its_seed_replays() {
    use sim::__private::{run, Options, Seeds};
    let options = Options {
        name: "demo::acked_writes_survive_failover",
        file: "tests/demo.rs",
        package: env!("CARGO_PKG_NAME"),
        crate_name: "demo",
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds: Seeds::Range(0, 200),
        ..Options::default()
    };
    let sweep = std::panic::catch_unwind(|| {
        run(options, || {
            scenario::acked_writes_survive_failover(Replication::AckBeforeReplicate)
        })
    });
    let report = match sweep {
        Ok(()) => panic!("the planted bug was not found in seeds 0..200"),
        Err(p) => match p.downcast::<String>() {
            Ok(s) => *s,
            Err(_) => panic!("the sweep failed without a report"),
        },
    };
    let first = report.lines().next().unwrap_or_default();
    assert!(
        first.contains("seed(s) failed:"),
        "the report names the failing seeds:\n{report}"
    );
    assert!(
        !first.contains("200 of 200"),
        "only some fault plans lose writes:\n{report}"
    );
    assert!(
        report.contains("sim: class: assertion"),
        "the failure is the test's assertion:\n{report}"
    );
    assert!(
        report.contains("operations is not linearizable"),
        "the assertion is the linearizability check:\n{report}"
    );
    assert!(
        report.contains("minimal: treating any one of them as a maybe"),
        "the violation is shrunk to a 1-minimal core:\n{report}"
    );
    // The smallest story: an acknowledged write and the read that missed
    // it, perhaps with the write it saw instead.
    let core: usize = report
        .split("not linearizable (key ")
        .nth(1)
        .and_then(|r| r.split("): ").nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the violation names its core:\n{report}"));
    assert!(core <= 3, "a core of {core} operations:\n{report}");
    assert!(
        report.contains("cannot be placed"),
        "the timeline marks the read that cannot be placed:\n{report}"
    );
    assert!(
        report.contains("sim: reproduced when run again: yes"),
        "the failing seed replays:\n{report}"
    );
    assert!(
        report.contains("cargo test -p kv --test demo -- acked_writes_survive_failover --exact"),
        "the report gives the replay command:\n{report}"
    );
    assert!(
        report.contains("sim: replay: SIM_SEED="),
        "the replay command names the seed:\n{report}"
    );
}
