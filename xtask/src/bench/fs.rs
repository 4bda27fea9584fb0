//! The cost of a write through the simulation (issue 23): the executor
//! bench's `fs_tokio` and `fs_std` workloads (4 KiB writes through
//! `tokio::fs::File` and `std::fs::File`), in simulation (the node's
//! simulated disk; std's calls through the libc interposers) and with real
//! Tokio (a real temporary directory), run alternately, kept as a section
//! of `docs/bench.md` between two markers. A full `cargo xtask bench`
//! rewrites it with the rest; `cargo xtask bench --only fs` measures and
//! rewrites only it.

use super::Results;
use crate::cmd::{stdout, Mode};
use std::path::Path;
use std::process::Command;

/// Its section of `docs/bench.md`.
pub(super) const SECTION: super::Section = super::section!("fs");
const BEGIN: &str = SECTION.begin;
const END: &str = SECTION.end;

/// The workloads (the executor bench's names) and what each writes through.
const WORKLOADS: [(&str, &str); 2] = [
    ("fs_tokio", "`tokio::fs::File`"),
    ("fs_std", "`std::fs::File`"),
];

/// The bench's modes, as its `BENCH` lines name them.
const MODES: [&str; 2] = ["sim", "tokio"];

/// One run of the executor bench `exe` (a warm-up, then one measured run
/// of each workload): (mode, workload, µs per write) per `BENCH` line.
fn once(exe: &Path) -> Result<Vec<(String, String, f64)>, String> {
    let mut cmd = Command::new(exe);
    cmd.args(["--runs", "1", "--warmup", "1"]);
    for (w, _) in WORKLOADS {
        cmd.args(["--only", w]);
    }
    let text = stdout(&mut cmd, "the fs bench")?;
    let lines: Vec<_> = text
        .lines()
        .filter_map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["BENCH", mode, name, "us/write", v, ..] => {
                    Some((mode.to_string(), name.to_string(), v.parse().ok()?))
                }
                _ => None,
            },
        )
        .collect();
    if lines.len() != WORKLOADS.len() {
        return Err(format!(
            "the fs bench printed {} of {} lines:\n{text}",
            lines.len(),
            WORKLOADS.len()
        ));
    }
    Ok(lines)
}

/// Builds the executor bench in both modes and measures; returns the
/// section's markdown.
pub fn measure(runs: usize) -> Result<String, String> {
    let exes = [
        super::build::build_bench(Mode::Simulation, "sim-runtime", "executor")?,
        super::build::build_bench(Mode::Production, "sim-runtime", "executor")?,
    ];
    // What else the machine was doing: the 1-minute load average, as the
    // kernel gives it, before the first run.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string));
    let mut samples = Results::default();
    for run in 0..runs.max(1) {
        eprintln!("==> bench [fs] run {}/{}", run + 1, runs.max(1));
        // Alternate which goes first: neither always meets a warm machine.
        for k in 0..exes.len() {
            for (mode, name, v) in once(&exes[(run + k) % exes.len()])? {
                samples.push(&mode, &name, v);
            }
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(section(cores, load.as_deref(), &samples))
}

fn section(cores: usize, load: Option<&str>, samples: &Results) -> String {
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let runs = MODES
        .iter()
        .flat_map(|m| WORKLOADS.iter().map(move |(w, _)| samples.get(m, w).len()))
        .min()
        .unwrap_or(0);
    let mut rows = String::new();
    for (w, through) in WORKLOADS {
        let (sim, tokio) = (samples.get("sim", w), samples.get("tokio", w));
        let cell = |mode: &str| {
            samples
                .median(mode, w)
                .map_or("n/a".to_string(), |m| format!("{m:.2}"))
        };
        let ratio = samples
            .median("sim", w)
            .zip(samples.median("tokio", w))
            .map_or("n/a".to_string(), |(s, t)| format!("{:.2}×", s / t));
        rows.push_str(&format!(
            "| `{w}` ({through}) | {} | {} | {ratio} | {} | {} |\n",
            cell("sim"),
            cell("tokio"),
            list(sim),
            list(tokio)
        ));
    }
    format!(
        "{BEGIN}\n## The cost of a write (issue 23)\n\n\
         The executor bench's `fs_tokio` and `fs_std`: 2,000 writes of 4 KiB to a new file \
         (`write_all`), then one `sync_all`, inside a runtime's `block_on`, through \
         `tokio::fs::File` and through `std::fs::File`. In simulation both reach the node's \
         simulated disk (in memory; std's calls through the libc interposers, \
         `libc/fs/`); with real Tokio they write a real file in a temporary directory \
         (`tokio::fs` through Tokio's blocking pool). Per write: a run's time minus that of a \
         run with no writes (the runtime, creating the file, an empty sync), over 2,000, so the \
         final sync of 8 MiB is spread over the writes. Medians of {runs} runs, the two \
         binaries alternated, each run a fresh process (a warm-up, then one measured run), on \
         a shared machine with {cores} core(s) and other work on it (load average {load} \
         when the runs began): the figures vary from run to run, by 2× and more.\n\n\
         | workload | sim µs/write | Tokio µs/write | sim / Tokio | sim runs | Tokio runs |\n\
         |---|---|---|---|---|---|\n\
         {rows}{END}\n",
        load = load.unwrap_or("unknown"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_gives_medians_per_write_and_their_ratio() {
        let mut sim_only = Results::default();
        for v in [3.0, 1.0, 2.0] {
            sim_only.push("sim", "fs_tokio", v);
            sim_only.push("sim", "fs_std", 1.0);
        }
        let mut samples = sim_only.clone();
        for (tokio, std) in [(8.0, 2.0), (8.0, 4.0), (9.0, 3.0)] {
            samples.push("tokio", "fs_tokio", tokio);
            samples.push("tokio", "fs_std", std);
        }
        let s = section(2, Some("1.50"), &samples);
        assert!(
            s.contains("| `fs_tokio` (`tokio::fs::File`) | 2.00 | 8.00 | 0.25× |"),
            "{s}"
        );
        assert!(
            s.contains("| `fs_std` (`std::fs::File`) | 1.00 | 3.00 | 0.33× |"),
            "{s}"
        );
        assert!(s.contains("Medians of 3 runs"), "{s}");
        assert!(s.contains("(load average 1.50 when"), "{s}");
        let doc = format!("# Bench\n\n{s}\n## After\n");
        let again = SECTION.splice(&doc, &section(2, None, &sim_only));
        assert!(again.contains("| 2.00 | n/a | n/a |"), "{again}");
        assert!(again.ends_with("\n## After\n"));
        assert_eq!(again.matches(BEGIN).count(), 1);
    }
}
