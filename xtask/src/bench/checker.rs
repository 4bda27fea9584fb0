//! The linearizability checker's part of `cargo xtask bench` (issue 22):
//! `sim-check/benches/check.rs`, built in release and run once, its lines
//! kept as a section of `docs/bench.md` between two markers. A full
//! `cargo xtask bench` rewrites the section with the rest;
//! `cargo xtask bench --only checker` measures and rewrites only it.

use crate::cmd::{stdout, Mode};
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
    Ok(section(&lines))
}

/// The section: what is measured, then the bench's own lines.
fn section(lines: &[&str]) -> String {
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
    s.push_str("```\n");
    s.push_str(END);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_replaced_in_place_or_appended() {
        let s1 = section(&["a 1 ops"]);
        let s2 = section(&["b 2 ops"]);
        let doc = format!("# Bench\n\ntext\n\n{s1}\n## After\n");
        let new = SECTION.splice(&doc, &s2);
        assert!(new.contains("b 2 ops") && !new.contains("a 1 ops"), "{new}");
        assert!(new.starts_with("# Bench\n\ntext\n\n") && new.ends_with("\n## After\n"));
        assert_eq!(new.matches(BEGIN).count(), 1);
        let appended = SECTION.splice("# Bench\n", &s1);
        assert_eq!(appended, format!("# Bench\n\n{s1}"));
    }
}
