//! `cargo sim`: a crate's tests (or binaries) with the whole dependency
//! graph on the simulated Tokio.
//!
//! ```text
//! cargo install --path cargo-sim
//! cargo sim test [cargo test arguments]     # every crate that uses tokio, simulated
//! cargo sim run --bin server                # the same for a binary
//! cargo sim clippy --all-targets            # lint the simulated build
//! cargo sim doctor                          # what still reaches outside the seed
//! ```
//!
//! How: every crate in the graph that depends on `tokio = "1…"` must get the
//! simulation, with no change to any manifest. Cargo's `[patch]` replaces
//! the registry's `tokio` with a generated package named `tokio`
//! (`shim.rs`) whose library is sim-runtime's simulation module and whose
//! own real Tokio (for `sync`, `io`, the macros) is the registry's copy taken
//! as a *path* dependency: another source, so the patch does not apply to
//! it and the graph has no cycle. Everything is built with
//! `--cfg simulation --cfg sim_graph` in a target directory of its own
//! (`<target>/sim-graph`), where sim-runtime itself is a facade over that
//! one simulation.
//!
//! Production is untouched: no manifest changes, and the service's
//! `Cargo.lock` is byte for byte what it was (`lock.rs` keeps the patched
//! lock beside the build and restores the user's after cargo exits,
//! Ctrl-C included).

mod clippy;
mod doctor;
mod graph;
mod lock;
mod shim;

use std::path::PathBuf;
use std::process::{Command, ExitCode, ExitStatus, Stdio};

const USAGE: &str = "\
usage: cargo sim <command> [cargo arguments]

commands:
  test     cargo test, with every crate that uses tokio on the simulator
  run      cargo run, the same
  build    cargo build, the same (tests and binaries, not run)
  check    cargo check, the same
  clippy   cargo clippy, the same: lints the code as the simulation compiles
           it (cfg(simulation) and cfg(sim_graph) are set); lint arguments
           after `--` as with cargo clippy
  doctor   what still reaches outside the seed, in the workspace's own code
           (by file and line) and its dependencies: threads made without
           pthread_create, processes, blocking std socket I/O, raw system
           calls, the TSC; exits 1 if
           something does. cargo sim doctor --help says more.

The SIM_* variables (SIM_SEED, SIM_SEEDS, SIM_SCHEDULE, ...) pass through.
A failure's replay line is a `cargo sim test ...` command.
Environment: SIM_RUNTIME_DIR=<path to sim-runtime> if cargo-sim was
installed from elsewhere than this project's checkout.
";

