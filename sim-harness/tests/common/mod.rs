//! Helpers the harness's own integration tests share: options for a run
//! of `sim::__private::run`, and the report of a run that must fail.

use sim::__private::{run, Options, Seeds};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Options for a harness run named `name`, from the test file `file`.
pub fn options(name: &'static str, file: &'static str, seeds: Seeds) -> Options {
    Options {
        name,
        file,
        package: env!("CARGO_PKG_NAME"),
        crate_name: env!("CARGO_CRATE_NAME"),
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds,
        ..Options::default()
    }
}

/// Runs a harness test that must fail; returns its report.
pub fn report<F, Fut>(opts: Options, body: F) -> String
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    // The runner reads these; a developer's shell must not change the test.
    for var in [
        "SIM_SEED",
        "SIM_SEEDS",
        "SIM_SHARD",
        "SIM_CHECK_DETERMINISM",
    ] {
        assert!(
            std::env::var(var).is_err(),
            "unset {var} to run the harness's own tests"
        );
    }
    let err = catch_unwind(AssertUnwindSafe(|| run(opts, body))).expect_err("the run must fail");
    err.downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| "<non-string report>".into())
}
