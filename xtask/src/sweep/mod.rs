//! `cargo xtask sweep`: every example's passing `#[sim::test]`, over many
//! seeds.
//!
//! `cargo test` runs each example test over the few seeds its attribute
//! names; this command runs each over seeds `0..N` (default 100,000) in a
//! release build under `--cfg simulation`, with the determinism self-check
//! on (each seed twice, compared decision by decision) and every core busy.
//! From the harness's report it takes how many seeds failed, the first, its
//! strategy and class, and the replay command; it writes the table to
//! `docs/sweep.md` (or `--out`) and fails if a test failed or was
//! nondeterministic. It is opt-in (not part of `cargo xtask ci`): at the
//! default 100,000 seeds it runs for a quarter of an hour or more.
//!
//! The tests are one explicit list, [`TESTS`]; a unit test checks it
//! against the `#[sim::test]`s in `examples/*/tests/*.rs`, so a new example
//! test cannot be left out.

use crate::cmd::{cargo_sim, sim_cargo, unsteered, Mode};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "\
usage: cargo xtask sweep [--seeds N] [--jobs J] [--only PACKAGE]... [--out PATH]

  --seeds N       seeds per test, 0..N (default 100000)
  --jobs J        seeds run at once, SIM_JOBS (default: the cores available)
  --only PACKAGE  sweep only this example package's tests (repeatable)
  --out PATH      where the markdown goes, from the workspace root
                  (default docs/sweep.md)
";

mod list;
use list::{Test, FAIL_BY_DESIGN, NOT_SWEPT, OPT_IN, TESTS};

/// Lines of a failure's report kept in the markdown, before the trace.
const REPORT_LINES: usize = 12;

/// What the command line asked for.
struct Options {
    seeds: u64,
    jobs: usize,
    only: Vec<String>,
    out: PathBuf,
    /// The command as typed, for the markdown.
    command: String,
}

/// How one test's sweep ended.
#[derive(Debug, Default)]
struct Outcome {
    /// Seeds the harness ran.
    seeds: u64,
    /// Seeds that failed.
    failed: u64,
    first: Option<u64>,
    strategy: String,
    /// The first failure's class was `nondeterminism`, or its rerun did
    /// not reproduce it.
    nondeterministic: bool,
    /// The report's first lines, up to the trace.
    head: Vec<String>,
    reproduced: String,
    replay: String,
    /// Set when the test did not run to a verdict (a build error, a crash
    /// of the test binary, no test matching the name): what went wrong.
    broken: Option<String>,
    wall: Duration,
    /// Where the child's output was kept.
    log: PathBuf,
}

impl Outcome {
    fn ok(&self) -> bool {
        self.broken.is_none() && self.failed == 0 && !self.nondeterministic
    }

