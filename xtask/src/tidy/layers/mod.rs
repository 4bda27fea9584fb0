//! The runtime's layers, by path (ARCHITECTURE.md): every file under
//! `sim-runtime/src/simulation/` belongs to the layer of its folder, lowest
//! first:
//!
//! 0. `core/`: the executor, timers, memory, nodes, seeds, tapes, traces,
//!    and the task internals;
//! 1. the API: every other file and folder (the Tokio-shaped modules `fs/`,
//!    `net/`, `io/`, `task/`, `time/`, `signal.rs`, … and `control.rs`,
//!    `observe.rs`, `buggify.rs`, …);
//! 2. `libc/`: the interposers;
//! 3. `run/`: the seed runner, the harness's entry and the private API.
//!
//! The root's `mod.rs` and `api.rs` belong to no layer: they declare the
//! modules and re-export them, and are not checked.
//!
//! The rules: nothing under `core/` imports anything outside `core/` (nor
//! the model crates, `sim_net` and `sim_fs`: a model is its driver's); a
//! file imports only from its own layer or a lower one. So no import circle
//! spans two layers; one that does is named with its files too.
//!
//! What counts as an import: the leaves of `use` trees and the paths in
//! code (`super::super::net::f()`, `crate::simulation::core::Exec`, and
//! `crate::task::spawn`, which goes through `api.rs`'s re-exports: the API
//! layer), resolved from the module they are written in. Left out:
//! `#[cfg(test)]` items and files (a test may drive its layer from above),
//! and `macro_rules!` bodies (their `$crate::…` paths are resolved where
//! the macro is used). The rule checks paths, so it holds for a new file
//! without a list to keep up to date.

mod circles;
mod paths;
mod resolve;
#[cfg(test)]
mod tests;

use paths::{Kind, Named, Names};
use resolve::{module_of, Target, Tree};
use std::collections::BTreeMap;
use std::path::Path;

/// The simulation's root, from the workspace's.
pub(super) const SIMULATION: &str = "sim-runtime/src/simulation";

/// The files that declare and re-export, in no layer.
const EXEMPT: &[&str] = &["mod.rs", "api.rs"];

/// The models the drivers bind: the core names none of them.
const MODEL_CRATES: &[&str] = &["sim_net", "sim_fs"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Layer {
    Core,
    Api,
    Libc,
    Run,
}

impl Layer {
    /// The layer of a module whose path from the simulation's root starts
    /// with `first`.
    pub(super) fn of(first: &str) -> Layer {
        match first {
            "core" => Layer::Core,
            "libc" => Layer::Libc,
            "run" => Layer::Run,
            _ => Layer::Api,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Layer::Core => "core",
            Layer::Api => "api",
            Layer::Libc => "libc",
            Layer::Run => "run",
        }
    }
}

/// The findings for the simulation tree at `dir`, each file shown as
/// `shown/<its path under dir>`.
pub(super) fn check(dir: &Path, shown: &str) -> Result<Vec<String>, String> {
    let files = super::rust_files(dir);
    if files.is_empty() {
        return Err(format!(
            "{shown}: no Rust files: the layer rule has nothing to check"
        ));
    }
    let mut texts = BTreeMap::new();
    for f in files {
        let rel = super::relative(dir, &f);
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{shown}/{rel}: {e}"))?;
        texts.insert(rel, text);
    }
    Ok(check_files(&texts, shown))
}

/// The findings for a tree given as its files (path under the
/// simulation's root → text).
pub(super) fn check_files(texts: &BTreeMap<String, String>, shown: &str) -> Vec<String> {
    let mut findings = Vec::new();
    let mut read: BTreeMap<&str, Names> = BTreeMap::new();
    for (file, text) in texts {
        match paths::read(&module_of(file), text) {
            Ok(names) => {
                read.insert(file, names);
            }
            Err(e) => findings.push(format!(
                "{shown}/{file}:{}: does not parse ({e}): the layer rule reads imports with \
                 Rust's grammar; fix the syntax (`cargo check` shows where)",
                e.span().start().line
            )),
        }
    }
    let tree = Tree::new(read.iter().map(|(f, n)| (*f, n.paths.as_slice())));
    let tests: Vec<&Vec<String>> = read.values().flat_map(|n| &n.test_modules).collect();
    let mut edges = circles::Edges::default();
    for (&file, names) in &read {
        let module = module_of(file);
        if EXEMPT.contains(&file) || tests.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let layer = Layer::of(&module[0]);
        if layer == Layer::Core {
            findings.extend(models(names).map(|n| {
                format!(
                    "{shown}/{file}:{}: `{}`: the core layer imports the model crate `{}`: \
                     {}",
                    n.line,
                    shown_path(n),
                    n.segments[0],
                    fix(layer)
                )
            }));
        }
        for (named, target) in imports(&tree, names) {
            if let (Some(to), Some(to_layer)) = (target.file.as_deref(), target.layer) {
                if to != file && !EXEMPT.contains(&to) {
                    edges.add(file, layer, to, to_layer, named.line);
                }
            }
            if let Some(what) = violation(layer, &target) {
                findings.push(format!(
                    "{shown}/{file}:{}: `{}`: the {} layer imports {what}: {}",
                    named.line,
                    shown_path(named),
                    layer.name(),
                    fix(layer),
                ));
            }
        }
    }
    findings.dedup();
    findings.extend(edges.circles(shown));
    findings
}

/// The paths in `names` into a model crate.
fn models(names: &Names) -> impl Iterator<Item = &Named> {
    names
        .paths
        .iter()
        .filter(|n| MODEL_CRATES.contains(&n.segments[0].as_str()))
}

/// Every path in `names` that leads into this crate, with where.
fn imports<'a>(tree: &Tree, names: &'a Names) -> Vec<(&'a Named, Target)> {
    let mut out = Vec::new();
    for n in &names.paths {
        if let Some(t) = tree
            .resolve(&n.module, &n.segments)
            .or_else(|| through_root(tree, names, n))
        {
            out.push((n, t));
        }
    }
    out
}

