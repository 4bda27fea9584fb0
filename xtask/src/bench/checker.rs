//! The linearizability checker's part of `cargo xtask bench` (issue 22):
//! `sim-check/benches/check.rs`, built in release and run once, its lines
//! kept as a section of `docs/bench.md` between two markers. A full
//! `cargo xtask bench` rewrites the section with the rest;
//! `cargo xtask bench --only checker` measures and rewrites only it.
//! With it, sim-check and Porcupine side by side on Porcupine's published
//! histories (`porcupine.rs`, issue 39), skipped with a message when Go or
//! Porcupine's source cannot be had.

mod porcupine;

use crate::cmd::{stdout, Mode};
use porcupine::{Comparison, Row};
use std::process::Command;

/// Its section of `docs/bench.md`.
pub(super) const SECTION: super::Section = super::section!("checker");
const BEGIN: &str = SECTION.begin;
const END: &str = SECTION.end;

/// Builds and runs the checker's bench; returns the section's markdown.
pub fn measure() -> Result<String, String> {
    let exe = super::build::build_bench(Mode::Production, "sim-check", "check")?;
    eprintln!("==> bench [checker] {}", exe.display());
    let text = stdout(Command::new(&exe).arg("--bench"), "the checker's bench")?;
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(" ops ")).collect();
    if lines.is_empty() {
        return Err(format!(
            "the checker's bench printed no measurement:\n{text}"
        ));
    }
    let side = porcupine::measure(&exe);
    match &side {
        Ok(c) => {
            eprintln!("{}", per_file(&c.rows));
            let wrong: Vec<&str> = c
                .rows
                .iter()
                .filter(|r| !r.agrees())
                .map(|r| r.file.as_str())
                .collect();
            if !wrong.is_empty() {
                return Err(format!(
                    "sim-check's verdict differs from Porcupine's on {}",
                    wrong.join(", ")
                ));
            }
        }
        Err(why) => eprintln!("==> bench [checker] Porcupine side by side skipped: {why}"),
    }
    Ok(section(&lines, &side))
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

/// A ratio, with two decimals, or two significant digits below 0.01.
fn ratio(r: f64) -> String {
    if r >= 0.01 || r == 0.0 {
        format!("{r:.2}")
    } else {
        let digits = (-r.log10()).ceil() as usize + 1;
        format!("{r:.digits$}")
    }
}

/// The per-file table (markdown).
fn per_file(rows: &[Row]) -> String {
    let mut s = String::from(
        "| file | ops | verdict | Porcupine ms | sim-check verdict ms | ratio | with shrinking ms | shrunk | shrinking work / verdict work |\n\
         |---|---:|---|---:|---:|---:|---:|---|---:|\n",
    );
    for r in rows {
        let work = match (r.work, r.shrink_work) {
            (Some(w), Some(s)) if w > 0 => format!("{:.1}", s as f64 / w as f64),
            _ => "-".to_string(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {work} |\n",
            r.file,
            r.ops,
            r.verdict,
            ms(r.porcupine_ns),
            ms(r.verdict_ns),
            ratio(r.verdict_ns / r.porcupine_ns),
            ms(r.shrink_ns),
            r.minimal
        ));
    }
    s
}

/// The side-by-side part of the section.
fn comparison(side: &Result<Comparison, String>) -> String {
    let c = match side {
        Ok(c) => c,
        Err(why) => {
            return format!(
                "### Side by side with Porcupine\n\nSkipped in this run: {}\n",
                why.lines().next().unwrap_or("")
            )
        }
    };
    let sum = |f: fn(&Row) -> f64| c.rows.iter().map(f).sum::<f64>();
    let (p, v, w) = (
        sum(|r| r.porcupine_ns),
        sum(|r| r.verdict_ns),
        sum(|r| r.shrink_ns),
    );
    let agree = c.rows.iter().filter(|r| r.agrees()).count();
    let violations = c.rows.iter().filter(|r| r.verdict == "violation").count();
    let minimal = c.rows.iter().filter(|r| r.minimal == "minimal").count();
    let goal = if v <= 0.5 * p { "met" } else { "**not met**" };
    let mut s = String::from("### Side by side with Porcupine\n\n");
    s.push_str(&format!(
        "Porcupine's published histories (the Jepsen etcd logs, one register with \
         compare-and-set; the MIT 6.824 key/value logs, a map with append, partitioned by key), \
         checked in the same run by Porcupine's own benchmarks (its test binary, `-test.bench \
         -test.cpu 1`, {go}; source: {src}, copied to a temporary directory and removed after) \
         and by `sim-check/benches/check.rs --porcupine` (single-threaded), file by file, the \
         two in turn (which goes first alternates), so that the machine's load weighs on both \
         alike. Each figure is the mean \
         time of one check over as many runs as fit in {BENCH}ms (Go's `-benchtime`; at least \
         one run). *Verdict only* is `linearizable_verdict` (no shrinking, as Porcupine's \
         `CheckEvents`); *with shrinking* is `linearizable`, which also shrinks a violation to \
         its core (bounded by ten times the verdict's work, or 50,000 units for a small one; \
         Porcupine does not shrink). \
         Verdicts: {agree} of {n} agree with Porcupine's test suite.\n\n",
        go = c.go,
        src = c.source,
        BENCH = porcupine::BENCH_MS,
        n = c.rows.len(),
    ));
    s.push_str(
        "| | Porcupine | sim-check, verdict only | ratio | sim-check, with shrinking | ratio |\n",
    );
    s.push_str("|---|---:|---:|---:|---:|---:|\n");
    s.push_str(&format!(
        "| total, {} histories | {} ms | {} ms | **{:.2}** | {} ms | {:.2} |\n\n",
        c.rows.len(),
        ms(p),
        ms(v),
        v / p,
        ms(w),
        w / p
    ));
    s.push_str(&format!(
        "Goal (issue 39): sim-check's total at most 0.5× Porcupine's, one core, verdict only: \
         {goal} ({:.2}×). Of the {violations} violations, shrinking proved {minimal} minimal \
         within its bound.\n\n",
        v / p
    ));
    s.push_str("<details><summary>Per file</summary>\n\n");
    s.push_str(&per_file(&c.rows));
    s.push_str("\n</details>\n");
    s
}

