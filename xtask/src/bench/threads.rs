//! OS threads (issue 35): two sections of `docs/bench.md`, each between
//! its markers.
//!
//! - `--only threads` (item 9): a `Mutex` + `Condvar` ping-pong and a
//!   thread's start + join, on real std threads (the executor bench's
//!   normal build: the plain process), on shuttle (`bench/shuttle`, its own
//!   thread model, one execution of its random scheduler) and on sim (the
//!   executor bench's simulation build: the same std code in a simulated
//!   run), in one run, the three binaries alternated;
//! - `--only thread-soak` (item 5): 100,000 seeds in one process, each
//!   starting threads on nodes that are crashed or killed, the process's
//!   OS threads and resident set after 100, 1k, 10k and 100k seeds; then
//!   the same scenario as a `#[sim::test]` swept for 1k, 10k and 100k
//!   seeds in batches of fresh processes (`SIM_SEEDS_PER_PROCESS`): the
//!   largest process's peak and the sweep's own process at its end.
//!
//! A full `cargo xtask bench` rewrites both with the rest.

use super::chart::thousands;
use super::Results;
use crate::cmd::{stdout, Mode};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The ping-pong and start + join section.
pub(super) const SECTION: super::Section = super::section!("threads");
/// The soak's section.
pub(super) const SOAK_SECTION: super::Section = super::section!("thread-soak");

/// The workloads (the bench binaries' names), their units and what each
/// row says.
const WORKLOADS: [(&str, &str, &str); 2] = [
    (
        "threads_pingpong",
        "µs per hand-off",
        "hand-off: two threads ping-pong 100,000 round trips over a `Mutex` + `Condvar`",
    ),
    (
        "threads_spawn",
        "µs per start + join",
        "start + join of a thread, 10,000 in turn",
    ),
];

/// The binaries' modes, as their `BENCH` lines name them, and the columns'
/// headers.
const MODES: [(&str, &str); 3] = [
    ("tokio", "real std threads"),
    ("shuttle", "shuttle"),
    ("sim", "sim"),
];

/// Seeds of the soak.
const SOAK_SEEDS: u64 = 100_000;

/// Runs `exe` once with `args`: its `BENCH` lines as (mode, workload, value).
fn once(exe: &Path, args: &[&str]) -> Result<Vec<(String, String, f64)>, String> {
    let text = stdout(Command::new(exe).args(args), &exe.display().to_string())?;
    Ok(text
        .lines()
        .filter_map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["BENCH", mode, name, _unit, v, ..] => {
                    Some((mode.to_string(), name.to_string(), v.parse().ok()?))
                }
                _ => None,
            },
        )
        .collect())
}

