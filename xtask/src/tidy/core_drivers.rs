//! The executor core knows no driver (ARCHITECTURE.md, issue 21): its code
//! never names the network, the disks, Unix sockets, signals, fault points,
//! the interposers' sockets, processes or the harness. A driver is reached
//! through the `Driver` trait the core calls, or calls the core's methods
//! itself. Checked on paths in code (comments, strings and `#[cfg(test)]`
//! items are not the core's dependencies).

use super::source::{is_ident_byte, Source};

/// The executor core: these files...
pub(super) const CORE_FILES: &[&str] = &["sim-runtime/src/simulation/executor.rs"];

/// ...and every file under these folders.
pub(super) const CORE_DIRS: &[&str] = &["sim-runtime/src/simulation/executor/"];

/// The simulation's modules that are drivers (or the harness's side of the
/// runtime), by name: a path of our own module tree (`crate::…`, `super::…`,
/// `self::…`, `simulation::…`) through one of them is a driver's. The same
/// names under another crate (`std::net`, `std::process`, `libc::signal`)
/// are fine.
pub(super) const DRIVER_MODULES: &[&str] = &[
    "net",
    "fs",
    "unix",
    "signal",
    "buggify",
    "harness",
    "sockfd",
    "intercept_net",
    "process",
];

/// The models the drivers bind: named anywhere, they are a driver's.
pub(super) const MODEL_CRATES: &[&str] = &["sim_net", "sim_fs"];

/// The roots of a path into our own module tree.
const OUR_ROOTS: &[&str] = &["crate", "super", "self", "simulation"];

const ADVICE: &str = "the core knows no driver: put this behind the Driver trait \
                      (executor/driver.rs) or a method the driver calls";

pub(super) fn is_core(rel: &str) -> bool {
    CORE_FILES.contains(&rel) || CORE_DIRS.iter().any(|d| rel.starts_with(d))
}

/// The findings in one core file.
pub(super) fn check(rel: &str, text: &str) -> Vec<String> {
    let src = Source::new(text);
    let mut findings = Vec::new();
    for (at, path) in paths(&src.code) {
        let line = src.line_of(at);
        if src.in_test[line] || !names_a_driver(&path) {
            continue;
        }
        findings.push(format!(
            "{rel}:{}: `{}`: {ADVICE}",
            line + 1,
            path.join("::")
        ));
    }
    findings
}

fn names_a_driver(path: &[String]) -> bool {
    let Some(root) = path.first() else {
        return false;
    };
    if path.iter().any(|s| MODEL_CRATES.contains(&s.as_str())) {
        return true;
    }
    if OUR_ROOTS.contains(&root.as_str()) {
        return path[1..]
            .iter()
            .any(|s| DRIVER_MODULES.contains(&s.as_str()));
    }
    // `net::on_crash(..)` after a glob import: a driver module as a root.
    path.len() > 1 && DRIVER_MODULES.contains(&root.as_str())
}

/// Every path in masked code, with the offset of its first segment: a run
/// of `ident::ident…`. A `use` tree counts as the paths it names
/// (`use super::{net::Network, seed}` names `super::net::Network` and
/// `super::seed`).
fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident_byte(b[i]) || (i > 0 && is_ident_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let word = ident_at(code, i);
        if b[i].is_ascii_digit() {
            i += word.len();
            continue;
        }
        if word == "use" {
            let end = code[i..].find(';').map_or(b.len(), |e| i + e);
            use_tree(code, i + 3, end, &mut Vec::new(), &mut out);
            i = end;
            continue;
        }
        // A path's first segment: not after `::` (then it is a later one)
        // nor after `.` (a field or method).
        let before = code[..i].trim_end();
        if before.ends_with("::") || before.ends_with('.') {
            i += word.len();
            continue;
        }
        let mut path = vec![word.to_string()];
        let mut j = i + word.len();
        while let Some(next) = after_colons(code, j) {
            if next >= b.len() || !is_ident_byte(b[next]) {
                break;
            }
            let seg = ident_at(code, next);
            path.push(seg.to_string());
            j = next + seg.len();
        }
        out.push((i, path));
        i = j;
    }
    out
}

