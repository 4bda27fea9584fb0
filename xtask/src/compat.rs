//! `cargo xtask compat`: Tokio's own integration tests, compiled against
//! sim-runtime (renamed to `tokio`) under `--cfg simulation`, run, tallied,
//! and written to `docs/compat.md`.
//!
//! Steps:
//! 1. find the `tokio` package that the workspace's `Cargo.lock` resolves,
//!    in the cargo registry (its `tests/` ship in the crate package);
//! 2. generate a crate in `target/compat/` whose `tokio` is sim-runtime, with
//!    the selected test files copied to `tests/` (plus `tests/support/`);
//! 3. build every test target with `--keep-going`, so a file that does not
//!    compile does not hide the others (its tests all count as failed);
//! 4. run each test binary with a deadline, and re-run alone the tests that
//!    a crash or a hang left without a verdict;
//! 5. for files that did not compile, count their tests by listing the same
//!    file built against real Tokio (the production build of sim-runtime);
//! 6. explain failures from `compat/reasons.txt`, and write the report.

use crate::json::Json;
use crate::proc::{run_with_timeout, Finished};
use crate::{cargo, io_context, workspace_root, Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const HELP: &str = "\
usage: cargo xtask compat [options]

Runs Tokio's own integration tests (from the tokio crate package that
Cargo.lock resolves) against sim-runtime under --cfg simulation, prints a
summary and writes docs/compat.md (target/compat/report.md with --only).

options:
  --only a,b,...         run only these test files (names without .rs)
  --min-pass-rate X      fail (exit 1) if the pass rate is below X (0..1)
  --timeout SECS         deadline per run of a test binary (default 120)
  --test-timeout SECS    a test that makes no progress for this long is
                         killed and counted as hung (default 10; 30 at
                         least for real Tokio)
  --seeds SEEDS          SIM_SEEDS for every simulated test (default: the
                         runtime's default seed)
  --baseline             also run every file against real Tokio and mark the
                         failures that real Tokio shares
  --list                 print the selected files and exit
";

/// The module a test file exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Task,
    Time,
    Macros,
    Runtime,
    Sync,
}

impl Group {
    fn name(self) -> &'static str {
        match self {
            Group::Task => "task",
            Group::Time => "time",
            Group::Macros => "macros",
            Group::Runtime => "runtime",
            Group::Sync => "sync",
        }
    }
}

/// The test files of `tokio/tests/` that exercise what sim-runtime
/// simulates (task, time, macros, runtime), and the `sync` files: real
/// Tokio's sync, driven by the simulated executor.
const SELECTED: &[(&str, Group)] = &[
    ("task_abort", Group::Task),
    ("task_blocking", Group::Task),
    ("task_builder", Group::Task),
    ("task_id", Group::Task),
    ("task_join_set", Group::Task),
    ("task_local", Group::Task),
    ("task_local_set", Group::Task),
    ("task_panic", Group::Task),
    ("task_yield_now", Group::Task),
    ("join_handle_panic", Group::Task),
    ("coop_budget", Group::Task),
    ("unwindsafe", Group::Task),
    ("time_interval", Group::Time),
    ("time_panic", Group::Time),
    ("time_pause", Group::Time),
    ("time_rt", Group::Time),
    ("time_sleep", Group::Time),
    ("time_timeout", Group::Time),
    ("test_clock", Group::Time),
    ("rt_time_start_paused", Group::Time),
    ("macros_join", Group::Macros),
    ("macros_pin", Group::Macros),
    ("macros_rename_test", Group::Macros),
    ("macros_select", Group::Macros),
    ("macros_test", Group::Macros),
    ("macros_try_join", Group::Macros),
    ("rt_basic", Group::Runtime),
    ("rt_busy_tick", Group::Runtime),
    ("rt_common", Group::Runtime),
    ("rt_common_before_park", Group::Runtime),
    ("rt_handle", Group::Runtime),
    ("rt_handle_block_on", Group::Runtime),
    ("rt_local", Group::Runtime),
    ("rt_metrics", Group::Runtime),
    ("rt_panic", Group::Runtime),
    ("rt_shutdown_err", Group::Runtime),
    ("rt_spawn_blocking", Group::Runtime),
    ("rt_worker_index", Group::Runtime),
    ("no_rt", Group::Runtime),
    ("sync_barrier", Group::Sync),
    ("sync_broadcast", Group::Sync),
    ("sync_broadcast_weak", Group::Sync),
    ("sync_errors", Group::Sync),
    ("sync_mpsc", Group::Sync),
    ("sync_mpsc_weak", Group::Sync),
    ("sync_mutex", Group::Sync),
    ("sync_mutex_owned", Group::Sync),
    ("sync_notify", Group::Sync),
    ("sync_notify_owned", Group::Sync),
    ("sync_once_cell", Group::Sync),
    ("sync_oneshot", Group::Sync),
    ("sync_panic", Group::Sync),
    ("sync_rwlock", Group::Sync),
    ("sync_semaphore", Group::Sync),
    ("sync_semaphore_owned", Group::Sync),
    ("sync_set_once", Group::Sync),
    ("sync_watch", Group::Sync),
];

/// Files of those modules that are left out, and why. Kept short: a file
/// that merely fails is a gap and stays in `SELECTED`.
const NOT_APPLICABLE: &[(&str, &str)] = &[
    (
        "rt_threaded",
        "tests the multi-thread scheduler itself (work stealing, LIFO slot, \
         `block_in_place` handing a worker's core to another OS thread, worker \
         start/stop callbacks, tuning); a simulation is one thread by design",
    ),
    (
        "rt_blocking_thread_exhaust",
        "tests what happens when the OS refuses to start worker threads \
         (`setrlimit(RLIMIT_NPROC)`); the simulation starts none",
    ),
];

/// Families of `tokio/tests/` outside this selection, for the report.
const NOT_SELECTED: &str = "\
`net`, `tcp_*`, `udp`, `uds_*`, `unix_*`, `io_driver*`, `io_async_fd`, \
`io_poll_aio`, `io_uring` (the simulated network: later issues); `fs*` (the \
simulated disk: later issues); `process_*` (later issues); `signal_*` \
(signals are delivered by the simulation per node, not by the OS: these \
tests raise real OS signals); `io_*` (real Tokio's `io`, re-exported \
unchanged); `async_send_sync` (a compile-time check that needs `net`, `fs` \
and `process`); and the files that compile to nothing without \
`--cfg tokio_unstable` or off Linux/x86 (`task_hooks`, `task_trace_*`, \
`time_alt`, `rt_unstable_*`, `rt_poll_callbacks`, `dump`, `tracing_*`, \
`*_emscripten*`, `time_wasm`, `fs_uring*`). Inside the selected files, tests \
behind `cfg(tokio_unstable)` are not compiled and not counted.";

