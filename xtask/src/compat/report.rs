//! The results: per test, per file, and the summary table.

use super::ratio;
use super::reasons::Reasons;
use super::run::Verdict;
use super::selection::{Group, Scope, SCOPES};
use super::sources::test_line;
use std::fmt::Write as _;

pub(super) struct TestReport {
    pub(super) name: String,
    pub(super) verdict: Verdict,
    pub(super) line: Option<usize>,
    pub(super) cause: Option<usize>,
    /// The verdict with real Tokio (with --baseline).
    pub(super) real: Option<Verdict>,
}

impl TestReport {
    pub(super) fn new(
        name: &str,
        verdict: Verdict,
        source: &str,
        real: Option<Verdict>,
    ) -> TestReport {
        TestReport {
            name: name.to_string(),
            verdict,
            line: test_line(source, name),
            cause: None,
            real,
        }
    }
}

pub(super) struct FileReport {
    pub(super) name: &'static str,
    pub(super) group: Group,
    pub(super) compile_errors: Vec<String>,
    /// Set when the test list is unknown (compiled nowhere).
    pub(super) estimated_total: Option<usize>,
    pub(super) crash: Option<String>,
    pub(super) tests: Vec<TestReport>,
    pub(super) unstable_only: bool,
}

impl FileReport {
    pub(super) fn total(&self) -> usize {
        self.estimated_total.unwrap_or(self.tests.len())
    }
    pub(super) fn passed(&self) -> usize {
        self.count(|v| *v == Verdict::Passed)
    }
    pub(super) fn ignored(&self) -> usize {
        self.count(|v| *v == Verdict::Ignored)
    }
    pub(super) fn failed(&self) -> usize {
        self.total() - self.passed() - self.ignored()
    }
    pub(super) fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.tests.iter().filter(|t| f(&t.verdict)).count()
    }

    pub(super) fn note(&self, reasons: &Reasons) -> String {
        let mut notes = Vec::new();
        if self.unstable_only {
            notes.push("the whole file is `cfg(tokio_unstable)`: no tests".to_string());
        }
        if !self.compile_errors.is_empty() {
            let why = reasons
                .cause_of(self.name, None)
                .map(|i| format!(" — [{}]", reasons.causes[i].id))
                .unwrap_or_default();
            let shown: Vec<String> = self
                .compile_errors
                .iter()
                .take(3)
                .map(|e| format!("`{}`", e.replace('`', "'")))
                .collect();
            let more = self.compile_errors.len().saturating_sub(3);
            notes.push(format!(
                "does not compile{why}: {}{}",
                shown.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if self.estimated_total.is_some() {
            notes.push("total estimated from its test attributes".into());
        }
        if let Some(c) = &self.crash {
            notes.push(format!(
                "the binary {c} (the run resumed after the test concerned)"
            ));
        }
        if self.compile_errors.is_empty() && self.failed() > 0 {
            let mut ids: Vec<String> = Vec::new();
            for t in self.tests.iter().filter(|t| t.verdict.is_failure()) {
                let id = t
                    .cause
                    .map(|i| reasons.causes[i].id.clone())
                    .unwrap_or_else(|| "unknown".into());
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            notes.push(format!("failures: [{}]", ids.join("], [")));
        }
        notes.join("; ")
    }
}

pub(super) struct Report {
    pub(super) tokio_version: String,
    pub(super) seeds: Option<String>,
    pub(super) files: Vec<FileReport>,
    pub(super) baseline: bool,
}

impl Report {
    /// (passed, total less ignored).
    pub(super) fn totals(&self) -> (usize, usize) {
        let passed = self.files.iter().map(FileReport::passed).sum();
        let counted = self.files.iter().map(|f| f.total() - f.ignored()).sum();
        (passed, counted)
    }

    /// Of the scope's failures, those whose cause the scope leaves out of
    /// its selection (issue 7 selects the `fs` tests whose checks do not go
    /// through `std::fs`: [std-fs] failures are tests it does not select).
    pub(super) fn scope_unselected(&self, scope: &Scope, reasons: &Reasons) -> usize {
        let Some(cause) = scope.unselected_cause.and_then(|c| reasons.index_of(c)) else {
            return 0;
        };
        self.files
            .iter()
            .filter(|f| scope.groups.contains(&f.group))
            .flat_map(|f| f.tests.iter())
            .filter(|t| t.verdict.is_failure() && t.cause == Some(cause))
            .count()
    }

    /// Over the files of the scope's modules: (passed, total less
    /// ignored).
    pub(super) fn scope(&self, scope: &Scope) -> (usize, usize) {
        let (mut passed, mut counted) = (0, 0);
        for f in self
            .files
            .iter()
            .filter(|f| scope.groups.contains(&f.group))
        {
            passed += f.passed();
            counted += f.total() - f.ignored();
        }
        (passed, counted)
    }

    /// The scope's rates, in a sentence.
    pub(super) fn scope_summary(&self, scope: &Scope, reasons: &Reasons) -> String {
        let (passed, counted) = self.scope(scope);
        let names: Vec<&str> = scope.groups.iter().map(|g| g.name()).collect();
        let mut line = format!(
            "{}: {passed} of {counted} tests pass ({:.1}%)",
            names.join("/"),
            ratio(passed, counted) * 100.0,
        );
        if let Some(cause) = scope.unselected_cause {
            let out = self.scope_unselected(scope, reasons);
            line.push_str(&format!(
                "; without the {out} [{cause}] tests it does not select: {passed} of {} ({:.1}%)",
                counted - out,
                ratio(passed, counted - out) * 100.0
            ));
        }
        line
    }

    pub(super) fn table(&self, reasons: &Reasons) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n{:<24} {:<8} {:>6} {:>6} {:>7} {:>6}",
            "file", "module", "passed", "failed", "ignored", "total"
        );
        for f in &self.files {
            let _ = writeln!(
                s,
                "{:<24} {:<8} {:>6} {:>6} {:>7} {:>6}{}",
                f.name,
                f.group.name(),
                f.passed(),
                f.failed(),
                f.ignored(),
                f.total(),
                if !f.compile_errors.is_empty() {
                    "  (does not compile)"
                } else if f.crash.is_some() {
                    "  (binary crashed or hung)"
                } else {
                    ""
                }
            );
        }
        let (passed, counted) = self.totals();
        let ignored: usize = self.files.iter().map(FileReport::ignored).sum();
        let total: usize = self.files.iter().map(FileReport::total).sum();
        let _ = writeln!(
            s,
            "{:<24} {:<8} {:>6} {:>6} {:>7} {:>6}",
            "TOTAL",
            "",
            passed,
            counted - passed,
            ignored,
            total
        );
        let _ = writeln!(
            s,
            "\n{passed} of {counted} tests pass ({:.1}%)",
            ratio(passed, counted) * 100.0
        );
        for scope in SCOPES {
            let _ = writeln!(s, "{}", self.scope_summary(scope, reasons));
        }
        s
    }
}
