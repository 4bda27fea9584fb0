//! Where a path of the simulation leads: the file of the module it names
//! and that file's layer. A path is resolved as rustc would for what the
//! rule needs: `crate::simulation::…` from the simulation's root,
//! `super::…` and `self::…` from the module it is written in, a bare
//! `crate::X` through `api.rs`'s re-exports (sim-runtime's `lib.rs` is
//! `pub use simulation::api::*`), and names that the root (`mod.rs`) or
//! `api.rs` binds with `use` through what they bind.

use super::paths::{Kind, Named};
use super::Layer;
use std::collections::BTreeMap;

/// The simulation's module files, and what its two layerless files bind.
pub(super) struct Tree {
    /// Module path → its file (from the simulation's root; `[]` is
    /// `mod.rs`).
    modules: BTreeMap<Vec<String>, String>,
    /// The names `mod.rs` and `api.rs` bind with `use` (module `[]` and
    /// `["api"]`), with the path each binds as written.
    root_uses: BTreeMap<String, Vec<String>>,
    api_uses: BTreeMap<String, Vec<String>>,
}

/// Where a path leads.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Target {
    /// `None`: the simulation's root module or one of its items (no layer).
    pub(super) layer: Option<Layer>,
    /// The file of the module it names (`None`: the crate's root, outside
    /// the simulation, or `api.rs`'s re-export of another crate).
    pub(super) file: Option<String>,
}

/// How deep re-exports are followed (a re-export of a re-export…).
const MAX_HOPS: usize = 8;

/// The module path of a file: `core/executor.rs` and `core/executor/mod.rs`
/// are `core::executor`; `mod.rs` is the root.
pub(super) fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let stem = if stem == "mod" {
        ""
    } else {
        stem.strip_suffix("/mod").unwrap_or(stem)
    };
    stem.split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl Tree {
    /// `files`: every Rust file's path from the simulation's root, and the
    /// paths each names.
    pub(super) fn new<'a>(files: impl Iterator<Item = (&'a str, &'a [Named])>) -> Tree {
        let mut tree = Tree {
            modules: BTreeMap::new(),
            root_uses: BTreeMap::new(),
            api_uses: BTreeMap::new(),
        };
        for (file, names) in files {
            let module = module_of(file);
            let uses = match module.as_slice() {
                [] => Some(&mut tree.root_uses),
                [api] if api == "api" => Some(&mut tree.api_uses),
                _ => None,
            };
            if let Some(uses) = uses {
                for n in names.iter().filter(|n| n.module == module) {
                    if let Kind::Use(Some(name)) = &n.kind {
                        uses.insert(name.clone(), n.segments.clone());
                    }
                }
            }
            tree.modules.insert(module, file.to_string());
        }
        tree.modules
            .entry(Vec::new())
            .or_insert_with(|| "mod.rs".into());
        tree
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.modules.contains_key(path)
    }

    /// Where `segments`, written in module `from`, leads; `None` when it is
    /// not a path of this crate's (another crate's, or a local name).
    pub(super) fn resolve(&self, from: &[String], segments: &[String]) -> Option<Target> {
        self.resolve_hops(from, segments, 0)
    }

    fn resolve_hops(&self, from: &[String], segments: &[String], hops: usize) -> Option<Target> {
        let (first, rest) = segments.split_first()?;
        match first.as_str() {
            "crate" => self.in_crate(rest, hops),
            "self" => Some(self.in_simulation(&[from, rest].concat(), hops)),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let rest = &segments[ups..];
                if ups > from.len() {
                    // Past the simulation's root: the crate's root.
                    return self.in_crate(rest, hops);
                }
                let base = &from[..from.len() - ups];
                Some(self.in_simulation(&[base, rest].concat(), hops))
            }
            // A child module, as the 2018 edition reads `use child::x` and
            // `child::f()`.
            _ if self.is_module(&[from, &segments[..1]].concat()) => {
                Some(self.in_simulation(&[from, segments].concat(), hops))
            }
            _ => None,
        }
    }

    /// Whether the root (`mod.rs`, `[]`) or `api.rs` (`["api"]`) brings
    /// `name` into scope for a glob of it: a module or a `use`.
    pub(super) fn binds(&self, module: &[String], name: &str) -> bool {
        match module {
            [] => self.is_module(&[name.to_string()]) || self.root_uses.contains_key(name),
            [api] if api == "api" => self.api_uses.contains_key(name),
            _ => false,
        }
    }

    /// `crate::…`: the simulation's modules, or `lib.rs`'s `pub use
    /// simulation::api::*`, i.e. `api.rs`'s re-exports.
    fn in_crate(&self, rest: &[String], hops: usize) -> Option<Target> {
        let (first, after) = rest.split_first()?;
        if first == "simulation" {
            return Some(self.in_simulation(after, hops));
        }
        if let Some(t) = self.through(&self.api_uses, &["api".into()], first, after, hops) {
            return Some(t);
        }
        // A name `api.rs` brings in some other way (another crate's, a
        // glob): the API as a whole.
        Some(Target {
            layer: Some(Layer::Api),
            file: None,
        })
    }

    /// A path from the simulation's root.
    pub(super) fn in_simulation(&self, path: &[String], hops: usize) -> Target {
        if let Some((first, rest)) = path.split_first() {
            if !self.is_module(std::slice::from_ref(first)) {
                if let Some(t) = self.through(&self.root_uses, &[], first, rest, hops) {
                    return t;
                }
            }
            if first == "api" {
                if let Some((name, rest)) = rest.split_first() {
                    let api = ["api".to_string()];
                    if let Some(t) = self.through(&self.api_uses, &api, name, rest, hops) {
                        return t;
                    }
                }
            }
        }
        let known = (0..=path.len())
            .rev()
            .find(|&k| self.is_module(&path[..k]))
            .unwrap_or(0);
        Target {
            layer: path.first().filter(|_| known > 0).map(|s| Layer::of(s)),
            file: self.modules.get(&path[..known]).cloned(),
        }
    }

    /// `name::rest` where `uses` (of module `module`) binds `name`.
    fn through(
        &self,
        uses: &BTreeMap<String, Vec<String>>,
        module: &[String],
        name: &str,
        rest: &[String],
        hops: usize,
    ) -> Option<Target> {
        let bound = uses.get(name).filter(|_| hops < MAX_HOPS)?;
        self.resolve_hops(module, &[bound.as_slice(), rest].concat(), hops + 1)
    }
}