    fn seeds_per_sec(&self) -> f64 {
        self.seeds as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

pub fn main(args: &[String]) -> Result<(), crate::Error> {
    let Some(opts) = parse_args(args)? else {
        print!("{USAGE}");
        return Ok(());
    };
    run(&opts).map_err(crate::Error::Failed)
}

/// The options, or `None` for `--help`.
fn parse_args(args: &[String]) -> Result<Option<Options>, crate::Error> {
    let usage = |msg: String| crate::Error::Usage(format!("{msg}\n{USAGE}"));
    let number = |flag: &str, v: Option<&String>, example: &str| {
        v.and_then(|v| v.replace('_', "").parse::<u64>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                usage(format!(
                    "{flag} takes a whole number ≥ 1, e.g. `{flag} {example}` (got {})",
                    v.map_or("nothing".into(), |v| format!("`{v}`"))
                ))
            })
    };
    let mut opts = Options {
        seeds: 100_000,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        only: Vec::new(),
        out: crate::cmd::root().join("docs").join("sweep.md"),
        command: std::iter::once("cargo xtask sweep")
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seeds" => opts.seeds = number("--seeds", it.next(), "100000")?,
            "--jobs" => opts.jobs = number("--jobs", it.next(), "4")? as usize,
            "--only" => {
                let p = it
                    .next()
                    .ok_or_else(|| usage("--only takes a package name".into()))?;
                if !TESTS.iter().any(|t| t.package == p) {
                    return Err(usage(format!(
                        "--only {p}: no swept test is in package `{p}`; the packages are: {}",
                        packages(TESTS).join(", ")
                    )));
                }
                opts.only.push(p.clone());
            }
            "--out" => {
                // Relative to the workspace root, wherever cargo runs.
                opts.out = crate::cmd::root().join(
                    it.next()
                        .ok_or_else(|| usage("--out takes a path".into()))?,
                );
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(usage(format!("unknown option `{other}`"))),
        }
    }
    Ok(Some(opts))
}

/// The distinct packages of `tests`, in order.
fn packages(tests: &[Test]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for t in tests {
        if !out.contains(&t.package) {
            out.push(t.package);
        }
    }
    out
}

fn run(opts: &Options) -> Result<(), String> {
    let started = Instant::now();
    let tests: Vec<Test> = TESTS
        .iter()
        .copied()
        .filter(|t| opts.only.is_empty() || opts.only.iter().any(|p| p == t.package))
        .collect();
    let logs = crate::cmd::root().join("target").join("sweep");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;

    // Each package is built on its own, exactly as its tests are run
    // below (one package per cargo command, so its features are unified
    // the same way): the runs then find everything fresh and their wall
    // time is the sweep's alone.
    if tests.iter().any(|t| t.graph) {
        crate::cmd::build_cargo_sim()?;
    }
    for graph in [false, true] {
        for package in packages(&tests) {
            let mut args = vec!["test", "--release", "--no-run", "-p", package];
            for t in tests
                .iter()
                .filter(|t| t.package == package && t.graph == graph)
            {
                if !args.contains(&t.target) {
                    args.extend(["--test", t.target]);
                }
            }
            if args.len() == 5 {
                continue;
            }
            if graph {
                crate::cmd::status(
                    &mut graph_cargo(&args),
                    &format!("cargo sim build of {package}"),
                )?;
            } else {
                crate::cmd::run(Mode::Simulation, "build", &args)?;
            }
        }
    }

    // The markdown's total leaves the builds out, like each test's time.
    let sweeping = Instant::now();
    eprintln!(
        "\n==> sweep: {} test(s), seeds 0..{}, SIM_JOBS={}, determinism check on",
        tests.len(),
        opts.seeds,
        opts.jobs
    );
    let mut results = Vec::new();
    for t in &tests {
        let o = sweep(t, opts, &logs)?;
        println!("{}", line(t, &o));
        results.push((*t, o));
    }

    let md = markdown(opts, &results, sweeping.elapsed());
    crate::cmd::write_file(&opts.out, &md)?;
    println!(
        "wrote {} ({} s)",
        opts.out.display(),
        started.elapsed().as_secs()
    );
    let bad: Vec<String> = results
        .iter()
        .filter(|(_, o)| !o.ok())
        .map(|(t, o)| format!("{}: {}", label(t), verdict(o)))
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the sweep found problems (details in {}):\n  {}",
            opts.out.display(),
            bad.join("\n  ")
        ))
    }
}

/// `package target::name`, for messages.
fn label(t: &Test) -> String {
    format!("{} {}::{}", t.package, t.target, t.name)
}

/// The progress line for one test.
fn line(t: &Test, o: &Outcome) -> String {
    format!(
        "sweep: {}: {} seeds, {}, {:.1} s, {:.1} seeds/s",
        label(t),
        o.seeds,
        verdict(o),
        o.wall.as_secs_f64(),
        o.seeds_per_sec()
    )
}

/// "passed", "3 failed (first: seed 17, strategy pct3)", …
fn verdict(o: &Outcome) -> String {
    if let Some(why) = &o.broken {
        return format!("did not run to a verdict: {why}");
    }
    if o.failed == 0 {
        return "passed".into();
    }
    let mut s = format!("{} failed", o.failed);
    if let Some(first) = o.first {
        let _ = write!(s, " (first: seed {first}, strategy {})", o.strategy);
    }
    if o.nondeterministic {
        s.push_str(", NONDETERMINISTIC");
    }
    s
}

