//! `cargo xtask failure-modes` (and part of `cargo xtask tidy`): every row
//! of every "what happens if" table is claimed by a test.
//!
//! A **table** is a markdown table, in a `.md` file or in a Rust doc
//! comment (`//!`, `///`), whose header's first cell is `failure mode`; each
//! row's first cell is the row's id in backticks (`` `net.crash` ``). Ids are
//! unique across the workspace.
//!
//! A **claim** is a test saying it checks a row: the `#[sim::test]`
//! argument `claims = ["net.crash", …]`, or the statement
//! `sim::claims!("net.crash", …);` in any test (crates below the harness
//! declare a local `macro_rules! claims` that expands to nothing: the check
//! reads the source, not the binary). Commented-out code claims nothing.
//!
//! The check fails on a row no test claims unless it is in the **baseline**
//! (`docs/failure-modes.baseline`, one id per line: rows accepted unclaimed
//! when a table was adopted), on a claim naming no row, on a baseline entry
//! that is claimed or names no row (remove it), and on a baseline with an
//! entry the committed one (`git show HEAD:…`) does not have: the baseline
//! may only shrink.

use crate::cmd::{capture, root, source_files};
use std::collections::BTreeMap;
use std::path::Path;

/// Where the baseline lives, from the workspace root.
pub const BASELINE: &str = "docs/failure-modes.baseline";

/// This file: its docs and tests hold example tables and claims.
const SELF: &str = "xtask/src/failure_modes.rs";

/// One row of a table: where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub at: String,
}

/// One claim: which id, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub id: String,
    pub at: String,
}

/// The line without a doc-comment prefix, if it is markdown: a `.md` line,
/// or the text of a `//!` / `///` line.
fn markdown_text(line: &str, is_md: bool) -> Option<&str> {
    if is_md {
        return Some(line.trim_start());
    }
    let t = line.trim_start();
    let rest = t.strip_prefix("//!").or_else(|| t.strip_prefix("///"))?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// The failure-mode tables' rows in one file's text.
pub fn rows(rel: &str, text: &str) -> Result<Vec<Row>, String> {
    let is_md = rel.ends_with(".md");
    let mut out = Vec::new();
    let mut in_table = false;
    let mut in_fence = false;
    for (n, line) in text.lines().enumerate() {
        let Some(md) = markdown_text(line, is_md) else {
            in_table = false;
            continue;
        };
        // Examples in fenced code blocks are not tables.
        if md.starts_with("```") {
            in_fence = !in_fence;
            in_table = false;
            continue;
        }
        if in_fence || !md.starts_with('|') {
            in_table = false;
            continue;
        }
        let c = cells(md);
        let first = c.first().map(String::as_str).unwrap_or("");
        if !in_table {
            in_table = first.eq_ignore_ascii_case("failure mode");
            continue;
        }
        if first.chars().all(|ch| matches!(ch, '-' | ':' | ' ')) {
            continue;
        }
        let id = first
            .strip_prefix('`')
            .and_then(|s| s.strip_suffix('`'))
            .filter(|s| valid_id(s))
            .ok_or_else(|| {
                format!(
                    "{rel}:{}: a failure-mode row's first cell must be its id in backticks, \
                     like `net.crash` (lowercase letters, digits, `.`, `_`, `-`); found `{first}`",
                    n + 1
                )
            })?;
        out.push(Row {
            id: id.to_string(),
            at: format!("{rel}:{}", n + 1),
        });
    }
    Ok(out)
}

fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// The string literals in `s` (no escapes: ids have none).
fn literals(s: &str) -> Vec<String> {
    s.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, l)| l.to_string())
        .collect()
}

