//! What every xtask command shares: the workspace root, the two build
//! modes and how cargo runs in each, and the variables that steer a
//! simulated run. Every other module imports from here; `ci` orchestrates
//! the others and nothing imports `ci`.

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

/// Formats an I/O error with the path it concerns, as an xtask error.
pub fn io_context(path: &Path) -> impl FnOnce(std::io::Error) -> crate::Error + '_ {
    move |e| crate::Error::Failed(format!("{}: {e}", path.display()))
}
