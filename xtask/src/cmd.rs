//! What every xtask command shares: the workspace root, the two build
//! modes and how cargo (and cargo-sim) runs in each, the variables that
//! steer a simulated run, and what the generated reports say about where
//! they were made (date, commit, rustc, locked versions). Every other
//! module imports from here; `ci` orchestrates the others and nothing
//! imports `ci`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
    "SIM_RESULTS",
    "SIM_TAPE",
    "SIM_SHRINK",
    "SIM_SHRINK_TIME",
    "SIM_INEVITABLE",
    "SIM_EXPLORE",
    "SIM_FUZZ_CANARY",
];

/// A build mode: production (plain Tokio) or simulation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// No cfg: sim-runtime is real Tokio re-exported.
    Production,
    /// `--cfg simulation`: the simulated runtime.
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

/// `cmd` without the caller's steering variables (`SIM_STEERING`) and
/// without backtraces: what a measurement runs, so the caller's shell
/// cannot change what it measures.
pub fn unsteered(mut cmd: Command) -> Command {
    for v in SIM_STEERING {
        cmd.env_remove(v);
    }
    cmd.env("RUST_BACKTRACE", "0");
    cmd
}

/// `cargo <args>` in simulation, `unsteered`.
pub fn sim_cargo(args: &[&str]) -> Command {
    unsteered(cargo(Mode::Simulation, args))
}

/// Builds cargo-sim from this checkout (what `cargo_sim` runs).
pub fn build_cargo_sim() -> Result<(), String> {
    run(Mode::Production, "cargo-sim", &["build", "-p", "cargo-sim"])
}

/// `cargo sim <args>` (the whole graph on the simulation) with the
/// cargo-sim that `build_cargo_sim` built, from the workspace root.
/// cargo-sim sets the cfgs itself: the caller's RUSTFLAGS is removed.
pub fn cargo_sim(args: &[&str]) -> Command {
    let mut cmd = Command::new(root().join("target/debug/cargo-sim"));
    cmd.current_dir(root())
        .arg("sim")
        .args(args)
        .env_remove("RUSTFLAGS");
    cmd
}

/// The error for a program `cmd` could not start.
fn cannot_run(cmd: &Command) -> impl FnOnce(std::io::Error) -> String + '_ {
    move |e| format!("cannot run {}: {e}", cmd.get_program().to_string_lossy())
}

/// Runs `cmd` to the end: whether it succeeded, and its stdout then stderr.
pub fn output(cmd: &mut Command) -> Result<(bool, String), String> {
    let out = cmd.output().map_err(cannot_run(cmd))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// Runs `cmd` to the end: its stdout if it succeeded, else an error saying
/// `what` failed, with what it printed (its stderr too, unless redirected).
pub fn stdout(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(cannot_run(cmd))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!(
            "{what} failed ({}):\n{text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Runs `cmd` to the end, its output to the terminal: an error saying
/// `what` failed if it did not succeed.
pub fn status(cmd: &mut Command, what: &str) -> Result<(), String> {
    let status = cmd.status().map_err(cannot_run(cmd))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

pub fn run(mode: Mode, what: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("\n==> [{}] {what}: cargo {}", mode.name(), args.join(" "));
    status(&mut cargo(mode, args), &format!("[{}] {what}", mode.name()))
}

/// Formats an I/O error with the path it concerns, as an xtask error.
pub fn io_context(path: &Path) -> impl FnOnce(std::io::Error) -> crate::Error + '_ {
    move |e| crate::Error::Failed(format!("{}: {e}", path.display()))
}

/// Writes `text` to `path`, making its directory first.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Folders that hold no source of ours (besides hidden ones).
const NOT_SOURCE: &[&str] = &["target", "node_modules"];

/// Every file under `dir` whose name `keep` accepts, in path order; build
/// output and hidden folders are not entered.
pub fn source_files(dir: &Path, keep: fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if !name.starts_with('.') && !NOT_SOURCE.contains(&name) {
                out.extend(source_files(&p, keep));
            }
        } else if keep(name) {
            out.push(p);
        }
    }
    out
}

/// `path` relative to the workspace root, for messages and reports.
pub fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `program args` run in the workspace root: its trimmed stdout if it
/// succeeded.
pub fn capture(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(root())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The checkout's commit (short hash), and whether the work tree has
/// uncommitted changes other than to `reports` (a previous run's report is
/// not a change to what it reports on). `None` outside git.
pub fn commit(reports: &[&Path]) -> Option<(String, bool)> {
    let hash = capture("git", &["rev-parse", "--short", "HEAD"])?;
    let excluded: Vec<String> = reports
        .iter()
        .map(|r| format!(":!{}", r.strip_prefix(root()).unwrap_or(r).display()))
        .collect();
    let mut args = vec!["status", "--porcelain", "--", "."];
    args.extend(excluded.iter().map(String::as_str));
    let dirty = capture("git", &args).is_some_and(|s| !s.is_empty());
    Some((hash, dirty))
}

/// `rustc --version` (of `$RUSTC` if set).
pub fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    capture(&rustc, &["--version"]).unwrap_or_else(|| "rustc (version unknown)".into())
}

/// The version of the registry package `name` in the text of a
/// `Cargo.lock`.
pub fn locked_version(lock: &str, name: &str) -> Option<String> {
    let mut found = None;
    for block in lock.split("[[package]]") {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
            })
        };
        if field("name").as_deref() == Some(name)
            && field("source").is_some_and(|s| s.starts_with("registry+"))
        {
            found = field("version");
        }
    }
    found
}

/// Today's UTC date, `YYYY-MM-DD`, from the system clock (reports only).
pub fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to a date.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn lock_versions() {
        let lock = "version = 4\n\n[[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n\
                    source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n\
                    [[package]]\nname = \"tokio\"\nversion = \"0.1.0\"\n\n\
                    [[package]]\nname = \"tokio-macros\"\nversion = \"2.7.2\"\n\
                    source = \"registry+x\"\n";
        assert_eq!(locked_version(lock, "tokio").as_deref(), Some("1.54.1"));
        assert_eq!(
            locked_version(lock, "tokio-macros").as_deref(),
            Some("2.7.2")
        );
        assert_eq!(locked_version(lock, "rand"), None);
    }
}
