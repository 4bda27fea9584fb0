//! `cargo xtask tidy`: what ARCHITECTURE.md promises about the code,
//! checked, each finding with its fix:
//!
//! - the determinism rules (this file), by grep over the simulator's own
//!   code;
//! - one switch per crate: only the switch tests `cfg(simulation)`
//!   ([`cfg_switch`]);
//! - every `unsafe` says why it is sound: clippy's lint for blocks stays on
//!   for every crate, and an `unsafe fn` has a `# Safety` section
//!   ([`unsafe_doc`]);
//! - the runtime's layers, by path: nothing under `core/` imports outside
//!   it, and a file imports only its own layer and lower ones
//!   ([`layers`]);
//! - every failure-mode row is claimed by a test (`failure_modes.rs`).
//!
//! The structural rules read code through [`source`], which blanks
//! comments and literals; the layer rule reads it with `syn`.
//!
//! Why the module is over 1,000 lines: five rules, each in its own file
//! with its tests (about a third of the lines), and the layer rule needs
//! more than a grep: `syn` parses, but resolving a path to the file and
//! layer it leads to (`super::`, `crate::` through `api.rs`'s re-exports,
//! inline modules) is ours (`layers/`).

mod cfg_switch;
mod layers;
mod source;
mod unsafe_doc;

use crate::cmd::{root, source_files};
use std::path::{Path, PathBuf};

struct Rule {
    needle: &'static str,
    advice: &'static str,
    /// Files (relative to the workspace root) allowed to contain it, with why.
    allowed: &'static [&'static str],
    /// Longer strings containing the needle that are fine (a type, not a
    /// call): removed from the line before it is checked.
    harmless: &'static [&'static str],
}

const RULES: &[Rule] = &[
    Rule {
        needle: "HashMap",
        advice: "simulator code never iterates a HashMap (its order is seeded per thread): use BTreeMap or sort",
        allowed: &[],
        harmless: &[],
    },
    Rule {
        needle: "HashSet",
        advice: "simulator code never iterates a HashSet: use BTreeSet or sort",
        allowed: &[],
        harmless: &[],
    },
    Rule {
        needle: "SystemTime::now",
        advice: "simulator code never reads wall time: use the executor's virtual clock",
        allowed: &[],
        harmless: &[],
    },
    Rule {
        needle: "std::time::Instant::now",
        advice: "simulator code never reads real time: use the executor's virtual clock \
                 (the simulation's own `time::Instant::now()` is virtual)",
        allowed: &[
            // Tokio-shaped Instant::now() outside a simulation is the real clock, as in Tokio.
            "sim-runtime/src/simulation/time/instant.rs",
            // Captures the base point of virtual time, through the interposers.
            "sim-runtime/src/simulation/core/executor.rs",
        ],
        harmless: &[],
    },
    Rule {
        needle: "std::fs",
        advice: "the simulator's own files (traces, tapes, results) are read and written on the \
                 runner's thread outside any seed's simulation, or inside filefd::on_real_disk: \
                 inside a simulation, std::fs is the node's simulated disk; list the file here \
                 with why (std::fs::Permissions is fine: it is only a value)",
        allowed: &[
            // Names std's File only in the signatures of the refused
            // conversions (`into_std`, `from_std`), as Tokio's File does.
            "sim-runtime/src/simulation/fs/file.rs",
            // Names std's OpenOptions only as the value Tokio's
            // `From<std::fs::OpenOptions>` converts (its settings read from
            // its `Debug` text; nothing is opened).
            "sim-runtime/src/simulation/fs/options.rs",
            // Makes std's `Metadata` and `FileType` (which Tokio returns and
            // only std can construct) by calling std inside the simulation,
            // where the interposers serve the call from the node's disk.
            "sim-runtime/src/simulation/fs/metadata.rs",
            // Names std's File only in the signatures of the refused
            // `pipe::{Sender, Receiver}::from_file`, as Tokio's do.
            "sim-runtime/src/simulation/net/unix/pipe.rs",
            // Writes a failing seed's trace file, on the runner's thread,
            // after the seed's simulation has ended.
            "sim-harness/src/simulation/run/files.rs",
            // Writes a sweep's log of the seeds it starts and ends, on the
            // job threads, before and after each seed's simulation (each
            // runs on a thread of its own).
            "sim-harness/src/simulation/run/seeds_log.rs",
            // Writes the run's results (SIM_RESULTS), on the runner's
            // thread, after every seed's simulation has ended.
            "sim-harness/src/simulation/results.rs",
            // Reads /proc/self/status on the runner's thread of a sweep run
            // in batches of fresh processes, which runs no seed itself.
            "sim-harness/src/simulation/run/recycle.rs",
            // Reads SIM_TAPE's file before any seed runs, and writes a
            // failing seed's tape after its rerun, on the runner's thread.
            "sim-harness/src/simulation/tape.rs",
            // Maps the executable once per process, inside
            // `hooks::on_real_disk`, for its symbol table.
            "sim-runtime/src/simulation/libc/cstate.rs",
            // Reads the host's CA bundle once per process, inside
            // `hooks::on_real_disk`, to serve it read-only on every node.
            "sim-runtime/src/simulation/fs/host.rs",
        ],
        harmless: &["std::fs::Permissions"],
    },
    Rule {
        needle: "thread::spawn(",
        advice: "simulator code never starts OS threads (only the runner's one thread per seed)",
        allowed: &[],
        harmless: &[],
    },
    Rule {
        needle: "thread_rng()",
        advice: "only the runtime owns randomness: fork a stream from the seed tree (seed::stream)",
        allowed: &[],
        harmless: &[],
    },
    Rule {
        needle: "rand::random",
        advice: "only the runtime owns randomness: fork a stream from the seed tree (seed::stream)",
        allowed: &[],
        harmless: &[],
    },
];

