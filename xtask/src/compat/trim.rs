//! Cutting the items of a test file that need `tokio::net` or `tokio::fs`
//! (not simulated yet) out of the simulated build, so that the rest of the
//! file compiles and runs.
//!
//! A cut item is not deleted: it gets `#[cfg(not(simulation))]` in front of
//! its first attribute, on the same line. The simulated build (`--cfg
//! simulation`) compiles without it; the real-Tokio build of the same file
//! is the original, so listing that build names every test the cut removed.
//! Line numbers do not move.
//!
//! What is cut, to a fixed point:
//! - a `use` whose every leaf is under `tokio::net`/`tokio::fs`; a `use`
//!   with some such leaves (`use tokio::{net, time};`) is replaced, under
//!   simulation, by the other leaves;
//! - an item (test, helper fn, struct, impl, const, ...) whose code mentions
//!   `tokio::net`/`tokio::fs`, a name such a `use` imported (`TcpListener`
//!   after `use tokio::net::TcpListener;`, `net::` after `use tokio::net;`),
//!   or the name of a helper item cut before.
//!
//! `mod m { ... }` and item-level macro invocations (`rt_test! { ... }`) are
//! never cut whole: their bodies are read as item lists, so a macro that
//! stamps its body into one module per runtime flavor loses the same tests
//! in every module. Comments, strings and char literals are ignored.

use super::syntax::{is_ident_byte, parse_items, use_leaves, word_at, Kind, Leaf, Masks};
use std::collections::BTreeSet;

/// A test file with its net/fs items compiled out under simulation.
pub(super) struct Trimmed {
    /// The file to build.
    pub(super) text: String,
    /// Names of the cut test functions.
    pub(super) tests: Vec<String>,
    /// Names of the other cut items (helpers), and the removed `use` leaves.
    pub(super) helpers: Vec<String>,
}

impl Trimmed {
    pub(super) fn is_trimmed(&self) -> bool {
        !self.tests.is_empty() || !self.helpers.is_empty()
    }
}

/// The attribute that compiles an item out of the simulated build.
const CUT: &str = "#[cfg(not(simulation))] ";

/// Modules of `tokio::` that are not simulated, whose tests are cut. Empty
/// since the network and the disk landed; the mechanism stays for the next
/// module that is added to the selection before it is simulated.
const UNSIMULATED: &[&str] = &[];

/// Items of `tokio::net` that are not simulated, whose tests are cut. Empty
/// since the Unix-domain sockets landed (it held `UnixDatagram`,
/// `UnixListener`, `UnixStream` and `unix`); kept for the next item of
/// `tokio::net` added before it is simulated.
const UNSIMULATED_NET: &[&str] = &[];

thread_local! {
    /// The lists in force (the tests exercise the cutting with more).
    static MODULES: std::cell::Cell<&'static [&'static str]> =
        const { std::cell::Cell::new(UNSIMULATED) };
    static NET_ITEMS: std::cell::Cell<&'static [&'static str]> =
        const { std::cell::Cell::new(UNSIMULATED_NET) };
}

fn unsimulated() -> &'static [&'static str] {
    MODULES.with(|m| m.get())
}

fn unsimulated_net() -> &'static [&'static str] {
    NET_ITEMS.with(|m| m.get())
}

