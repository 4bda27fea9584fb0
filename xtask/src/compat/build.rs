//! Building the test files, one cargo invocation per mode.

use crate::cmd::{cargo, cargo_sim, io_context, Mode};
use crate::json::Json;
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The name of `mode`'s target directory and logs: `sim` or `real` (real
/// Tokio: sim-runtime re-exports it in production).
pub(super) fn label(mode: Mode) -> &'static str {
    match mode {
        Mode::Simulation => "sim",
        Mode::Production => "real",
    }
}

pub(super) struct Build {
    pub(super) executables: BTreeMap<String, PathBuf>,
    /// Per test file, its compile errors (one line each).
    pub(super) errors: BTreeMap<String, Vec<String>>,
}

pub(super) fn build(dir: &Path, mode: Mode, files: &[&str], logs: &Path) -> Result<Build> {
    let target_dir = dir
        .parent()
        .expect("target/compat has a parent")
        .join("compat-target")
        .join(label(mode));
    let log_path = logs.join(format!("build-{}.log", label(mode)));
    let log = fs::File::create(&log_path).map_err(io_context(&log_path))?;
    // Under `--graph`, the simulated build is `cargo sim build`: cargo-sim
    // patches `tokio` and sets the cfgs itself (RUSTFLAGS stays empty).
    let through_cargo_sim = super::graph() && mode == Mode::Simulation;
    let mut cmd = if through_cargo_sim {
        cargo_sim(&[])
    } else {
        cargo(Mode::Production, &[])
    };
    cmd.current_dir(dir)
        .args(["build", "--keep-going", "--message-format=json"])
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        .env(
            "RUSTFLAGS",
            if mode == Mode::Simulation && !through_cargo_sim {
                "--cfg simulation"
            } else {
                ""
            },
        )
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    for f in files {
        cmd.args(["--test", f]);
    }
    eprintln!(
        "compat: building {} test file(s) ({}; log: {})",
        files.len(),
        if through_cargo_sim {
            "cargo sim: the whole graph simulated"
        } else if mode == Mode::Simulation {
            "RUSTFLAGS=\"--cfg simulation\""
        } else {
            "real Tokio"
        },
        log_path.display()
    );
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut b = Build {
        executables: BTreeMap::new(),
        errors: BTreeMap::new(),
    };
    let mut foreign_errors = Vec::new();
    let mut success = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let Some(msg) = Json::parse(&line) else {
            continue;
        };
        let ours = msg
            .get("package_id")
            .as_str()
            .is_some_and(|p| p.contains("tokio-compat"))
            && msg
                .get("target")
                .get("kind")
                .as_array()
                .iter()
                .any(|k| k.as_str() == Some("test"));
        let target = msg.get("target").get("name").as_str().unwrap_or("");
        match msg.get("reason").as_str() {
            Some("compiler-artifact") if ours => {
                if let Some(exe) = msg.get("executable").as_str() {
                    b.executables.insert(target.to_string(), PathBuf::from(exe));
                }
            }
            Some("compiler-message") => {
                let m = msg.get("message");
                if m.get("level").as_str() != Some("error") {
                    continue;
                }
                let code = m.get("code").get("code").as_str();
                let text = m.get("message").as_str().unwrap_or("");
                let one = match code {
                    Some(c) => format!("error[{c}]: {text}"),
                    None => format!("error: {text}"),
                };
                if ours {
                    b.errors.entry(target.to_string()).or_default().push(one);
                } else {
                    let rendered = m.get("rendered").as_str().unwrap_or(&one).to_string();
                    foreign_errors.push(rendered);
                }
            }
            Some("build-finished") => success = msg.get("success").as_bool(),
            _ => {}
        }
    }
    let status = child.wait()?;
    if !foreign_errors.is_empty() {
        return Err(Error::Failed(format!(
            "a dependency of the compat crate does not compile ({}):\n{}",
            if mode == Mode::Simulation {
                "sim-runtime under --cfg simulation?"
            } else {
                "production build"
            },
            foreign_errors.join("\n")
        )));
    }
    let missing: Vec<&&str> = files
        .iter()
        .filter(|f| !b.executables.contains_key(**f) && !b.errors.contains_key(**f))
        .collect();
    if !missing.is_empty() || (success.is_none() && !status.success()) {
        let log = fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::Failed(format!(
            "cargo failed without a compile error in a test file ({status}); missing: {missing:?}\n\
             last lines of {}:\n{}",
            log_path.display(),
            tail.join("\n")
        )));
    }
    for errs in b.errors.values_mut() {
        let mut seen = BTreeSet::new();
        errs.retain(|e| seen.insert(e.clone()));
    }
    Ok(b)
}
