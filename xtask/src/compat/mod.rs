//! `cargo xtask compat`: Tokio's own integration tests, compiled against
//! sim-runtime (renamed to `tokio`) under `--cfg simulation`, run, tallied,
//! and written to `docs/compat.md`.
//!
//! Steps:
//! 1. find the `tokio` package that the workspace's `Cargo.lock` resolves,
//!    in the cargo registry (its `tests/` ship in the crate package)
//!    ([`tokio_source`]);
//! 2. generate a crate in `target/compat/` whose `tokio` is sim-runtime, with
//!    the selected test files copied unchanged to `tests/` (plus
//!    `tests/support/`) ([`generate`]);
//! 3. build every test target with `--keep-going`, so a file that does not
//!    compile does not hide the others (its tests all count as failed)
//!    ([`build`]);
//! 4. run each test binary with a deadline, and re-run alone the tests that
//!    a crash or a hang left without a verdict ([`run`], [`libtest`]);
//! 5. for files that did not compile, list their tests from the same file
//!    built against real Tokio (the production build of sim-runtime; cached
//!    per file in `target/compat/lists/`), so every test stays in the count;
//! 6. explain failures from `compat/reasons.txt` ([`reasons`]), and write
//!    the report ([`report`], [`markdown`]).
//!
//! Why the module is over 1,000 lines: each step above is a file of its
//! own, none over about 350 lines; the largest are data and prose, the
//! selection of Tokio's test files with why each is in or out
//! ([`selection`]) and the text of `docs/compat.md` ([`markdown`]).

mod build;
mod generate;
mod libtest;
mod markdown;
mod options;
mod reasons;
mod report;
mod run;
mod selection;
mod sources;
mod tokio_source;

use build::{build, label};
use generate::generate;
use options::Options;
use reasons::Reasons;
use report::{FileReport, Report, TestReport};
use run::{list_tests, run_file, test_env, FileRun, Limits, Verdict};
use selection::{all_named_files, Group, NOT_APPLICABLE, SELECTED};
use sources::{count_test_attributes, is_unstable_only};
use tokio_source::locate_tokio;

use crate::cmd::{build_cargo_sim, io_context, root as workspace_root, Mode};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

/// `--graph`: the files name plain `tokio` and build through `cargo sim`.
static GRAPH: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn graph() -> bool {
    GRAPH.load(std::sync::atomic::Ordering::Relaxed)
}

