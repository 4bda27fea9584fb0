//! `cargo xtask bench`: the executor benchmark (`sim-runtime/benches/executor.rs`)
//! in both build modes, run alternately, summarised as a markdown table in
//! `docs/bench.md` and as JSON in `target/bench/executor.json`.
//!
//! Speed is measured here, by a release build of a benchmark binary, never by
//! timed tests.

use crate::ci::{cargo, root, Mode};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const USAGE: &str = "\
usage: cargo xtask bench [--runs N] [--seeds N] [--only WORKLOAD]... [--no-write]

Builds sim-runtime's `executor` bench in release, in simulation
(--cfg simulation, target/sim) and in production (real Tokio, --features
full,test-util, target/), then runs the two alternately, N times each (one
fresh process per run: a warm-up, then one measured run of every workload).
Prints the medians as a markdown table and, for a full run, writes it to
docs/bench.md and the samples to target/bench/executor.json.

  --runs N        measured runs per mode and workload (default 7, at least 5
                  for the written report)
  --seeds N       seeds of the `seeds` workload (default 20000)
  --only NAME     only this workload (spawn_yield, sleep, seeds, net_rt,
                  net_idle_2, net_idle_100, net_idle_1000); repeatable;
                  nothing is written
  --no-write      print the table only
";

/// Features of the production build: Tokio's runtime, timers and paused
/// clock (`test-util`, for the timer workloads).
const PROD_FEATURES: &str = "full,test-util";

struct Workload {
    name: &'static str,
    title: &'static str,
    unit: &'static str,
    /// What madsim/turmoil took, as measured in the issues (another machine).
    reference: &'static str,
    /// The target for the simulation.
    target: Target,
}

#[derive(Clone, Copy)]
enum Target {
    /// At most this much.
    Max(f64),
    /// At least this much.
    Min(f64),
    /// At most this many times the simulation's figure for that workload.
    Relative(&'static str, f64),
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "spawn_yield",
        title: "1. spawn 100,000 tasks × 10 `yield_now`, join all",
        unit: "ms",
        reference: "madsim ≈ 540 ms",
        target: Target::Max(110.0),
    },
    Workload {
        name: "sleep",
        title: "2. 1,000 tasks × 1,000 sequential `sleep(1 ms)`",
        unit: "ms",
        reference: "madsim ≈ 190 ms",
        target: Target::Max(60.0),
    },
    Workload {
        name: "seeds",
        title: "3. one tiny simulation per seed (runtime + 1 task × 10 `sleep(1 ms)`)",
        unit: "us/seed",
        reference: "madsim ≈ 98 µs/seed",
        target: Target::Max(10.0),
    },
    Workload {
        name: "net_rt",
        title:
            "4. 10,000 TCP round trips of 64 B between two nodes (zero latency; Tokio: loopback)",
        unit: "ms",
        reference: "madsim ≈ 16 ms, turmoil ≈ 26–42 ms",
        target: Target::Max(5.0),
    },
    Workload {
        name: "net_idle_2",
        title: "5a. one round trip with 2 idle nodes present (each waiting in `accept`)",
        unit: "us/rt",
        reference: "turmoil ≈ 6.4 µs/step (2 hosts)",
        target: Target::Relative("net_idle_2", 1.0),
    },
    Workload {
        name: "net_idle_100",
        title: "5b. … with 100 idle nodes",
        unit: "us/rt",
        reference: "—",
        target: Target::Relative("net_idle_2", 2.0),
    },
    Workload {
        name: "net_idle_1000",
        title: "5c. … with 1,000 idle nodes",
        unit: "us/rt",
        reference: "turmoil ≈ 21 ms/step (202 hosts)",
        target: Target::Relative("net_idle_2", 2.0),
    },
    Workload {
        name: "harness_seeds_per_s",
        title: "6. `#[sim::test]` seeds per second, one core: 3 nodes, 100 requests, one crash, one partition",
        unit: "seeds/s",
        reference: "—",
        target: Target::Min(5_000.0),
    },
    Workload {
        name: "harness_overhead",
        title: "6b. … the harness's own cost per seed, above the runtime's per-seed runner (a thread and a runtime per seed)",
        unit: "us/seed",
        reference: "—",
        target: Target::Max(10.0),
    },
];

