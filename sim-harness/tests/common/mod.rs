//! Helpers the harness's own integration tests share: options for a run
//! of `sim::__private::run`, the report of a run that must fail, and a
//! test of the same binary run as a child process.
#![allow(dead_code)] // each test file uses some of them

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

/// The variables that steer a sweep: a child process gets none of the
/// developer's shell's, only what its caller gives it.
const STEERING: &[&str] = &[
    "SIM_SEED",
    "SIM_SEEDS",
    "SIM_SHARD",
    "SIM_JOBS",
    "SIM_RESULTS",
    "SIM_SCHEDULE",
    "SIM_EARLY_TIMERS",
    "SIM_YIELD_AHEAD",
    "SIM_BUGGIFY",
    "SIM_TIME_LIMIT",
    "SIM_STEP_LIMIT",
    "SIM_UNHANDLED_PANIC",
    "SIM_CHECK_DETERMINISM",
    "SIM_COVERAGE_PLATEAU",
    "SIM_HANG_TIMEOUT",
    "SIM_EXPLORE",
    "SIM_TAPE",
];

/// How a child process ended.
pub struct Child {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Child {
    /// All it printed, stdout first.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs the test `test` of this binary in a child process, with `env` and
/// none of the steering variables of this process's environment.
pub fn child(test: &str, env: &[(&str, &str)]) -> Child {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture"]);
    for var in STEERING {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Child {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