fn main() -> ExitCode {
    // cargo runs `cargo-sim sim <args>`; run directly it is `cargo-sim <args>`.
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("sim") {
        args.remove(0);
    }
    let Some(command) = args.first().cloned() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    match command.as_str() {
        "test" | "run" | "build" | "check" | "clippy" => match run(&args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("cargo-sim: {e}");
                ExitCode::FAILURE
            }
        },
        "doctor" => doctor::main(&args[1..]),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("cargo-sim: unknown command `{other}`\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The cargo to run: the one that ran us (`CARGO`), else `cargo`.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `cargo <args>` with the graph patched; the exit code is cargo's.
fn run(args: &[String]) -> Result<ExitCode, String> {
    let done = run_patched(args, false)?;
    Ok(match done.status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

/// What a cargo command run on the patched graph gave back.
pub struct Patched {
    pub status: ExitStatus,
    /// Its standard output, when it was captured (empty otherwise).
    pub stdout: Vec<u8>,
    /// The patched graph, as cargo resolved it for the command, when the
    /// output was captured.
    pub graph: Option<graph::Metadata>,
}

/// Runs `cargo <args>` with the graph patched, the user's lock put back
/// afterwards. With `capture`, cargo's standard output is returned instead
/// of shown (its standard error still reaches the terminal), with the
/// patched graph read while the patched lock was still in place.
fn run_patched(args: &[String], capture: bool) -> Result<Patched, String> {
    let manifest = manifest_arg(args);
    // The user's lock, as it is now, before anything (even `cargo
    // metadata`) may write it.
    let root = graph::workspace_root(manifest.as_deref())?;
    let mut guard = lock::Guard::take(&root)?;
    let meta = graph::Metadata::read(manifest.as_deref())?;
    let real = meta.real_tokio()?;
    let sim_runtime = shim::sim_runtime_dir()?;
    let shim_dir = shim::write(&real, &sim_runtime)?;
    guard.use_sim_lock(&meta.sim_dir())?;
    let patch = format!(
        "patch.crates-io.tokio.path={}",
        toml_string(&shim_dir.display().to_string())
    );
    // The cfgs are declared too (`--check-cfg`), so a crate that tests
    // `cfg(simulation)` gets no `unexpected_cfgs` warning here, and a lint
    // run with `-D warnings` fails on its code, not on ours.
    let flags = |var: &str| {
        let old = std::env::var(var).unwrap_or_default();
        format!(
            "{old} --cfg simulation --cfg sim_graph --check-cfg=cfg(simulation) \
             --check-cfg=cfg(sim_graph)"
        )
        .trim()
        .to_string()
    };
    // `cargo --config <patch> <args>`: the patch is a global option, given
    // before the subcommand (after it, it could land behind a `--`).
    let patched = |args: &[String]| {
        let mut cmd = cargo();
        cmd.arg("--config")
            .arg(&patch)
            .args(args)
            .env("RUSTFLAGS", flags("RUSTFLAGS"))
            .env("RUSTDOCFLAGS", flags("RUSTDOCFLAGS"))
            .env("CARGO_TARGET_DIR", meta.sim_dir().join("target"));
        cmd
    };
    let with_manifest = |mut v: Vec<String>| {
        if let Some(m) = &manifest {
            v.push("--manifest-path".into());
            v.push(m.display().to_string());
        }
        v
    };
    let metadata_args = || {
        with_manifest(vec![
            "metadata".into(),
            "--format-version".into(),
            "1".into(),
        ])
    };
    // Resolve the graph with the patch (the manifests may have changed
    // since the kept lock was made), then point the lock at the patch if it
    // still names the registry's tokio: only `tokio` moves, every other
    // version stays the user's. A patch cargo leaves unused would build the
    // graph on real Tokio: that is an error, never a silent fallback.
    let lock_path = root.join("Cargo.lock");
    let mut resolve = patched(&metadata_args());
    // Quiet: before the update below, cargo warns that the patch is unused.
    let out = lock::without_sigint(|| resolve.output())
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "resolving the graph with the patch failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if lock::names_registry_tokio(&lock_path) {
        let mut update = patched(&with_manifest(vec![
            "update".into(),
            "-p".into(),
            format!(
                "registry+https://github.com/rust-lang/crates.io-index#tokio@{}",
                real.version
            ),
        ]));
        let status = lock::without_sigint(|| update.status())
            .map_err(|e| format!("cannot run cargo update: {e}"))?;
        if !status.success() || lock::names_registry_tokio(&lock_path) {
            return Err(format!(
                "cargo would not put the simulated tokio in place of the registry's tokio {} \
                 (`cargo update -p tokio` with the patch: {status}); the output above says why. \
                 Nothing ran on real Tokio.",
                real.version
            ));
        }
    }
    let mut cmd = if args.first().is_some_and(|a| a == "clippy") {
        // cargo-clippy's inner cargo would lose the patch (clippy.rs).
        let plan = clippy::plan(args, clippy::driver()?);
        let mut cmd = patched(&plan.args);
        cmd.envs(plan.env);
        cmd
    } else {
        patched(args)
    };
    let (status, stdout, graph) = if capture {
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        let out =
            lock::without_sigint(|| cmd.output()).map_err(|e| format!("cannot run cargo: {e}"))?;
        // The graph the command was built from: read now, while the
        // patched lock is still the one in place.
        let mut read = patched(&metadata_args());
        let graph = lock::without_sigint(|| read.output())
            .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
        if !graph.status.success() {
            return Err(format!(
                "cargo metadata failed on the patched graph ({}):\n{}",
                graph.status,
                String::from_utf8_lossy(&graph.stderr).trim()
            ));
        }
        let graph = graph::Metadata::parse(&graph.stdout)?;
        (out.status, out.stdout, Some(graph))
    } else {
        let status =
            lock::without_sigint(|| cmd.status()).map_err(|e| format!("cannot run cargo: {e}"))?;
        (status, Vec::new(), None)
    };
    // Whatever cargo resolved while it ran must still be the simulation.
    let escaped = lock::names_registry_tokio(&lock_path);
    guard.restore()?;
    if escaped {
        return Err(
            "cargo resolved the registry's tokio while it ran: what it built and ran \
                    was NOT simulated; do not trust its results. Run `cargo sim` again; if it \
                    repeats, report it with your Cargo.toml"
                .into(),
        );
    }
    Ok(Patched {
        status,
        stdout,
        graph,
    })
}

/// `--manifest-path <p>` or `--manifest-path=<p>` among cargo's arguments
/// (before a `--`).
fn manifest_arg(args: &[String]) -> Option<PathBuf> {
    let mut it = args.iter().take_while(|a| *a != "--");
    while let Some(a) = it.next() {
        if a == "--manifest-path" {
            return it.next().map(PathBuf::from);
        }
        if let Some(p) = a.strip_prefix("--manifest-path=") {
            return Some(PathBuf::from(p));
        }
    }
    None
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_path_is_found_in_either_form_before_the_separator() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            manifest_arg(&v(&["test", "--manifest-path", "a/Cargo.toml"])),
            Some(PathBuf::from("a/Cargo.toml"))
        );
        assert_eq!(
            manifest_arg(&v(&["test", "--manifest-path=b/Cargo.toml", "-p", "x"])),
            Some(PathBuf::from("b/Cargo.toml"))
        );
        assert_eq!(
            manifest_arg(&v(&["test", "--", "--manifest-path", "c"])),
            None
        );
    }

    #[test]
    fn toml_strings_are_escaped() {
        assert_eq!(toml_string(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
