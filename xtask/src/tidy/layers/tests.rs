use super::*;

const SHOWN: &str = "sim-runtime/src/simulation";

/// A small simulation tree whose every import keeps to the layers.
fn good() -> BTreeMap<String, String> {
    [
        (
            "mod.rs",
            "pub(crate) mod api;\npub(crate) mod core;\npub(crate) mod libc;\npub mod net;\n\
             pub(crate) mod run;\npub mod task;\npub(crate) use core::executor::Exec;\n",
        ),
        (
            "api.rs",
            "pub use crate::simulation::net;\npub use crate::simulation::task;\n\
             pub use crate::simulation::task::spawn;\n\
             pub use crate::simulation::run::private as __private;\n\
             pub use tokio::sync;\n",
        ),
        (
            "core/mod.rs",
            "pub(crate) mod executor;\npub(crate) mod timer;\n",
        ),
        (
            "core/executor.rs",
            "use super::timer::Timer;\nuse self::inner::X;\npub(crate) struct Exec(Timer);\n\
             mod inner { pub(super) struct X(super::super::timer::Timer); }\n\
             macro_rules! spawn { () => { $crate::task::spawn() } }\n\
             #[cfg(test)]\nmod tests { fn t() { crate::task::spawn(); } }\n",
        ),
        ("core/timer.rs", "pub(crate) struct Timer;\n"),
        (
            "net/mod.rs",
            "use crate::simulation::core::executor::Exec;\npub mod tcp;\n\
             pub fn x() { tcp::connect(); }\n",
        ),
        (
            "net/tcp.rs",
            "pub fn connect() { let _ = crate::simulation::Exec; }\n",
        ),
        (
            "task/mod.rs",
            "pub fn spawn() { let _ = super::core::executor::Exec; }\n",
        ),
        ("libc/mod.rs", "pub(crate) mod intercept;\n"),
        (
            "libc/intercept.rs",
            "use crate::simulation::net;\nfn f() { crate::task::spawn(); net::x(); }\n",
        ),
        ("run/mod.rs", "pub mod private;\n"),
        (
            "run/private.rs",
            "use super::super::{core::executor::Exec, libc::intercept, net, task};\n\
             pub fn run() { crate::__private::run(); crate::sync::Mutex::new(()); }\n",
        ),
    ]
    .into_iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect()
}

fn with(file: &str, text: &str) -> BTreeMap<String, String> {
    let mut tree = good();
    tree.insert(file.to_string(), text.to_string());
    tree
}

fn found(tree: &BTreeMap<String, String>) -> Vec<String> {
    check_files(tree, SHOWN)
}

/// The one finding about a single import (not the circles it closes).
fn the_one(tree: &BTreeMap<String, String>) -> String {
    let f = imports_only(tree);
    assert_eq!(f.len(), 1, "{f:?}");
    f[0].clone()
}

/// The findings about single imports (not the circles they close).
fn imports_only(tree: &BTreeMap<String, String>) -> Vec<String> {
    let circle = format!("{SHOWN}: an import circle");
    found(tree)
        .into_iter()
        .filter(|f| !f.starts_with(&circle))
        .collect()
}

#[test]
fn a_tree_that_keeps_to_its_layers_passes() {
    assert_eq!(found(&good()), Vec::<String>::new());
}

#[test]
fn run_may_import_every_layer() {
    let tree = with(
        "run/harness.rs",
        "use crate::simulation::{core::timer, libc::intercept, net::tcp};\n\
         use super::super::api;\n\
         fn f() { crate::task::spawn(); super::private::run(); crate::simulation::Exec; }\n",
    );
    assert_eq!(found(&tree), Vec::<String>::new());
}

#[test]
fn a_core_file_importing_a_driver_fails_with_its_fix() {
    let tree = with(
        "core/timer.rs",
        "use super::super::net::x;\npub(crate) struct Timer;\n",
    );
    let f = the_one(&tree);
    assert!(
        f.starts_with(
            "sim-runtime/src/simulation/core/timer.rs:1: `super::super::net::x`: the core \
             layer imports the api layer (net/mod.rs): nothing under core/ imports outside core/"
        ),
        "{f}"
    );
    assert!(f.contains("turn the call around"), "{f}");
}

#[test]
fn a_core_file_naming_a_model_crate_fails() {
    let tree = with(
        "core/timer.rs",
        "use std::net::SocketAddr;\nfn f(n: &mut sim_net::Net) {}\n",
    );
    let f = the_one(&tree);
    assert!(
        f.starts_with(
            "sim-runtime/src/simulation/core/timer.rs:2: `sim_net::Net`: the core layer \
             imports the model crate `sim_net`: nothing under core/"
        ),
        "{f}"
    );
    // The drivers may.
    assert_eq!(
        found(&with("net/tcp.rs", "fn f(n: &sim_net::Net) {}\n")),
        Vec::<String>::new()
    );
}

#[test]
fn a_core_file_naming_the_api_through_the_crate_root_fails() {
    let tree = with(
        "core/timer.rs",
        "pub(crate) struct Timer;\nfn wake() {\n    crate::task::spawn();\n    let _ = crate::sync::Mutex::new(());\n}\n",
    );
    let f = imports_only(&tree);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(
        f[0].contains("core/timer.rs:3: `crate::task::spawn`: the core layer imports the api layer (task/mod.rs)"),
        "{f:?}"
    );
    assert!(
        f[1].contains("core/timer.rs:4: `crate::sync::Mutex::new`: the core layer imports the api layer (through api.rs's re-exports)"),
        "{f:?}"
    );
}

