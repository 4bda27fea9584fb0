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
//!   OS threads and resident set after 100, 1k, 10k and 100k seeds.
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
         through the executor and the seed); `bench/shuttle`, the same workloads against \
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
    Ok(soak_section(&marks))
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

fn soak_section(marks: &[Mark]) -> String {
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
         {rows}{end}\n",
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
        let text = soak_section(&marks);
        assert!(text.contains("| 1,000 | 3 | 20.0 MiB | 1.5 s |"), "{text}");
        assert!(
            text.contains("+0 OS threads, +2.0 MiB resident (+21 bytes per seed)"),
            "{text}"
        );
    }
}