/// Development dependencies the test files use.
const DEV_DEPENDENCIES: &str = r#"futures = { version = "0.3", features = ["async-await"] }
tokio-test = "0.4"
tokio-stream = "0.1"
rand = "0.9"
tempfile = "3"
libc = "0.2"
pin-project-lite = "0.2"
"#;

/// Every file named above, selected or not applicable.
fn all_named_files() -> impl Iterator<Item = &'static str> {
    SELECTED
        .iter()
        .map(|(f, _)| *f)
        .chain(NOT_APPLICABLE.iter().map(|(f, _)| *f))
}

struct Options {
    only: Option<Vec<String>>,
    min_pass_rate: Option<f64>,
    limits: Limits,
    seeds: Option<String>,
    baseline: bool,
    list: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            only: None,
            min_pass_rate: None,
            limits: Limits {
                binary: Duration::from_secs(120),
                test: Duration::from_secs(10),
            },
            seeds: None,
            baseline: false,
            list: false,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = |name: &str| -> Result<String> {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| Error::Usage(format!("{name} needs a value")))
            };
            match flag {
                "--only" => {
                    let v = value(flag)?;
                    let names: Vec<String> = v
                        .split(',')
                        .map(|s| s.trim().trim_end_matches(".rs").to_string())
                        .filter(|s| !s.is_empty())
                        .collect();
                    for n in &names {
                        if !SELECTED.iter().any(|(f, _)| f == n) {
                            return Err(Error::Usage(format!(
                                "`{n}` is not a selected test file (cargo xtask compat --list)"
                            )));
                        }
                    }
                    o.only = Some(names);
                }
                "--min-pass-rate" => {
                    let v = value(flag)?;
                    let x: f64 = v.parse().map_err(|_| {
                        Error::Usage(format!("--min-pass-rate {v}: expected a number in 0..=1"))
                    })?;
                    if !(0.0..=1.0).contains(&x) {
                        return Err(Error::Usage(format!(
                            "--min-pass-rate {v}: expected a number in 0..=1 (0.9 is 90%)"
                        )));
                    }
                    o.min_pass_rate = Some(x);
                }
                "--timeout" => {
                    let v = value(flag)?;
                    let secs: u64 = v.parse().map_err(|_| {
                        Error::Usage(format!("--timeout {v}: expected whole seconds"))
                    })?;
                    o.limits.binary = Duration::from_secs(secs.max(1));
                }
                "--test-timeout" => {
                    let v = value(flag)?;
                    let secs: u64 = v.parse().map_err(|_| {
                        Error::Usage(format!("--test-timeout {v}: expected whole seconds"))
                    })?;
                    o.limits.test = Duration::from_secs(secs.max(1));
                }
                "--seeds" => o.seeds = Some(value(flag)?),
                "--baseline" => o.baseline = true,
                "--list" => o.list = true,
                "-h" | "--help" => {
                    print!("{HELP}");
                    std::process::exit(0);
                }
                other => return Err(Error::Usage(format!("compat: unknown option `{other}`"))),
            }
        }
        Ok(o)
    }
}