/// The simulator's own code: the models, the simulation half of the
/// runtime, and the harness.
const DIRS: &[&str] = &[
    "sim-net/src",
    "sim-fs/src",
    "sim-check/src",
    "sim-runtime/src/simulation",
    "sim-harness/src",
];

/// The Rust files under `dir`, in path order, build output and hidden
/// folders left out.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    source_files(dir, |name| name.ends_with(".rs"))
}

/// Generated files: what they say is their generator's business.
const GENERATED: &[&str] = &[crate::parity::OUT];

fn relative(root: &Path, f: &Path) -> String {
    f.strip_prefix(root)
        .unwrap_or(f)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The structural rules' findings in one file of our own.
fn structure(rel: &str, text: &str) -> Vec<String> {
    let mut findings = cfg_switch::check(rel, text);
    findings.extend(unsafe_doc::check_fns(rel, text));
    findings.extend(too_long(rel, text));
    findings
}

/// The most lines a source file of ours may have (generated files aside):
/// past it a file holds more than one responsibility.
const MAX_LINES: usize = 1_000;

fn too_long(rel: &str, text: &str) -> Option<String> {
    let n = text.lines().count();
    (n > MAX_LINES).then(|| {
        format!(
            "{rel}: {n} lines, over {MAX_LINES}: split it by responsibility into a folder \
             module (one file per part, `mod.rs` for what they share)"
        )
    })
}

/// `Cargo.toml` keeps clippy's check of unsafe blocks on, and every member
/// inherits the workspace's lints.
fn lint_stays_on(root: &Path) -> Result<Vec<String>, String> {
    let read =
        |rel: &str| std::fs::read_to_string(root.join(rel)).map_err(|e| format!("{rel}: {e}"));
    let workspace = read("Cargo.toml")?;
    let mut findings = workspace_lint(&workspace);
    for member in members(&workspace) {
        let rel = format!("{member}/Cargo.toml");
        if !inherits_lints(&read(&rel)?) {
            findings.push(format!(
                "{rel}: no `[lints] workspace = true`: the workspace's lints \
                 (unexpected_cfgs, clippy::{}) do not reach this crate; add the section",
                unsafe_doc::LINT
            ));
        }
    }
    Ok(findings)
}

/// The finding if `[workspace.lints.clippy]` does not turn the unsafe lint
/// on.
fn workspace_lint(manifest: &str) -> Vec<String> {
    let on = section(manifest, "[workspace.lints.clippy]").is_some_and(|body| {
        body.lines().any(|l| {
            let Some((key, value)) = l.split_once('=') else {
                return false;
            };
            key.trim() == unsafe_doc::LINT
                && ["\"warn\"", "\"deny\"", "\"forbid\""]
                    .iter()
                    .any(|level| value.contains(level))
        })
    });
    if on {
        Vec::new()
    } else {
        vec![format!(
            "Cargo.toml: `[workspace.lints.clippy]` must set `{} = \"warn\"`: clippy checks \
             that every unsafe block and unsafe impl has its `// SAFETY:` comment (CI \
             denies warnings), and nothing else does",
            unsafe_doc::LINT
        )]
    }
}

/// The lines of a TOML section, up to the next header.
fn section<'a>(manifest: &'a str, header: &str) -> Option<&'a str> {
    let start = manifest.lines().position(|l| l.trim() == header).map(|n| {
        manifest
            .lines()
            .take(n + 1)
            .map(|l| l.len() + 1)
            .sum::<usize>()
    })?;
    let body = &manifest[start.min(manifest.len())..];
    let end = body
        .lines()
        .scan(0, |at, l| {
            let here = *at;
            *at += l.len() + 1;
            Some((here, l))
        })
        .find(|(_, l)| l.trim_start().starts_with('['))
        .map_or(body.len(), |(at, _)| at);
    Some(&body[..end])
}