pub(super) fn trim(source: &str) -> Trimmed {
    let masks = Masks::new(source);
    let mut items = Vec::new();
    parse_items(&masks, 0, source.len(), &mut items);

    // Markers: names whose use means the item needs net/fs.
    let mut modules: BTreeSet<String> = BTreeSet::new(); // `net` after `use tokio::net;`
    let mut idents: BTreeSet<String> = BTreeSet::new(); // `TcpListener`, cut helpers
    let mut done = vec![false; items.len()];
    let mut insertions: Vec<(usize, String)> = Vec::new();
    let mut out = Trimmed {
        text: String::new(),
        tests: Vec::new(),
        helpers: Vec::new(),
    };
    loop {
        let mut changed = false;
        for (k, item) in items.iter().enumerate() {
            if done[k] || matches!(item.kind, Kind::Container) {
                continue;
            }
            if let Kind::Use = item.kind {
                let leaves = use_leaves(&masks.no_comments[item.keyword..item.end]);
                let (cut, kept): (Vec<&Leaf>, Vec<&Leaf>) = leaves
                    .iter()
                    .partition(|l| leaf_needs_unsimulated(l, &modules, &idents));
                if cut.is_empty() {
                    continue;
                }
                for l in &cut {
                    if let Some(name) = l.binds() {
                        if leaf_is_module(l, &modules) {
                            modules.insert(name);
                        } else {
                            idents.insert(name);
                        }
                    }
                    out.helpers.push(format!("use {}", l.display()));
                }
                insertions.push((item.start, CUT.to_string()));
                if !kept.is_empty() {
                    // The other leaves, under simulation, with the same
                    // attributes, on the item's last line.
                    let vis = masks.no_comments[item.visibility..item.keyword].trim();
                    let mut alt = String::new();
                    for l in &kept {
                        alt.push(' ');
                        for a in &item.attributes {
                            alt.push_str(&one_line(&masks.no_comments[a.0..a.1]));
                            alt.push(' ');
                        }
                        alt.push_str("#[cfg(simulation)] ");
                        if !vis.is_empty() {
                            alt.push_str(vis);
                            alt.push(' ');
                        }
                        alt.push_str(&format!("use {};", l.display()));
                    }
                    insertions.push((item.end, alt));
                }
                done[k] = true;
                changed = true;
                continue;
            }
            let code = &masks.code[item.start..item.end];
            if !mentions_unsimulated(code, &modules, &idents) {
                continue;
            }
            insertions.push((item.start, CUT.to_string()));
            let name = item.name.clone().unwrap_or_else(|| "(unnamed item)".into());
            if item.is_test {
                out.tests.push(name);
            } else {
                if let Some(n) = &item.name {
                    idents.insert(n.clone());
                }
                out.helpers.push(name);
            }
            done[k] = true;
            changed = true;
        }
        if !changed {
            break;
        }
    }
    insertions.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let mut text = source.to_string();
    for (at, s) in insertions {
        text.insert_str(at, &s);
    }
    out.text = text;
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether masked code mentions what is not simulated.
fn mentions_unsimulated(code: &str, modules: &BTreeSet<String>, idents: &BTreeSet<String>) -> bool {
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !is_ident_byte(b[i]) || (i > 0 && is_ident_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let w = word_at(b, i, b.len());
        let end = i + w.len();
        let qualified = i >= 2 && &b[i - 2..i] == b"::";
        let method = i >= 1 && b[i - 1] == b'.';
        let path_next = b[end..].starts_with(b"::");
        if w == "tokio" && path_next {
            let next = word_at(b, end + 2, b.len());
            if unsimulated().contains(&next) {
                return true;
            }
        }
        // `tokio::net::UnixStream`, or `net::UnixStream` after
        // `use tokio::net` (not `std::os::unix::net::UnixStream`; no Tokio
        // test imports std's `unix::net` as a module).
        let by_tokio = i >= 7 && &b[i - 7..i] == b"tokio::";
        if w == "net" && path_next && (by_tokio || !qualified) && !method {
            let next = word_at(b, end + 2, b.len());
            if unsimulated_net().contains(&next) {
                let after = end + 2 + next.len();
                // `net::unix` only as a module path (`net::unix::…`).
                if next != "unix" || b[after..].starts_with(b"::") {
                    return true;
                }
            }
        }
        if !qualified && !method {
            if path_next && modules.contains(w) {
                return true;
            }
            if idents.contains(w) {
                return true;
            }
        }
        i = end.max(i + 1);
    }
    false
}

// ---------------------------------------------------------------------------
// `use` leaves.

/// Whether a `use` leaf imports what is not simulated: a path under
/// `tokio::net`/`tokio::fs`, under a module imported so (`net::TcpListener`
/// after `use tokio::net;`), or a name already cut.
fn leaf_needs_unsimulated(
    leaf: &Leaf,
    modules: &BTreeSet<String>,
    idents: &BTreeSet<String>,
) -> bool {
    let p = leaf.module_path();
    let p: Vec<&str> = p.into_iter().skip_while(|s| s.is_empty()).collect();
    (p.len() >= 2 && p[0] == "tokio" && unsimulated().contains(&p[1]))
        || (p.len() >= 3 && p[0] == "tokio" && p[1] == "net" && unsimulated_net().contains(&p[2]))
        || (leaf
            .binds()
            .is_some_and(|n| unsimulated_net().contains(&n.as_str()))
            && p.len() >= 2
            && p[0] == "tokio")
        || (p.len() >= 2 && modules.contains(p[0]))
        || leaf.binds().is_some_and(|n| idents.contains(&n))
}

/// Whether a `use` leaf imports a module (`tokio::net`, `tokio::net::{self}`).
fn leaf_is_module(leaf: &Leaf, modules: &BTreeSet<String>) -> bool {
    let p = leaf.module_path();
    (p.len() == 2 && p[0] == "tokio" && unsimulated().contains(&p[1]))
        || (p.len() == 1 && modules.contains(p[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines that carry the cut attribute.
    /// Cut `tokio::net` too, as before the network was simulated: the
    /// mechanism is the same for any list of modules.
    fn trim(source: &str) -> Trimmed {
        MODULES.with(|m| m.set(&["net", "fs"]));
        super::trim(source)
    }

    fn cut_lines(t: &Trimmed) -> Vec<String> {
        t.text
            .lines()
            .filter(|l| l.contains(CUT.trim_end()))
            .map(|l| l.trim().to_string())
            .collect()
    }

    #[test]
    fn cuts_tests_helpers_and_imports() {
        let src = r#"#![cfg(feature = "full")]
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream as Stream};

/// Docs { with a brace
#[tokio::test]
#[cfg_attr(miri, ignore)] // not "net"
async fn uses_listener() {
    let s = "}";
    let c = '{';
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
}

#[test]
fn plain() {
    let _ = std::net::TcpListener::bind("x"); // std's is fine
    let _c = '}';
}

fn helper() -> Stream { todo!() }

#[test]
fn calls_helper() { let _ = helper(); }

#[test]
fn calls_helper_2() { helper_two(); }
fn helper_two() {}

#[test]
fn uses_fs() { let _ = tokio::fs::read("x"); }
"#;
        let t = trim(src);
        assert_eq!(t.tests, ["uses_listener", "calls_helper", "uses_fs"]);
        assert_eq!(
            t.helpers,
            [
                "use tokio::net::TcpListener",
                "use tokio::net::TcpStream as Stream",
                "helper"
            ]
        );
        assert_eq!(t.text.lines().count(), src.lines().count());
        assert_eq!(
            cut_lines(&t),
            [
                "#[cfg(not(simulation))] use tokio::net::{TcpListener, TcpStream as Stream};",
                "#[cfg(not(simulation))] #[tokio::test]",
                "#[cfg(not(simulation))] fn helper() -> Stream { todo!() }",
                "#[cfg(not(simulation))] #[test]",
                "#[cfg(not(simulation))] #[test]",
            ]
        );
        // `plain` and `calls_helper_2` stay.
        assert!(t.text.contains("#[test]\nfn plain()"));
        assert!(t.text.contains("#[test]\nfn calls_helper_2()"));
    }

    #[test]
    fn splits_mixed_imports_and_module_paths() {
        let src = "#[cfg(not(target_os = \"wasi\"))]\nuse tokio::{net, time};\n\
                   #[test]\nfn a() { net::TcpListener::bind(1); }\n\
                   #[test]\nfn b() { time::sleep(1); std::net::x(); }\n";
        let t = trim(src);
        assert_eq!(t.tests, ["a"]);
        assert_eq!(t.helpers, ["use tokio::net"]);
        assert_eq!(
            t.text.lines().nth(1).unwrap(),
            "use tokio::{net, time}; #[cfg(not(target_os = \"wasi\"))] \
             #[cfg(simulation)] use tokio::time;"
        );
        assert!(t
            .text
            .starts_with("#[cfg(not(simulation))] #[cfg(not(target_os"));
    }

    #[test]
    fn reads_macro_and_module_bodies() {
        let src = "macro_rules! rt_test { ($($t:tt)*) => { mod a { $($t)* } } }\n\
                   rt_test! {\n    use tokio::fs;\n    use std::sync::Arc;\n\n    \
                   #[test]\n    fn reads() { fs::read(\"x\"); }\n\n    \
                   #[test]\n    fn stays() { let _ = std::fs::read(\"x\"); }\n\n    \
                   async fn client(x: u8) { let _ = tokio::net::TcpStream::connect(x); }\n    \
                   #[test]\n    fn calls() { client(1); }\n}\n\
                   mod m {\n    #[test]\n    fn inner() { tokio::net::x(); }\n}\n";
        let t = trim(src);
        assert_eq!(t.tests, ["reads", "calls", "inner"]);
        assert_eq!(t.helpers, ["use tokio::fs", "client"]);
        assert!(t.text.contains("fn stays()"));
        assert!(!t.text.contains("simulation))] rt_test!"));
        assert!(!t.text.contains("simulation))] mod m"));
    }

    #[test]
    fn cuts_unix_sockets_of_the_simulated_net() {
        // As before the Unix-domain sockets were simulated.
        MODULES.with(|m| m.set(&[]));
        NET_ITEMS.with(|m| m.set(&["UnixDatagram", "UnixListener", "UnixStream", "unix"]));
        let src = "use tokio::net::TcpListener;\nuse tokio::net::UnixStream;\n\
                   #[test]\nfn tcp() { TcpListener::bind(1); }\n\
                   #[test]\nfn unix() { UnixStream::connect(1); }\n\
                   #[test]\nfn qualified() { tokio::net::UnixDatagram::unbound(); }\n\
                   #[test]\nfn std_unix() { std::os::unix::net::UnixStream::pair(); }\n\
                   use tokio::{net, time};\n\
                   #[test]\nfn module() { net::UnixListener::bind(1); }\n";
        let t = super::trim(src);
        assert_eq!(t.tests, ["unix", "qualified", "module"]);
        assert_eq!(t.helpers, ["use tokio::net::UnixStream"]);
    }

    #[test]
    fn leaves_files_without_net_alone() {
        let src = "use tokio::time;\n#[test]\nfn a() { let _ = \"tokio::net\"; }\n";
        let t = trim(src);
        assert!(!t.is_trimmed());
        assert_eq!(t.text, src);
    }
}
