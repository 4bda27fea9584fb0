//! `cargo xtask bench`: the same workloads on sim, madsim, turmoil and real
//! Tokio, side by side (issue 8). Four kinds of binary:
//!
//! - **sim**: `sim-runtime/benches/executor.rs` built with `--cfg simulation`
//!   (`target/sim`), plus `sim-harness/benches/harness.rs` for workload 8;
//! - **tokio**: the same executor bench in a normal build (`--features
//!   full,test-util`, `target/`): real Tokio's current-thread runtime;
//! - **madsim**: `bench/madsim`, built with `--cfg madsim` into
//!   `target/bench-madsim` (madsim interposes libc as we do: its own binary);
//! - **turmoil**: `bench/turmoil`, into `target/bench-turmoil`.
//!
//! `bench/` is outside the workspace, so only this command compiles madsim
//! and turmoil. Every run starts each binary afresh (a warm-up, then one
//! measured run of each workload), rotating which goes first; the table
//! holds the medians, `docs/bench.md` the table and its context,
//! `target/bench/bench.json` every sample.
//!
//! Speed is measured here, by release builds of benchmark binaries, never by
//! timed tests (and never in CI).
//!
//! The module's files: `workloads.rs` (the workloads and the binaries
//! that run them), `build.rs` (building every binary), this file (options,
//! the runs and their samples), `report.rs` (the tables, `docs/bench.md`
//! and `bench.json`), `checker.rs` (sim-check's section), `scaling.rs`
//! (`SIM_JOBS=1` vs `2`, its section), `cost_targets.rs` (what a seed or
//! an operation may cost against madsim, how far each is and why),
//! `clusters.rs` (2 to 10,000 nodes, its section), `chart.rs` (its SVG
//! chart), `fs.rs` (a 4 KiB write through `tokio::fs` and `std::fs`,
//! its section) and `threads.rs` (OS threads: hand-off and start against
//! real threads and shuttle, and a 100,000-seed soak; two sections).
//!
//! Why the module is over 1,000 lines: it drives four kinds of binary and
//! four sections that each measure something else (the checker, scaling
//! over cores, clusters with their chart, the cost of a write), and the
//! prose of `docs/bench.md` is written next to the figures it explains
//! (most of `report.rs` and `clusters.rs`). Each file holds one of these
//! and stays under about 500 lines; what the sections share (running a
//! binary, a median, keeping a section between its markers) is here and in
//! `cmd.rs`, once.

mod build;
mod chart;
mod checker;
mod clusters;
mod cost_targets;
mod fs;
mod report;
mod scaling;
mod threads;
mod workloads;

use crate::cmd::{rel, root, stdout, write_file};
use build::build_all;
use report::{json, markdown, table, targets, Info, Timing};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use workloads::{Workload, WORKLOADS};

const USAGE: &str = "\
usage: cargo xtask bench [--runs N] [--seeds N] [--only WORKLOAD]... [--no-write]

Builds the bench binaries (sim: --cfg simulation into target/sim; real
Tokio: --features full,test-util into target/; bench/madsim with --cfg
madsim into target/bench-madsim; bench/turmoil into target/bench-turmoil),
then runs them in turn, N times each (one fresh process per run: a
warm-up, then one measured run of every workload that applies to it).
Prints the medians as a markdown table and, for a full run, writes it to
docs/bench.md and the samples to target/bench/bench.json.

  --runs N        measured runs per binary and workload (default 5; the
                  written report needs at least 5)
  --seeds N       seeds of the `seeds` workload (default 20000)
  --only NAME     only this workload (spawn_yield, sleep, sleepers, seeds,
                  net_rt, net_idle_1000, heartbeats, scenario); repeatable;
                  nothing is written. `--only checker` alone measures the
                  linearizability checker (sim-check) and rewrites only its
                  section of docs/bench.md; `--only scaling` alone measures
                  how a sweep scales from SIM_JOBS=1 to 2 and rewrites only
                  its section; `--only clusters` alone measures 2 to 10,000
                  nodes on sim, madsim and turmoil and rewrites only its
                  section and docs/bench-clusters.svg; `--only fs` alone
                  measures a 4 KiB write through tokio::fs and std::fs, in
                  simulation and with real Tokio, and rewrites only its
                  section; `--only threads` alone measures a Mutex +
                  Condvar hand-off and a thread's start + join on real
                  threads, shuttle (bench/shuttle) and sim, and rewrites
                  only its section; `--only thread-soak` alone runs
                  100,000 seeds that start and kill threads in one process,
                  then sweeps them as a #[sim::test] in batches of fresh
                  processes, and rewrites only its section
  --no-write      print the table only