pub fn main(args: &[String]) -> Result<()> {
    let opts = Options::parse(args)?;
    if opts.list {
        for (f, g) in SELECTED {
            println!("{f:<24} {}", g.name());
        }
        for (f, why) in NOT_APPLICABLE {
            println!("{f:<24} not applicable: {why}");
        }
        return Ok(());
    }
    let root = workspace_root();
    let tokio = locate_tokio(&root)?;
    eprintln!(
        "compat: tokio {} tests from {}",
        tokio.version,
        tokio.tests.display()
    );
    for f in all_named_files() {
        if !tokio.tests.join(format!("{f}.rs")).exists() {
            return Err(Error::Failed(format!(
                "tokio {}'s tests/ has no {f}.rs: update the selection in \
                 xtask/src/compat/selection.rs",
                tokio.version
            )));
        }
    }
    let files: Vec<(&'static str, Group)> = SELECTED
        .iter()
        .copied()
        .filter(|(f, _)| opts.only.as_ref().is_none_or(|o| o.iter().any(|n| n == f)))
        .collect();
    let mut sources: BTreeMap<&str, String> = BTreeMap::new();
    for (name, _) in &files {
        let path = tokio.tests.join(format!("{name}.rs"));
        sources.insert(name, fs::read_to_string(&path).map_err(io_context(&path))?);
    }

    GRAPH.store(opts.graph, std::sync::atomic::Ordering::Relaxed);
    let dir = root.join(if opts.graph {
        "target/compat-graph"
    } else {
        "target/compat"
    });
    if opts.graph {
        build_cargo_sim().map_err(Error::Failed)?;
    }
    let logs = dir.join("logs");
    let manifest = generate(&dir, &root, &tokio)?;
    fs::create_dir_all(&logs).map_err(io_context(&logs))?;
    let names: Vec<&str> = files.iter().map(|(f, _)| *f).collect();

    // The simulation.
    let sim = build(&dir, Mode::Simulation, &names, &logs)?;
    let env = test_env(&opts);
    let mut results: BTreeMap<&str, FileRun> = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        let Some(exe) = sim.executables.get(*name) else {
            continue;
        };
        eprint!("compat: [{}/{}] {name} ... ", i + 1, names.len());
        let run = run_file(
            exe,
            &dir,
            &logs,
            name,
            label(Mode::Simulation),
            &env,
            opts.limits,
        )?;
        eprintln!("{} ({:.1} s)", run.summary(), run.elapsed.as_secs_f64());
        results.insert(name, run);
    }

    // Real Tokio: the tests of the files that did not compile, and with
    // --baseline, every file's verdicts.
    let listed: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !sim.executables.contains_key(*n))
        .collect();
    let key = |name: &str| listing_key(&tokio.version, &sources[name], &manifest);
    let lists_dir = dir.join("lists");
    let mut real_lists: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    if !opts.baseline {
        for name in &listed {
            if let Some(list) = cached_listing(&lists_dir, name, key(name)) {
                real_lists.insert(name, list);
            }
        }
    }
    let real_names: Vec<&str> = if opts.baseline {
        names.clone()
    } else {
        listed
            .iter()
            .copied()
            .filter(|n| !real_lists.contains_key(n))
            .collect()
    };
    let mut real_runs: BTreeMap<&str, FileRun> = BTreeMap::new();
    if !real_names.is_empty() {
        eprintln!(
            "compat: building {} file(s) against real Tokio{}",
            real_names.len(),
            if opts.baseline {
                " (baseline)"
            } else {
                " to list the tests that did not compile under simulation"
            }
        );
        let real = build(&dir, Mode::Production, &real_names, &logs)?;
        for name in &real_names {
            let Some(exe) = real.executables.get(*name) else {
                continue;
            };
            let list = if opts.baseline {
                eprint!("compat: real tokio: {name} ... ");
                let limits = Limits {
                    binary: opts.limits.binary,
                    test: opts.limits.test.max(Duration::from_secs(30)),
                };
                let run = run_file(exe, &dir, &logs, name, label(Mode::Production), &[], limits)?;
                eprintln!("{}", run.summary());
                let list: Vec<String> = run.tests.keys().cloned().collect();
                real_runs.insert(name, run);
                list
            } else {
                list_tests(exe, &dir)?
            };
            store_listing(&lists_dir, name, key(name), &list)?;
            real_lists.insert(name, list);
        }
    }

    let reasons = Reasons::load(&root.join("compat/reasons.txt"))?;
    let mut report = Report {
        tokio_version: tokio.version.clone(),
        seeds: opts.seeds.clone(),
        files: Vec::new(),
        baseline: opts.baseline,
    };
    for (name, group) in &files {
        let source = &sources[name];
        let real = |t: &str| real_runs.get(name).and_then(|r| r.tests.get(t).cloned());
        let mut fr = FileReport {
            name,
            group: *group,
            compile_errors: sim.errors.get(*name).cloned().unwrap_or_default(),
            estimated_total: None,
            crash: None,
            tests: Vec::new(),
            unstable_only: is_unstable_only(source),
        };
        if let Some(run) = results.get(name) {
            fr.crash = run.crash.clone();
            for (t, v) in &run.tests {
                fr.tests
                    .push(TestReport::new(t, v.clone(), source, real(t)));
            }
        } else if let Some(list) = real_lists.get(name) {
            for t in list {
                let failed = Verdict::Failed(vec!["the file does not compile".into()]);
                fr.tests.push(TestReport::new(t, failed, source, real(t)));
            }
        } else {
            fr.estimated_total = Some(count_test_attributes(source));
        }
        for t in &mut fr.tests {
            if t.verdict.is_failure() {
                t.cause = reasons.cause_of(name, Some(&t.name));
            }
        }
        report.files.push(fr);
    }

    let unused = reasons.unused(&report);
    print!("{}", report.table(&reasons));
    let md = report.markdown(&reasons);
    let partial = opts.only.is_some();
    let out = match &opts.out {
        Some(out) => root.join(out),
        None if partial || opts.graph => dir.join("report.md"),
        None => root.join("docs/compat.md"),
    };
    crate::cmd::write_file(&out, &md).map_err(Error::Failed)?;
    eprintln!("compat: wrote {}", out.display());
    if !partial {
        for p in unused {
            eprintln!(
                "compat: note: compat/reasons.txt: `{p}` matches no failing test (fixed? remove it)"
            );
        }
    }
    let (passed, counted) = report.totals();
    let rate = ratio(passed, counted);
    if let Some(min) = opts.min_pass_rate {
        if rate < min {
            return Err(Error::Failed(format!(
                "pass rate {:.1}% ({passed} of {counted}) is below --min-pass-rate {:.1}%",
                rate * 100.0,
                min * 100.0
            )));
        }
        eprintln!(
            "compat: pass rate {:.1}% ({passed} of {counted}) meets --min-pass-rate {:.1}%",
            rate * 100.0,
            min * 100.0
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Real Tokio's test lists, cached: a list depends only on the test file,
// the tokio version and the generated manifest (features, dev-dependencies),
// so the real-Tokio build is skipped while none of them changes.

/// FNV-1a over the inputs of a listing (stable across Rust versions, unlike
/// `DefaultHasher`).
fn listing_key(version: &str, source: &str, manifest: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [version, "\0", source, "\0", manifest] {
        for b in part.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn listing_header(key: u64) -> String {
    format!("# real tokio test list, key {key:016x}")
}

fn cached_listing(dir: &Path, name: &str, key: u64) -> Option<Vec<String>> {
    let text = fs::read_to_string(dir.join(format!("{name}.txt"))).ok()?;
    let mut lines = text.lines();
    (lines.next()? == listing_header(key)).then(|| lines.map(str::to_string).collect())
}

fn store_listing(dir: &Path, name: &str, key: u64, list: &[String]) -> Result<()> {
    fs::create_dir_all(dir).map_err(io_context(dir))?;
    let mut text = listing_header(key);
    for t in list {
        text.push('\n');
        text.push_str(t);
    }
    text.push('\n');
    let path = dir.join(format!("{name}.txt"));
    fs::write(&path, text).map_err(io_context(&path))
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_cache() {
        let dir = std::env::temp_dir().join(format!("compat-lists-{}", std::process::id()));
        let key = listing_key("1.0.0", "fn a() {}", "[package]");
        assert_ne!(key, listing_key("1.0.1", "fn a() {}", "[package]"));
        assert_eq!(cached_listing(&dir, "f", key), None);
        store_listing(&dir, "f", key, &["a::b".into(), "c".into()]).unwrap();
        assert_eq!(
            cached_listing(&dir, "f", key),
            Some(vec!["a::b".to_string(), "c".to_string()])
        );
        assert_eq!(cached_listing(&dir, "f", key ^ 1), None);
        let _ = fs::remove_dir_all(&dir);
    }
}
