//! Reading libtest's output: verdicts and failure excerpts, made stable
//! across runs and machines.

use super::run::Verdict;
use crate::cmd::root as workspace_root;
use std::collections::BTreeMap;

pub(super) fn is_informative(line: &str) -> bool {
    let l = line.trim();
    !(l.is_empty()
        || (l.starts_with("sim: ") && l.contains("replay:"))
        || (l.starts_with("sim: ") && l.contains(" · a line per seed as it starts and ends"))
        || l.starts_with("sim: replay with:")
        || l.starts_with("sim: assertion (the test body panicked)")
        || l.starts_with("note: run with `RUST_BACKTRACE")
        || l.starts_with("note: Some details are omitted"))
}

/// A line of test output, made stable across runs and machines (no thread
/// ids, no absolute paths) and cut to a readable length.
pub(super) fn shorten(line: &str) -> String {
    const MAX: usize = 300;
    let line = normalize(line);
    if line.len() <= MAX {
        return line;
    }
    let mut end = MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

pub(super) fn normalize(line: &str) -> String {
    let mut s = line.to_string();
    // Absolute paths: the workspace, the registry, the standard library.
    let root = format!("{}/", workspace_root().display());
    s = s.replace(&root, "");
    if let Some(i) = s.find("/registry/src/") {
        // ".../registry/src/<index>/tokio-1.54.1/src/x.rs" -> "tokio-1.54.1/src/x.rs"
        let start = s[..i].rfind([' ', '\'', '"', '(']).map_or(0, |j| j + 1);
        let after = &s[i + "/registry/src/".len()..];
        if let Some(slash) = after.find('/') {
            s = format!("{}{}", &s[..start], &after[slash + 1..]);
        }
    }
    while let Some(i) = s.find("/rustc/") {
        let hash_end = i + "/rustc/".len() + 40;
        if s.len() <= hash_end || !s[i + 7..hash_end].bytes().all(|b| b.is_ascii_hexdigit()) {
            break;
        }
        s = format!("{}<rustc>{}", &s[..i], &s[hash_end..]);
    }
    // "thread 'name' (12345) panicked" -> "thread 'name' panicked"
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(i) = rest.find("' (") {
        let (head, tail) = rest.split_at(i + 1);
        out.push_str(head);
        let digits = tail[2..].bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[2 + digits..].starts_with(") ") {
            rest = &tail[2 + digits + 1..];
        } else {
            rest = tail;
            out.push_str(&rest[..1]);
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Verdicts and failure excerpts from libtest's default ("pretty") output.
pub(super) fn parse_libtest(text: &str) -> BTreeMap<String, Verdict> {
    let mut v = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, result)) = rest.split_once(" ... ") else {
            continue;
        };
        let name = name.strip_suffix(" - should panic").unwrap_or(name);
        let verdict = match result.split([',', ' ']).next().unwrap_or("") {
            "ok" => Verdict::Passed,
            "ignored" => Verdict::Ignored,
            "FAILED" => Verdict::Failed(Vec::new()),
            _ => continue,
        };
        v.insert(name.to_string(), verdict);
    }
    // Failure sections: "---- name stdout ----" up to the next header or
    // the closing "failures:" list.
    let mut current: Option<(String, Vec<String>)> = None;
    let mut flush = |cur: &mut Option<(String, Vec<String>)>| {
        if let Some((n, lines)) = cur.take() {
            if let Some(Verdict::Failed(l)) = v.get_mut(&n) {
                *l = lines;
            }
        }
    };
    for line in text.lines() {
        if let Some(h) = line
            .strip_prefix("---- ")
            .and_then(|h| h.strip_suffix(" stdout ----"))
        {
            flush(&mut current);
            current = Some((h.to_string(), Vec::new()));
        } else if line == "failures:" {
            flush(&mut current);
        } else if let Some((_, lines)) = current.as_mut() {
            if lines.len() < 8 && is_informative(line) {
                lines.push(shorten(line));
            }
        }
    }
    flush(&mut current);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_output() {
        let out = "\nrunning 4 tests\n\
            test a::one ... ok\n\
            test two - should panic ... ok\n\
            test three ... ignored, slow\n\
            test four ... FAILED\n\
            test five has been running for over 60 seconds\n\
            \nfailures:\n\n---- four stdout ----\n\
            sim: four seed 0 · replay: SIM_SEED=0 cargo test\n\n\
            thread 'four' panicked at tests/x.rs:3:5:\nboom\n\
            note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\n\
            failures:\n    four\n\ntest result: FAILED. 2 passed; 1 failed; 1 ignored\n";
        let v = parse_libtest(out);
        assert_eq!(v["a::one"], Verdict::Passed);
        assert_eq!(v["two"], Verdict::Passed);
        assert_eq!(v["three"], Verdict::Ignored);
        assert_eq!(
            v["four"],
            Verdict::Failed(vec![
                "thread 'four' panicked at tests/x.rs:3:5:".into(),
                "boom".into()
            ])
        );
        assert!(!v.contains_key("five"));
    }

    #[test]
    fn normalized_lines() {
        let root = workspace_root().display().to_string();
        assert_eq!(
            normalize(&format!(
                "thread 'a::b' (14627) panicked at {root}/sim-runtime/src/x.rs:1:2:"
            )),
            "thread 'a::b' panicked at sim-runtime/src/x.rs:1:2:"
        );
        assert_eq!(
            normalize(
                "panicked at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/\
                 tokio-1.54.1/src/sync/mpsc/bounded.rs:993:28:"
            ),
            "panicked at tokio-1.54.1/src/sync/mpsc/bounded.rs:993:28:"
        );
        assert_eq!(
            normalize(
                "at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/time.rs:4:3"
            ),
            "at <rustc>/library/std/src/time.rs:4:3"
        );
        assert_eq!(normalize("x' (y) z' (1)"), "x' (y) z' (1)");
    }
}
