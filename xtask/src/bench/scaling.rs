//! How a sweep scales over cores (issue 26 item 2): the harness's scenario
//! (`sim-harness/benches/harness.rs`) with `SIM_JOBS=1` and `SIM_JOBS=2`,
//! run alternately, and the ratio of their median seeds per second, kept
//! as a section of `docs/bench.md` between two markers. A full `cargo xtask
//! bench` rewrites it with the rest; `cargo xtask bench --only scaling`
//! measures and rewrites only it.

use super::median;
use crate::cmd::{stdout, Mode};
use std::path::Path;
use std::process::Command;

/// Its section of `docs/bench.md`.
pub(super) const SECTION: super::Section = super::section!("scaling");
const BEGIN: &str = SECTION.begin;
const END: &str = SECTION.end;

/// The target: two jobs run at least this many times the seeds per second
/// of one.
const TARGET: f64 = 1.8;

/// One run of the scenario with `jobs` jobs: seeds per second.
fn once(exe: &Path, jobs: usize, seeds: u64) -> Result<f64, String> {
    let text = stdout(
        Command::new(exe)
            .args(["--runs", "1", "--warmup", "1", "--seeds"])
            .arg(seeds.to_string())
            .args(["--jobs", &jobs.to_string()]),
        "the harness bench",
    )?;
    text.lines()
        .find_map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["BENCH", "sim", "scenario", "seeds/s", v, ..] => v.parse().ok(),
                _ => None,
            },
        )
        .ok_or_else(|| format!("the harness bench printed no scenario line:\n{text}"))
}

/// Builds the harness bench and measures; returns the section's markdown.
pub fn measure(runs: usize) -> Result<String, String> {
    let exe = super::build::build_bench(Mode::Simulation, "sim-harness", "harness")?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for run in 0..runs.max(1) {
        eprintln!("==> bench [scaling] run {}/{}", run + 1, runs.max(1));
        // Alternate which goes first: neither always meets a warm machine.
        if run % 2 == 0 {
            one.push(once(&exe, 1, 4_000)?);
            two.push(once(&exe, 2, 4_000)?);
        } else {
            two.push(once(&exe, 2, 4_000)?);
            one.push(once(&exe, 1, 4_000)?);
        }
    }
    // At least one run each.
    let (m1, m2) = (median(&one).unwrap_or(0.0), median(&two).unwrap_or(0.0));
    Ok(section(cores, &one, &two, m1, m2))
}

fn section(cores: usize, one: &[f64], two: &[f64], m1: f64, m2: f64) -> String {
    let ratio = m2 / m1;
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let verdict = if ratio >= TARGET {
        format!("meets the target (≥ {TARGET}×)")
    } else {
        format!(
            "SHORT of the target (≥ {TARGET}×) by {:.2}×",
            TARGET - ratio
        )
    };
    format!(
        "{BEGIN}\n## How a sweep scales over cores\n\n\
         The harness's 3-node scenario (`sim-harness/benches/harness.rs`, 4,000 seeds a run), \
         `SIM_JOBS=1` and `SIM_JOBS=2` alternated, on a machine with {cores} core(s). Each job is a \
         worker thread that runs its seeds in turn, each in its own simulation with the \
         worker's thread-locals made new, so jobs share nothing but the seed counter and the \
         report.\n\n\
         | jobs | median seeds/s | runs |\n|---|---|---|\n\
         | 1 | {m1:.0} | {} |\n| 2 | {m2:.0} | {} |\n\n\
         Two jobs: **{ratio:.2}×** one job's seeds per second, which {verdict}.\n{END}\n",
        list(one),
        list(two)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_says_the_ratio_and_whether_it_meets_the_target() {
        let s = section(2, &[1000.0], &[1900.0], 1000.0, 1900.0);
        assert!(
            s.contains("**1.90×**") && s.contains("meets the target"),
            "{s}"
        );
        let short = section(2, &[1000.0], &[1500.0], 1000.0, 1500.0);
        assert!(
            short.contains("SHORT of the target (≥ 1.8×) by 0.30×"),
            "{short}"
        );
        let doc = format!("# Bench\n\n{s}\n## After\n");
        let new = SECTION.splice(&doc, &short);
        assert!(new.contains("1.50×") && !new.contains("1.90×"), "{new}");
        assert!(new.ends_with("\n## After\n"));
        assert_eq!(new.matches(BEGIN).count(), 1);
    }
}
