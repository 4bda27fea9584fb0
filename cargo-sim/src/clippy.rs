//! `cargo sim clippy`: cargo-clippy's own work, done here.
//!
//! `cargo clippy` is cargo's external subcommand `cargo-clippy`, which runs
//! `cargo check` again with clippy's driver as the workspace's rustc
//! wrapper. That inner cargo does not inherit the `--config` given to the
//! outer one, so the patch that puts the simulation in place of `tokio`
//! would be lost, and the graph would build on real Tokio. So cargo-sim
//! runs the inner `cargo check` itself, patched, the way cargo-clippy sets
//! it up: `RUSTC_WORKSPACE_WRAPPER` is clippy's driver, and the lint
//! arguments (after `--`, and `--no-deps`) reach it in `CLIPPY_ARGS`.

use std::path::PathBuf;
use std::process::Command;

/// What `cargo clippy <args>` becomes: the cargo arguments of the inner
/// `cargo check` (or `cargo fix` for `--fix`) and its environment.
pub(crate) struct Plan {
    pub args: Vec<String>,
    pub env: Vec<(&'static str, String)>,
}

/// `args` are cargo-sim's, starting with `clippy`.
pub(crate) fn plan(args: &[String], driver: PathBuf) -> Plan {
    let rest = &args[1..];
    let split = rest.iter().position(|a| a == "--").unwrap_or(rest.len());
    let mut cargo_args: Vec<String> = Vec::new();
    let mut lint_args: Vec<String> = Vec::new();
    let mut fix = false;
    for a in &rest[..split] {
        match a.as_str() {
            "--no-deps" => lint_args.push(a.clone()),
            "--fix" => fix = true,
            _ => cargo_args.push(a.clone()),
        }
    }
    lint_args.extend(rest.get(split + 1..).unwrap_or_default().iter().cloned());
    let mut out = vec![if fix { "fix" } else { "check" }.to_string()];
    out.extend(cargo_args);
    let clippy_args: String = lint_args
        .iter()
        .map(|a| format!("{a}__CLIPPY_HACKERY__"))
        .collect();
    Plan {
        args: out,
        env: vec![
            ("RUSTC_WORKSPACE_WRAPPER", driver.display().to_string()),
            ("CLIPPY_ARGS", clippy_args),
        ],
    }
}

/// Clippy's driver of the toolchain that builds: beside its `rustc`.
pub(crate) fn driver() -> Result<PathBuf, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run rustc to find clippy's driver: {e}"))?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let name = if cfg!(windows) {
        "clippy-driver.exe"
    } else {
        "clippy-driver"
    };
    let path = PathBuf::from(sysroot).join("bin").join(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "clippy's driver is not installed for this toolchain ({} is missing): run \
             `rustup component add clippy`",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::plan;
    use std::path::PathBuf;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn clippy_becomes_a_patched_check_with_the_lints_in_the_environment() {
        let p = plan(
            &strings(&[
                "clippy",
                "-p",
                "kv",
                "--all-targets",
                "--no-deps",
                "--",
                "-D",
                "warnings",
            ]),
            PathBuf::from("/t/clippy-driver"),
        );
        assert_eq!(p.args, strings(&["check", "-p", "kv", "--all-targets"]));
        assert_eq!(
            p.env,
            vec![
                ("RUSTC_WORKSPACE_WRAPPER", "/t/clippy-driver".to_string()),
                (
                    "CLIPPY_ARGS",
                    "--no-deps__CLIPPY_HACKERY__-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
                        .to_string()
                ),
            ]
        );
        let fix = plan(&strings(&["clippy", "--fix"]), PathBuf::from("d"));
        assert_eq!(fix.args, strings(&["fix"]));
    }
}
