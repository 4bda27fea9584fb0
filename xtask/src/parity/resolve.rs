//! From rustdoc's links to paths the test can name.
//!
//! rustdoc's `title` is an item's *defining* path, which for the standard
//! library is often inside a private module (`std::io::error::Result`,
//! `core::net::socket_addr::SocketAddr`). The public path is found the way
//! a person would: the same name in fewer modules (`std::io::Result`,
//! `std::net::SocketAddr`), each candidate tried by compiling one `use` of
//! it with rustc (a probe file, one line per candidate, read back by line
//! number). A path no candidate reaches (an unstable trait such as
//! `core::marker::Freeze`) drops the checks that name it. Tokio's own paths
//! become `sim_runtime::` paths: the crate under test.

use super::emit::{Checks, What};
use super::html::{LINK_CLOSE, LINK_OPEN};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Replaces every placeholder of every check; drops the checks that name
/// something the test cannot. `bytes` are the public paths of the `bytes`
/// crate (from its own `all.html`).
pub fn resolve(checks: &mut Checks, work: &Path, bytes: &BTreeSet<String>) -> Result<(), String> {
    let mut paths = BTreeSet::new();
    for c in &checks.list {
        for (_, path) in placeholders(&c.code) {
            paths.insert(path);
        }
    }
    let mut public = probe(&paths, work)?;
    for p in paths.iter().filter(|p| p.starts_with("bytes::")) {
        if let Some(c) = candidates(p).into_iter().find(|c| bytes.contains(c)) {
            public.insert(p.clone(), c);
        }
    }
    let list = std::mem::take(&mut checks.list);
    for mut c in list {
        match substitute(&c.code, &c.names, &public) {
            Ok(code) => {
                c.code = code;
                // Kept for an exception, which may weaken the check to it.
                c.fallback = c
                    .fallback
                    .and_then(|f| substitute(&f, &c.names, &public).ok());
            }
            Err(why) => match c
                .fallback
                .as_deref()
                .map(|f| substitute(f, &c.names, &public))
            {
                Some(Ok(code)) => {
                    c.code = code;
                    c.what = What::Parameters;
                }
                _ => {
                    checks.drop(c.key, why);
                    continue;
                }
            },
        }
        checks.list.push(c);
    }
    Ok(())
}

/// `code` with its placeholders replaced, or why it cannot be.
fn substitute(
    code: &str,
    names: &[String],
    public: &BTreeMap<String, String>,
) -> Result<String, String> {
    let mut code = code.to_string();
    for (whole, path) in placeholders(&code) {
        match public.get(&path) {
            Some(p) => code = code.replacen(&whole, p, 1),
            None => {
                return Err(format!(
                    "names `{path}`, which has no path the test can name (unstable or private)"
                ))
            }
        }
    }
    if let Some(name) = undeclared(&code, names) {
        return Err(format!(
            "names `{name}`, which rustdoc did not link (a type of a crate whose docs were not built, or a private one)"
        ));
    }
    Ok(code)
}

/// The placeholders of `code`: the whole placeholder and its path.
fn placeholders(code: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(LINK_OPEN) {
        let Some(j) = rest[i..].find(LINK_CLOSE) else {
            break;
        };
        let whole = &rest[i..i + j + LINK_CLOSE.len_utf8()];
        let inner = &whole[LINK_OPEN.len_utf8()..whole.len() - LINK_CLOSE.len_utf8()];
        let path = inner.split_once(' ').map_or(inner, |(_, p)| p);
        out.push((whole.to_string(), path.to_string()));
        rest = &rest[i + j + LINK_CLOSE.len_utf8()..];
    }
    out
}

