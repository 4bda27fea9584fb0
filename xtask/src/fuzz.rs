//! `cargo xtask fuzz`: the canary catalog driven by libFuzzer, the
//! fuzzer's bytes as each run's seed and decisions (`sim::fuzz`, the
//! target in `fuzz/fuzz_targets/canary.rs`).
//!
//! The target is built on stable Rust: libFuzzer comes from the
//! `libfuzzer-sys` crate (compiled with the system's C++ compiler) and the
//! coverage the fuzzer steers by from LLVM's SanitizerCoverage pass, which
//! rustc's stable `-C passes` / `-C llvm-args` turn on. `cargo fuzz run
//! canary` (nightly) builds the same target.
//!
//! - `cargo xtask fuzz <canary> [--runs N] [--seed S]`: fuzz one canary
//!   until it fails or N inputs ran; a failing input is a tape, replayed
//!   with `cargo test` (`SIM_TAPE`) to check it fails the same way there.
//! - `cargo xtask fuzz --ci`: the bounded run `cargo xtask ci` makes.
//! - `cargo xtask fuzz --measure [--repeat K] [--runs N] [--only a,b]`:
//!   every canary (or those named, the table's other rows kept), K fuzzer
//!   seeds each: inputs to the first failure (median), written to
//!   docs/canaries.md next to the seeded strategies' figures.

use crate::cmd::{self, root};
use std::path::PathBuf;
use std::process::Command;

const USAGE: &str = "\
usage: cargo xtask fuzz <canary> [--runs N] [--seed S]
       cargo xtask fuzz --ci
       cargo xtask fuzz --measure [--repeat K] [--runs N] [--only a,b,..]";

/// The canary `cargo xtask ci` fuzzes: found neither at the empty input
/// nor by uniform random schedules (it needs one task far ahead).
const CI_CANARY: &str = "yield_ahead";

/// The coverage the fuzzer steers by: 8-bit edge counters, the table of
/// their code addresses, and the operands of comparisons.
const SANCOV: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
];

pub fn main(args: &[String]) -> Result<(), crate::Error> {
    let usage = |e: &str| crate::Error::Usage(format!("{e}\n{USAGE}"));
    let mut canary = None;
    let (mut runs, mut seed, mut repeat) = (None, 1u64, 5u32);
    let (mut ci, mut measure) = (false, false);
    let mut only: Option<Vec<String>> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |what: &str| -> Result<u64, crate::Error> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| usage(&format!("{what} needs a number")))
        };
        match a.as_str() {
            "--runs" => runs = Some(number("--runs")?),
            "--seed" => seed = number("--seed")?,
            "--repeat" => repeat = number("--repeat")? as u32,
            "--ci" => ci = true,
            "--measure" => measure = true,
            "--only" => {
                only = Some(
                    it.next()
                        .ok_or_else(|| usage("--only needs canaries, comma-separated"))?
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            s if s.starts_with('-') => return Err(usage(&format!("unknown option `{s}`"))),
            name => canary = Some(name.to_string()),
        }
    }
    let failed = crate::Error::Failed;
    build().map_err(failed)?;
    if measure {
        return self::measure(repeat.max(1), runs.unwrap_or(20_000), only.as_deref())
            .map_err(failed);
    }
    let (name, runs) = match (canary, ci) {
        (Some(name), false) => (name, runs.unwrap_or(100_000)),
        (None, true) => (CI_CANARY.to_string(), runs.unwrap_or(20_000)),
        _ => return Err(usage("name one canary, or --ci, or --measure")),
    };
    let found = fuzz(&name, seed, runs).map_err(failed)?;
    let Some(tape) = found.tape else {
        return Err(failed(format!(
            "fuzz: {name}: no failing input in {} runs (fuzzer seed {seed})",
            found.runs
        )));
    };
    eprintln!(
        "fuzz: {name}: a failing input after {} runs (fuzzer seed {seed}): {}",
        found.runs,
        found.class.as_deref().unwrap_or("?")
    );
    replay(&name, &tape, found.class.as_deref()).map_err(failed)
}

/// The host's target triple: the fuzz target is built for it explicitly,
/// so that the coverage flags reach the target's code and not the build
/// scripts and proc macros.
fn host() -> Result<String, String> {
    let text = cmd::capture("rustc", &["-vV"]).ok_or("cannot run rustc -vV")?;
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .ok_or_else(|| "rustc -vV names no host".into())
}