/// The claims in one Rust file's text (comment lines skipped).
pub fn claims(rel: &str, text: &str) -> Vec<Claim> {
    // Comments removed line by line, with line numbers kept.
    let code: Vec<&str> = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect();
    let joined = code.join("\n");
    let line_of = |offset: usize| joined[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (open, close) in [("claims!(", ')'), ("claims = [", ']')] {
        let mut from = 0;
        while let Some(i) = joined[from..].find(open) {
            let start = from + i + open.len();
            let end = joined[start..]
                .find(close)
                .map_or(joined.len(), |j| start + j);
            for id in literals(&joined[start..end]) {
                out.push(Claim {
                    id,
                    at: format!("{rel}:{}", line_of(from + i)),
                });
            }
            from = end;
        }
    }
    out
}

/// The baseline's ids (comments and blank lines skipped).
pub fn baseline_ids(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// What the workspace's tables and tests say.
pub struct Survey {
    pub rows: Vec<Row>,
    pub claims: Vec<Claim>,
}

pub fn survey(root: &Path) -> Result<Survey, String> {
    let files = source_files(root, |name| name.ends_with(".rs") || name.ends_with(".md"));
    let mut s = Survey {
        rows: Vec::new(),
        claims: Vec::new(),
    };
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        if rel == SELF {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        s.rows.extend(rows(&rel, &text)?);
        if rel.ends_with(".rs") {
            s.claims.extend(claims(&rel, &text));
        }
    }
    Ok(s)
}

/// The check's findings, each with its fix; empty when all is well.
pub fn check(s: &Survey, baseline: &[String], committed: Option<&[String]>) -> Vec<String> {
    let mut found = Vec::new();
    let mut rows: BTreeMap<&str, &Row> = BTreeMap::new();
    for r in &s.rows {
        if let Some(first) = rows.insert(&r.id, r) {
            found.push(format!(
                "{}: failure mode `{}` is also a row at {}: ids are unique across the \
                 workspace; rename one",
                r.at, r.id, first.at
            ));
        }
    }
    let mut claimed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in &s.claims {
        if rows.contains_key(c.id.as_str()) {
            claimed.entry(&c.id).or_default().push(&c.at);
        } else {
            found.push(format!(
                "{}: the test claims failure mode `{}`, which no table has: fix the id, or \
                 remove the claim if the row was removed",
                c.at, c.id
            ));
        }
    }
    for b in baseline {
        if !rows.contains_key(b.as_str()) {
            found.push(format!(
                "{BASELINE}: `{b}` names no failure-mode row: remove it from the baseline"
            ));
        } else if let Some(by) = claimed.get(b.as_str()) {
            found.push(format!(
                "{BASELINE}: `{b}` is claimed now ({}): remove it from the baseline, which only \
                 shrinks",
                by.join(", ")
            ));
        }
    }
    if let Some(committed) = committed {
        for b in baseline {
            if !committed.contains(b) {
                found.push(format!(
                    "{BASELINE}: `{b}` was added to the baseline, which may only shrink: claim \
                     the row in a test instead (`claims = [\"{b}\"]` in #[sim::test], or \
                     `sim::claims!(\"{b}\")`)"
                ));
            }
        }
    }
    for (id, r) in &rows {
        if !claimed.contains_key(id) && !baseline.iter().any(|b| b == id) {
            found.push(format!(
                "{}: no test claims failure mode `{id}`: write a test that checks it and claims \
                 it (`claims = [\"{id}\"]` in #[sim::test], or `sim::claims!(\"{id}\")` in any \
                 test)",
                r.at
            ));
        }
    }
    found
}

fn committed_baseline() -> Option<Vec<String>> {
    capture("git", &["show", &format!("HEAD:{BASELINE}")]).map(|t| baseline_ids(&t))
}

/// Runs the check; with `list`, also prints every row and its claims.
pub fn run(list: bool) -> Result<(), String> {
    let root = root();
    let s = survey(&root)?;
    let baseline = std::fs::read_to_string(root.join(BASELINE))
        .map(|t| baseline_ids(&t))
        .unwrap_or_default();
    let committed = committed_baseline();
    if list {
        for r in &s.rows {
            let by: Vec<&str> = s
                .claims
                .iter()
                .filter(|c| c.id == r.id)
                .map(|c| c.at.as_str())
                .collect();
            let by = if by.is_empty() {
                if baseline.contains(&r.id) {
                    "(baseline: unclaimed)".to_string()
                } else {
                    "UNCLAIMED".to_string()
                }
            } else {
                by.join(", ")
            };
            println!("{:<36} {by}", r.id);
        }
    }
    let found = check(&s, &baseline, committed.as_deref());
    if found.is_empty() {
        eprintln!(
            "failure modes: {} rows, {} claims, {} in the baseline",
            s.rows.len(),
            s.claims.len(),
            baseline.len()
        );
        Ok(())
    } else {
        for f in &found {
            eprintln!("failure modes: {f}");
        }
        Err(format!("failure modes: {} finding(s)", found.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
//! Some prose.
//!
//! | failure mode | what happens if | what the simulation does |
//! |---|---|---|
//! | `net.crash` | the machine dies | its sockets go silent |
//! | `net.kill` | the process dies | FIN or RST |
//!
//! | other | table |
//! |---|---|
//! | `not.a.row` | x |
fn f() {}
";

    #[test]
    fn rows_come_from_failure_mode_tables_only() {
        let r = rows("a/lib.rs", DOC).unwrap();
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["net.crash", "net.kill"]);
        assert_eq!(r[0].at, "a/lib.rs:5");
        let md = "| Failure mode | x |\n|--|--|\n| `fs.eio` | y |\n";
        assert_eq!(rows("d.md", md).unwrap()[0].id, "fs.eio");
        // In a fenced example, a table is an example.
        let fenced = "```text\n| failure mode | x |\n|--|--|\n| `fs.eio` | y |\n```\n";
        assert!(rows("d.md", fenced).unwrap().is_empty());
        // Outside a doc comment, a Rust file's `|` lines are code.
        assert!(rows("a.rs", "| failure mode |\n|-|\n| `x` |\n")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_row_without_an_id_is_an_error_that_says_the_form() {
        let e = rows("d.md", "| failure mode | x |\n|---|---|\n| crash | y |\n").unwrap_err();
        assert!(e.contains("d.md:3"), "{e}");
        assert!(e.contains("in backticks"), "{e}");
    }

    #[test]
    fn claims_come_from_the_macro_and_the_attribute_not_from_comments() {
        let src = "\
#[sim::test(seeds = 0..4, claims = [\"net.crash\", \"net.kill\"])]
async fn a() {}
#[test]
fn b() {
    sim::claims!(\"fs.eio\");
    // sim::claims!(\"commented.out\");
    claims!(
        \"net.x\",
        \"net.y\",
    );
}
";
        let c = claims("t.rs", src);
        let got: Vec<(&str, &str)> = c.iter().map(|c| (c.id.as_str(), c.at.as_str())).collect();
        assert_eq!(
            got,
            [
                ("fs.eio", "t.rs:5"),
                ("net.x", "t.rs:7"),
                ("net.y", "t.rs:7"),
                ("net.crash", "t.rs:1"),
                ("net.kill", "t.rs:1"),
            ]
        );
    }

    fn survey_of(rows_: &[&str], claims_: &[&str]) -> Survey {
        Survey {
            rows: rows_
                .iter()
                .map(|id| Row {
                    id: id.to_string(),
                    at: format!("t.md:{id}"),
                })
                .collect(),
            claims: claims_
                .iter()
                .map(|id| Claim {
                    id: id.to_string(),
                    at: format!("t.rs:{id}"),
                })
                .collect(),
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_rule_fails_with_its_fix() {
        // All claimed: clean.
        let s = survey_of(&["a", "b"], &["a", "b", "b"]);
        assert!(check(&s, &[], Some(&[])).is_empty());
        // An unclaimed row.
        let f = check(&survey_of(&["a", "b"], &["a"]), &[], None);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("no test claims failure mode `b`"), "{f:?}");
        assert!(f[0].contains("claims = [\\\"b\\\"]") || f[0].contains("claims = [\"b\"]"));
        // ... unless baselined.
        assert!(check(
            &survey_of(&["a", "b"], &["a"]),
            &ids(&["b"]),
            Some(&ids(&["b"]))
        )
        .is_empty());
        // A claim of no row.
        let f = check(&survey_of(&["a"], &["a", "zz"]), &[], None);
        assert!(
            f[0].contains("claims failure mode `zz`, which no table has"),
            "{f:?}"
        );
        // A baselined row that is claimed now, and one that is gone.
        let f = check(&survey_of(&["a"], &["a"]), &ids(&["a", "gone"]), None);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().any(|f| f.contains("`a` is claimed now")), "{f:?}");
        assert!(
            f.iter()
                .any(|f| f.contains("`gone` names no failure-mode row")),
            "{f:?}"
        );
        // The baseline grew against the committed one.
        let f = check(
            &survey_of(&["a", "b"], &[]),
            &ids(&["a", "b"]),
            Some(&ids(&["a"])),
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("`b` was added to the baseline, which may only shrink"));
        // Duplicate ids.
        let f = check(&survey_of(&["a", "a"], &["a"]), &[], None);
        assert!(f[0].contains("ids are unique"), "{f:?}");
    }

    #[test]
    fn the_workspace_passes() {
        // The real tables and tests: the same check `cargo xtask tidy` runs.
        let root = root();
        let s = survey(&root).unwrap();
        assert!(
            s.rows.len() >= 20,
            "the net and fs tables: {}",
            s.rows.len()
        );
        let baseline = std::fs::read_to_string(root.join(BASELINE))
            .map(|t| baseline_ids(&t))
            .unwrap_or_default();
        let found = check(&s, &baseline, None);
        assert!(found.is_empty(), "{found:#?}");
    }
}