#[test]
fn a_core_file_naming_the_root_fails() {
    let tree = with(
        "core/timer.rs",
        "use crate::simulation;\nuse super::super::*;\npub(crate) struct Timer;\n\
         fn f() { simulation::net::x(); net::x(); }\n",
    );
    let f = imports_only(&tree);
    let heads: Vec<&str> = f.iter().map(|l| l.split(": the").next().unwrap()).collect();
    assert_eq!(
        heads,
        [
            "sim-runtime/src/simulation/core/timer.rs:1: `crate::simulation`",
            "sim-runtime/src/simulation/core/timer.rs:2: `super::super::*`",
            "sim-runtime/src/simulation/core/timer.rs:4: `simulation::net::x`",
            "sim-runtime/src/simulation/core/timer.rs:4: `net::x`",
        ],
        "{f:?}"
    );
    assert!(
        f[0].contains("the simulation's root (mod.rs), outside core/"),
        "{f:?}"
    );
}

#[test]
fn an_api_file_importing_libc_fails() {
    let tree = with(
        "task/mod.rs",
        "pub fn spawn() {\n    crate::simulation::libc::intercept::f();\n}\n",
    );
    let f = the_one(&tree);
    assert!(
        f.starts_with(
            "sim-runtime/src/simulation/task/mod.rs:2: `crate::simulation::libc::intercept::f`: \
             the api layer imports the libc layer (libc/intercept.rs): a file imports only its \
             own layer and lower ones (core < api < libc < run); move what it needs down to the \
             api layer or below"
        ),
        "{f}"
    );
}

#[test]
fn the_private_api_through_the_crate_root_is_the_run_layer() {
    let tree = with("libc/intercept.rs", "fn f() { crate::__private::run(); }\n");
    let f = the_one(&tree);
    assert!(
        f.contains("the libc layer imports the run layer (run/private.rs)"),
        "{f}"
    );
}

#[test]
fn a_circle_between_libc_and_the_api_fails_and_is_named() {
    // libc/intercept.rs already imports net/mod.rs; net/mod.rs imports it back.
    let tree = with(
        "net/mod.rs",
        "use crate::simulation::core::executor::Exec;\npub mod tcp;\n\
         pub fn x() { tcp::connect(); }\n\
         fn y() { super::libc::intercept::f(); }\n",
    );
    let f = found(&tree);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(
        f[0].contains(
            "net/mod.rs:4: `super::libc::intercept::f`: the api layer imports the libc layer"
        ),
        "{f:?}"
    );
    assert_eq!(
        f[1],
        "sim-runtime/src/simulation: an import circle spans the api and libc layers: \
         net/mod.rs (line 4) → libc/intercept.rs (line 1) → net/mod.rs: break it at its \
         upward import (named above with its fix)"
    );
}

#[test]
fn inline_modules_and_files_with_both_forms_resolve_super_from_where_they_are() {
    // `io.rs` beside `io/` is module `io`; `io/util.rs`'s `super` is `io`.
    let mut tree = with("io.rs", "pub mod util;\nfn f() { util::g(); }\n");
    tree.insert(
        "io/util.rs".into(),
        "pub fn g() {}\nmod deep { fn h() { super::super::super::libc::intercept::f(); } }\n"
            .into(),
    );
    let f = found(&tree);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].contains("io/util.rs:2: `super::super::super::libc::intercept::f`: the api layer imports the libc layer"),
        "{f:?}"
    );
}

#[test]
fn test_files_and_items_are_left_out() {
    let mut tree = with(
        "core/executor.rs",
        "pub(crate) struct Exec;\n#[cfg(test)]\nmod tests;\n\
         #[cfg(all(test, unix))]\nfn t() { crate::task::spawn(); }\n",
    );
    tree.insert(
        "core/executor/tests.rs".into(),
        "use crate::simulation::net;\nfn t() { crate::task::spawn(); }\n".into(),
    );
    assert_eq!(found(&tree), Vec::<String>::new());
}

#[test]
fn a_file_that_does_not_parse_is_a_finding() {
    let f = found(&with("net/tcp.rs", "pub fn connect( {\n"));
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with("sim-runtime/src/simulation/net/tcp.rs:1: does not parse"),
        "{f:?}"
    );
}

#[test]
fn the_rule_reads_a_tree_from_its_folder() {
    let dir = std::env::temp_dir().join(format!("xtask-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (file, text) in with("core/timer.rs", "use crate::simulation::libc::intercept;\n") {
        let path = dir.join(&file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let f = check(&dir, "shown");
    std::fs::remove_dir_all(&dir).unwrap();
    let f = f.unwrap();
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(
        f[0].starts_with("shown/core/timer.rs:1: `crate::simulation::libc::intercept`: the core layer imports the libc layer"),
        "{f:?}"
    );
    // core → libc → api → core again.
    assert_eq!(
        f[1],
        "shown: an import circle spans the core, api and libc layers: core/timer.rs (line 1) \
         → libc/intercept.rs (line 1) → net/mod.rs (line 1) → core/executor.rs (line 1) → \
         core/timer.rs: break it at its upward import (named above with its fix)"
    );
    assert!(check(Path::new("/nonexistent/simulation"), "x").is_err());
}