fn binary() -> Result<PathBuf, String> {
    Ok(root()
        .join("target/fuzz")
        .join(host()?)
        .join("release/canary"))
}

/// Builds the fuzz target (release, with the test build's checks on).
fn build() -> Result<(), String> {
    let mut flags = vec!["--cfg", "simulation"];
    flags.extend_from_slice(SANCOV);
    let host = host()?;
    let args = [
        "build",
        "--release",
        "--manifest-path",
        "fuzz/Cargo.toml",
        "--target",
        host.as_str(),
        "--bin",
        "canary",
    ];
    eprintln!("\n==> [fuzz] build the target: cargo {}", args.join(" "));
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(root())
        .args(args)
        .env("RUSTFLAGS", flags.join(" "))
        .env("CARGO_TARGET_DIR", root().join("target/fuzz"));
    cmd::status(&mut cargo, "the fuzz target's build")
}

/// One fuzzing run.
struct Found {
    /// Inputs run (to the failing one, when one failed).
    runs: u64,
    /// The failing input's tape file.
    tape: Option<String>,
    class: Option<String>,
}

/// Fuzzes `canary` with libFuzzer's seed `seed` (a fresh corpus) until an
/// input fails or `runs` inputs ran.
fn fuzz(canary: &str, seed: u64, runs: u64) -> Result<Found, String> {
    let dir = root()
        .join("target/fuzz/runs")
        .join(format!("{canary}-{seed}"));
    let _ = std::fs::remove_dir_all(&dir);
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    let mut run = cmd::unsteered(Command::new(binary()?));
    run.current_dir(root())
        .arg(&corpus)
        .arg(format!("-seed={seed}"))
        .arg(format!("-runs={runs}"))
        // A bound in real time too, whatever the inputs cost.
        .arg("-max_total_time=300")
        .arg(format!("-artifact_prefix={}/", dir.display()))
        .arg("-print_final_stats=1")
        .env("SIM_FUZZ_CANARY", canary);
    let (_, text) = cmd::output(&mut run)?;
    let executed = text
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("fuzz: {canary}: libFuzzer printed no statistics:\n{text}"))?;
    let tape = text
        .lines()
        .find_map(|l| l.strip_prefix("sim: replay: SIM_TAPE="))
        .and_then(|l| l.split(' ').next())
        .map(str::to_string);
    let class = text
        .lines()
        .find_map(|l| l.strip_prefix("sim: class: "))
        .map(str::to_string);
    if tape.is_none() && text.contains("deadly signal") {
        return Err(format!(
            "fuzz: {canary}: the target crashed without a tape:\n{text}"
        ));
    }
    Ok(Found {
        runs: executed,
        tape,
        class,
    })
}

/// Replays a fuzzer's tape with the canary's sweep test and checks it
/// fails there the same way.
fn replay(canary: &str, tape: &str, class: Option<&str>) -> Result<(), String> {
    let mut test = cmd::sim_cargo(&[
        "test", "-p", "canaries", "--test", "sweep", "--", canary, "--exact",
    ]);
    test.env("SIM_TAPE", tape)
        .env("SIM_REPLAYS", "0")
        .env("SIM_SHRINK", "off")
        .env("SIM_INEVITABLE", "off");
    eprintln!("\n==> [simulation] replay the failing input: SIM_TAPE={tape} cargo test -p canaries --test sweep -- {canary} --exact");
    let (ok, text) = cmd::output(&mut test)?;
    let replayed = text.contains("sim: tape: replayed from ");
    let same = class.is_some_and(|c| text.contains(&format!("sim: class: {c}\n")));
    if ok || !replayed || !same {
        return Err(format!(
            "fuzz: {canary}: the tape did not fail the same way ({}) under cargo test:\n{text}",
            class.unwrap_or("?")
        ));
    }
    eprintln!(
        "fuzz: {canary}: the tape fails the same way under cargo test ({})",
        class.unwrap_or("?")
    );
    Ok(())
}

