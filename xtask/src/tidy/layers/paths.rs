//! Every path one file names, read with Rust's own grammar (`syn`): the
//! leaves of its `use` trees and the paths in its code, each with the
//! module it is written in (the file's, plus any inline `mod x { .. }`) and
//! its line. What this leaves out, and why:
//!
//! - `#[cfg(test)]` items and `#[test]` functions: a test may drive its
//!   layer from above, and is no part of what the layer depends on;
//! - `macro_rules!` bodies: their `$crate::…` paths are resolved where the
//!   macro is expanded, not where it is written (other macro calls are
//!   read as tokens: a `format!(.., super::x::f())` names `super::x::f`);
//! - paths with a leading `::` and one-segment paths: another crate's, or a
//!   name in scope (its `use` is read where it is written).

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Attribute, Item, UseTree};

/// A path as written.
#[derive(Clone, Debug)]
pub(super) struct Named {
    /// The module it is written in, from the simulation's root
    /// (`core/executor.rs`'s `mod linux { .. }` is `core::executor::linux`).
    pub(super) module: Vec<String>,
    pub(super) segments: Vec<String>,
    /// 1-based.
    pub(super) line: usize,
    pub(super) kind: Kind,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Kind {
    /// A path in code (or in a macro call's tokens).
    Code,
    /// A `use` leaf, with the name it binds (`None` for `as _`).
    Use(Option<String>),
    /// A `use …::*`: the segments name the module whose items it brings in.
    Glob,
}

/// What one file names.
#[derive(Default)]
pub(super) struct Names {
    pub(super) paths: Vec<Named>,
    /// Modules declared `#[cfg(test)] mod x;` here: the files that hold
    /// them are tests too.
    pub(super) test_modules: Vec<Vec<String>>,
}

/// The paths in `text`, the file of module `module`.
pub(super) fn read(module: &[String], text: &str) -> syn::Result<Names> {
    let file = syn::parse_file(text)?;
    let mut v = Collector {
        module: module.to_vec(),
        names: Names::default(),
    };
    v.visit_file(&file);
    Ok(v.names)
}

struct Collector {
    module: Vec<String>,
    names: Names,
}

impl Collector {
    fn push(&mut self, segments: Vec<String>, line: usize, kind: Kind) {
        self.names.paths.push(Named {
            module: self.module.clone(),
            segments,
            line,
            kind,
        });
    }

    fn use_tree(&mut self, tree: &UseTree, prefix: &mut Vec<String>) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            UseTree::Name(n) => {
                let (path, name) = leaf(prefix, &n.ident);
                self.push(path, line(n.ident.span()), Kind::Use(name));
            }
            UseTree::Rename(r) => {
                let (path, _) = leaf(prefix, &r.ident);
                let name = (r.rename != "_").then(|| r.rename.to_string());
                self.push(path, line(r.ident.span()), Kind::Use(name));
            }
            UseTree::Glob(g) => {
                self.push(prefix.clone(), line(g.star_token.spans[0]), Kind::Glob);
            }
            UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(t, prefix);
                }
            }
        }
    }
}

/// A `use` leaf's whole path and the name it binds: `{self}` names the
/// prefix itself.
fn leaf(prefix: &[String], ident: &syn::Ident) -> (Vec<String>, Option<String>) {
    if ident == "self" {
        (prefix.to_vec(), prefix.last().cloned())
    } else {
        let mut path = prefix.to_vec();
        path.push(ident.to_string());
        (path, Some(ident.to_string()))
    }
}

fn line(span: proc_macro2::Span) -> usize {
    span.start().line
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast Item) {
        if is_test(item_attrs(item)) {
            if let Item::Mod(m) = item {
                let mut path = self.module.clone();
                path.push(m.ident.to_string());
                self.names.test_modules.push(path);
            }
            return;
        }
        match item {
            Item::Use(u) if u.leading_colon.is_none() => self.use_tree(&u.tree, &mut Vec::new()),
            Item::Use(_) => {}
            Item::Mod(m) if m.content.is_some() => {
                self.module.push(m.ident.to_string());
                visit::visit_item_mod(self, m);
                self.module.pop();
            }
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs[..],
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !is_test(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.push(segments, line(path.segments[0].ident.span()), Kind::Code);
        }
        // Generic arguments hold paths too (`Rc<crate::x::Y>`).
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        if !mac.path.is_ident("macro_rules") {
            let mut found = Vec::new();
            token_paths(mac.tokens.clone(), &mut found);
            for (line, segments) in found {
                self.push(segments, line, Kind::Code);
            }
        }
    }
}