/// Sweeps one test; its output is kept under `target/sweep/`.
fn sweep(t: &Test, opts: &Options, logs: &Path) -> Result<Outcome, String> {
    let command = if t.graph { graph_cargo } else { sim_cargo };
    let mut cmd = command(&[
        "test",
        "--release",
        "-p",
        t.package,
        "--test",
        t.target,
        "--",
        t.name,
        "--exact",
    ]);
    cmd.env("SIM_SEEDS", format!("0..{}", opts.seeds))
        .env("SIM_CHECK_DETERMINISM", "1")
        .env("SIM_JOBS", opts.jobs.to_string());
    let stem = format!("{}.{}.{}", t.package, t.target, t.name);
    let (stdout, stderr) = (
        logs.join(format!("{stem}.stdout")),
        logs.join(format!("{stem}.stderr")),
    );
    eprintln!(
        "==> sweep: {} (output: {})",
        label(t),
        stdout.with_extension("*").display()
    );
    let file = |p: &Path| File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    cmd.stdin(Stdio::null())
        .stdout(file(&stdout)?)
        .stderr(file(&stderr)?);
    // No deadline, and a plain wait rather than proc's polling one (whose
    // sleeps would blur a short sweep's time): a sweep's length grows with
    // --seeds, and the harness's own time and step limits end a seed that
    // runs away in virtual time.
    let start = Instant::now();
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run cargo for {}: {e}", label(t)))?;
    let finished = crate::proc::Finished {
        status: Some(status),
        elapsed: start.elapsed(),
        stalled: None,
    };
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let text = format!("{}{}", read(&stdout)?, read(&stderr)?);
    let mut o = parse(
        &text,
        t.name,
        opts.seeds,
        status.success(),
        &finished.describe(),
    );
    if let (Some(broken), false) = (&mut o.broken, status.success()) {
        in_flight(&text, t.name, broken);
    }
    o.wall = finished.elapsed;
    o.log = stdout;
    Ok(o)
}

/// Adds to `broken` the seeds a sweep that died was running, from its
/// log of the seeds it started and ended.
fn in_flight(text: &str, name: &str, broken: &mut String) {
    let Some(path) = crate::harness_report::seeds_log(text, name) else {
        return;
    };
    match std::fs::read_to_string(&path) {
        Ok(log) => {
            let seeds = crate::harness_report::in_flight(&log, name);
            if !seeds.is_empty() {
                broken.push_str("\nseed(s) running when it ended:");
                for l in seeds {
                    broken.push_str("\n  ");
                    broken.push_str(l);
                }
            }
        }
        Err(e) => broken.push_str(&format!("\n(the seeds' log {}: {e})", path.display())),
    }
}

/// `cargo sim <args>` (the whole graph simulated), with cargo-sim built
/// from this checkout, `unsteered`: the caller's shell cannot change what
/// is swept (the sweep sets `SIM_SEEDS`, `SIM_JOBS` and
/// `SIM_CHECK_DETERMINISM` itself).
fn graph_cargo(args: &[&str]) -> Command {
    unsteered(cargo_sim(args))
}

/// What the output of one test's run says. `passed` is whether cargo
/// exited with success; `exit` describes how it exited.
fn parse(text: &str, name: &str, seeds: u64, passed: bool, exit: &str) -> Outcome {
    let Some(report) = crate::harness_report::parse(text, name) else {
        // A pass counts only if libtest ran exactly this test: a name
        // that matches nothing also exits with success.
        let ran = text.contains(&format!("test {name} ... ok"))
            && text.contains("test result: ok. 1 passed");
        let lines: Vec<&str> = text.lines().collect();
        return Outcome {
            seeds,
            broken: (!passed || !ran).then(|| {
                let tail = lines[lines.len().saturating_sub(15)..].join("\n");
                if passed {
                    format!("the test `{name}` did not run (its name matched nothing?):\n{tail}")
                } else {
                    format!("{exit}, with no report from the harness:\n{tail}")
                }
            }),
            ..Outcome::default()
        };
    };
    let r = match report {
        Ok(r) if r.failed > 0 => r,
        Ok(r) => {
            return Outcome {
                seeds: r.total,
                broken: Some(format!("malformed report line: {}", r.head[0])),
                ..Outcome::default()
            }
        }
        Err(e) => {
            return Outcome {
                seeds,
                broken: Some(e),
                ..Outcome::default()
            }
        }
    };
    let mut head = r.head;
    head.truncate(REPORT_LINES);
    Outcome {
        seeds: r.total,
        failed: r.failed,
        first: r.first,
        nondeterministic: r.class == "nondeterminism" || r.reproduced.starts_with("NO"),
        broken: r
            .replay
            .is_empty()
            .then(|| "the harness's report has no replay line".into()),
        strategy: r.strategy,
        head,
        reproduced: r.reproduced,
        replay: r.replay,
        ..Outcome::default()
    }
}

