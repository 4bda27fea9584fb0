//! The transcript program run as separate processes.
//!
//! In simulation: the same seed prints the same transcript in two
//! processes, and different seeds interleave differently. In production:
//! the same program runs on real Tokio and prints a well-formed transcript.

use std::process::Command;

fn transcript(seed: u64) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_transcript"))
        .env("SIM_SEED", seed.to_string())
        .output()
        .expect("the transcript program runs");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn transcript_is_well_formed() {
    let t = transcript(1);
    assert_eq!(t.lines().count(), 9 + 4 + 4, "{t}");
    assert!(t.contains("select picks "));
    assert!(t.contains("slept 1.5"), "{t}");
}

#[cfg(simulation)]
#[test]
fn same_seed_same_transcript_in_two_processes() {
    let a = transcript(42);
    let b = transcript(42);
    assert_eq!(a, b);
    assert!(a.contains("slept 1.5s"), "virtual time is exact: {a}");
}

#[cfg(simulation)]
#[test]
fn different_seeds_different_transcripts() {
    let all: std::collections::BTreeSet<String> = (0..6).map(transcript).collect();
    assert!(
        all.len() >= 5,
        "6 seeds gave {} distinct transcripts",
        all.len()
    );
    // Each source of nondeterminism varies with the seed on its own.
    let runs: Vec<String> = (0..6).map(transcript).collect();
    let varies = |pick: &dyn Fn(&str) -> String| {
        let set: std::collections::BTreeSet<String> = runs.iter().map(|t| pick(t)).collect();
        set.len() > 1
    };
    let line = |prefix: &'static str| {
        move |t: &str| {
            t.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap()
                .to_string()
        }
    };
    assert!(
        varies(&|t| t.lines().take(9).collect::<Vec<_>>().join("\n")),
        "task interleaving"
    );
    assert!(
        varies(&|t| t.lines().skip(9).take(4).collect::<Vec<_>>().join("\n")),
        "timer order"
    );
    for prefix in ["select picks", "hashmap order", "rand 0.8", "wall"] {
        assert!(
            varies(&line(prefix)),
            "{prefix} does not depend on the seed"
        );
    }
}