pub fn main(args: &[String]) -> Result<()> {
    let opts = Options::parse(args)?;
    if opts.list {
        for (f, g) in SELECTED {
            println!("{f:<24} {}", g.name());
        }
        for (f, why) in NOT_APPLICABLE {
            println!("{f:<24} not applicable: {why}");
        }
        return Ok(());
    }
    let root = workspace_root();
    let tokio = locate_tokio(&root)?;
    eprintln!(
        "compat: tokio {} tests from {}",
        tokio.version,
        tokio.tests.display()
    );
    let files: Vec<(&'static str, Group)> = SELECTED
        .iter()
        .copied()
        .filter(|(f, _)| opts.only.as_ref().is_none_or(|o| o.iter().any(|n| n == f)))
        .collect();
    for f in all_named_files() {
        if !tokio.tests.join(format!("{f}.rs")).exists() {
            return Err(Error::Failed(format!(
                "tokio {}'s tests/ has no {f}.rs: update the selection in xtask/src/compat.rs",
                tokio.version
            )));
        }
    }

    let dir = root.join("target/compat");
    let logs = dir.join("logs");
    generate(&dir, &root, &tokio)?;
    fs::create_dir_all(&logs).map_err(io_context(&logs))?;
    let names: Vec<&str> = files.iter().map(|(f, _)| *f).collect();

    // The simulation.
    let sim = build(&dir, Mode::Sim, &names, &logs)?;
    let env = test_env(&opts);
    let mut results: BTreeMap<&str, FileRun> = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        let Some(exe) = sim.executables.get(*name) else {
            continue;
        };
        eprint!("compat: [{}/{}] {name} ... ", i + 1, names.len());
        let run = run_file(exe, &dir, &logs, name, "sim", &env, opts.limits)?;
        eprintln!("{} ({:.1} s)", run.summary(), run.elapsed.as_secs_f64());
        results.insert(name, run);
    }

    // Real Tokio: the number of tests of files that did not compile, and
    // with --baseline, every file's verdicts.
    let uncompiled: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !sim.executables.contains_key(*n))
        .collect();
    let real_names: Vec<&str> = if opts.baseline {
        names.clone()
    } else {
        uncompiled.clone()
    };
    let mut real_lists: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut real_runs: BTreeMap<&str, FileRun> = BTreeMap::new();
    if !real_names.is_empty() {
        eprintln!(
            "compat: building {} file(s) against real Tokio{}",
            real_names.len(),
            if opts.baseline {
                " (baseline)"
            } else {
                " to count the tests of the files that did not compile"
            }
        );
        let real = build(&dir, Mode::Real, &real_names, &logs)?;
        for name in &real_names {
            let Some(exe) = real.executables.get(*name) else {
                continue;
            };
            if opts.baseline {
                eprint!("compat: real tokio: {name} ... ");
                let limits = Limits {
                    binary: opts.limits.binary,
                    test: opts.limits.test.max(Duration::from_secs(30)),
                };
                let run = run_file(exe, &dir, &logs, name, "real", &[], limits)?;
                eprintln!("{}", run.summary());
                real_lists.insert(name, run.tests.keys().cloned().collect());
                real_runs.insert(name, run);
            } else {
                real_lists.insert(name, list_tests(exe, &dir)?);
            }
        }
    }

    let reasons = Reasons::load(&root.join("compat/reasons.txt"))?;
    let mut report = Report {
        tokio_version: tokio.version.clone(),
        seeds: opts.seeds.clone(),
        files: Vec::new(),
        baseline: opts.baseline,
    };
    for (name, group) in &files {
        let source = fs::read_to_string(tokio.tests.join(format!("{name}.rs")))
            .map_err(io_context(&tokio.tests))?;
        let mut fr = FileReport {
            name,
            group: *group,
            compile_errors: sim.errors.get(*name).cloned().unwrap_or_default(),
            estimated_total: None,
            crash: None,
            tests: Vec::new(),
            unstable_only: is_unstable_only(&source),
        };
        if let Some(run) = results.get(name) {
            fr.crash = run.crash.clone();
            for (t, v) in &run.tests {
                fr.tests.push(TestReport {
                    name: t.clone(),
                    verdict: v.clone(),
                    line: test_line(&source, t),
                    cause: None,
                    real: real_runs.get(name).and_then(|r| r.tests.get(t).cloned()),
                });
            }
        } else if let Some(list) = real_lists.get(name) {
            for t in list {
                fr.tests.push(TestReport {
                    name: t.clone(),
                    verdict: Verdict::Failed(vec!["the file does not compile".into()]),
                    line: test_line(&source, t),
                    cause: None,
                    real: real_runs.get(name).and_then(|r| r.tests.get(t).cloned()),
                });
            }
        } else {
            fr.estimated_total = Some(count_test_attributes(&source));
        }
        for t in &mut fr.tests {
            if t.verdict.is_failure() {
                t.cause = reasons.cause_of(name, Some(&t.name));
            }
        }
        report.files.push(fr);
    }

    let unused = reasons.unused(&report);
    print!("{}", report.table());
    let md = report.markdown(&reasons);
    let partial = opts.only.is_some();
    let out = if partial {
        dir.join("report.md")
    } else {
        root.join("docs/compat.md")
    };
    if let Some(parent) = out.parent() {
        fs::create_dir_all(parent).map_err(io_context(parent))?;
    }
    fs::write(&out, md).map_err(io_context(&out))?;
    eprintln!("compat: wrote {}", out.display());
    if !partial {
        for p in unused {
            eprintln!(
                "compat: note: compat/reasons.txt: `{p}` matches no failing test (fixed? remove it)"
            );
        }
    }
    let (passed, counted) = report.totals();
    let rate = ratio(passed, counted);
    if let Some(min) = opts.min_pass_rate {
        if rate < min {
            return Err(Error::Failed(format!(
                "pass rate {:.1}% is below --min-pass-rate {:.1}%",
                rate * 100.0,
                min * 100.0
            )));
        }
    }
    Ok(())
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

// ---------------------------------------------------------------------------
// Finding Tokio's tests.

struct TokioSource {
    version: String,
    tests: PathBuf,
}

/// The version of the registry package `name` in a `Cargo.lock`.
fn locked_version(lock: &str, name: &str) -> Option<String> {
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

fn cargo_home() -> PathBuf {
    if let Some(h) = std::env::var_os("CARGO_HOME") {
        return PathBuf::from(h);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    PathBuf::from(home).join(".cargo")
}

fn find_package_tests(version: &str) -> Option<PathBuf> {
    let src = cargo_home().join("registry/src");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&src)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|d| d.join(format!("tokio-{version}/tests")))
        .find(|t| t.is_dir())
}

fn locate_tokio(root: &Path) -> Result<TokioSource> {
    let lock_path = root.join("Cargo.lock");
    let lock = fs::read_to_string(&lock_path).map_err(io_context(&lock_path))?;
    let version = locked_version(&lock, "tokio").ok_or_else(|| {
        Error::Failed(format!(
            "{} resolves no registry package `tokio`",
            lock_path.display()
        ))
    })?;
    if let Some(tests) = find_package_tests(&version) {
        return Ok(TokioSource { version, tests });
    }
    eprintln!("compat: tokio {version} is not in the cargo registry yet: cargo fetch");
    let status = cargo()
        .arg("fetch")
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .status()?;
    if !status.success() {
        return Err(Error::Failed(format!("cargo fetch failed ({status})")));
    }
    let tests = find_package_tests(&version).ok_or_else(|| {
        Error::Failed(format!(
            "tokio-{version}/tests not found under {}/registry/src after cargo fetch",
            cargo_home().display()
        ))
    })?;
    Ok(TokioSource { version, tests })
}

// ---------------------------------------------------------------------------
// The generated crate.

fn write_if_changed(path: &Path, contents: &[u8]) -> Result<()> {
    if fs::read(path).ok().as_deref() == Some(contents) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_context(parent))?;
    }
    fs::write(path, contents).map_err(io_context(path))
}

fn manifest(root: &Path) -> String {
    let runtime = root.join("sim-runtime");
    let mut m = format!(
        r#"# Generated by `cargo xtask compat` (xtask/src/compat.rs): do not edit.
[package]
name = "tokio-compat"
version = "0.0.0"
edition = "2021"
publish = false
autobins = false
autoexamples = false
autotests = false
autobenches = false

# Not a member of the sim workspace.
[workspace]

# The feature names Tokio's tests check, all on.
[features]
default = ["full", "test-util"]
full = ["tokio/full", "fs", "io-util", "io-std", "macros", "net", "parking_lot", "process", "rt", "rt-multi-thread", "signal", "sync", "time"]
fs = ["tokio/fs"]
io-util = ["tokio/io-util"]
io-std = ["tokio/io-std"]
macros = ["tokio/macros"]
net = ["tokio/net"]
parking_lot = ["tokio/parking_lot"]
process = ["tokio/process"]
rt = ["tokio/rt"]
rt-multi-thread = ["tokio/rt-multi-thread"]
signal = ["tokio/signal"]
sync = ["tokio/sync"]
time = ["tokio/time"]
test-util = ["tokio/test-util"]

[dependencies]
tokio = {{ package = "sim-runtime", path = {runtime:?}, features = ["full", "test-util"] }}

[dev-dependencies]
{DEV_DEPENDENCIES}
[lints.rust]
unexpected_cfgs = "allow"

[profile.dev]
debug = 0
"#
    );
    for (f, _) in SELECTED {
        let _ = write!(m, "\n[[test]]\nname = \"{f}\"\npath = \"tests/{f}.rs\"\n");
    }
    m
}

