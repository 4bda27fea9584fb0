//! `cargo xtask test` and `cargo xtask ci`: the whole suite, in both build
//! modes, each with its own target directory so neither rebuilds the other.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (xtask's parent directory).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// The variables that steer a simulated run (which seeds, how, with what
/// limits and reports): the canary catalog and the sweep clear them, so
/// the caller's shell cannot change what they measure.
pub const SIM_STEERING: &[&str] = &[
    "SIM_SEED",
    "SIM_SEEDS",
    "SIM_SHARD",
    "SIM_SCHEDULE",
    "SIM_EARLY_TIMERS",
    "SIM_YIELD_AHEAD",
    "SIM_BUGGIFY",
    "SIM_TIME_LIMIT",
    "SIM_STEP_LIMIT",
    "SIM_UNHANDLED_PANIC",
    "SIM_CHECK_DETERMINISM",
    "SIM_COVERAGE_PLATEAU",
    "SIM_TRACE",
];

/// A build mode: production (plain Tokio) or simulation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Production,
    Simulation,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Production => "production",
            Mode::Simulation => "simulation",
        }
    }
}

/// `cargo <args>` in `mode`, from the workspace root.
pub fn cargo(mode: Mode, args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root()).args(args);
    if mode == Mode::Simulation {
        let flags = |var: &str| {
            let old = std::env::var(var).unwrap_or_default();
            if old.contains("--cfg simulation") {
                old
            } else {
                format!("{old} --cfg simulation").trim().to_string()
            }
        };
        cmd.env("RUSTFLAGS", flags("RUSTFLAGS"));
        cmd.env("RUSTDOCFLAGS", flags("RUSTDOCFLAGS"));
        cmd.env("CARGO_TARGET_DIR", root().join("target").join("sim"));
    }
    cmd
}

/// Runs `cmd` to the end: whether it succeeded, and its stdout then stderr.
pub fn output(cmd: &mut Command) -> Result<(bool, String), String> {
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

pub fn run(mode: Mode, what: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("\n==> [{}] {what}: cargo {}", mode.name(), args.join(" "));
    let status = cargo(mode, args)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("[{}] {what} failed ({status})", mode.name()))
    }
}

/// The crates whose tests also run with the whole dependency graph on the
/// simulator (`cargo sim test`): `jobs` names plain `tokio` and uses tower,
/// tokio-util and tokio-stream unmodified; `notes` serves axum with
/// `axum::serve` and calls it through hyper-util's `TokioExecutor` and
/// `TokioTimer` and reqwest (tests/graph.rs); `counter` serves with tonic's
/// `transport::Server` and connects with `Endpoint::connect`
/// (tests/graph.rs); `chat`'s breakage tests check that what fails without
/// the whole graph works with it; `echo` reaches the simulation through the
/// `sim-runtime` rename, which keeps working there.
const GRAPH_PACKAGES: &[&str] = &["jobs", "notes", "counter", "chat", "echo"];

/// `cargo sim test` on `GRAPH_PACKAGES`, with cargo-sim built from this
/// checkout, and a check that the workspace's Cargo.lock is byte for byte
/// what it was (production is untouched by a simulated run).
pub fn graph() -> Result<(), String> {
    run(Mode::Production, "cargo-sim", &["build", "-p", "cargo-sim"])?;
    let lock = root().join("Cargo.lock");
    let before = std::fs::read(&lock).map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let bin = root().join("target/debug/cargo-sim");
    let mut args = vec!["sim".to_string(), "test".to_string()];
    for p in GRAPH_PACKAGES {
        args.push("-p".into());
        args.push(p.to_string());
    }
    eprintln!("\n==> [whole graph] tests: cargo {}", args.join(" "));
    let status = Command::new(&bin)
        .args(&args)
        .current_dir(root())
        .env_remove("RUSTFLAGS")
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let after = std::fs::read(&lock).map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    if after != before {
        return Err(
            "`cargo sim test` changed Cargo.lock: a simulated run must leave it \
                    byte for byte as it was (cargo-sim/src/lock.rs)"
                .into(),
        );
    }
    if !status.success() {
        return Err(format!("[whole graph] tests failed ({status})"));
    }
    Ok(())
}

/// Tests in both modes. In simulation the proc-macro crate's own tests are
/// skipped: they test token expansion, which no cfg changes.
pub fn test() -> Result<(), String> {
    run(Mode::Production, "tests", &["test", "--workspace"])?;
    run(
        Mode::Simulation,
        "tests",
        &[
            "test",
            "--workspace",
            "--exclude",
            "sim-runtime-macros",
            "--exclude",
            "xtask",
            "--exclude",
            "cargo-sim",
        ],
    )?;
    graph()
}

/// Formatting, lints (both modes), tidy, the tests, the canary catalog
/// (its report to target/canaries/report.md), then Tokio's own tests
/// under simulation with a pass-rate floor (`cargo xtask compat`; the report
/// goes to target/compat/report.md, leaving docs/compat.md alone).
pub fn ci() -> Result<(), String> {
    run(Mode::Production, "format", &["fmt", "--all", "--check"])?;
    crate::tidy::tidy()?;
    const CLIPPY: &[&str] = &[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ];
    for mode in [Mode::Production, Mode::Simulation] {
        run(mode, "clippy", CLIPPY)?;
    }
    test()?;
    // The kv demo's failing seed as a timeline page, loaded in headless
    // Chromium (about 4 s once built; a step of its own, since it needs a
    // browser: without one it fails saying how to install it, and
    // SIM_SKIP_BROWSER=1 skips it). The screenshot stays in target/timeline/.
    run(
        Mode::Simulation,
        "timeline page in headless Chromium",
        &["test", "-p", "kv", "--test", "timeline"],
    )?;
    // The canary catalog, whole (about 15 s): every bug found within its
    // bound by the portfolio, every first failure replayed in a new process.
    crate::canaries::main(&["--out".into(), "target/canaries/report.md".into()])
        .map_err(|(crate::Error::Usage(e) | crate::Error::Failed(e))| e)?;
    crate::compat::main(&[
        "--min-pass-rate".into(),
        "0.87".into(),
        "--out".into(),
        "target/compat/report.md".into(),
    ])
    .map_err(|(crate::Error::Usage(e) | crate::Error::Failed(e))| e)
}
