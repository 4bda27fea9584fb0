//! `cargo xtask demo`: a simulated service finds its planted bug and the
//! failing seed replays exactly.
//!
//! 1. Sweep seeds over the ticket office's `#[tokio::test]`: the sweep stops
//!    at the first seed that oversells and prints its replay command.
//! 2. Run that command: the same failure, at the same step and virtual time.

use crate::ci::{cargo, Mode};

const TEST: &[&str] = &[
    "test",
    "-p",
    "lost-update",
    "--test",
    "demo",
    "--",
    "--test-threads=1",
];

fn run_demo(envs: &[(&str, String)]) -> Result<(bool, String), String> {
    let mut cmd = cargo(Mode::Simulation, TEST);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.env_remove("RUST_BACKTRACE");
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// The lines a person needs: the assertion, and the simulation's report.
fn excerpt(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("sim: ") || l.contains("oversold") || l.contains("panicked at"))
        .collect()
}

/// The "at step N · virtual time T" part of the failure.
fn where_failed(text: &str) -> Option<&str> {
    text.lines()
        .filter(|l| l.starts_with("sim: ") && l.contains(" at step "))
        .map(|l| l.split(" · seed").next().unwrap_or(l))
        .next_back()
}

fn failing_seed(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("replay with: SIM_SEED="))?;
    let rest = &line[line.find("SIM_SEED=")? + "SIM_SEED=".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

pub fn demo() -> Result<(), String> {
    println!("== sim demo: a ticket office that sometimes oversells ==");
    println!("examples/lost-update checks the stock, awaits an audit write, then records the sale");
    println!("from the value it read before the await. Its test is plain #[tokio::test].\n");
    println!("1. Sweep seeds 0..100 under --cfg simulation:");
    println!("   SIM_SEEDS=0..100 RUSTFLAGS=\"--cfg simulation\" cargo test -p lost-update --test demo\n");
    let (ok, text) = run_demo(&[("SIM_SEEDS", "0..100".into())])?;
    if ok {
        return Err("the sweep passed: the planted bug was not found in 100 seeds".into());
    }
    let seed =
        failing_seed(&text).ok_or_else(|| format!("no replay line in the output:\n{text}"))?;
    for l in excerpt(&text) {
        println!("   | {l}");
    }
    let first = where_failed(&text)
        .ok_or("no failure position in the output")?
        .to_string();
    println!("\n2. Replay seed {seed} alone:");
    println!(
        "   SIM_SEED={seed} RUSTFLAGS=\"--cfg simulation\" cargo test -p lost-update --test demo\n"
    );
    let (ok, text) = run_demo(&[("SIM_SEED", seed.to_string())])?;
    if ok {
        return Err(format!(
            "seed {seed} failed in the sweep but passed alone: not deterministic"
        ));
    }
    for l in excerpt(&text) {
        println!("   | {l}");
    }
    let again = where_failed(&text)
        .ok_or("no failure position in the replay")?
        .to_string();
    if first != again {
        return Err(format!(
            "the replay failed elsewhere:\n  sweep:  {first}\n  replay: {again}"
        ));
    }
    println!(
        "\nFound at seed {seed}; the replay failed identically ({}).",
        again.trim_start_matches("sim: ")
    );
    println!("The fixed office passes the same seeds: cargo xtask test runs examples/lost-update/tests/sim.rs.");
    Ok(())
}