impl Workload {
    /// The target as text, and whether the simulation's median meets it.
    fn verdict(&self, r: &Results) -> (String, Option<bool>) {
        let v = r.median("sim", self.name);
        match self.target {
            Target::Max(t) => (
                format!("≤ {}", trim(fmt_value(t, self.unit))),
                v.map(|v| v <= t),
            ),
            Target::Min(t) => (
                format!("≥ {}", trim(fmt_value(t, self.unit))),
                v.map(|v| v >= t),
            ),
            Target::Relative(base, _) if base == self.name => ("(baseline)".into(), None),
            Target::Relative(base, f) => (
                format!("≤ {f}× 5a"),
                v.zip(r.median("sim", base)).map(|(v, b)| v <= b * f),
            ),
        }
    }
}

fn trim(s: String) -> String {
    s.replace(".0 ", " ").replace(".00 ", " ")
}

/// The two variants, in the order of the table's columns.
const MODES: [(Mode, &str); 2] = [(Mode::Simulation, "sim"), (Mode::Production, "tokio")];

struct Opts {
    runs: usize,
    seeds: u64,
    only: Vec<String>,
    write: bool,
}

fn parse(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts {
        runs: 7,
        seeds: 20_000,
        only: Vec::new(),
        write: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
        };
        let number = |name: &str, v: String| -> Result<u64, String> {
            v.replace('_', "")
                .parse()
                .map_err(|_| format!("{name} {v:?} is not a number"))
        };
        match a.as_str() {
            "--runs" => o.runs = number("--runs", value("--runs")?)?.max(1) as usize,
            "--seeds" => o.seeds = number("--seeds", value("--seeds")?)?.max(1),
            "--only" => {
                let w = value("--only")?;
                if !WORKLOADS.iter().any(|k| k.name == w) {
                    let known: Vec<&str> = WORKLOADS.iter().map(|k| k.name).collect();
                    return Err(format!(
                        "unknown workload {w:?}; known: {}",
                        known.join(", ")
                    ));
                }
                o.only.push(w);
            }
            "--no-write" => o.write = false,
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unknown option {other:?}\n\n{USAGE}")),
        }
    }
    Ok(Some(o))
}

pub fn bench(args: &[String]) -> Result<(), String> {
    let Some(opts) = parse(args)? else {
        return Ok(());
    };
    let exes = [build(Mode::Simulation)?, build(Mode::Production)?];
    let wants_harness = opts.only.is_empty() || opts.only.iter().any(|o| o.starts_with("harness"));
    let harness_exe = if wants_harness {
        Some(build_bench(Mode::Simulation, "sim-harness", "harness")?)
    } else {
        None
    };
    let mut results = Results::default();
    let mut clock_checks = Vec::new();
    for run in 0..opts.runs {
        // Alternate which variant goes first, so neither always runs on a
        // machine the other has just warmed (or heated).
        let order: [usize; 2] = if run % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let (_, label) = MODES[i];
            eprintln!("==> bench run {}/{} [{label}]", run + 1, opts.runs);
            let out = run_once(&exes[i], &opts)?;
            for line in out.lines() {
                let f: Vec<&str> = line.split_whitespace().collect();
                match f.as_slice() {
                    ["BENCH", mode, name, _unit, median, ..] => {
                        let v: f64 = median
                            .parse()
                            .map_err(|_| format!("bad bench line {line:?}"))?;
                        results.push(mode, name, v);
                    }
                    ["CLOCK", mode, real, measured] => {
                        clock_checks
                            .push(format!("{mode}: {real} ms slept, {measured} ms measured"));
                    }
                    _ => {}
                }
            }
        }
        if let Some(exe) = &harness_exe {
            eprintln!("==> bench run {}/{} [harness]", run + 1, opts.runs);
            let out = run_harness(exe)?;
            for line in out.lines() {
                if let ["BENCH", mode, name, _unit, median, ..] =
                    line.split_whitespace().collect::<Vec<_>>().as_slice()
                {
                    let v: f64 = median
                        .parse()
                        .map_err(|_| format!("bad bench line {line:?}"))?;
                    results.push(mode, name, v);
                }
            }
        }
    }
    let table = table(&results, &opts);
    println!("{table}");
    if !opts.write || !opts.only.is_empty() {
        return Ok(());
    }
    let info = Info::gather(&opts);
    let md = markdown(&table, &spread(&results), &info, &opts, &clock_checks);
    let docs = root().join("docs").join("bench.md");
    write(&docs, &md)?;
    let json_path = root().join("target").join("bench").join("executor.json");
    write(&json_path, &json(&results, &info, &opts))?;
    eprintln!("bench: wrote {} and {}", rel(&docs), rel(&json_path));
    Ok(())
}