fn generate(dir: &Path, root: &Path, tokio: &TokioSource) -> Result<()> {
    write_if_changed(&dir.join("Cargo.toml"), manifest(root).as_bytes())?;
    for (f, _) in SELECTED {
        let src = tokio.tests.join(format!("{f}.rs"));
        let text = fs::read(&src).map_err(io_context(&src))?;
        write_if_changed(&dir.join(format!("tests/{f}.rs")), &text)?;
    }
    let support = tokio.tests.join("support");
    for entry in fs::read_dir(&support).map_err(io_context(&support))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = fs::read(&path).map_err(io_context(&path))?;
            let name = path.file_name().expect("a file has a name");
            write_if_changed(&dir.join("tests/support").join(name), &text)?;
        }
    }
    // Seed the lock file with the workspace's, so the generated crate uses
    // the same Tokio (and everything else the workspace already pins).
    let lock = dir.join("Cargo.lock");
    let pinned = fs::read_to_string(&lock)
        .ok()
        .and_then(|l| locked_version(&l, "tokio"));
    if pinned.as_deref() != Some(tokio.version.as_str()) {
        let ws_lock = root.join("Cargo.lock");
        fs::copy(&ws_lock, &lock).map_err(io_context(&ws_lock))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Building.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `--cfg simulation`: the simulated runtime.
    Sim,
    /// No cfg: sim-runtime is real Tokio re-exported.
    Real,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Real => "real",
        }
    }
}

struct Build {
    executables: BTreeMap<String, PathBuf>,
    /// Per test file, its compile errors (one line each).
    errors: BTreeMap<String, Vec<String>>,
}

