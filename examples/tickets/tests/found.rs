//! The planted bug (numbers answered before they are synced) is found by
//! the SDK's `assert_always!` in the scenario, reproduced and shrunk, and
//! the report names the assertion and the command that replays it.
#![cfg(sim_graph)]

mod scenario;

use sim::__private::{run, Options, Seeds};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn a_number_given_twice_after_a_crash_is_found() {
    let opts = Options {
        name: "unsynced_numbers",
        file: "tests/sweep.rs",
        package: "tickets",
        crate_name: "sweep",
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds: Seeds::Range(0, 200),
        ..Options::default()
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        run(opts, || {
            scenario::scenario(tickets::Durability::AnswerUnsynced)
        })
    }));
    let report = match outcome {
        Ok(()) => panic!("seeds 0..200 did not find a number given twice"),
        Err(p) => p
            .downcast::<String>()
            .map(|s| *s)
            .unwrap_or_else(|_| "a non-string panic".into()),
    };
    assert!(report.contains("class: assertion"), "{report}");
    assert!(
        report
            .contains("antithesis_sdk Always assertion \"no number is given twice\" did not hold"),
        "{report}"
    );
    assert!(
        report.contains("reproduced when run again: yes"),
        "{report}"
    );
    assert!(report.contains("replay: SIM_SEED="), "{report}");
    assert!(
        report.contains("--test sweep -- unsynced_numbers --exact"),
        "{report}"
    );
}