/// The workspace's `members`.
fn members(manifest: &str) -> Vec<String> {
    let Some(body) = section(manifest, "[workspace]") else {
        return Vec::new();
    };
    let Some(list) = body.split_once("members").and_then(|(_, rest)| {
        let open = rest.find('[')?;
        let close = rest[open..].find(']')?;
        Some(&rest[open + 1..open + close])
    }) else {
        return Vec::new();
    };
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

fn inherits_lints(manifest: &str) -> bool {
    section(manifest, "[lints]").is_some_and(|body| {
        body.lines().any(|l| {
            l.split_once('=')
                .is_some_and(|(k, v)| k.trim() == "workspace" && v.trim() == "true")
        })
    })
}

/// The findings in one file (`rel`: its path from the workspace root).
fn check_file(rel: &str, text: &str) -> Vec<String> {
    let mut findings = Vec::new();
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
            let mut checked = std::borrow::Cow::Borrowed(line);
            for h in r.harmless {
                if checked.contains(h) {
                    checked = checked.replace(h, "").into();
                }
            }
            if checked.contains(r.needle) && !r.allowed.contains(&rel) {
                findings.push(format!("{rel}:{}: `{}`: {}", i + 1, r.needle, r.advice));
            }
        }
    }
    findings
}

pub fn tidy() -> Result<(), String> {
    let root = root();
    let mut files = Vec::new();
    for d in DIRS {
        files.extend(rust_files(&root.join(d)));
    }
    let mut findings = Vec::new();
    for f in &files {
        let rel = relative(&root, f);
        let text = std::fs::read_to_string(f).map_err(|e| format!("{rel}: {e}"))?;
        findings.extend(check_file(&rel, &text));
    }
    // Every Rust file of the workspace's own (and `bench/`'s).
    let own = rust_files(&root);
    for f in &own {
        let rel = relative(&root, f);
        if GENERATED.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(f).map_err(|e| format!("{rel}: {e}"))?;
        findings.extend(structure(&rel, &text));
    }
    findings.extend(lint_stays_on(&root)?);
    findings.extend(layers::check(
        &root.join(layers::SIMULATION),
        layers::SIMULATION,
    )?);
    if findings.is_empty() {
        eprintln!(
            "tidy: {} files follow the determinism rules, {} the structural ones",
            files.len(),
            own.len()
        );
        crate::failure_modes::run(false)
    } else {
        for f in &findings {
            eprintln!("tidy: {f}");
        }
        Err(format!("tidy: {} finding(s)", findings.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::check_file;

    #[test]
    fn a_file_over_the_limit_is_flagged_with_its_fix() {
        let long = "fn f() {}\n".repeat(super::MAX_LINES + 1);
        let found = super::structure("sim-net/src/x.rs", &long);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("split it"), "{found:?}");
        let fine = "fn f() {}\n".repeat(super::MAX_LINES);
        assert!(super::structure("sim-net/src/x.rs", &fine).is_empty());
    }

    #[test]
    fn std_fs_in_the_simulator_is_flagged_with_its_fix() {
        let src = "use std::fs;\nfn f() { std::fs::read(\"x\").unwrap(); }\n";
        let found = check_file("sim-fs/src/fs.rs", src);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("on_real_disk"), "{found:?}");
    }

    #[test]
    fn std_fs_permissions_and_comments_are_fine() {
        let src = "// std::fs::read is mentioned here\nlet p: std::fs::Permissions = todo!();\n";
        assert!(check_file("sim-fs/src/fs.rs", src).is_empty());
    }

    #[test]
    fn rules_flag_the_simulators_code() {
        let src = "let m = std::collections::HashMap::new();\n";
        assert_eq!(check_file("sim-fs/src/fs.rs", src).len(), 1);
    }

    #[test]
    fn the_unsafe_lint_must_stay_on_for_every_member() {
        let on = "[workspace]\nmembers = [\n    \"a\",\n    \"b/c\",\n]\n\n\
                  [workspace.lints.clippy]\nundocumented_unsafe_blocks = \"warn\"\n\n[profile.release]\n";
        assert!(super::workspace_lint(on).is_empty());
        assert_eq!(super::members(on), ["a", "b/c"]);
        let off = on.replace("\"warn\"", "\"allow\"");
        let f = super::workspace_lint(&off);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].contains("must set `undocumented_unsafe_blocks = \"warn\"`"),
            "{f:?}"
        );
        let gone = "[workspace]\nmembers = []\n[workspace.lints.rust]\nundocumented_unsafe_blocks = \"warn\"\n";
        assert_eq!(super::workspace_lint(gone).len(), 1);
        assert!(super::inherits_lints(
            "[package]\nname = \"x\"\n\n[lints]\nworkspace = true\n"
        ));
        assert!(!super::inherits_lints(
            "[package]\nname = \"x\"\n[dependencies]\nworkspace = true\n"
        ));
    }
}
