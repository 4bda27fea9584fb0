//! Building the bench binaries: sim's and real Tokio's from the workspace,
//! madsim's and turmoil's from their own workspaces under `bench/`.

use super::workloads::{Variant, Workload, VARIANTS, WORKLOADS};
use super::{Job, Opts};
use crate::cmd::{cargo, rel, root, stdout, Mode};
use crate::json::Json;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Features of the production build: Tokio's runtime, timers and paused
/// clock (`test-util`, for the timer workloads).
pub(super) const PROD_FEATURES: &str = "full,test-util";

/// Builds every binary some wanted workload needs; returns one job per
/// binary, with the `--only` arguments of the workloads it runs.
pub(super) fn build_all(opts: &Opts) -> Result<Vec<Job>, String> {
    let mut jobs = Vec::new();
    let only = |v: Variant, keep: &dyn Fn(&Workload) -> bool| -> Vec<String> {
        WORKLOADS
            .iter()
            .filter(|w| opts.wanted(w) && w.runs_on(v) && keep(w))
            .flat_map(|w| ["--only".to_string(), w.name.to_string()])
            .collect()
    };
    let common = |mut args: Vec<String>| {
        let mut a: Vec<String> = ["--runs", "1", "--warmup", "1", "--seeds"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push(opts.seeds.to_string());
        a.append(&mut args);
        a
    };
    let not_scenario = |w: &Workload| w.name != "scenario";
    for v in VARIANTS {
        let args = match v {
            // The executor bench has every workload but the scenario (the
            // harness bench's).
            Variant::Sim | Variant::Tokio => only(v, &not_scenario),
            _ => only(v, &|_| true),
        };
        if args.is_empty() {
            continue;
        }
        let exe = match v {
            Variant::Sim => build_bench(Mode::Simulation, "sim-runtime", "executor")?,
            Variant::Tokio => build_bench(Mode::Production, "sim-runtime", "executor")?,
            Variant::Madsim => build_outside("madsim", &["--cfg", "madsim"])?,
            Variant::Turmoil => build_outside("turmoil", &[])?,
        };
        jobs.push(Job {
            label: v.label(),
            exe,
            args: common(args),
        });
    }
    let scenario = WORKLOADS.iter().find(|w| w.name == "scenario");
    if scenario.is_some_and(|w| opts.wanted(w)) {
        jobs.push(Job {
            label: "sim harness",
            exe: build_bench(Mode::Simulation, "sim-harness", "harness")?,
            args: ["--runs", "1", "--warmup", "1", "--seeds", "2000"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        });
    }
    Ok(jobs)
}

/// `cargo bench --no-run` of `package`'s `bench` in `mode`; returns the
/// bench executable.
pub(super) fn build_bench(mode: Mode, package: &str, bench: &str) -> Result<PathBuf, String> {
    let mut args = vec![
        "bench",
        "-p",
        package,
        "--bench",
        bench,
        "--no-run",
        "--message-format=json-render-diagnostics",
    ];
    if mode == Mode::Production && package == "sim-runtime" {
        args.extend(["--features", PROD_FEATURES]);
    }
    eprintln!("==> [{}] build: cargo {}", mode.name(), args.join(" "));
    executable(cargo(mode, &args), bench, mode.name())
}

/// `cargo build --release --locked` of `bench/<name>` (its own workspace,
/// outside ours) into `target/bench-<name>`, with exactly `cfg` as
/// RUSTFLAGS (a `--cfg simulation` of the caller's must not reach it).
pub(super) fn build_outside(name: &str, cfg: &[&str]) -> Result<PathBuf, String> {
    let manifest = root().join("bench").join(name).join("Cargo.toml");
    let target = root().join("target").join(format!("bench-{name}"));
    let mut cmd = cargo(Mode::Production, &[]);
    cmd.current_dir(root().join("bench").join(name))
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(&manifest)
        .arg("--message-format=json-render-diagnostics")
        .env("CARGO_TARGET_DIR", &target)
        .env("RUSTFLAGS", cfg.join(" "))
        .env_remove("RUSTDOCFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    eprintln!(
        "==> [{name}] build: RUSTFLAGS={:?} CARGO_TARGET_DIR={} cargo build --release --locked --manifest-path {}",
        cfg.join(" "),
        rel(&target),
        rel(&manifest)
    );
    executable(cmd, &format!("bench-{name}"), name)
}

/// Runs a cargo build with `--message-format=json…`; returns the executable
/// it names whose file name starts with `stem`.
pub(super) fn executable(mut cmd: Command, stem: &str, what: &str) -> Result<PathBuf, String> {
    let out = stdout(
        cmd.stderr(Stdio::inherit()),
        &format!("[{what}] building the bench"),
    )?;
    out.lines()
        .filter_map(Json::parse)
        .filter(|m| m.get("reason").as_str() == Some("compiler-artifact"))
        .filter_map(|m| m.get("executable").as_str().map(PathBuf::from))
        .rfind(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f == stem || f.starts_with(&format!("{stem}-")))
        })
        .ok_or_else(|| format!("[{what}] cargo named no bench executable"))
}