/// Every canary (or those in `only`, the table's other rows kept),
/// `repeat` fuzzer seeds each: the median of the inputs to the first
/// failure, into docs/canaries.md.
fn measure(repeat: u32, runs: u64, only: Option<&[String]>) -> Result<(), String> {
    let names = crate::canaries::names()?;
    if let Some(bad) = only.and_then(|o| o.iter().find(|n| !names.contains(n))) {
        return Err(format!(
            "--only: no canary named `{bad}`; the catalog: {names:?}"
        ));
    }
    let path = root().join("docs/canaries.md");
    let md = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let kept = column(&md, "fuzzer: inputs to the first failure");
    let mut rows = Vec::new();
    for name in &names {
        if only.is_some_and(|o| !o.contains(name)) {
            if let Some((_, cell)) = kept.iter().find(|(n, _)| n == name) {
                rows.push((name.clone(), cell.clone()));
            }
            continue;
        }
        let mut found = Vec::new();
        let mut missed = 0;
        for seed in 1..=u64::from(repeat) {
            let f = fuzz(name, seed, runs)?;
            match f.tape {
                Some(_) => found.push(f.runs),
                None => missed += 1,
            }
        }
        found.sort_unstable();
        let cell = if found.len() * 2 > repeat as usize {
            // The median of all `repeat` runs, a missed run counting as
            // more than the budget.
            let median = found[(repeat as usize) / 2];
            format!("{median} (found {} of {repeat})", found.len())
        } else if found.is_empty() {
            format!("none in {runs} ({repeat} of {repeat} missed)")
        } else {
            format!("over {runs} ({missed} of {repeat} missed)")
        };
        eprintln!("fuzz: {name}: {cell}");
        rows.push((name.clone(), cell));
    }
    // The portfolio's seeds to the first failure: the catalog's table,
    // else the hard canaries' (a median of several sweeps).
    let mut seeded = column(&md, "seeds to first failure");
    if let Some(at) = md.find("## Harder canaries") {
        seeded.extend(column(&md[at..], "portfolio"));
    }
    let rows: Vec<String> = rows
        .iter()
        .map(|(name, cell)| {
            let seeds = seeded
                .iter()
                .find(|(n, _)| n == name)
                .map_or("—", |(_, v)| v.as_str());
            format!("| `{name}` | {seeds} | {cell} |")
        })
        .collect();
    let section = format!(
        "Written by `cargo xtask fuzz --measure`: each canary fuzzed by libFuzzer from an empty \
         corpus with fuzzer seeds 1..={repeat}, at most {runs} inputs a run. The fuzzer's cell is \
         the median number of inputs run to the first failing one (an input is one run of the \
         scenario: the fuzzer's counterpart of a seed); the portfolio's is the table's above.\n\n\
         | bug | portfolio: seeds to the first failure | fuzzer: inputs to the first failure |\n\
         |---|---|---|\n{}\n",
        rows.join("\n")
    );
    cmd::write_file(&path, &SECTION.splice(&md, &section))
}

/// A column of the first markdown table whose header names `header`:
/// (bug name without backticks, cell).
fn column(md: &str, header: &str) -> Vec<(String, String)> {
    let mut lines = md
        .lines()
        .skip_while(|l| !(l.starts_with('|') && l.contains(header)));
    let Some(head) = lines.next() else {
        return Vec::new();
    };
    let Some(at) = head.split('|').position(|c| c.trim() == header) else {
        return Vec::new();
    };
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            Some((
                cells.get(1)?.trim().trim_matches('`').to_string(),
                cells.get(at)?.trim().to_string(),
            ))
        })
        .collect()
}

/// The fuzzer's section of docs/canaries.md (`cargo xtask canaries`
/// keeps it when it rewrites the file).
pub const SECTION: crate::canaries::Section = crate::canaries::Section {
    start: "<!-- fuzz: written by cargo xtask fuzz --measure -->",
    end: "<!-- fuzz: end -->",
    heading: "## The fuzzer on the catalog",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_is_read_by_its_header() {
        let md = "x\n| bug | a | seeds |\n|---|---|---|\n| `p` | 1 | 4 |\n| `q` | 2 | 9 |\n\nafter";
        assert_eq!(
            column(md, "seeds"),
            vec![("p".into(), "4".into()), ("q".into(), "9".into())]
        );
        assert!(column(md, "nothing").is_empty());
    }

    #[test]
    fn the_fuzzer_section_is_added_once_and_then_replaced() {
        let md = "# Catalog\n\ntext\n";
        let once = SECTION.splice(md, "A\n");
        assert!(once.contains("## The fuzzer on the catalog"));
        assert!(once.contains(&format!("{}\nA\n{}\n", SECTION.start, SECTION.end)));
        let twice = SECTION.splice(&once, "B\n");
        assert_eq!(twice.matches(SECTION.start).count(), 1);
        assert!(
            twice.contains(&format!("{}\nB\n{}\n", SECTION.start, SECTION.end))
                && !twice.contains("A\n")
        );
        assert!(twice.starts_with("# Catalog\n\ntext\n"));
    }
}