/// Reads the `use` tree in `code[from..to]` under `prefix`, pushing each
/// leaf's whole path (with the offset of its first own segment).
fn use_tree(
    code: &str,
    mut from: usize,
    to: usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<(usize, Vec<String>)>,
) -> usize {
    let b = code.as_bytes();
    let depth = prefix.len();
    let mut first_at = None;
    // After `as`, the next word is a new name, not a segment.
    let mut renamed = false;
    while from < to {
        let c = b[from];
        if c.is_ascii_whitespace() || c == b':' {
            from += 1;
        } else if is_ident_byte(c) {
            let w = ident_at(code, from);
            first_at.get_or_insert(from);
            if w == "as" {
                renamed = true;
            } else if !renamed {
                prefix.push(w.to_string());
            }
            from += w.len();
        } else if c == b'{' {
            from = use_tree(code, from + 1, to, prefix, out);
        } else if c == b',' || c == b'}' {
            if prefix.len() > depth {
                out.push((first_at.unwrap_or(from), prefix.clone()));
            }
            prefix.truncate(depth);
            first_at = None;
            renamed = false;
            from += 1;
            if c == b'}' {
                return from;
            }
        } else {
            from += 1; // `*`
        }
    }
    if prefix.len() > depth {
        out.push((first_at.unwrap_or(from), prefix.clone()));
    }
    prefix.truncate(depth);
    from
}

fn ident_at(code: &str, i: usize) -> &str {
    let end = code[i..]
        .bytes()
        .position(|c| !is_ident_byte(c))
        .map_or(code.len(), |p| i + p);
    &code[i..end]
}

/// If `code[j..]` starts with `::` (after spaces): where what follows starts.
fn after_colons(code: &str, j: usize) -> Option<usize> {
    let rest = &code[j..];
    let trimmed = rest.trim_start();
    let after = trimmed.strip_prefix("::")?;
    let skipped = rest.len() - after.len();
    let next = j + skipped + (after.len() - after.trim_start().len());
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(src: &str) -> Vec<String> {
        check("sim-runtime/src/simulation/executor/x.rs", src)
    }

    #[test]
    fn the_core_files_are_the_executor_and_its_folder() {
        assert!(is_core("sim-runtime/src/simulation/executor.rs"));
        assert!(is_core("sim-runtime/src/simulation/executor/lifecycle.rs"));
        assert!(!is_core("sim-runtime/src/simulation/net/mod.rs"));
        assert!(!is_core("sim-runtime/src/simulation/executor_stats.rs"));
    }

    #[test]
    fn a_driver_path_is_flagged_with_its_fix() {
        let src = "\
use super::config::Config as Settings;
use super::{buggify, node::{NodeId, self}};
pub(crate) net: super::net::Network,
let w = crate::simulation::net::on_crash(&mut core, node);
if !super::harness::quiet() {}
let x: sim_fs::Fs = todo!();
net::on_kill(core);
";
        let f = found(src);
        let lines: Vec<&str> = f.iter().map(|l| l.split(": ").next().unwrap()).collect();
        assert_eq!(
            lines,
            [
                "sim-runtime/src/simulation/executor/x.rs:2",
                "sim-runtime/src/simulation/executor/x.rs:3",
                "sim-runtime/src/simulation/executor/x.rs:4",
                "sim-runtime/src/simulation/executor/x.rs:5",
                "sim-runtime/src/simulation/executor/x.rs:6",
                "sim-runtime/src/simulation/executor/x.rs:7",
            ],
            "{f:?}"
        );
        assert!(f[0].contains("`super::buggify`"), "{f:?}");
        assert!(f[2].contains("`crate::simulation::net::on_crash`"), "{f:?}");
        assert!(f[0].contains("behind the Driver trait"), "{f:?}");
    }

    #[test]
    fn std_paths_fields_comments_strings_and_tests_are_fine() {
        let src = "\
use std::net::SocketAddr;
use std::{fs, process};
let a = std::process::abort;
core.net.on_kill(node); self.fs = 1;
// super::net::on_crash is called by the driver now
let m = \"use tokio::net, which is simulated (super::net)\";
let s = libc::signal;
#[cfg(test)]
mod tests {
    use crate::simulation::net::UdpSocket;
}
";
        assert_eq!(found(src), Vec::<String>::new());
    }
}