";

const DEFAULT_RUNS: usize = 5;

/// The `--only` names that measure a section of their own.
const SECTIONS: [&str; 6] = [
    "checker",
    "scaling",
    "clusters",
    "fs",
    "threads",
    "thread-soak",
];

struct Opts {
    runs: usize,
    seeds: u64,
    only: Vec<String>,
    write: bool,
}

impl Opts {
    fn wanted(&self, w: &Workload) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == w.name)
    }
}

fn parse(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts {
        runs: DEFAULT_RUNS,
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
                if !SECTIONS.contains(&w.as_str()) && !WORKLOADS.iter().any(|k| k.name == w) {
                    let mut known: Vec<&str> = WORKLOADS.iter().map(|k| k.name).collect();
                    known.extend(SECTIONS);
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

/// One binary to start once per run: which variant it measures, and the
/// arguments that select its workloads.
struct Job {
    label: &'static str,
    exe: PathBuf,
    args: Vec<String>,
}

pub fn bench(args: &[String]) -> Result<(), String> {
    let Some(mut opts) = parse(args)? else {
        return Ok(());
    };
    let docs = root().join("docs").join("bench.md");
    // The checker's bench is a section of its own (checker.rs).
    let checker = opts.only.iter().any(|o| o == "checker");
    let scaling = opts.only.iter().any(|o| o == "scaling");
    let clusters = opts.only.iter().any(|o| o == "clusters");
    let fs = opts.only.iter().any(|o| o == "fs");
    let threads = opts.only.iter().any(|o| o == "threads");
    let soak = opts.only.iter().any(|o| o == "thread-soak");
    opts.only.retain(|o| !SECTIONS.contains(&o.as_str()));
    let others = fs || clusters || scaling || checker || !opts.only.is_empty();
    if soak && !threads && !others {
        return threads::SOAK_SECTION.rewrite(&docs, &threads::measure_soak()?, opts.write);
    }
    if soak {
        println!("{}", threads::measure_soak()?);
    }
    if threads && !others {
        return threads::SECTION.rewrite(&docs, &threads::measure(opts.runs)?, opts.write);
    }
    if threads {
        println!("{}", threads::measure(opts.runs)?);
    }
    if fs && !clusters && !scaling && !checker && opts.only.is_empty() {
        return fs::SECTION.rewrite(&docs, &fs::measure(opts.runs)?, opts.write);
    }
    if fs {
        println!("{}", fs::measure(opts.runs)?);
    }
    if clusters && !scaling && !checker && opts.only.is_empty() {
        let text = clusters::measure(opts.runs, opts.write)?;
        return clusters::SECTION.rewrite(&docs, &text, opts.write);
    }
    if clusters {
        println!("{}", clusters::measure(opts.runs, false)?);
    }
    if scaling && !checker && opts.only.is_empty() {
        return scaling::SECTION.rewrite(&docs, &scaling::measure(opts.runs)?, opts.write);
    }
    if scaling {
        println!("{}", scaling::measure(opts.runs)?);
    }
    if checker && opts.only.is_empty() {
        return checker::SECTION.rewrite(&docs, &checker::measure()?, opts.write);
    }
    if checker {
        println!("{}", checker::measure()?);
    }
    let started = Instant::now();
    let cold = [
        "target/sim/release",
        "target/release",
        "target/bench-madsim",
        "target/bench-turmoil",
    ]
    .iter()
    .all(|d| !root().join(d).exists());
    let jobs = build_all(&opts)?;
    let build_time = started.elapsed();
    let mut results = Results::default();
    let mut clock_checks = Vec::new();
    for run in 0..opts.runs {
        // Rotate which binary goes first, so none always runs on a machine
        // another has just warmed (or heated).
        for k in 0..jobs.len() {
            let job = &jobs[(run + k) % jobs.len()];
            eprintln!("==> bench run {}/{} [{}]", run + 1, opts.runs, job.label);
            let out = run_once(job)?;
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
    }
    let table = table(&results, &opts);
    println!("{table}");
    println!("{}", targets(&results, &opts));
    if opts.only.is_empty() {
        println!("{}", cost_targets::section(&results));
    }
    let elapsed = started.elapsed();
    eprintln!(
        "bench: {} in all ({} building)",
        minutes(elapsed.as_secs()),
        minutes(build_time.as_secs())
    );
    if !opts.write || !opts.only.is_empty() {
        return Ok(());
    }
    if opts.runs < 5 {
        return Err(format!(
            "bench: {} runs measured; the written report needs at least 5 (nothing written)",
            opts.runs
        ));
    }
    let info = Info::gather(&opts);
    let timing = Timing {
        total_s: elapsed.as_secs(),
        build_s: build_time.as_secs(),
        cold,
    };
    let md = markdown(&table, &results, &info, &opts, &clock_checks, &timing);
    let md = checker::SECTION.splice(&md, &checker::measure()?);
    let md = scaling::SECTION.splice(&md, &scaling::measure(opts.runs)?);
    let md = clusters::SECTION.splice(&md, &clusters::measure(opts.runs, true)?);
    let md = fs::SECTION.splice(&md, &fs::measure(opts.runs)?);
    let md = threads::SECTION.splice(&md, &threads::measure(opts.runs)?);
    let md = threads::SOAK_SECTION.splice(&md, &threads::measure_soak()?);
    write_file(&docs, &md)?;
    let json_path = root().join("target").join("bench").join("bench.json");
    write_file(&json_path, &json(&results, &info, &opts, &timing))?;
    eprintln!("bench: wrote {} and {}", rel(&docs), rel(&json_path));
    Ok(())
}

fn minutes(s: u64) -> String {
    format!("{} min {:02} s", s / 60, s % 60)
}

fn run_once(job: &Job) -> Result<String, String> {
    let mut cmd = Command::new(&job.exe);
    cmd.current_dir(root())
        .args(&job.args)
        // The harness prints a replay line per seed on stderr.
        .stderr(if job.label == "sim harness" {
            Stdio::null()
        } else {
            Stdio::inherit()
        });
    stdout(&mut cmd, &job.exe.display().to_string())
}

#[derive(Clone, Default)]
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
        median(self.get(mode, name))
    }
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// A section of `docs/bench.md` that a module measures on its own
/// (`--only NAME`), kept between two markers: a full run rewrites it with
/// the rest, `--only NAME` only it.
struct Section {
    name: &'static str,
    begin: &'static str,
    end: &'static str,
}

/// The section `--only $name` measures, with its markers.
macro_rules! section {
    ($name:literal) => {
        super::Section {
            name: $name,
            begin: concat!(
                "<!-- ",
                $name,
                ": begin (cargo xtask bench --only ",
                $name,
                ") -->"
            ),
            end: concat!("<!-- ", $name, ": end -->"),
        }
    };
}
use section;

impl Section {
    /// `doc` with this section replaced by `text` (which carries the
    /// markers), or `text` appended when `doc` has none.
    fn splice(&self, doc: &str, text: &str) -> String {
        match (doc.find(self.begin), doc.find(self.end)) {
            (Some(b), Some(e)) if e > b => {
                let after = &doc[e + self.end.len()..];
                let after = after.strip_prefix('\n').unwrap_or(after);
                format!("{}{text}{after}", &doc[..b])
            }
            _ => format!("{}\n\n{text}", doc.trim_end()),
        }
    }

    /// Prints `text` and, with `write`, rewrites only this section of
    /// `docs`.
    fn rewrite(&self, docs: &Path, text: &str, write: bool) -> Result<(), String> {
        println!("{text}");
        if write {
            let doc = std::fs::read_to_string(docs).unwrap_or_default();
            write_file(docs, &self.splice(&doc, text))?;
            eprintln!("bench: rewrote the {} section of {}", self.name, rel(docs));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(super::median(&[]), None);
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(super::median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn each_section_keeps_the_markers_docs_bench_md_has() {
        let doc = std::fs::read_to_string(crate::cmd::root().join("docs/bench.md")).unwrap();
        for s in [
            super::checker::SECTION,
            super::scaling::SECTION,
            super::clusters::SECTION,
            super::fs::SECTION,
            super::threads::SECTION,
            super::threads::SOAK_SECTION,
        ] {
            assert!(doc.contains(s.begin), "{}", s.begin);
            assert!(doc.contains(s.end), "{}", s.end);
        }
        assert_eq!(
            super::fs::SECTION.begin,
            "<!-- fs: begin (cargo xtask bench --only fs) -->"
        );
    }
}