/// Every `a::b…` run in a macro call's tokens (recursing into groups),
/// with its line: a first segment after `$`, `::` or `.` starts none.
fn token_paths(tokens: TokenStream, out: &mut Vec<(usize, Vec<String>)>) {
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    let punct =
        |i: usize, c: char| matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let colons = |i: usize| punct(i, ':') && punct(i + 1, ':');
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Group(g) => {
                token_paths(g.stream(), out);
                i += 1;
            }
            TokenTree::Ident(first) => {
                let starts = i == 0
                    || !(punct(i - 1, '$') || punct(i - 1, '.') || (i >= 2 && colons(i - 2)));
                let mut segments = vec![first.to_string()];
                let mut j = i + 1;
                while colons(j) {
                    let Some(TokenTree::Ident(next)) = toks.get(j + 2) else {
                        break;
                    };
                    segments.push(next.to_string());
                    j += 3;
                }
                if starts && segments.len() > 1 {
                    out.push((line(first.span()), segments));
                }
                i = j;
            }
            _ => i += 1,
        }
    }
}

/// `#[cfg(test)]`, `#[cfg(all(test, …))]` or `#[test]`.
fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        if a.path().is_ident("test") {
            return true;
        }
        let syn::Meta::List(list) = &a.meta else {
            return false;
        };
        if !list.path.is_ident("cfg") {
            return false;
        }
        let cfg: String = list.tokens.to_string().split_whitespace().collect();
        cfg == "test"
            || cfg
                .strip_prefix("all(")
                .is_some_and(|rest| rest.split([',', ')']).any(|t| t == "test"))
    })
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<(usize, String, Kind)> {
        let names = read(&["core".into(), "x".into()], text).unwrap();
        names
            .paths
            .into_iter()
            .map(|n| (n.line, n.segments.join("::"), n.kind))
            .collect()
    }

    #[test]
    fn use_trees_are_read_to_their_leaves() {
        let found = paths(
            "use super::{\n    node::{self, NodeId},\n    seed as s,\n    tape::*,\n};\nuse ::std::fs;\n",
        );
        let name = |n: &str| Kind::Use(Some(n.into()));
        assert_eq!(
            found,
            [
                (2, "super::node".into(), name("node")),
                (2, "super::node::NodeId".into(), name("NodeId")),
                (3, "super::seed".into(), name("s")),
                (4, "super::tape".into(), Kind::Glob),
            ]
        );
    }

    #[test]
    fn code_and_macro_paths_are_read_and_tests_and_macro_rules_are_not() {
        let src = "\
fn f() -> crate::a::B<super::c::D> {
    println!(\"{}\", super::super::net::count());
    self.x.y::<u8>();
}
macro_rules! m { () => { $crate::z::w() } }
mod inner { fn g() { super::h::i(); } }
#[cfg(test)]
mod tests { fn t() { crate::task::spawn(); } }
#[cfg(test)]
mod more;
";
        let names = read(&["core".into(), "x".into()], src).unwrap();
        let found: Vec<(usize, String, String)> = names
            .paths
            .iter()
            .map(|n| (n.line, n.segments.join("::"), n.module.join("::")))
            .collect();
        let at = |l: usize, p: &str, m: &str| (l, p.to_string(), m.to_string());
        assert_eq!(
            found,
            [
                at(1, "crate::a::B", "core::x"),
                at(1, "super::c::D", "core::x"),
                at(2, "super::super::net::count", "core::x"),
                at(6, "super::h::i", "core::x::inner"),
            ]
        );
        assert_eq!(
            names.test_modules,
            [vec!["core", "x", "tests"], vec!["core", "x", "more"]]
        );
    }
}
