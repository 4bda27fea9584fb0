//! The planted bug is found by the portfolio, reproduced, shrunk, and its
//! report names the command that replays it.
#![cfg(sim_graph)]

mod scenario;

use sim::__private::{run, Options, Seeds};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn a_retried_commit_that_doubles_a_record_is_found_and_shrunk() {
    let opts = Options {
        name: "buggy_log",
        file: "tests/sweep.rs",
        package: "s3-log",
        crate_name: "sweep",
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds: Seeds::Range(0, 200),
        ..Options::default()
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        run(opts, || scenario::scenario(s3_log::Variant::Buggy))
    }));
    let report = match outcome {
        Ok(()) => panic!("the portfolio did not find the doubled commit in seeds 0..200"),
        Err(p) => p
            .downcast::<String>()
            .map(|s| *s)
            .unwrap_or_else(|_| "a non-string panic".into()),
    };
    eprintln!("{report}");
    assert!(report.contains("is in the log twice"), "{report}");
    assert!(
        report.contains(
            "sim: reproduced when run again: yes: the same failure with the same fingerprint"
        ),
        "{report}"
    );
    assert!(report.contains("sim: shrunk: "), "{report}");
    assert!(
        report.contains(" test -p s3-log --test sweep -- buggy_log --exact"),
        "{report}"
    );
    // The failing seed's trace tells which requests met which S3 fault.
    let tape = report
        .lines()
        .find_map(|l| l.strip_prefix("sim: tape: "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("no tape line in the report:\n{report}"));
    let trace = std::fs::read_to_string(tape.replace(".tape", ".trace")).unwrap();
    assert!(
        trace.contains("sim_s3: fault: "),
        "the trace names no S3 fault:\n{trace}"
    );
}