fn markdown(opts: &Options, results: &[(Test, Outcome)], elapsed: Duration) -> String {
    let commit = match crate::cmd::commit(&[&opts.out]) {
        Some((c, true)) => format!("`{c}` (with uncommitted changes)"),
        Some((c, false)) => format!("`{c}`"),
        None => "an unknown commit".into(),
    };
    let mut s = String::new();
    let _ = writeln!(s, "# The examples' tests, swept long\n");
    let _ = writeln!(
        s,
        "Written by `{}` at commit {commit}, on this machine ({} s in all; builds not counted). \
         Each example's `#[sim::test]` that should pass ran over seeds 0..{} in a release build \
         under `--cfg simulation` with the determinism self-check on, {} seeds at a time: \
         `SIM_SEEDS=0..{} SIM_CHECK_DETERMINISM=1 SIM_JOBS={} RUSTFLAGS=\"--cfg simulation\" \
         cargo test --release -p <package> --test <target> -- <name> --exact`, every other \
         `SIM_*` variable cleared. With the check on each seed runs twice and the two runs are \
         compared decision by decision, so *seeds/s* counts seeds, not runs. A failure's \
         strategy and class are its first failing seed's. Not swept: the tests of {}, which \
         fail by design, of {}, which pass but are too slow to sweep, and \
         of {}, outside the workspace (run by their own command).\n",
        opts.command,
        elapsed.as_secs(),
        opts.seeds,
        opts.jobs,
        opts.seeds,
        opts.jobs,
        FAIL_BY_DESIGN
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" and "),
        NOT_SWEPT
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" and "),
        OPT_IN
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    );
    let _ = writeln!(
        s,
        "| package | test | seeds | failures | seconds | seeds/s |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---:|---:|");
    for (t, o) in results {
        let failures = if o.broken.is_some() {
            "**did not run to a verdict**".to_string()
        } else if o.failed == 0 {
            "none".to_string()
        } else {
            let mut c = format!(
                "**{}** (first: seed {}, {})",
                o.failed,
                o.first.map_or("?".into(), |f| f.to_string()),
                o.strategy
            );
            if o.nondeterministic {
                c.push_str(", **nondeterministic**");
            }
            c
        };
        let _ = writeln!(
            s,
            "| {} | `{}::{}` | {} | {} | {:.1} | {:.1} |",
            t.package,
            t.target,
            t.name,
            o.seeds,
            failures,
            o.wall.as_secs_f64(),
            o.seeds_per_sec()
        );
    }
    let bad: Vec<&(Test, Outcome)> = results.iter().filter(|(_, o)| !o.ok()).collect();
    if !bad.is_empty() {
        let _ = writeln!(s, "\n## Failures");
        for (t, o) in bad {
            let _ = writeln!(s, "\n### {}\n", label(t));
            if let Some(why) = &o.broken {
                let _ = writeln!(s, "```text\n{why}\n```\n");
            } else {
                let _ = writeln!(s, "```text\n{}\n```\n", o.head.join("\n"));
                let _ = writeln!(s, "Reproduced when run again: {}\n", o.reproduced);
                // The harness prints a debug-build command; the seed's run
                // is the same in either build, and `--release` reuses the
                // sweep's.
                let _ = writeln!(
                    s,
                    "Replay: `{}` (add `--release` to reuse the sweep's build)\n",
                    o.replay
                );
            }
            let _ = writeln!(
                s,
                "The whole output: `{}` (and `.stderr`).",
                o.log
                    .strip_prefix(crate::cmd::root())
                    .unwrap_or(&o.log)
                    .display()
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The `#[sim::test]` functions of one test file: the name of the
    /// first `fn` after each attribute. Comment lines are skipped, so a
    /// doc comment that mentions the attribute is not a test.
    fn sim_tests(source: &str) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        let mut lines = source.lines().enumerate();
        while let Some((i, l)) = lines.next() {
            if !l.trim_start().starts_with("#[sim::test") {
                continue;
            }
            let name = lines.by_ref().find_map(|(_, l)| {
                let code = l.trim_start();
                if code.starts_with("//") {
                    return None;
                }
                let (_, rest) = code.split_once("fn ")?;
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                Some(name)
            });
            match name {
                Some(n) if !n.is_empty() => names.push(n),
                _ => {
                    return Err(format!(
                        "line {}: a #[sim::test] with no fn after it",
                        i + 1
                    ))
                }
            }
        }
        Ok(names)
    }

    /// `name = "…"` in a Cargo.toml's `[package]` table.
    fn package_name(manifest: &str) -> Option<String> {
        let mut in_package = false;
        for l in manifest.lines().map(str::trim) {
            if l.starts_with('[') {
                in_package = l == "[package]";
            } else if in_package {
                if let Some(v) = l.strip_prefix("name") {
                    let v = v.trim_start().strip_prefix('=')?.trim();
                    return Some(v.trim_matches('"').to_string());
                }
            }
        }
        None
    }

    #[test]
    fn the_list_names_every_example_sim_test() {
        let root = crate::cmd::root();
        let mut found: BTreeSet<Test> = BTreeSet::new();
        // Where each package's tests live, for the messages.
        let mut dirs: Vec<(String, PathBuf)> = Vec::new();
        let mut problems = Vec::new();
        let mut examples: Vec<PathBuf> = std::fs::read_dir(root.join("examples"))
            .expect("examples/ is readable")
            .map(|e| e.expect("examples/ lists").path())
            .collect();
        examples.sort();
        for dir in examples {
            let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
                continue;
            };
            let package = package_name(&manifest)
                .unwrap_or_else(|| panic!("{}/Cargo.toml has no package name", dir.display()));
            dirs.push((package.clone(), dir.join("tests")));
            let Ok(entries) = std::fs::read_dir(dir.join("tests")) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries
                .map(|e| e.expect("tests/ lists").path())
                .filter(|p| p.extension().is_some_and(|x| x == "rs"))
                .collect();
            files.sort();
            for file in files {
                let rel = file.strip_prefix(&root).unwrap().display().to_string();
                if FAIL_BY_DESIGN.contains(&rel.as_str())
                    || NOT_SWEPT.contains(&rel.as_str())
                    || OPT_IN.contains(&rel.as_str())
                {
                    continue;
                }
                let source = std::fs::read_to_string(&file).unwrap();
                let target = file.file_stem().unwrap().to_str().unwrap();
                match sim_tests(&source) {
                    Err(e) => problems.push(format!("{rel}: {e}")),
                    Ok(names) => {
                        for name in names {
                            let t = TESTS.iter().find(|t| {
                                t.package == package && t.target == target && t.name == name
                            });
                            match t {
                                Some(t) => {
                                    found.insert(*t);
                                }
                                None => problems.push(format!(
                                    "{rel}: `{name}` (package {package}, --test {target}) is a \
                                     #[sim::test] that xtask/src/sweep.rs does not sweep: add it \
                                     to TESTS, or its file to FAIL_BY_DESIGN if it fails by design"
                                )),
                            }
                        }
                    }
                }
            }
        }
        for t in TESTS {
            if !found.contains(t) {
                let place = dirs.iter().find(|(p, _)| p == t.package).map_or(
                    "no example has this package".into(),
                    |(_, d)| {
                        format!(
                            "{}/{}.rs",
                            d.strip_prefix(&root).unwrap().display(),
                            t.target
                        )
                    },
                );
                problems.push(format!(
                    "TESTS in xtask/src/sweep.rs names `{}` (package {}, --test {}), but {place} \
                     has no #[sim::test] of that name: remove it from TESTS or fix its name",
                    t.name, t.package, t.target
                ));
            }
        }
        for f in FAIL_BY_DESIGN {
            if !root.join(f).exists() {
                problems.push(format!(
                    "FAIL_BY_DESIGN in xtask/src/sweep.rs names {f}, which does not exist"
                ));
            }
        }
        for f in NOT_SWEPT {
            if !root.join(f).exists() {
                problems.push(format!(
                    "NOT_SWEPT in xtask/src/sweep.rs names {f}, which does not exist"
                ));
            }
        }
        for f in OPT_IN {
            if !root.join(f).exists() {
                problems.push(format!(
                    "OPT_IN in xtask/src/sweep.rs names {f}, which does not exist"
                ));
            }
        }
        let unique: BTreeSet<&Test> = TESTS.iter().collect();
        if unique.len() != TESTS.len() {
            problems.push("TESTS in xtask/src/sweep.rs names a test twice".into());
        }
        assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    }

    #[test]
    fn finds_the_fn_after_each_attribute_and_skips_comments() {
        let source = "\
//! A `#[sim::test]` in a doc comment is not a test.
#[sim::test(seeds = 0..30,
    check_determinism)]