/// Builds the three binaries and measures; returns the section's markdown.
pub fn measure(runs: usize) -> Result<String, String> {
    let exes: [PathBuf; 3] = [
        super::build::build_bench(Mode::Production, "sim-runtime", "executor")?,
        super::build::build_outside("shuttle", &[])?,
        super::build::build_bench(Mode::Simulation, "sim-runtime", "executor")?,
    ];
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string));
    let mut args = vec!["--runs", "1", "--warmup", "1", "--skip-clock-check"];
    for (w, _, _) in WORKLOADS {
        args.extend(["--only", w]);
    }
    let mut samples = Results::default();
    for run in 0..runs.max(1) {
        eprintln!("==> bench [threads] run {}/{}", run + 1, runs.max(1));
        // Rotate which goes first: none always meets a warm machine.
        for k in 0..exes.len() {
            let exe = &exes[(run + k) % exes.len()];
            for (mode, name, v) in once(exe, &args)? {
                samples.push(&mode, &name, v);
            }
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(section(cores, load.as_deref(), &samples))
}

fn section(cores: usize, load: Option<&str>, samples: &Results) -> String {
    let fmt = |v: f64| {
        if v < 9.995 {
            format!("{v:.2}")
        } else {
            format!("{v:.1}")
        }
    };
    let list = |v: &[f64]| v.iter().map(|x| fmt(*x)).collect::<Vec<_>>().join(", ");
    let mut rows = String::new();
    let mut goals = String::new();
    let mut ranges = Vec::new();
    for (w, unit, what) in WORKLOADS {
        let cell = |mode: &str| samples.median(mode, w).map_or("n/a".into(), fmt);
        let ratio = |mode: &str| {
            samples
                .median(mode, w)
                .zip(samples.median("tokio", w))
                .map(|(s, t)| s / t)
        };
        let sim_real = ratio("sim");
        rows.push_str(&format!(
            "| {what} ({unit}) | {} | {} | {} | {} |\n",
            cell("tokio"),
            cell("shuttle"),
            cell("sim"),
            sim_real.map_or("n/a".into(), |r| format!("**{r:.2}**")),
        ));
        let verdict = match sim_real {
            Some(r) if r <= 1.0 => "met",
            Some(_) => "**not met**",
            None => "not measured",
        };
        let goal = if w == "threads_pingpong" {
            "sim's hand-off costs no more than a real thread's"
        } else {
            "starting and joining a simulated thread costs no more than a real one"
        };
        goals.push_str(&format!(
            "- {goal}: {verdict} ({} µs against {} µs, {}×).\n",
            cell("sim"),
            cell("tokio"),
            sim_real.map_or("n/a".into(), |r| format!("{r:.2}"))
        ));
        for (mode, label) in MODES {
            let s = samples.get(mode, w);
            if !s.is_empty() {
                ranges.push(format!("{w} {label}: {}", list(s)));
            }
        }
    }
    let runs = MODES
        .iter()
        .flat_map(|(m, _)| {
            WORKLOADS
                .iter()
                .map(move |(w, _, _)| samples.get(m, w).len())
        })
        .min()
        .unwrap_or(0);
    format!(
        "{begin}\n## OS threads: hand-off and start (issue 35 item 9)\n\n\
         `sim-runtime/benches/executor/threads.rs`: the same std code (`std::thread::spawn`, \
         `std::sync::Mutex` and `Condvar`) run by the executor bench's normal build in the \
         plain process on real threads, and by its simulation build in a simulated run \
         (inside `spawn_blocking`, so both sides are simulated threads and every hand-off goes \
         through the executor and the seed; the simulated threads run on the CPU the \
         executor's thread runs on, real threads wherever the kernel puts them); \
         `bench/shuttle`, the same workloads against \
         shuttle's own `thread` and `sync` types, one execution of its random scheduler with \
         no step bound (shuttle runs a test's threads as continuations on one OS thread and \
         switches stacks itself). The ping-pong's two sides take turns by a counter's parity, \
         each waiting on the condition variable until its turn: a round trip is two \
         hand-offs. Per hand-off: (a run − a run of none, the same set-up) / 200,000; per \
         start + join: (a run − a run of none) / 10,000. Medians of {runs} runs, the three \
         binaries alternated, each run a fresh process (a warm-up, then one measured run), on \
         a shared machine with {cores} core(s) (load average {load} when the runs began).\n\n\
         | workload | real std threads | shuttle | sim | sim / real |\n\
         |---|---:|---:|---:|---:|\n\
         {rows}\n\
         Goals (issue 35 item 9):\n\n{goals}\n\
         Where a simulated hand-off's time goes, what was tried and how the figures move with \
         the machine's load: [perf.md](perf.md#issue-35-items-5-and-9-os-threads).\n\n\
         The runs: {ranges}.\n{end}\n",
        begin = SECTION.begin,
        end = SECTION.end,
        load = load.unwrap_or("unknown"),
        ranges = ranges.join("; "),
    )
}

/// One soak process; returns the section's markdown.
pub fn measure_soak() -> Result<String, String> {
    let exe = super::build::build_bench(Mode::Simulation, "sim-runtime", "executor")?;
    eprintln!("==> bench [thread-soak] {SOAK_SEEDS} seeds");
    let seeds = SOAK_SEEDS.to_string();
    let text = stdout(
        Command::new(&exe).args([
            "--runs",
            "1",
            "--warmup",
            "0",
            "--skip-clock-check",
            "--seeds",
            &seeds,
            "--only",
            "thread_soak",
        ]),
        "the thread soak",
    )?;
    let marks: Vec<Mark> = text.lines().filter_map(Mark::parse).collect();
    if marks.last().map(|m| m.seeds) != Some(SOAK_SEEDS) {
        return Err(format!(
            "the soak did not report {SOAK_SEEDS} seeds:\n{text}"
        ));
    }
    let batched = measure_batched()?;
    Ok(soak_section(&marks, &batched))
}

/// The harness's sweeps of the soak's scenario (sim-harness's
/// `tests/it/soak.rs`): seeds and the batch size of each, `None` for the
/// default (`SIM_SEEDS_PER_PROCESS` unset).
const BATCHED: [(u64, Option<u64>); 4] = [
    (1_000, Some(1_000)),
    (10_000, Some(1_000)),
    (100_000, Some(1_000)),
    (100_000, None),
];

/// One sweep of the harness soak: its summary line's figures.
#[derive(Debug, PartialEq)]
struct Batched {
    seeds: u64,
    per: Option<u64>,
    processes: u64,
    peak_kib: u64,
    threads: u64,
    rss_kib: u64,
    secs: f64,
}

impl Batched {
    /// `… <seeds> seeds in <n> fresh process(es); the largest peaked at <k>
    /// KiB resident; this process: <t> thread(s), <r> KiB resident`.
    fn parse(text: &str, per: Option<u64>, secs: f64) -> Option<Batched> {
        let line = text.lines().find(|l| l.contains(" fresh process(es); "))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let before = |w: &str| -> Option<u64> {
            let i = words.iter().position(|x| *x == w)?;
            words.get(i.checked_sub(1)?)?.parse().ok()
        };
        Some(Batched {
            seeds: before("seeds")?,
            per,
            processes: before("fresh")?,
            peak_kib: words
                .iter()
                .position(|x| *x == "at")
                .and_then(|i| words.get(i + 1)?.parse().ok())?,
            threads: before("thread(s),")?,
            rss_kib: words
                .iter()
                .rposition(|x| *x == "KiB")
                .and_then(|i| words.get(i.checked_sub(1)?)?.parse().ok())?,
            secs,
        })
    }
}

/// Sweeps the harness soak for each of [`BATCHED`] (release, simulation).
fn measure_batched() -> Result<Vec<Batched>, String> {
    let args = [
        "test",
        "--release",
        "-p",
        "sim-harness",
        "--test",
        "it",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ];
    eprintln!("==> [simulation] build: cargo {}", args.join(" "));
    let exe = super::build::executable(crate::cmd::cargo(Mode::Simulation, &args), "it", "it")?;
    let mut out = Vec::new();
    for (seeds, per) in BATCHED {
        eprintln!("==> bench [thread-soak] harness: {seeds} seeds, {per:?} a process");
        let mut cmd = Command::new(&exe);
        cmd.args([
            "soak::threads_killed_where_they_stand",
            "--exact",
            "--nocapture",
        ])
        .env("SIM_SEEDS", format!("0..{seeds}"))
        .env("SIM_REPLAYS", "0")
        .env_remove("SIM_SEEDS_PER_PROCESS");
        if let Some(n) = per {
            cmd.env("SIM_SEEDS_PER_PROCESS", n.to_string());
        }
        let start = std::time::Instant::now();
        let o = cmd
            .output()
            .map_err(|e| format!("the harness soak did not start: {e}"))?;
        let text = String::from_utf8_lossy(&o.stderr);
        let b = Batched::parse(&text, per, start.elapsed().as_secs_f64())
            .filter(|b| b.seeds == seeds && o.status.success())
            .ok_or_else(|| format!("the harness soak of {seeds} seeds did not pass:\n{text}"))?;
        out.push(b);
    }
    Ok(out)
}

/// One `SOAK sim <seeds> <threads> <VmRSS KiB> <seconds>` line.
#[derive(Debug, PartialEq)]
struct Mark {
    seeds: u64,
    threads: u64,
    rss_kib: u64,
    secs: f64,
}

impl Mark {
    fn parse(line: &str) -> Option<Mark> {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["SOAK", "sim", seeds, threads, rss, secs] => Some(Mark {
                seeds: seeds.parse().ok()?,
                threads: threads.parse().ok()?,
                rss_kib: rss.parse().ok()?,
                secs: secs.parse().ok()?,
            }),
            _ => None,
        }
    }
}