/// A bare path (`simulation::net::f()`, `net::f()`) through a name its
/// module binds to the simulation's root or `api.rs`, or one such a
/// module's glob brings in: those two re-export every layer, so the path
/// is followed through them. (A name bound to a module of a layer needs
/// no following: the `use` is read, and what is under it is in its layer.)
fn through_root(tree: &Tree, names: &Names, n: &Named) -> Option<Target> {
    if n.kind != Kind::Code {
        return None;
    }
    let (first, rest) = n.segments.split_first()?;
    let roots = [Some("mod.rs"), Some("api.rs")];
    for u in names.paths.iter().filter(|u| u.module == n.module) {
        let Some(bound) = tree.resolve(&n.module, &u.segments) else {
            continue;
        };
        if !roots.contains(&bound.file.as_deref()) {
            continue;
        }
        let module = module_of(bound.file.as_deref().unwrap_or_default());
        match &u.kind {
            Kind::Use(Some(name)) if name == first => {
                return tree.resolve(&n.module, &[u.segments.as_slice(), rest].concat());
            }
            Kind::Glob if tree.binds(&module, first) => {
                return Some(tree.in_simulation(&[module.as_slice(), &n.segments].concat(), 0));
            }
            _ => {}
        }
    }
    None
}

/// A path as the finding shows it: a glob with its `*`.
fn shown_path(n: &Named) -> String {
    let path = n.segments.join("::");
    if n.kind == Kind::Glob {
        format!("{path}::*")
    } else {
        path
    }
}

/// What is wrong with a file of `layer` naming `target`, if anything.
fn violation(layer: Layer, target: &Target) -> Option<String> {
    let what = match (target.layer, target.file.as_deref()) {
        (Some(t), _) if t <= layer => return None,
        (None, _) if layer != Layer::Core => return None,
        (None, _) => "the simulation's root (mod.rs), outside core/".to_string(),
        (Some(t), None) => format!("the {} layer (through api.rs's re-exports)", t.name()),
        (Some(t), Some(file)) => format!("the {} layer ({file})", t.name()),
    };
    Some(what)
}

/// How to fix an import upward from `layer`.
fn fix(layer: Layer) -> String {
    let turn = "or turn the call around: the lower layer offers a hook or a trait \
                (core/hooks.rs, the Driver trait) that the higher one sets at start";
    if layer == Layer::Core {
        format!("nothing under core/ imports outside core/; move what it needs into core/, {turn}")
    } else {
        format!(
            "a file imports only its own layer and lower ones (core < api < libc < run); \
             move what it needs down to the {} layer or below, {turn}",
            layer.name()
        )
    }
}
