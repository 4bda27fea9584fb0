//! The command line, the stopwatch and the output lines shared by
//! `bench/madsim` and `bench/turmoil` (included by path: the two crates are
//! separate workspaces with their own build flags). They mirror
//! `sim-runtime/benches/executor.rs`, whose lines `cargo xtask bench` parses:
//!
//! ```text
//! CLOCK <mode> <real ms> <measured ms>
//! BENCH <mode> <workload> <unit> <median> <sample,sample,...>
//! ```

use std::time::{Duration, Instant};

pub struct Opts {
    pub runs: usize,
    pub warmup: usize,
    pub seeds: u64,
    pub only: Vec<String>,
    pub clock_check: bool,
}

impl Opts {
    /// Whether `name` was asked for (everything, without `--only`).
    pub fn wanted(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }
}

pub fn parse_args(bin: &str, workloads: &[&str]) -> Opts {
    let usage = format!(
        "usage: {bin} [--runs N] [--warmup N] [--seeds N] [--only {}]... [--skip-clock-check]",
        workloads.join("|")
    );
    let fail = |msg: String| -> ! {
        eprintln!("{bin}: {msg}\n{usage}");
        std::process::exit(2)
    };
    let mut o = Opts {
        runs: 5,
        warmup: 1,
        seeds: 20_000,
        only: Vec::new(),
        clock_check: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = |name: &str| -> u64 {
            let v = args
                .next()
                .unwrap_or_else(|| fail(format!("{name} needs a value")));
            v.replace('_', "")
                .parse()
                .unwrap_or_else(|_| fail(format!("{name} {v:?} is not a number")))
        };
        match a.as_str() {
            "--runs" => o.runs = number("--runs").max(1) as usize,
            "--warmup" => o.warmup = number("--warmup") as usize,
            "--seeds" => o.seeds = number("--seeds").max(1),
            "--only" => {
                let w = args
                    .next()
                    .unwrap_or_else(|| fail("--only needs a value".into()));
                if !workloads.contains(&w.as_str()) {
                    fail(format!("unknown workload {w:?}"));
                }
                o.only.push(w);
            }
            "--skip-clock-check" => o.clock_check = false,
            "--bench" => {}
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0)
            }
            other => fail(format!("unknown option {other}")),
        }
    }
    o
}

/// Runs `work` `warmup + runs` times, timing each run from outside any
/// simulation, and prints the samples and their median.
pub fn report(
    mode: &str,
    name: &str,
    unit: &str,
    opts: &Opts,
    mut work: impl FnMut(),
    scale: impl Fn(Duration) -> f64,
) {
    for _ in 0..opts.warmup {
        work();
    }
    let mut samples: Vec<f64> = (0..opts.runs)
        .map(|_| {
            let start = Instant::now();
            work();
            scale(start.elapsed())
        })
        .collect();
    let list = samples
        .iter()
        .map(|s| format!("{s:.3}"))
        .collect::<Vec<_>>()
        .join(",");
    let m = median(&mut samples);
    eprintln!(
        "{mode:>7} {name:<14} {m:>10.3} {unit}   (median of {})",
        opts.runs
    );
    println!("BENCH {mode} {name} {unit} {m:.3} {list}");
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Proves that the stopwatch reads real time after a simulation has run on
/// this thread (both simulators make `Instant` virtual inside one): a real
/// 20 ms sleep must measure as about 20 ms.
pub fn clock_check(mode: &str, run_a_simulation: impl FnOnce()) {
    run_a_simulation();
    let real = Duration::from_millis(20);
    let start = Instant::now();
    std::thread::sleep(real);
    let measured = start.elapsed();
    let ok = measured >= real && measured < real * 10;
    eprintln!(
        "{mode:>7} clock check: a real 20 ms sleep measured {:.3} ms{}",
        measured.as_secs_f64() * 1e3,
        if ok { "" } else { " -- NOT REAL TIME" }
    );
    println!("CLOCK {mode} 20 {:.3}", measured.as_secs_f64() * 1e3);
    if !ok {
        eprintln!("the stopwatch does not read real time; refusing to report");
        std::process::exit(1);
    }
}

/// Per-round-trip cost with idle nodes present: (a run with `n` round trips
/// − the same set-up with none) / `n`, in µs.
pub fn per_round_trip(d: Duration, n: usize, setup: impl FnOnce()) -> f64 {
    let start = Instant::now();
    setup();
    let setup = start.elapsed();
    d.saturating_sub(setup).as_secs_f64() * 1e6 / n as f64
}

/// The node counts of the `cluster_<N>` workloads (issue 26 item 3).
pub const CLUSTER_NODES: [usize; 5] = [2, 10, 100, 1_000, 10_000];

/// The process's resident set, in bytes (`/proc/self/statm`, 4 KiB pages).
pub fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// One run of a `cluster_<N>` workload: the set-up's time, the round
/// trips' time and how many, and the resident bytes the set-up added.
pub struct ClusterSample {
    pub setup: Duration,
    pub round_trips: Duration,
    pub n: usize,
    pub resident: u64,
}

/// `--only cluster_<N>`: `warmup + runs` runs of `run`, the `BENCH` lines
/// of the measured ones (`cluster_<N>` in µs per round trip,
/// `cluster_<N>_setup` in ms) and the `MEM` line of the first run
/// (`MEM <mode> cluster_<N> <resident bytes> -`), as the sim's executor
/// bench prints them.
pub fn report_cluster(mode: &str, nodes: usize, opts: &Opts, run: impl Fn() -> ClusterSample) {
    let name = format!("cluster_{nodes}");
    let mut resident = None;
    let (mut per_rt, mut setup) = (Vec::new(), Vec::new());
    for i in 0..opts.warmup + opts.runs {
        let s = run();
        resident.get_or_insert(s.resident);
        if i >= opts.warmup {
            per_rt.push(s.round_trips.as_secs_f64() * 1e6 / s.n as f64);
            setup.push(s.setup.as_secs_f64() * 1e3);
        }
    }
    for (name, unit, v) in [
        (name.clone(), "us/rt", &mut per_rt),
        (format!("{name}_setup"), "ms", &mut setup),
    ] {
        let list = v
            .iter()
            .map(|s| format!("{s:.3}"))
            .collect::<Vec<_>>()
            .join(",");
        let m = median(v);
        eprintln!("{mode:>7} {name:<14} {m:>10.3} {unit}");
        println!("BENCH {mode} {name} {unit} {m:.3} {list}");
    }
    let resident = resident.unwrap_or(0);
    eprintln!("{mode:>7} {name:<14} set-up holds {resident} B resident");
    println!("MEM {mode} {name} {resident} -");
}