fn soak_section(marks: &[Mark], batched: &[Batched]) -> String {
    let mut batch_rows = String::new();
    for b in batched {
        batch_rows.push_str(&format!(
            "| {} | {} | {} | {:.1} MiB | {} | {:.1} MiB | {:.1} s |\n",
            thousands(b.seeds as usize),
            b.per.map_or_else(
                || format!("{} (the default)", thousands(10_000)),
                |n| thousands(n as usize)
            ),
            b.processes,
            b.peak_kib as f64 / 1024.0,
            b.threads,
            b.rss_kib as f64 / 1024.0,
            b.secs
        ));
    }
    let mut rows = String::new();
    for m in marks {
        rows.push_str(&format!(
            "| {} | {} | {:.1} MiB | {:.1} s |\n",
            thousands(m.seeds as usize),
            m.threads,
            m.rss_kib as f64 / 1024.0,
            m.secs
        ));
    }
    let at = |n: u64| marks.iter().find(|m| m.seeds == n);
    let growth = match (at(1_000), marks.last()) {
        (Some(a), Some(b)) if b.seeds > a.seeds => format!(
            " From 1,000 seeds to {}: {:+} OS threads, {:+.1} MiB resident ({:+.0} bytes per seed).",
            thousands(b.seeds as usize),
            b.threads as i64 - a.threads as i64,
            (b.rss_kib as f64 - a.rss_kib as f64) / 1024.0,
            (b.rss_kib as f64 - a.rss_kib as f64) * 1024.0 / (b.seeds - a.seeds) as f64,
        ),
        _ => String::new(),
    };
    format!(
        "{begin}\n## OS threads over a long sweep (issue 35 item 5)\n\n\
         The executor bench's `thread_soak` (simulation build, release): {seeds} seeds \
         in turn in one process, each a fresh run. Each seed starts, on node `a`, a thread \
         looping on 1 ms sleeps (with a thread-local it fills) and one blocked on a condition \
         variable nobody signals; on node `b`, a thread that sleeps 2 ms and ends, joined from \
         `spawn_blocking`; on the main node, a thread looping on sleeps. After 5 ms `a` is \
         crashed (even seeds) or killed (odd seeds) and `b` killed, so their threads are \
         killed where they stand; the run ends 3 ms later with the main node's thread still \
         running. Four OS threads a seed, plus `spawn_blocking`'s worker. After each mark, \
         `Threads` and `VmRSS` of `/proc/self/status`, and the time so far (the threads \
         left are the process's main thread and the simulation's watchdog).{growth} What \
         still grows is what a thread killed where it stands owned and never frees: its \
         thread-locals and std's records of it, and glibc's per-thread malloc cache (its \
         destructor list is freed by its killer); \
         the measurements are in [perf.md](perf.md#issue-35-items-5-and-9-os-threads).\n\n\
         | seeds | OS threads | resident (VmRSS) | time |\n\
         |---:|---:|---:|---:|\n\
         {rows}\n\
         A sweep does not run so many seeds in one process: `#[sim::test]` runs them \
         `SIM_SEEDS_PER_PROCESS` at a time (10,000 unless set), each batch in a fresh process \
         of the test binary, so what killed threads leave ends with their batch. The same \
         scenario as a `#[sim::test]` (sim-harness's `tests/it/soak.rs`, release), swept: \
         the batch size, the processes the sweep started, the largest one's peak resident \
         memory (`getrusage`), and the sweep's own process when it ends (it runs no seed).\n\n\
         | seeds | seeds a process | processes | largest peak | sweep's OS threads | sweep's resident | time |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n\
         {batch_rows}{end}\n",
        begin = SOAK_SECTION.begin,
        end = SOAK_SECTION.end,
        seeds = thousands(SOAK_SEEDS as usize),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_gives_each_column_s_median_and_the_verdicts() {
        let mut s = Results::default();
        for (real, shuttle, sim) in [(5.0, 0.3, 12.0), (6.0, 0.4, 14.0), (4.0, 0.5, 10.0)] {
            s.push("tokio", "threads_pingpong", real);
            s.push("shuttle", "threads_pingpong", shuttle);
            s.push("sim", "threads_pingpong", sim);
            s.push("tokio", "threads_spawn", 30.0);
            s.push("sim", "threads_spawn", 20.0);
        }
        let text = section(2, Some("1.00"), &s);
        assert!(text.contains("| 5.00 | 0.40 | 12.0 | **2.40** |"), "{text}");
        assert!(text.contains("| 30.0 | n/a | 20.0 | **0.67** |"), "{text}");
        assert!(text.contains("real thread's: **not met** (12.0 µs against 5.00 µs"));
        assert!(text.contains("real one: met (20.0 µs"));
        assert!(
            text.contains("Medians of 0 runs"),
            "shuttle ran no spawns: {text}"
        );
        assert!(text.starts_with(SECTION.begin) && text.trim_end().ends_with(SECTION.end));
    }

    #[test]
    fn the_soak_section_says_how_much_grew_after_the_first_thousand_seeds() {
        let lines = "noise\nSOAK sim 1000 3 20480 1.5\nSOAK sim 100000 3 22528 150.25\n";
        let marks: Vec<Mark> = lines.lines().filter_map(Mark::parse).collect();
        assert_eq!(marks.len(), 2);
        let line = "sim: soak: 100000 seeds in 10 fresh process(es); the largest peaked at \
                    40960 KiB resident; this process: 2 thread(s), 15360 KiB resident";
        let b = Batched::parse(&format!("noise\n{line}\n"), None, 12.5).unwrap();
        assert_eq!(
            b,
            Batched {
                seeds: 100_000,
                per: None,
                processes: 10,
                peak_kib: 40_960,
                threads: 2,
                rss_kib: 15_360,
                secs: 12.5,
            }
        );
        let text = soak_section(&marks, &[b]);
        assert!(text.contains("| 1,000 | 3 | 20.0 MiB | 1.5 s |"), "{text}");
        assert!(
            text.contains("+0 OS threads, +2.0 MiB resident (+21 bytes per seed)"),
            "{text}"
        );
        assert!(
            text.contains(
                "| 100,000 | 10,000 (the default) | 10 | 40.0 MiB | 2 | 15.0 MiB | 12.5 s |"
            ),
            "{text}"
        );
    }
}
