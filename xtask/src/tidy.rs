//! `cargo xtask tidy`: the determinism rules of ARCHITECTURE.md, checked by
//! grep over the simulator's own code, each finding with its fix.

use crate::ci::root;
use std::path::{Path, PathBuf};

struct Rule {
    needle: &'static str,
    advice: &'static str,
    /// Files (relative to the workspace root) allowed to contain it, with why.
    allowed: &'static [&'static str],
}

const RULES: &[Rule] = &[
    Rule {
        needle: "HashMap",
        advice: "simulator code never iterates a HashMap (its order is seeded per thread): use BTreeMap or sort",
        allowed: &[],
    },
    Rule {
        needle: "HashSet",
        advice: "simulator code never iterates a HashSet: use BTreeSet or sort",
        allowed: &[],
    },
    Rule {
        needle: "SystemTime::now",
        advice: "simulator code never reads wall time: use the executor's virtual clock",
        allowed: &[],
    },
    Rule {
        needle: "std::time::Instant::now",
        advice: "simulator code never reads real time: use the executor's virtual clock \
                 (the simulation's own `time::Instant::now()` is virtual)",
        allowed: &[
            // Tokio-shaped Instant::now() outside a simulation is the real clock, as in Tokio.
            "sim-runtime/src/simulation/time/instant.rs",
            // Captures the base point of virtual time, through the interposers.
            "sim-runtime/src/simulation/executor.rs",
        ],
    },
    Rule {
        needle: "thread::spawn(",
        advice: "simulator code never starts OS threads (only the runner's one thread per seed)",
        allowed: &[],
    },
    Rule {
        needle: "thread_rng()",
        advice: "only the runtime owns randomness: fork a stream from the seed tree (seed::stream)",
        allowed: &[],
    },
    Rule {
        needle: "rand::random",
        advice: "only the runtime owns randomness: fork a stream from the seed tree (seed::stream)",
        allowed: &[],
    },
];

/// The simulator's own code: the models, the simulation half of the
/// runtime, and the harness.
const DIRS: &[&str] = &[
    "sim-net/src",
    "sim-fs/src",
    "sim-runtime/src/simulation",
    "sim-harness/src",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

pub fn tidy() -> Result<(), String> {
    let root = root();
    let mut files = Vec::new();
    for d in DIRS {
        rust_files(&root.join(d), &mut files);
    }
    let mut findings = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap_or(f)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(f).map_err(|e| format!("{rel}: {e}"))?;
        let mut in_tests = false;
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("#[cfg(test)]") {
                in_tests = true;
            }
            if in_tests || code.starts_with("//") {
                continue;
            }
            for r in RULES {
                if line.contains(r.needle) && !r.allowed.contains(&rel.as_str()) {
                    findings.push(format!("{rel}:{}: `{}`: {}", i + 1, r.needle, r.advice));
                }
            }
        }
    }
    if findings.is_empty() {
        eprintln!("tidy: {} files follow the determinism rules", files.len());
        Ok(())
    } else {
        for f in &findings {
            eprintln!("tidy: {f}");
        }
        Err(format!("tidy: {} finding(s)", findings.len()))
    }
}