/// `cargo bench --no-run` of sim-runtime's `executor` bench in `mode`.
fn build(mode: Mode) -> Result<PathBuf, String> {
    build_bench(mode, "sim-runtime", "executor")
}

/// `cargo bench --no-run` of `package`'s `bench` in `mode`; returns the
/// bench executable.
fn build_bench(mode: Mode, package: &str, bench: &str) -> Result<PathBuf, String> {
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
    let out = cargo(mode, &args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "[{}] building the bench failed ({})",
            mode.name(),
            out.status
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .filter_map(|l| {
            let start = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let path = &l[start..start + l[start..].find('"')?];
            let file = Path::new(path).file_name()?.to_str()?;
            file.starts_with(&format!("{bench}-"))
                .then(|| PathBuf::from(path))
        })
        .next_back()
        .ok_or_else(|| format!("[{}] cargo named no bench executable", mode.name()))
}

/// One run of the harness bench (its per-seed replay lines go to /dev/null).
fn run_harness(exe: &Path) -> Result<String, String> {
    let out = Command::new(exe)
        .current_dir(root())
        .args(["--runs", "1", "--seeds", "2000"])
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", exe.display(), out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_once(exe: &Path, opts: &Opts) -> Result<String, String> {
    let mut cmd = Command::new(exe);
    cmd.current_dir(root())
        .args(["--runs", "1", "--warmup", "1", "--seeds"])
        .arg(opts.seeds.to_string());
    for w in &opts.only {
        cmd.args(["--only", w]);
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", exe.display(), out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[derive(Default)]
struct Results {
    /// (mode, workload) -> samples, in run order.
    samples: Vec<((String, String), Vec<f64>)>,
}

impl Results {
    fn push(&mut self, mode: &str, name: &str, v: f64) {
        let key = (mode.to_string(), name.to_string());
        match self.samples.iter_mut().find(|(k, _)| *k == key) {
            Some((_, s)) => s.push(v),
            None => self.samples.push((key, vec![v])),
        }
    }

    fn get(&self, mode: &str, name: &str) -> &[f64] {
        self.samples
            .iter()
            .find(|((m, n), _)| m == mode && n == name)
            .map(|(_, s)| s.as_slice())
            .unwrap_or(&[])
    }

    fn median(&self, mode: &str, name: &str) -> Option<f64> {
        let mut v = self.get(mode, name).to_vec();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        Some(if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        })
    }
}

fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "us/seed" => format!("{v:.2} µs/seed"),
        "us/rt" => format!("{v:.3} µs/rt"),
        "seeds/s" => format!("{v:.0} seeds/s"),
        _ => format!("{v:.1} {unit}"),
    }
}

fn table(r: &Results, opts: &Opts) -> String {
    let mut t = String::from(
        "| workload | sim | tokio current_thread | reference (issue) | target |\n\
         |---|---:|---:|---|---|\n",
    );
    for w in WORKLOADS {
        if !opts.only.is_empty() && !opts.only.iter().any(|o| o == w.name) {
            continue;
        }
        let cell = |mode| {
            r.median(mode, w.name)
                .map(|v| fmt_value(v, w.unit))
                .unwrap_or_else(|| "n/a".into())
        };
        let (target, met) = w.verdict(r);
        let verdict = match met {
            Some(true) => " (met)",
            Some(false) => " (**not met**)",
            None => "",
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {target}{verdict} |",
            w.title,
            cell("sim"),
            cell("tokio"),
            w.reference,
        );
    }
    t
}

/// When and where the numbers were taken.
struct Info {
    command: String,
    date: String,
    nproc: String,
    cpu: String,
    rustc: String,
    commit: String,
}

