//! `cargo xtask demo`: a replicated key-value store loses acknowledged
//! writes under a partition and a crash; the failing seed replays exactly;
//! the fixed store passes the same seeds.
//!
//! 1. Sweep seeds over `examples/kv/tests/demo.rs` (the primary acknowledges
//!    before replicating): the harness reports the first failing seed, its
//!    history's linearizability violation shrunk to a few operations.
//! 2. Run the replay command printed in that report: the same failure, at
//!    the same step and virtual time.
//! 3. Run the same test against the fixed store (`tests/sim.rs`): it passes.

use crate::cmd::{cargo, Mode};

const SWEEP: &[&str] = &["test", "-p", "kv", "--test", "demo"];
const FIXED: &[&str] = &[
    "test",
    "-p",
    "kv",
    "--test",
    "sim",
    "--",
    "acked_writes_survive_failover",
    "--exact",
    "--nocapture",
];
/// Trace lines of the report the demo shows (the report has up to 20).
const TRACE_LINES: usize = 6;

/// Runs `cargo <args>` in simulation with `SIM_SEED` if given; returns
/// whether it passed and its whole output.
fn run(args: &[&str], seed: Option<u64>) -> Result<(bool, String), String> {
    let mut cmd = cargo(Mode::Simulation, args);
    if let Some(seed) = seed {
        cmd.env("SIM_SEED", seed.to_string());
    }
    cmd.env_remove("SIM_SEEDS").env("RUST_BACKTRACE", "0");
    crate::cmd::output(&mut cmd)
}

/// The harness's report, without the sweep's start line, the trace cut to
/// its last few lines.
fn report(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut trace = Vec::new();
    let mut in_report = false;
    let mut in_trace = false;
    for l in text.lines() {
        if l.starts_with("sim: ") && l.contains(" seed(s) failed: ") {
            in_report = true;
        }
        if !in_report {
            continue;
        }
        if in_trace && l.starts_with("    ") {
            trace.push(l);
            continue;
        }
        if in_trace {
            in_trace = false;
            lines.extend(&trace[trace.len().saturating_sub(TRACE_LINES)..]);
        }
        if l.starts_with("sim: trace: ") {
            in_trace = true;
            lines.push(l);
        } else if l.starts_with("sim: ") || l.starts_with("    ") {
            lines.push(l);
        } else {
            break;
        }
    }
    lines
}

/// The report line whose text starts with `prefix`.
fn line<'a>(report: &[&'a str], prefix: &str) -> Option<&'a str> {
    report.iter().copied().find(|l| l.starts_with(prefix))
}

/// The first failure's position and message: what a replay must repeat.
fn failure(report: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = line(report, "sim: first failure")
        .into_iter()
        .map(String::from)
        .collect();
    let class = report.iter().position(|l| l.starts_with("sim: class: "));
    if let Some(i) = class {
        out.extend(
            report[i..]
                .iter()
                .take_while(|l| !l.starts_with("sim: trace"))
                .map(|l| l.to_string()),
        );
    }
    out
}

fn show(lines: &[&str]) {
    for l in lines {
        println!("   | {l}");
    }
}

pub fn demo() -> Result<(), String> {
    println!("== sim demo: a replicated key-value store that loses acknowledged writes ==");
    println!("examples/kv: kv1 is the primary, kv2 and kv3 its backups, over simulated TCP.");
    println!("Its planted bug (Replication::AckBeforeReplicate) answers OK before the backups");
    println!("have the write. Seeded clients write through kv1 while a backup is cut off and");
    println!("kv1 crashes at seeded moments; the test fails over to a backup, reads every key");
    println!("there, and checks that what the clients saw is linearizable (sim::History).\n");

    println!("1. Sweep seeds 0..200 against the buggy store:");
    println!("   RUSTFLAGS=\"--cfg simulation\" cargo test -p kv --test demo\n");
    let (ok, text) = run(SWEEP, None)?;
    if ok {
        return Err("the sweep passed: the planted bug was not found in 200 seeds".into());
    }
    let sweep = report(&text);
    if sweep.is_empty() {
        return Err(format!("no report in the sweep's output:\n{text}"));
    }
    show(&sweep);
    let replay = line(&sweep, "sim: replay: ")
        .ok_or("no replay line in the report")?
        .trim_start_matches("sim: replay: ");
    let seed: u64 = replay
        .strip_prefix("SIM_SEED=")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no seed in the replay line: {replay}"))?;
    // The replay command as printed, run as is: its cargo arguments, with
    // SIM_SEED and the simulation's RUSTFLAGS set by `cargo(Mode::Simulation)`.
    let args: Vec<&str> = replay
        .split_once(" cargo ")
        .ok_or_else(|| format!("the replay line has no cargo command: {replay}"))?
        .1
        .split_whitespace()
        .collect();

    println!("\n2. Replay seed {seed} alone, with the command from the report:");
    println!("   {replay}\n");
    let (ok, text) = run(&args, Some(seed))?;
    if ok {
        return Err(format!(
            "seed {seed} failed in the sweep but passed alone: not deterministic"
        ));
    }
    let again = report(&text);
    let first = failure(&sweep);
    let second = failure(&again);
    show(&second.iter().map(String::as_str).collect::<Vec<_>>());
    if first.is_empty() || first != second {
        return Err(format!(
            "the replay failed differently:\n  sweep:  {first:?}\n  replay: {second:?}"
        ));
    }
    println!("   The same failure: the same step, virtual time and violation.");

    println!("\n3. The fixed store (Replication::AckAfterReplicate), the same test and seeds:");
    println!("   RUSTFLAGS=\"--cfg simulation\" cargo test -p kv --test sim -- acked_writes_survive_failover --exact\n");
    let (ok, text) = run(FIXED, None)?;
    // The sweep's start line: `sim: <test>: 200 seeds (0..200), …`.
    let seeds: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("sim: acked_writes_survive_failover: "))
        .and_then(|l| l.split_once(" seeds ("))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0);
    if !ok {
        return Err(format!("the fixed store failed:\n{text}"));
    }
    if seeds == 0 {
        return Err(format!("the fixed store's test ran no seeds:\n{text}"));
    }
    println!("   | test acked_writes_survive_failover ... ok ({seeds} seeds passed)");
    println!(
        "\nFound at seed {seed}, replayed exactly, fixed: every seed's history is linearizable."
    );
    Ok(())
}