/// The candidates for a defining path, best first: under `std` (a `core`
/// or `alloc` item is re-exported there), then its own crate; in each, the
/// full path, then with module segments dropped from the right.
fn candidates(path: &str) -> Vec<String> {
    let segs: Vec<&str> = path.split("::").collect();
    let Some((name, rest)) = segs.split_last() else {
        return Vec::new();
    };
    let Some((krate, mods)) = rest.split_first() else {
        return Vec::new();
    };
    // `alloc` is not in a test's extern prelude; `core` is.
    let mut crates = vec![if *krate == "bytes" { "bytes" } else { "std" }];
    if *krate == "core" {
        crates.push(krate);
    }
    let mut out = Vec::new();
    for c in crates {
        for k in (0..=mods.len()).rev() {
            let mut p = vec![c];
            p.extend(&mods[..k]);
            p.push(name);
            out.push(p.join("::"));
        }
    }
    out
}

/// The nameable path of each path in `paths` (missing: none).
fn probe(paths: &BTreeSet<String>, work: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut lines = vec!["#![allow(unused_imports)]".to_string()];
    let mut line_of: Vec<(String, String)> = Vec::new();
    for p in paths {
        if let Some(rest) = p.strip_prefix("tokio::") {
            out.insert(p.clone(), format!("sim_runtime::{rest}"));
        } else if ["std::", "core::", "alloc::"]
            .iter()
            .any(|c| p.starts_with(c))
        {
            for c in candidates(p) {
                lines.push(format!("use {c} as _;"));
                line_of.push((p.clone(), c));
            }
        }
    }
    std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    let file = work.join("probe.rs");
    std::fs::write(&file, lines.join("\n") + "\n")
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let o = Command::new("rustc")
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .args(["--error-format", "short", "-o"])
        .arg(work.join("probe.rmeta"))
        .arg(&file)
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    let stderr = String::from_utf8_lossy(&o.stderr);
    let mut failed = BTreeSet::new();
    for l in stderr.lines() {
        // `…/probe.rs:12:5: error[E0603]: …`
        if let Some(rest) = l.split("probe.rs:").nth(1) {
            if let Some(n) = rest.split(':').next().and_then(|n| n.parse::<usize>().ok()) {
                failed.insert(n);
            }
        }
    }
    for (i, (path, cand)) in line_of.into_iter().enumerate() {
        // Line 1 is the attribute; candidate i is on line i + 2.
        if !failed.contains(&(i + 2)) && !out.contains_key(&path) {
            out.insert(path, cand);
        }
    }
    Ok(out)
}

/// A capitalised name that is neither a path segment nor declared by the
/// check (nor an associated type's name in `Output = T`): a type rustdoc
/// printed without a link.
fn undeclared(code: &str, declared: &[String]) -> Option<String> {
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &code[start..i];
            let after_path = start >= 2 && &b[start - 2..start] == b"::";
            let placeholder = start >= 1 && b[start - 1] == b'{';
            let lifetime = start >= 1 && b[start - 1] == b'\'';
            let rest = b[i..].trim_ascii_start();
            let binding =
                rest.starts_with(b"=") && !rest.starts_with(b"==") && !rest.starts_with(b"=>");
            let capital = word.as_bytes()[0].is_ascii_uppercase();
            if capital
                && !after_path
                && !placeholder
                && !lifetime
                && !binding
                && !declared.iter().any(|d| d == word)
            {
                return Some(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_drop_private_modules_from_the_right() {
        let c = candidates("core::net::socket_addr::SocketAddr");
        assert_eq!(c[0], "std::net::socket_addr::SocketAddr");
        assert_eq!(c[1], "std::net::SocketAddr");
        assert!(c.contains(&"core::net::SocketAddr".to_string()));
    }

    #[test]
    fn an_unlinked_type_is_noticed() {
        let declared = ["B".to_string(), "T".into(), "X".into()];
        let linked =
            "fn {NAME}<B: bytes::BufMut>(a0: &B) -> std::io::Result<Output = T> { X::f(a0) }";
        assert_eq!(undeclared(linked, &declared), None);
        let unlinked = "fn {NAME}<B: BufMut>(a0: &B) { X::f(a0) }";
        assert_eq!(undeclared(unlinked, &declared), Some("BufMut".into()));
    }
}