/// The section: what is measured, the bench's own lines, then the
/// side-by-side with Porcupine.
fn section(lines: &[&str], side: &Result<Comparison, String>) -> String {
    let mut s = String::new();
    s.push_str(BEGIN);
    s.push_str("\n## The linearizability checker (sim-check)\n\n");
    s.push_str(
        "`sim-check/benches/check.rs` in release, best of three runs per line: histories of a \
         simulated correct store (deterministic; linearizable unless answers are corrupted on \
         purpose), checked with the default limits. Goals (issue 22): 10,000 operations from 10 \
         clients over 100 keys in < 1 s; 1,000 operations on one key with 20% unknown outcomes \
         in < 5 s. The search counts model steps, never time, so a verdict is the same on every \
         machine; only these durations depend on it.\n\n```text\n",
    );
    for l in lines {
        s.push_str(l.trim_end());
        s.push('\n');
    }
    s.push_str("```\n\n");
    s.push_str(&comparison(side));
    s.push_str(END);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_replaced_in_place_or_appended() {
        let skipped = Err("no Go".to_string());
        let s1 = section(&["a 1 ops"], &skipped);
        let s2 = section(&["b 2 ops"], &skipped);
        assert!(s1.contains("Skipped in this run: no Go"), "{s1}");
        let doc = format!("# Bench\n\ntext\n\n{s1}\n## After\n");
        let new = SECTION.splice(&doc, &s2);
        assert!(new.contains("b 2 ops") && !new.contains("a 1 ops"), "{new}");
        assert!(new.starts_with("# Bench\n\ntext\n\n") && new.ends_with("\n## After\n"));
        assert_eq!(new.matches(BEGIN).count(), 1);
        let appended = SECTION.splice("# Bench\n", &s1);
        assert_eq!(appended, format!("# Bench\n\n{s1}"));
    }

    #[test]
    fn the_comparison_totals_and_judges_the_goal() {
        let row = |file: &str, p: f64, v: f64, verdict: &str, ok: bool| Row {
            file: file.into(),
            ops: 10,
            expected_ok: ok,
            verdict: verdict.into(),
            porcupine_ns: p,
            verdict_ns: v,
            shrink_ns: 2.0 * v,
            minimal: if ok { "-" } else { "minimal" }.into(),
            work: (!ok).then_some(100),
            shrink_work: (!ok).then_some(250),
        };
        let c = |rows| {
            Ok(Comparison {
                rows,
                go: "go1.19".into(),
                source: "here".into(),
            })
        };
        let met = comparison(&c(vec![
            row("etcd_000.log", 3e6, 1e6, "violation", false),
            row("c01-ok.txt", 1e6, 0.5e6, "ok", true),
        ]));
        assert!(
            met.contains(
                "| total, 2 histories | 4.000 ms | 1.500 ms | **0.38** | 3.000 ms | 0.75 |"
            ),
            "{met}"
        );
        assert!(met.contains("verdict only: met (0.38×)"), "{met}");
        assert!(met.contains("Verdicts: 2 of 2 agree"), "{met}");
        assert!(
            met.contains(
                "| etcd_000.log | 10 | violation | 3.000 | 1.000 | 0.33 | 2.000 | minimal | 2.5 |"
            ),
            "{met}"
        );
        assert_eq!(ratio(0.123), "0.12");
        assert_eq!(ratio(0.000_034), "0.000034");
        assert_eq!(ratio(0.0051), "0.0051");
        let short = comparison(&c(vec![row("c01-ok.txt", 1e6, 0.6e6, "violation", true)]));
        assert!(short.contains("**not met** (0.60×)"), "{short}");
        assert!(short.contains("Verdicts: 0 of 1 agree"), "{short}");
    }
}