// A comment that says fn nothing
async fn first() {}

#[sim::test]
#[allow(unused)]
async fn second_one() {}
";
        assert_eq!(sim_tests(source).unwrap(), ["first", "second_one"]);
        assert!(sim_tests("#[sim::test]\n").is_err());
    }

    #[test]
    fn reads_the_harness_report() {
        let text = "\
running 1 test
test acked ... FAILED

failures:

---- acked stdout ----
sim: acked: 300 seeds (0..300), 2 job(s) · a line per seed as it starts and ends (a crash's seed is the one never ended): /w/target/sim/acked/seeds.log

thread 'acked' panicked at sim-harness/src/simulation/run.rs:1:1:
sim: acked: 2 of 300 seed(s) failed: 3, 41
sim: first failure — seed 3 · strategy pct3+early · step 120 · virtual time 1.000000000s
sim: class: nondeterminism
    seed 3 made different decisions when run again
sim: trace: target/sim/acked/3.trace (5 line(s); the last 5:)
    step 1
sim: reproduced when run again: yes: the same failure with the same fingerprint (0x0000000000000001)
sim: replay: SIM_SEED=3 SIM_SCHEDULE=pct3 RUSTFLAGS=\"--cfg simulation\" cargo test -p kv --test sim -- acked --exact
";
        let o = parse(text, "acked", 300, false, "exit code 101");
        assert_eq!((o.failed, o.seeds, o.first), (2, 300, Some(3)));
        assert_eq!(o.head[0], "sim: acked: 2 of 300 seed(s) failed: 3, 41");
        assert_eq!(o.strategy, "pct3+early");
        assert!(o.nondeterministic);
        assert!(o.broken.is_none());
        assert_eq!(o.head.len(), 4);
        assert!(o.replay.starts_with("SIM_SEED=3 SIM_SCHEDULE=pct3 "));

        let passed = "running 1 test\ntest acked ... ok\n\ntest result: ok. 1 passed; 0 failed";
        assert!(parse(passed, "acked", 300, true, "exit code 0").ok());
        let none = "running 0 tests\n\ntest result: ok. 0 passed; 0 failed";
        assert!(parse(none, "acked", 300, true, "exit code 0")
            .broken
            .is_some());
        let crashed = "running 1 test\nerror: test failed, to rerun pass `--test sim`";
        assert!(
            parse(crashed, "acked", 300, false, "killed by signal 6 (SIGABRT)")
                .broken
                .is_some()
        );
    }

    #[test]
    fn malformed_numbers_say_what_to_write() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for bad in [&["--seeds", "1e5"][..], &["--seeds", "0"], &["--seeds"]] {
            match parse_args(&args(bad)) {
                Err(crate::Error::Usage(m)) => {
                    assert!(m.contains("--seeds takes a whole number ≥ 1, e.g. `--seeds 100000`"))
                }
                _ => panic!("{bad:?} was accepted"),
            }
        }
        assert!(matches!(
            parse_args(&args(&["--only", "nope"])),
            Err(crate::Error::Usage(m)) if m.contains("the packages are: echo,")
        ));
        let o = parse_args(&args(&["--seeds", "100_000", "--only", "echo"]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (o.seeds, o.only.as_slice()),
            (100_000, &["echo".to_string()][..])
        );
    }
}