impl Info {
    fn gather(opts: &Opts) -> Info {
        let mut command = String::from("cargo xtask bench");
        if opts.runs != 7 {
            let _ = write!(command, " --runs {}", opts.runs);
        }
        if opts.seeds != 20_000 {
            let _ = write!(command, " --seeds {}", opts.seeds);
        }
        let nproc = capture("nproc", &[]).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        });
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        let rustc = capture(
            &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()),
            &["--version"],
        )
        .unwrap_or_else(|| "rustc (unknown version)".into());
        let commit = match capture("git", &["rev-parse", "--short", "HEAD"]) {
            Some(c) => {
                let dirty =
                    capture("git", &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
                if dirty {
                    format!("{c} (with uncommitted changes)")
                } else {
                    c
                }
            }
            None => "unknown".into(),
        };
        Info {
            command,
            date: utc_date(),
            nproc,
            cpu,
            rustc,
            commit,
        }
    }
}

fn capture(program: &str, args: &[&str]) -> Option<String> {
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

/// Today's date (UTC), `YYYY-MM-DD`, from the system clock.
fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Howard Hinnant's civil_from_days.
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The range of each cell's samples, so that a noisy machine shows.
fn spread(r: &Results) -> String {
    let mut parts = Vec::new();
    for w in WORKLOADS {
        for (_, mode) in MODES {
            let v = r.get(mode, w.name);
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !v.is_empty() {
                parts.push(format!(
                    "{} {mode} {}–{}",
                    w.name,
                    fmt_value(min, w.unit),
                    fmt_value(max, w.unit)
                ));
            }
        }
    }
    parts.join("; ")
}

fn markdown(
    table: &str,
    spread: &str,
    info: &Info,
    opts: &Opts,
    clock_checks: &[String],
) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "# Executor benchmark\n\
         \n\
         <!-- Generated by `cargo xtask bench` (xtask/src/bench.rs); edit that, not this file. -->\n\
         \n\
         `{command}` on {date} (UTC), commit {commit}, on a machine with {nproc} CPUs \
         (`nproc`), {cpu}; {rustc}.\n\
         \n\
         {table}\n\
         Each figure is the median of {runs} runs. Every run is a fresh process (one \
         warm-up, then one measured run of each workload), and the simulation and \
         real-Tokio processes alternate. The reference figures (madsim 0.2.34, \
         turmoil) are the numbers from the issues (measured on another machine; there, \
         real Tokio took ≈ 243 ms for workload 1), not measured here. The targets are \
         for the simulation. Samples: `target/bench/executor.json`; their ranges: {spread}. \
         Workload 1 is bound by memory latency (a random pick among 100,000 tasks \
         misses the cache), so it moves with whatever else the machine is doing; \
         compare variants measured in the same run.\n\
         \n\
         ## What is measured\n\
         \n\
         The workloads live in `sim-runtime/benches/executor.rs`, written once against \
         `sim_runtime::` paths, so the same source measures:\n\
         \n\
         - **sim**: the seeded simulation, built with `RUSTFLAGS=\"--cfg simulation\"` \
         (into `target/sim`);\n\
         - **tokio current_thread**: real Tokio, a normal build with \
         `--features {features}`; the timer workloads start Tokio's clock paused \
         (`Builder::start_paused(true)`), so sleeps auto-advance as the simulation's do.\n\
         \n\
         Each run builds a runtime with `Builder::new_current_thread().enable_all()`, \
         `block_on`s the workload and drops the runtime; the wall time covers all three. \
         Workload 3 builds one runtime per seed (`.sim_seed(s)` in simulation) for \
         {seeds} seeds and reports the time per seed. The stopwatch is \
         `std::time::Instant`, read outside any `block_on` (inside one, the \
         simulation's interposers make it virtual); every process first checks it \
         against a real 20 ms sleep taken after a runtime has run (first run: {clock}). \
         The workloads also assert that the runtime's clock advanced by at least the \
         time slept.\n\
         \n\
         Workload 4 runs a client on the main node and an echo server on a second node, \
         over the simulated network with zero latency and jitter \
         (`sim::net::configure`); real Tokio runs the same code over loopback. \
         Workloads 5a–5c run 10,000 round trips with 2, 100 or 1,000 more nodes \
         present, each with a listener waiting in `accept`, and report (time of the \
         run − time of the same set-up with no round trip) / 10,000: the cost of one \
         round trip as the cluster grows (simulation only). Workload 6 is \
         `sim-harness/benches/harness.rs`: 2,000 seeds of a 3-node scenario through \
         `#[sim::test]`'s runner with `SIM_JOBS=1`; 6b subtracts the time of the same \
         seeds through the runtime's own runner (a fresh thread and runtime per seed, \
         as `#[tokio::test]` under simulation does), leaving the harness's trace \
         collector, outcome, report bookkeeping and replay line.\n\
         \n\
         ## Reproduce one side\n\
         \n\
         ```sh\n\
         RUSTFLAGS=\"--cfg simulation\" CARGO_TARGET_DIR=target/sim \\\n    \
         cargo bench -p sim-runtime --bench executor -- --runs 5\n\
         cargo bench -p sim-runtime --bench executor --features {features} -- --runs 5\n\
         ```\n\
         \n\
         Options after `--`: `--runs N`, `--warmup N`, `--seeds N`, \
         `--only spawn_yield|sleep|seeds|net_rt|net_idle_2|net_idle_100|net_idle_1000`.\n\
         \n\
         ## Profiling the simulation\n\
         \n\
         The release profile keeps line tables (`debug = 1`), so profilers see \
         symbols:\n\
         \n\
         ```sh\n\
         exe=$(ls -t target/sim/release/deps/executor-* | grep -v '\\.d$' | head -1)\n\
         valgrind --tool=callgrind --callgrind-out-file=cg.out $exe --runs 1 --warmup 0 \
         --only seeds --seeds 2000 --skip-clock-check\n\
         callgrind_annotate --inclusive=yes cg.out | head -60\n\
         perf record -g $exe --runs 3 --only sleep && perf report\n\
         ```\n",
        command = info.command,
        date = info.date,
        commit = info.commit,
        nproc = info.nproc,
        cpu = info.cpu,
        rustc = info.rustc,
        runs = opts.runs,
        features = PROD_FEATURES,
        seeds = opts.seeds,
        clock = clock_checks
            .iter()
            .take(2)
            .cloned()
            .collect::<Vec<_>>()
            .join("; "),
    );
    s
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json(r: &Results, info: &Info, opts: &Opts) -> String {
    let mut s = String::from("{\n");
    let _ = writeln!(s, "  \"command\": {},", json_str(&info.command));
    let _ = writeln!(s, "  \"date\": {},", json_str(&info.date));
    let _ = writeln!(s, "  \"commit\": {},", json_str(&info.commit));
    let _ = writeln!(
        s,
        "  \"machine\": {{ \"nproc\": {}, \"cpu\": {} }},",
        json_str(&info.nproc),
        json_str(&info.cpu)
    );
    let _ = writeln!(s, "  \"rustc\": {},", json_str(&info.rustc));
    let _ = writeln!(s, "  \"runs\": {},", opts.runs);
    let _ = writeln!(s, "  \"seeds\": {},", opts.seeds);
    s.push_str("  \"workloads\": [\n");
    for (i, w) in WORKLOADS.iter().enumerate() {
        let _ = writeln!(s, "    {{");
        let _ = writeln!(s, "      \"name\": {},", json_str(w.name));
        let _ = writeln!(s, "      \"title\": {},", json_str(w.title));
        let _ = writeln!(s, "      \"unit\": {},", json_str(w.unit));
        for (_, mode) in MODES {
            let samples = r
                .get(mode, w.name)
                .iter()
                .map(|v| format!("{v}"))
                .collect::<Vec<_>>()
                .join(", ");
            let median = r
                .median(mode, w.name)
                .map(|v| format!("{v}"))
                .unwrap_or_else(|| "null".into());
            let _ = writeln!(
                s,
                "      {}: {{ \"median\": {median}, \"samples\": [{samples}] }},",
                json_str(mode)
            );
        }
        let (target, met) = w.verdict(r);
        let _ = writeln!(s, "      \"reference\": {},", json_str(w.reference));
        let _ = writeln!(s, "      \"target\": {},", json_str(&target));
        let _ = writeln!(
            s,
            "      \"target_met\": {}",
            met.map(|m| m.to_string()).unwrap_or_else(|| "null".into())
        );
        let _ = writeln!(
            s,
            "    }}{}",
            if i + 1 < WORKLOADS.len() { "," } else { "" }
        );
    }
    s.push_str("  ]\n}\n");
    s
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}