fn build(dir: &Path, mode: Mode, files: &[&str], logs: &Path) -> Result<Build> {
    let target_dir = dir
        .parent()
        .expect("target/compat has a parent")
        .join("compat-target")
        .join(mode.label());
    let log_path = logs.join(format!("build-{}.log", mode.label()));
    let log = fs::File::create(&log_path).map_err(io_context(&log_path))?;
    let mut cmd = cargo();
    cmd.current_dir(dir)
        .args(["build", "--keep-going", "--message-format=json"])
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        .env(
            "RUSTFLAGS",
            if mode == Mode::Sim {
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
        if mode == Mode::Sim {
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
            if mode == Mode::Sim {
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

// ---------------------------------------------------------------------------
// Running.

#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    Passed,
    Ignored,
    /// The first lines of its failure output.
    Failed(Vec<String>),
}

impl Verdict {
    fn is_failure(&self) -> bool {
        matches!(self, Verdict::Failed(_))
    }
}

/// Deadlines of a test run.
#[derive(Clone, Copy)]
struct Limits {
    /// One run of a test binary.
    binary: Duration,
    /// One test without progress.
    test: Duration,
}

struct FileRun {
    tests: BTreeMap<String, Verdict>,
    /// How the whole binary ended, if not normally.
    crash: Option<String>,
    elapsed: Duration,
}

impl FileRun {
    fn summary(&self) -> String {
        let passed = self
            .tests
            .values()
            .filter(|v| **v == Verdict::Passed)
            .count();
        let failed = self.tests.values().filter(|v| v.is_failure()).count();
        let mut s = format!("{passed} passed, {failed} failed");
        if let Some(c) = &self.crash {
            let _ = write!(s, " (binary {c})");
        }
        s
    }
}

/// The environment of a simulated test: none of the caller's `SIM_*`
/// settings, so the report does not depend on the shell.
fn test_env(opts: &Options) -> Vec<(String, Option<String>)> {
    let mut env: Vec<(String, Option<String>)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("SIM_"))
        .map(|(k, _)| (k, None))
        .collect();
    if let Some(s) = &opts.seeds {
        env.push(("SIM_SEEDS".into(), Some(s.clone())));
    }
    env
}

fn command(exe: &Path, cwd: &Path, env: &[(String, Option<String>)]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.current_dir(cwd).env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

fn list_tests(exe: &Path, cwd: &Path) -> Result<Vec<String>> {
    let out = Command::new(exe)
        .current_dir(cwd)
        .args(["--list", "--format", "terse"])
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(Error::Failed(format!(
            "{} --list failed: {}",
            exe.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect())
}

/// Runs a test binary one test at a time (so a crash or a hang names its
/// test: the last one started), resuming after each crash or hang with the
/// tests that have a verdict skipped.
fn run_file(
    exe: &Path,
    cwd: &Path,
    logs: &Path,
    name: &str,
    label: &str,
    env: &[(String, Option<String>)],
    limits: Limits,
) -> Result<FileRun> {
    let listed = list_tests(exe, cwd)?;
    let mut tests: BTreeMap<String, Verdict> = BTreeMap::new();
    let mut crashes = Vec::new();
    let mut elapsed = Duration::ZERO;
    for attempt in 0.. {
        let suffix = if attempt == 0 {
            String::new()
        } else {
            format!("-{attempt}")
        };
        let out = logs.join(format!("{label}-{name}{suffix}.stdout"));
        let err = logs.join(format!("{label}-{name}{suffix}.stderr"));
        let mut cmd = command(exe, cwd, env);
        cmd.args(["--color", "never", "--test-threads", "1"]);
        if !tests.is_empty() {
            cmd.arg("--exact");
            for t in tests.keys() {
                cmd.args(["--skip", t]);
            }
        }
        let fin = run_with_timeout(cmd, &out, &err, limits.binary, Some(limits.test))?;
        elapsed += fin.elapsed;
        let text = fs::read_to_string(&out).unwrap_or_default();
        let before = tests.len();
        tests.extend(parse_libtest(&text));
        if matches!(fin.status.map(|s| s.code()), Some(Some(0 | 101))) {
            break;
        }
        crashes.push(fin.describe());
        match running_test(&text) {
            Some(t) if !tests.contains_key(&t) => {
                tests.insert(t, Verdict::Failed(crash_excerpt(&fin, &text, &err)));
            }
            // No progress at all: give up on the rest rather than loop.
            _ if tests.len() == before => {
                for t in &listed {
                    tests
                        .entry(t.clone())
                        .or_insert_with(|| Verdict::Failed(crash_excerpt(&fin, &text, &err)));
                }
            }
            _ => {}
        }
        if listed.iter().all(|t| tests.contains_key(t)) {
            break;
        }
    }
    // A crash cuts the failure details libtest prints at the end: get them
    // by running those tests alone.
    let bare: Vec<String> = tests
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Failed(l) if l.is_empty()))
        .map(|(t, _)| t.clone())
        .collect();
    for t in bare {
        let out = logs.join(format!("{label}-{name}--{}.stdout", file_safe(&t)));
        let err = logs.join(format!("{label}-{name}--{}.stderr", file_safe(&t)));
        let mut cmd = command(exe, cwd, env);
        cmd.args([t.as_str(), "--exact", "--color", "never"]);
        let fin = run_with_timeout(cmd, &out, &err, limits.binary, Some(limits.test))?;
        let text = fs::read_to_string(&out).unwrap_or_default();
        let again = match parse_libtest(&text).remove(&t) {
            Some(Verdict::Failed(l)) if !l.is_empty() => l,
            Some(Verdict::Passed) => vec!["failed in the full run, passed when run alone".into()],
            _ => crash_excerpt(&fin, &text, &err),
        };
        tests.insert(t, Verdict::Failed(again));
    }
    let crash = (!crashes.is_empty()).then(|| {
        let mut uniq: Vec<String> = Vec::new();
        for c in crashes {
            if !uniq.contains(&c) {
                uniq.push(c);
            }
        }
        uniq.join(", ")
    });
    Ok(FileRun {
        tests,
        crash,
        elapsed,
    })
}

/// The test that was running when the output stops: its `test NAME ... `
/// line has no verdict.
fn running_test(text: &str) -> Option<String> {
    let line = text.lines().rev().find(|l| l.starts_with("test "))?;
    let (name, result) = line.strip_prefix("test ")?.split_once(" ...")?;
    let verdict = result.trim_start().split([',', ' ']).next().unwrap_or("");
    if matches!(verdict, "ok" | "FAILED" | "ignored") {
        return None;
    }
    Some(
        name.strip_suffix(" - should panic")
            .unwrap_or(name)
            .to_string(),
    )
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn crash_excerpt(fin: &Finished, stdout: &str, stderr: &Path) -> Vec<String> {
    let mut lines = vec![format!("the test binary {}", fin.describe())];
    let err = fs::read_to_string(stderr).unwrap_or_default();
    let tail = |text: &str| -> Vec<String> {
        let keep: Vec<String> = text
            .lines()
            .filter(|l| is_informative(l) && !l.starts_with("running ") && !l.starts_with("test "))
            .map(shorten)
            .collect();
        let n = keep.len();
        keep.into_iter().skip(n.saturating_sub(6)).collect()
    };
    lines.extend(tail(stdout));
    lines.extend(tail(&err));
    lines
}

fn is_informative(line: &str) -> bool {
    let l = line.trim();
    !(l.is_empty()
        || (l.starts_with("sim: ") && l.contains("replay:"))
        || l.starts_with("sim: replay with:")
        || l.starts_with("sim: assertion (the test body panicked)")
        || l.starts_with("note: run with `RUST_BACKTRACE")
        || l.starts_with("note: Some details are omitted"))
}

/// A line of test output, made stable across runs and machines (no thread
/// ids, no absolute paths) and cut to a readable length.
fn shorten(line: &str) -> String {
    const MAX: usize = 300;
    let line = normalize(line);
    if line.len() <= MAX {
        return line;
    }
    let mut end = MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

fn normalize(line: &str) -> String {
    let mut s = line.to_string();
    // Absolute paths: the workspace, the registry, the standard library.
    let root = format!("{}/", workspace_root().display());
    s = s.replace(&root, "");
    if let Some(i) = s.find("/registry/src/") {
        // ".../registry/src/<index>/tokio-1.54.1/src/x.rs" -> "tokio-1.54.1/src/x.rs"
        let start = s[..i].rfind([' ', '\'', '"', '(']).map_or(0, |j| j + 1);
        let after = &s[i + "/registry/src/".len()..];
        if let Some(slash) = after.find('/') {
            s = format!("{}{}", &s[..start], &after[slash + 1..]);
        }
    }
    while let Some(i) = s.find("/rustc/") {
        let hash_end = i + "/rustc/".len() + 40;
        if s.len() <= hash_end || !s[i + 7..hash_end].bytes().all(|b| b.is_ascii_hexdigit()) {
            break;
        }
        s = format!("{}<rustc>{}", &s[..i], &s[hash_end..]);
    }
    // "thread 'name' (12345) panicked" -> "thread 'name' panicked"
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(i) = rest.find("' (") {
        let (head, tail) = rest.split_at(i + 1);
        out.push_str(head);
        let digits = tail[2..].bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[2 + digits..].starts_with(") ") {
            rest = &tail[2 + digits + 1..];
        } else {
            rest = tail;
            out.push_str(&rest[..1]);
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Verdicts and failure excerpts from libtest's default ("pretty") output.
fn parse_libtest(text: &str) -> BTreeMap<String, Verdict> {
    let mut v = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, result)) = rest.split_once(" ... ") else {
            continue;
        };
        let name = name.strip_suffix(" - should panic").unwrap_or(name);
        let verdict = match result.split([',', ' ']).next().unwrap_or("") {
            "ok" => Verdict::Passed,
            "ignored" => Verdict::Ignored,
            "FAILED" => Verdict::Failed(Vec::new()),
            _ => continue,
        };
        v.insert(name.to_string(), verdict);
    }
    // Failure sections: "---- name stdout ----" up to the next header or
    // the closing "failures:" list.
    let mut current: Option<(String, Vec<String>)> = None;
    let mut flush = |cur: &mut Option<(String, Vec<String>)>| {
        if let Some((n, lines)) = cur.take() {
            if let Some(Verdict::Failed(l)) = v.get_mut(&n) {
                *l = lines;
            }
        }
    };
    for line in text.lines() {
        if let Some(h) = line
            .strip_prefix("---- ")
            .and_then(|h| h.strip_suffix(" stdout ----"))
        {
            flush(&mut current);
            current = Some((h.to_string(), Vec::new()));
        } else if line == "failures:" {
            flush(&mut current);
        } else if let Some((_, lines)) = current.as_mut() {
            if lines.len() < 8 && is_informative(line) {
                lines.push(shorten(line));
            }
        }
    }
    flush(&mut current);
    v
}

// ---------------------------------------------------------------------------
// Reading the test sources.

/// Whether the file's own `#![cfg]` needs `tokio_unstable`.
fn is_unstable_only(source: &str) -> bool {
    let mut attr = String::new();
    let mut inside = false;
    for line in source.lines() {
        let l = line.trim();
        if l.starts_with("#![cfg(") {
            inside = true;
            attr.clear();
        }
        if inside {
            attr.push_str(l);
            if l.ends_with(")]") {
                inside = false;
                if attr.contains("tokio_unstable") && !attr.contains("not(tokio_unstable") {
                    return true;
                }
            }
        }
    }
    false
}

/// The line of the test function (the last segment of the test's path).
fn test_line(source: &str, test: &str) -> Option<usize> {
    let f = test.rsplit("::").next()?;
    let needle = format!("fn {f}(");
    source
        .lines()
        .position(|l| l.contains(&needle))
        .map(|i| i + 1)
}

/// A rough count of a file's tests (only used when it compiles neither
/// against sim-runtime nor against real Tokio).
fn count_test_attributes(source: &str) -> usize {
    source
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("#[test]")
                || l.starts_with("#[tokio::test")
                || l.starts_with("#[maybe_tokio_test")
        })
        .count()
}

// ---------------------------------------------------------------------------
// Explanations.

/// A known cause of failures, from `compat/reasons.txt`.
struct Cause {
    id: String,
    text: String,
    patterns: Vec<String>,
}

struct Reasons {
    causes: Vec<Cause>,
}

impl Reasons {
    /// The format: a line `[id] text` opens a cause; the non-empty lines
    /// after it are patterns: `file` (every test of it), `file::path`
    /// (one test), `file::prefix*`. `#` starts a comment line. The first
    /// cause with a matching pattern wins.
    fn load(path: &Path) -> Result<Reasons> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io_context(path)(e)),
        };
        let mut causes: Vec<Cause> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            if let Some(rest) = l.strip_prefix('[') {
                let (id, text) = rest.split_once(']').ok_or_else(|| {
                    Error::Failed(format!(
                        "{}:{}: `[id] text` expected",
                        path.display(),
                        i + 1
                    ))
                })?;
                causes.push(Cause {
                    id: id.trim().to_string(),
                    text: text.trim().to_string(),
                    patterns: Vec::new(),
                });
            } else if let Some(c) = causes.last_mut() {
                if line.starts_with(char::is_whitespace) && c.patterns.is_empty() {
                    // A continuation of the cause's text.
                    c.text.push(' ');
                    c.text.push_str(l);
                } else {
                    c.patterns.push(l.to_string());
                }
            } else {
                return Err(Error::Failed(format!(
                    "{}:{}: a pattern before the first `[id] text` line",
                    path.display(),
                    i + 1
                )));
            }
        }
        Ok(Reasons { causes })
    }

    fn matches(pattern: &str, file: &str, test: Option<&str>) -> bool {
        match pattern.split_once("::") {
            None => pattern == file,
            Some((f, t)) => {
                f == file
                    && test.is_some_and(|test| match t.strip_suffix('*') {
                        Some(prefix) => test.starts_with(prefix),
                        None => test == t,
                    })
            }
        }
    }

    fn cause_of(&self, file: &str, test: Option<&str>) -> Option<usize> {
        self.causes
            .iter()
            .position(|c| c.patterns.iter().any(|p| Reasons::matches(p, file, test)))
    }

    /// Patterns that explain nothing in this report.
    fn unused(&self, report: &Report) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.causes {
            for p in &c.patterns {
                let used = report.files.iter().any(|f| {
                    f.tests.iter().any(|t| {
                        t.verdict.is_failure() && Reasons::matches(p, f.name, Some(&t.name))
                    }) || (f.estimated_total.is_some() && Reasons::matches(p, f.name, None))
                });
                if !used {
                    out.push(format!("[{}] {p}", c.id));
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// The report.

struct TestReport {
    name: String,
    verdict: Verdict,
    line: Option<usize>,
    cause: Option<usize>,
    /// The verdict with real Tokio (with --baseline).
    real: Option<Verdict>,
}

struct FileReport {
    name: &'static str,
    group: Group,
    compile_errors: Vec<String>,
    /// Set when the test list is unknown (compiled nowhere).
    estimated_total: Option<usize>,
    crash: Option<String>,
    tests: Vec<TestReport>,
    unstable_only: bool,
}

impl FileReport {
    fn total(&self) -> usize {
        self.estimated_total.unwrap_or(self.tests.len())
    }
    fn passed(&self) -> usize {
        self.count(|v| *v == Verdict::Passed)
    }
    fn ignored(&self) -> usize {
        self.count(|v| *v == Verdict::Ignored)
    }
    fn failed(&self) -> usize {
        self.total() - self.passed() - self.ignored()
    }
    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.tests.iter().filter(|t| f(&t.verdict)).count()
    }

    fn note(&self, reasons: &Reasons) -> String {
        let mut notes = Vec::new();
        if self.unstable_only {
            notes.push("the whole file is `cfg(tokio_unstable)`: no tests".to_string());
        }
        if !self.compile_errors.is_empty() {
            let why = reasons
                .cause_of(self.name, None)
                .map(|i| format!(" — [{}]", reasons.causes[i].id))
                .unwrap_or_default();
            let shown: Vec<String> = self
                .compile_errors
                .iter()
                .take(3)
                .map(|e| format!("`{}`", e.replace('`', "'")))
                .collect();
            let more = self.compile_errors.len().saturating_sub(3);
            notes.push(format!(
                "does not compile{why}: {}{}",
                shown.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if self.estimated_total.is_some() {
            notes.push("total estimated from its test attributes".into());
        }
        if let Some(c) = &self.crash {
            notes.push(format!(
                "the binary {c} (the run resumed after the test concerned)"
            ));
        }
        if self.compile_errors.is_empty() && self.failed() > 0 {
            let mut ids: Vec<String> = Vec::new();
            for t in self.tests.iter().filter(|t| t.verdict.is_failure()) {
                let id = t
                    .cause
                    .map(|i| reasons.causes[i].id.clone())
                    .unwrap_or_else(|| "unknown".into());
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            notes.push(format!("failures: [{}]", ids.join("], [")));
        }
        notes.join("; ")
    }
}

struct Report {
    tokio_version: String,
    seeds: Option<String>,
    files: Vec<FileReport>,
    baseline: bool,
}

impl Report {
    /// (passed, total less ignored).
    fn totals(&self) -> (usize, usize) {
        let passed = self.files.iter().map(FileReport::passed).sum();
        let counted = self.files.iter().map(|f| f.total() - f.ignored()).sum();
        (passed, counted)
    }

    fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n{:<24} {:<8} {:>6} {:>6} {:>7} {:>6}",
            "file", "module", "passed", "failed", "ignored", "total"
        );
        for f in &self.files {
            let _ = writeln!(
                s,
                "{:<24} {:<8} {:>6} {:>6} {:>7} {:>6}{}",
                f.name,
                f.group.name(),
                f.passed(),
                f.failed(),
                f.ignored(),
                f.total(),
                if !f.compile_errors.is_empty() {
                    "  (does not compile)"
                } else if f.crash.is_some() {
                    "  (binary crashed or hung)"
                } else {
                    ""
                }
            );
        }
        let (passed, counted) = self.totals();
        let ignored: usize = self.files.iter().map(FileReport::ignored).sum();
        let total: usize = self.files.iter().map(FileReport::total).sum();
        let _ = writeln!(
            s,
            "{:<24} {:<8} {:>6} {:>6} {:>7} {:>6}",
            "TOTAL",
            "",
            passed,
            counted - passed,
            ignored,
            total
        );
        let _ = writeln!(
            s,
            "\n{passed} of {counted} tests pass ({:.1}%)",
            ratio(passed, counted) * 100.0
        );
        s
    }

    fn markdown(&self, reasons: &Reasons) -> String {
        let mut s = String::new();
        let (passed, counted) = self.totals();
        let ignored: usize = self.files.iter().map(FileReport::ignored).sum();
        let _ = writeln!(s, "# Tokio's own tests under simulation\n");
        let _ = writeln!(
            s,
            "Generated by `cargo xtask compat` on {} with tokio {} (the `tests/` \
             directory of the crate package that `Cargo.lock` resolves), {}, seeds: {}. \
             Do not edit by hand: explanations of failures live in `compat/reasons.txt`.\n",
            today(),
            self.tokio_version,
            rustc_version(),
            self.seeds
                .as_deref()
                .map(|s| format!("`SIM_SEEDS={s}`"))
                .unwrap_or_else(|| "the default seed".into())
        );
        let _ = writeln!(
            s,
            "Each selected file is copied unchanged into a generated crate \
             (`target/compat/`) whose `tokio` dependency is \
             `{{ package = \"sim-runtime\", features = [\"full\", \"test-util\"] }}`, \
             built with `RUSTFLAGS=\"--cfg simulation\"` (not `tokio_unstable`), and \
             run. A file that does not compile counts all its tests as failed (its \
             tests are counted by building it against real Tokio).\n"
        );
        let _ = writeln!(
            s,
            "**{passed} of {counted} tests pass ({:.1}%)**{}.\n",
            ratio(passed, counted) * 100.0,
            if ignored > 0 {
                format!(", {ignored} ignored tests not counted")
            } else {
                String::new()
            }
        );

        // By module.
        let _ = writeln!(s, "| module | files | passed | total | rate |");
        let _ = writeln!(s, "| --- | ---: | ---: | ---: | ---: |");
        let mut groups: BTreeMap<Group, (usize, usize, usize)> = BTreeMap::new();
        for f in &self.files {
            let g = groups.entry(f.group).or_default();
            g.0 += 1;
            g.1 += f.passed();
            g.2 += f.total() - f.ignored();
        }
        for (g, (n, p, t)) in &groups {
            let _ = writeln!(
                s,
                "| {} | {n} | {p} | {t} | {:.1}% |",
                g.name(),
                ratio(*p, *t) * 100.0
            );
        }

        // By file.
        let _ = writeln!(s, "\n## By file\n");
        if self.baseline {
            let _ = writeln!(s, "| file | passed | total | real Tokio | notes |");
            let _ = writeln!(s, "| --- | ---: | ---: | ---: | --- |");
        } else {
            let _ = writeln!(s, "| file | passed | total | notes |");
            let _ = writeln!(s, "| --- | ---: | ---: | --- |");
        }
        for f in &self.files {
            let mut total = f.total().to_string();
            if f.ignored() > 0 {
                let _ = write!(total, " ({} ignored)", f.ignored());
            }
            let real = if self.baseline {
                let p = f
                    .tests
                    .iter()
                    .filter(|t| t.real == Some(Verdict::Passed))
                    .count();
                format!(" {p} |")
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} |{real} {} |",
                f.name,
                f.passed(),
                total,
                f.note(reasons).replace('|', "\\|")
            );
        }

        // Failures by cause.
        let mut by_cause: BTreeMap<Option<usize>, Vec<(&FileReport, &TestReport)>> =
            BTreeMap::new();
        for f in &self.files {
            for t in f.tests.iter().filter(|t| t.verdict.is_failure()) {
                by_cause.entry(t.cause).or_default().push((f, t));
            }
        }
        let mut order: Vec<(Option<usize>, usize)> =
            by_cause.iter().map(|(c, v)| (*c, v.len())).collect();
        // Known causes by how many tests each would fix; unknown last.
        order.sort_by_key(|(c, n)| (c.is_none(), std::cmp::Reverse(*n), *c));
        let _ = writeln!(s, "\n## Failures by cause\n");
        let _ = writeln!(
            s,
            "Sorted by the number of tests each cause accounts for; the causes \
             and their ids are in `compat/reasons.txt`.\n"
        );
        let _ = writeln!(s, "| cause | tests |");
        let _ = writeln!(s, "| --- | ---: |");
        for (cause, n) in &order {
            let id = match cause {
                Some(i) => format!("[{}]", reasons.causes[*i].id),
                None => "unknown (not analysed yet)".into(),
            };
            let _ = writeln!(s, "| {id} | {n} |");
        }
        let _ = writeln!(
            s,
            "\nA test is `file::path` (its function at `tests/file.rs:line`), \
             then the first lines of its failure.\n"
        );
        let uncounted: Vec<&FileReport> = self
            .files
            .iter()
            .filter(|f| f.estimated_total.is_some())
            .collect();
        for (cause, n) in order {
            let title = match cause {
                Some(i) => format!("[{}] {}", reasons.causes[i].id, reasons.causes[i].text),
                None => "unknown (not analysed yet)".to_string(),
            };
            let _ = writeln!(
                s,
                "### {n} test{}: {title}\n",
                if n == 1 { "" } else { "s" }
            );
            for (f, t) in &by_cause[&cause] {
                let at = t
                    .line
                    .map(|l| format!(" (`tests/{}.rs:{l}`)", f.name))
                    .unwrap_or_default();
                let real = match &t.real {
                    Some(v) if v.is_failure() => " — fails with real Tokio too",
                    _ => "",
                };
                let excerpt = match &t.verdict {
                    Verdict::Failed(lines) if !f.compile_errors.is_empty() => {
                        let _ = lines;
                        String::from("does not compile")
                    }
                    Verdict::Failed(lines) => lines
                        .iter()
                        .map(|l| l.trim().replace('`', "'"))
                        .collect::<Vec<_>>()
                        .join(" ⏎ "),
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "- `{}::{}`{at}{real}: {}",
                    f.name,
                    t.name,
                    if excerpt.is_empty() {
                        "(no output)".to_string()
                    } else {
                        format!("`{excerpt}`")
                    }
                );
            }
            let _ = writeln!(s);
        }
        if !uncounted.is_empty() {
            let _ = writeln!(s, "### Files that compile nowhere (tests not listed)\n");
            for f in uncounted {
                let _ = writeln!(
                    s,
                    "- `{}`: about {} tests; {}",
                    f.name,
                    f.total(),
                    f.note(reasons)
                );
            }
            let _ = writeln!(s);
        }

        let _ = writeln!(s, "## Not applicable\n");
        for (f, why) in NOT_APPLICABLE {
            let _ = writeln!(s, "- `{f}`: {why}.");
        }
        let _ = writeln!(s, "\n## Not selected\n\n{NOT_SELECTED}\n");
        let _ = writeln!(
            s,
            "## Reproducing\n\n\
             - Everything: `cargo xtask compat` (`--baseline` also runs the files \
             against real Tokio; `--seeds 0..20` runs every simulated test on 20 seeds).\n\
             - Some files: `cargo xtask compat --only time_sleep,task_abort` (writes \
             `target/compat/report.md`).\n\
             - One test, by hand: `cd target/compat && RUSTFLAGS=\"--cfg simulation\" \
             CARGO_TARGET_DIR=../compat-target/sim cargo test --test time_sleep -- \
             <name> --exact`. Outputs of the last run are in `target/compat/logs/`."
        );
        s
    }
}

fn rustc_version() -> String {
    Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| "rustc (version unknown)".into())
}

/// Today's UTC date, `YYYY-MM-DD`.
fn today() -> String {
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

    #[test]
    fn libtest_output() {
        let out = "\nrunning 4 tests\n\
            test a::one ... ok\n\
            test two - should panic ... ok\n\
            test three ... ignored, slow\n\
            test four ... FAILED\n\
            test five has been running for over 60 seconds\n\
            \nfailures:\n\n---- four stdout ----\n\
            sim: four seed 0 · replay: SIM_SEED=0 cargo test\n\n\
            thread 'four' panicked at tests/x.rs:3:5:\nboom\n\
            note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\n\
            failures:\n    four\n\ntest result: FAILED. 2 passed; 1 failed; 1 ignored\n";
        let v = parse_libtest(out);
        assert_eq!(v["a::one"], Verdict::Passed);
        assert_eq!(v["two"], Verdict::Passed);
        assert_eq!(v["three"], Verdict::Ignored);
        assert_eq!(
            v["four"],
            Verdict::Failed(vec![
                "thread 'four' panicked at tests/x.rs:3:5:".into(),
                "boom".into()
            ])
        );
        assert!(!v.contains_key("five"));
    }

    #[test]
    fn normalized_lines() {
        let root = workspace_root().display().to_string();
        assert_eq!(
            normalize(&format!(
                "thread 'a::b' (14627) panicked at {root}/sim-runtime/src/x.rs:1:2:"
            )),
            "thread 'a::b' panicked at sim-runtime/src/x.rs:1:2:"
        );
        assert_eq!(
            normalize(
                "panicked at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/\
                 tokio-1.54.1/src/sync/mpsc/bounded.rs:993:28:"
            ),
            "panicked at tokio-1.54.1/src/sync/mpsc/bounded.rs:993:28:"
        );
        assert_eq!(
            normalize(
                "at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/time.rs:4:3"
            ),
            "at <rustc>/library/std/src/time.rs:4:3"
        );
        assert_eq!(normalize("x' (y) z' (1)"), "x' (y) z' (1)");
    }

    #[test]
    fn reason_patterns() {
        assert!(Reasons::matches("rt_common", "rt_common", Some("a::b")));
        assert!(Reasons::matches("rt_common", "rt_common", None));
        assert!(Reasons::matches("t::a::*", "t", Some("a::b")));
        assert!(!Reasons::matches("t::a::*", "t", Some("b::a")));
        assert!(Reasons::matches("t::x", "t", Some("x")));
        assert!(!Reasons::matches("t::x", "t", Some("xy")));
        assert!(!Reasons::matches("t::x", "u", Some("x")));
    }

    #[test]
    fn unstable_files() {
        assert!(is_unstable_only(
            "#![cfg(all(tokio_unstable, feature = \"tracing\"))]\nuse x;"
        ));
        assert!(is_unstable_only(
            "#![warn(x)]\n#![cfg(all(\n    tokio_unstable,\n    feature = \"full\"\n))]\n"
        ));
        assert!(!is_unstable_only(
            "#![cfg(feature = \"full\")]\n#[cfg(tokio_unstable)]\nfn a() {}"
        ));
    }

    #[test]
    fn every_selected_file_is_named_once() {
        let mut seen = BTreeSet::new();
        for f in all_named_files() {
            assert!(seen.insert(f), "{f} listed twice");
        }
    }
}
