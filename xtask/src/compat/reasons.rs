//! Explanations of failures, from `compat/reasons.txt`.

use super::report::Report;
use crate::cmd::io_context;
use crate::{Error, Result};
use std::fs;
use std::path::Path;

/// A known cause of failures, from `compat/reasons.txt`.
pub(super) struct Cause {
    pub(super) id: String,
    pub(super) text: String,
    pub(super) patterns: Vec<String>,
}

pub(super) struct Reasons {
    pub(super) causes: Vec<Cause>,
}

impl Reasons {
    /// The format: a line `[id] text` opens a cause; the non-empty lines
    /// after it are patterns: `file` (every test of it), `file::path`
    /// (one test), `file::glob` (`*` matches any run of characters:
    /// `file::prefix*`, `file::*::name`); `?pattern` marks a test that fails
    /// only sometimes (not reported as unused). `#` starts a comment line.
    /// The first cause with a matching pattern wins.
    pub(super) fn load(path: &Path) -> Result<Reasons> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io_context(path)(e)),
        };
        let mut causes: Vec<Cause> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            if let Some(rest) = l.strip_prefix('[') {
                let (id, text) = rest.split_once(']').ok_or_else(|| {
                    Error::Failed(format!(
                        "{}:{}: `[id] text` expected",
                        path.display(),
                        i + 1
                    ))
                })?;
                causes.push(Cause {
                    id: id.trim().to_string(),
                    text: text.trim().to_string(),
                    patterns: Vec::new(),
                });
            } else if let Some(c) = causes.last_mut() {
                if line.starts_with(char::is_whitespace) && c.patterns.is_empty() {
                    // A continuation of the cause's text.
                    c.text.push(' ');
                    c.text.push_str(l);
                } else {
                    c.patterns.push(l.to_string());
                }
            } else {
                return Err(Error::Failed(format!(
                    "{}:{}: a pattern before the first `[id] text` line",
                    path.display(),
                    i + 1
                )));
            }
        }
        Ok(Reasons { causes })
    }

    /// The position of the cause `[id]`.
    pub(super) fn index_of(&self, id: &str) -> Option<usize> {
        self.causes.iter().position(|c| c.id == id)
    }

    pub(super) fn matches(pattern: &str, file: &str, test: Option<&str>) -> bool {
        let pattern = pattern.strip_prefix('?').unwrap_or(pattern);
        match pattern.split_once("::") {
            None => pattern == file,
            Some((f, t)) => f == file && test.is_some_and(|test| glob(t, test)),
        }
    }

    pub(super) fn cause_of(&self, file: &str, test: Option<&str>) -> Option<usize> {
        self.causes
            .iter()
            .position(|c| c.patterns.iter().any(|p| Reasons::matches(p, file, test)))
    }

    /// Patterns that explain nothing in this report.
    pub(super) fn unused(&self, report: &Report) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.causes {
            for p in c.patterns.iter().filter(|p| !p.starts_with('?')) {
                let used = report.files.iter().any(|f| {
                    f.tests.iter().any(|t| {
                        t.verdict.is_failure() && Reasons::matches(p, f.name, Some(&t.name))
                    }) || (f.estimated_total.is_some() && Reasons::matches(p, f.name, None))
                });
                if !used {
                    out.push(format!("[{}] {p}", c.id));
                }
            }
        }
        out
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of
/// characters (`::` included) and everything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        return rest.is_empty(); // no `*`: an exact match
    };
    for p in parts {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasons_file_loads() {
        let r = Reasons::load(&crate::cmd::root().join("compat/reasons.txt")).unwrap();
        let mut ids: Vec<&str> = r.causes.iter().map(|c| c.id.as_str()).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "a cause id is used twice");
        for c in &r.causes {
            for p in &c.patterns {
                let p = p.strip_prefix('?').unwrap_or(p);
                let file = p.split("::").next().unwrap_or(p);
                assert!(
                    super::super::selection::SELECTED
                        .iter()
                        .any(|(f, _)| *f == file),
                    "[{}] {p}: no selected file `{file}`",
                    c.id
                );
            }
        }
    }

    #[test]
    fn reason_patterns() {
        assert!(Reasons::matches("rt_common", "rt_common", Some("a::b")));
        assert!(Reasons::matches("rt_common", "rt_common", None));
        assert!(Reasons::matches("t::a::*", "t", Some("a::b")));
        assert!(!Reasons::matches("t::a::*", "t", Some("b::a")));
        assert!(Reasons::matches("t::x", "t", Some("x")));
        assert!(!Reasons::matches("t::x", "t", Some("xy")));
        assert!(!Reasons::matches("t::x", "u", Some("x")));
        assert!(Reasons::matches("t::*::coop", "t", Some("a::coop")));
        assert!(Reasons::matches("t::*::coop", "t", Some("a::b::coop")));
        assert!(!Reasons::matches("t::*::coop", "t", Some("a::coop_x")));
        assert!(!Reasons::matches("t::*::coop", "t", Some("coop")));
        assert!(Reasons::matches("?t::x", "t", Some("x")));
        assert!(glob("a*b*c", "abc") && glob("a*b*c", "aXbYc") && !glob("a*b*c", "aXc"));
        assert!(glob("ab*b", "ab b") && !glob("ab*b", "ab"));
    }
}
