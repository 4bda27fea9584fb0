//! `cargo xtask parity [--check]`: Tokio's whole public API, read from its
//! own rustdoc, written out as compile-time checks
//! (`sim-runtime/tests/parity/tokio_api.rs`).
//!
//! Under `cargo sim` every crate in a service's graph compiles against the
//! simulation, so every item a dependency can name must exist there with
//! Tokio's signature. This reads what Tokio has mechanically: `cargo doc`
//! of the registry's Tokio at the version in Cargo.lock, features `full`
//! and `test-util` (a scratch manifest under `target/parity/`), then its
//! HTML: `all.html` for every item, each module's page for its re-exports,
//! each type's page for its inherent methods, its trait implementations
//! (with their associated types), variants and public fields, each trait's
//! page for its methods and implementors. Stable Rust only.
//!
//! Each fact becomes one line of Rust (`emit.rs`) that compiles only if the
//! crate has it: a type alias naming the type, a function pointer of the
//! exact type of a plain function, a wrapper calling an async or generic
//! one with Tokio's parameter and result types, a call of a function
//! bounded by a trait, an exhaustive `match` over an enum. What cannot be
//! written as such a line (a path with no public name, a type rustdoc did
//! not link, a negative impl) is dropped by a named rule and counted. The
//! file compiled against real Tokio (a production build) proves the
//! reading; compiled with `--cfg simulation`, the simulated surface.

mod emit;
mod html;
mod resolve;
mod sig;

use crate::cmd::root;
use crate::Error;
use emit::{Checks, What};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What the simulation deliberately does not offer: a check's key, as the
/// generated file's comments print it, and the heading of the section of
/// docs/breakage.md that says why (checked: an exception nobody justified
/// there is an error). A signature excepted keeps its parameters' check
/// when it has one (only its result differs). Empty: every type is Tokio's.
const EXCEPTIONS: &[(&str, &str)] = &[];

/// Where each exception is justified, relative to the workspace root.
const BREAKAGE: &str = "docs/breakage.md";

/// The generated file, relative to the workspace root.
pub(crate) const OUT: &str = "sim-runtime/tests/parity/tokio_api.rs";

pub fn main(args: &[String]) -> crate::Result<()> {
    let check = match args {
        [] => false,
        [a] if a == "--check" => true,
        _ => return Err(Error::Usage("parity takes only --check".into())),
    };
    let root = root();
    let version = tokio_version(&root.join("Cargo.lock")).map_err(Error::Failed)?;
    let work = root.join("target/parity");
    let doc = build_docs(&root, &work, &version).map_err(Error::Failed)?;
    let mut checks = Checks::default();
    collect(&doc, &mut checks).map_err(Error::Failed)?;
    let bytes = html::all_items(&read(&doc.join("../bytes/all.html")).map_err(Error::Failed)?)
        .into_iter()
        .map(|(_, path, _)| format!("bytes::{path}"))
        .collect();
    resolve::resolve(&mut checks, &work, &bytes).map_err(Error::Failed)?;
    let breakage = read(&root.join(BREAKAGE)).map_err(Error::Failed)?;
    let excepted = apply_exceptions(&mut checks, EXCEPTIONS, &breakage).map_err(Error::Failed)?;
    let text = render(&version, &checks, &excepted);
    eprint!("{}", summary(&checks, &excepted));
    let out = root.join(OUT);
    if check {
        let old = std::fs::read_to_string(&out).map_err(crate::cmd::io_context(&out))?;
        if old != text {
            return Err(Error::Failed(format!(
                "{OUT} is stale: Tokio's API as read now differs from it; run `cargo xtask parity`"
            )));
        }
        eprintln!("{OUT} is up to date");
    } else {
        std::fs::write(&out, text).map_err(crate::cmd::io_context(&out))?;
        eprintln!("wrote {OUT}");
    }
    Ok(())
}

/// The registry's Tokio version in the lock file.
fn tokio_version(lock: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(lock).map_err(|e| format!("{}: {e}", lock.display()))?;
    for block in text.split("[[package]]") {
        if block.contains("\nname = \"tokio\"\n") && block.contains("source = \"registry+") {
            if let Some(v) = block.lines().find_map(|l| l.strip_prefix("version = \"")) {
                return Ok(v.trim_end_matches('"').to_string());
            }
        }
    }
    Err("Cargo.lock has no registry `tokio`".into())
}

/// `cargo doc` of exactly that Tokio, features full and test-util, with the
/// workspace's lock (the same dependency versions); returns its doc folder.
fn build_docs(root: &Path, work: &Path, version: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(work.join("src")).map_err(|e| format!("{}: {e}", work.display()))?;
    let manifest = format!(
        "# Written by `cargo xtask parity`: only to document Tokio.\n\
         [package]\nname = \"parity-doc\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [lib]\npath = \"src/lib.rs\"\n\n\
         [dependencies]\ntokio = {{ version = \"={version}\", features = [\"full\", \"test-util\"] }}\n\n\
         [workspace]\n"
    );
    let write =
        |p: PathBuf, t: &str| std::fs::write(&p, t).map_err(|e| format!("{}: {e}", p.display()));
    write(work.join("Cargo.toml"), &manifest)?;
    write(work.join("src/lib.rs"), "")?;
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).map_err(|e| e.to_string())?;
    write(work.join("Cargo.lock"), &lock)?;
    // From scratch (about 10 s): Tokio's pages link `bytes` only if its docs
    // were there when Tokio's were written, which a cached build can miss.
    let target = work.join("target");
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    let status = crate::cmd::cargo(crate::cmd::Mode::Production, &[])
        // `bytes` too: Tokio's `*_buf` methods take its `BufMut`, and a
        // crate documented beside Tokio is linked, so nameable.
        .args([
            "doc",
            "--quiet",
            "--no-deps",
            "-p",
            "tokio",
            "-p",
            "bytes",
            "--manifest-path",
        ])
        .arg(work.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", work.join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTDOCFLAGS")
        .status()
        .map_err(|e| format!("cannot run cargo doc: {e}"))?;
    if !status.success() {
        return Err(format!("cargo doc of tokio {version} failed ({status})"));
    }
    Ok(work.join("target/doc/tokio"))
}

fn read(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// Every check of the crate documented in `doc`.
fn collect(doc: &Path, checks: &mut Checks) -> Result<(), String> {
    let mut modules = Vec::new();
    find_modules(doc, "", &mut modules)?;
    for m in &modules {
        let prefix = if m.is_empty() {
            String::new()
        } else {
            format!("{m}::")
        };
        if !m.is_empty() {
            checks.path(format!("mod {m}"), &format!("sim_runtime::{m}"));
        }
        let index = read(&doc.join(m.replace("::", "/")).join("index.html"))?;
        for (name, _) in html::reexports(&index) {
            let path = format!("{prefix}{name}");
            checks.path(format!("use {path}"), &format!("sim_runtime::{path}"));
        }
    }
    let items = html::all_items(&read(&doc.join("all.html"))?);
    if items.len() < 100 {
        return Err(format!(
            "only {} items in all.html: has rustdoc's format changed?",
            items.len()
        ));
    }
    let mut seen_impls = BTreeSet::new();
    for (kind, path, href) in items {
        let full = format!("sim_runtime::{path}");
        let page = read(&doc.join(&href))?;
        let decl = html::item_decl(&page)
            .map(html::code_text)
            .unwrap_or_default();
        let generics = decl_generics(&decl, &path);
        match kind.as_str() {
            "macros" | "attributes" | "derives" | "constants" | "statics" => {
                checks.path(path.clone(), &full)
            }
            "functions" => {
                checks.path(path.clone(), &full);
                match sig::parse_fn(&decl) {
                    Ok(f) => checks.signature(format!("{path}()"), &full, "Self", &[], None, &f),
                    Err(e) => checks.drop(format!("{path}()"), format!("unread signature: {e}")),
                }
            }
            "types" => {
                let target = decl
                    .split_once(" = ")
                    .map(|(_, t)| t.trim_end_matches(';').trim());
                match target {
                    Some(t) => checks.alias(path.clone(), &full, &generics, t),
                    None => checks.drop(path.clone(), "an alias without a target"),
                }
            }
            "structs" | "enums" | "unions" => {
                checks.type_item(path.clone(), &full, &generics);
                type_page(
                    checks,
                    &page,
                    &path,
                    &full,
                    &generics,
                    &decl,
                    &mut seen_impls,
                );
            }
            "traits" => {
                checks.trait_item(path.clone(), &full, &generics);
                trait_page(checks, &page, &path, &full, &generics, &mut seen_impls);
            }
            other => checks.drop(path.clone(), format!("an item of kind `{other}`")),
        }
    }
    Ok(())
}

/// The crate's modules (`""` is the root), from the folders with an index.
fn find_modules(dir: &Path, path: &str, out: &mut Vec<String>) -> Result<(), String> {
    out.push(path.to_string());
    let mut subs: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .filter(|e| e.path().join("index.html").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    subs.sort();
    for s in subs {
        let p = if path.is_empty() {
            s.clone()
        } else {
            format!("{path}::{s}")
        };
        find_modules(&dir.join(&s), &p, out)?;
    }
    Ok(())
}

/// The generics of a declaration (`pub struct JoinHandle<T> {..}`).
fn decl_generics(decl: &str, path: &str) -> Vec<sig::Param> {
    let name = path.rsplit("::").next().unwrap_or(path);
    let Some(at) = decl.find(&format!(" {name}<")) else {
        return Vec::new();
    };
    let open = at + name.len() + 1;
    match sig::matching(decl, open) {
        Some(close) => sig::parse_generics(&decl[open + 1..close]),
        None => Vec::new(),
    }
}

/// An impl header and the code headers of its items (anchor, text).
type Block = (String, Vec<(String, String)>);

/// The impl blocks of a section.
fn blocks(chunk: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    for h in html::headers(chunk) {
        if h.level == 3 {
            out.push((html::code_text(h.html), Vec::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push((h.anchor.to_string(), html::code_text(h.html)));
        }
    }
    out
}

fn type_page(
    checks: &mut Checks,
    page: &str,
    path: &str,
    full: &str,
    generics: &[sig::Param],
    decl: &str,
    seen: &mut BTreeSet<String>,
) {
    for (id, chunk) in html::sections(page) {
        match id.as_str() {
            "variants" => {
                let names: Vec<String> = html::headers(chunk)
                    .iter()
                    .filter_map(|h| h.anchor.strip_prefix("variant.").map(str::to_string))
                    .collect();
                let non_exhaustive = decl.contains("#[non_exhaustive]");
                checks.variants(
                    format!("{path} variants"),
                    full,
                    generics,
                    &names,
                    non_exhaustive,
                );
            }
            "fields" => {
                for (name, ty) in html::fields(chunk) {
                    checks.field(format!("{path}.{name}"), full, generics, &name, &ty);
                }
            }
            "implementations" => {
                for (header, items) in blocks(chunk) {
                    inherent(checks, path, &header, &items);
                }
            }
            "trait-implementations" | "synthetic-implementations" => {
                for (header, items) in blocks(chunk) {
                    implementation(checks, &header, &items, seen, (path, generics));
                }
            }
            // True of every type (`impl<T> From<T> for T`), or the methods
            // of a `Deref` target, checked on the target's own page.
            _ => {}
        }
    }
}

fn inherent(checks: &mut Checks, path: &str, header: &str, items: &[(String, String)]) {
    let imp = match sig::parse_impl(header) {
        Ok(i) => i,
        Err(e) => {
            return checks.drop(
                format!("{path} {header}"),
                format!("unread impl header: {e}"),
            )
        }
    };
    for (anchor, text) in items {
        if let Some(name) = anchor.strip_prefix("associatedconstant.") {
            let key = format!("{path}::{name}");
            match text.split_once(": ") {
                // The type, without the value rustdoc may print after it.
                Some((_, ty)) => match sig::split_top(ty, b'=').first() {
                    Some(ty) => checks.constant(key, &imp, name, ty),
                    None => checks.drop(key, "unread associated constant"),
                },
                None => checks.drop(key, "unread associated constant"),
            }
            continue;
        }
        let Some(name) = anchor.strip_prefix("method.") else {
            continue;
        };
        let key = format!("{path}::{name}");
        match sig::parse_fn(text) {
            Ok(f) => {
                let callee = format!("<{}>::{}", imp.self_ty, f.name);
                checks.signature(
                    key,
                    &callee,
                    &imp.self_ty,
                    &imp.generics,
                    imp.where_.as_deref(),
                    &f,
                );
            }
            Err(e) => checks.drop(key, format!("unread signature: {e}")),
        }
    }
}

/// `(path, decl)`: the type whose page this is, and its generics with
/// their bounds.
fn implementation(
    checks: &mut Checks,
    header: &str,
    items: &[(String, String)],
    seen: &mut BTreeSet<String>,
    (path, decl): (&str, &[sig::Param]),
) {
    if !seen.insert(header.to_string()) {
        return;
    }
    let key = short(header);
    let imp = match sig::parse_impl(header) {
        Ok(i) => i,
        Err(e) => return checks.drop(key, format!("unread impl header: {e}")),
    };
    if imp.negative {
        return checks.drop(key, "a negative impl: stable Rust cannot check one");
    }
    if imp
        .trait_
        .as_deref()
        .is_some_and(|t| t.ends_with("::Drop\u{2}"))
    {
        return checks.drop(
            key,
            "a Drop impl: no code can rely on one (drop glue runs either way)",
        );
    }
    let mut assoc = Vec::new();
    for (anchor, text) in items {
        if anchor.starts_with("associatedtype.") {
            if let Some((name, ty)) = text.trim_start_matches("type ").split_once(" = ") {
                if !name.contains('<') {
                    assoc.push((name.trim().to_string(), ty.trim().to_string()));
                }
            }
        }
    }
    // Only an impl of this very type can borrow its declaration's bounds.
    let this_type = format!("tokio::{path}{}<", html::LINK_CLOSE);
    let extra = if imp.self_ty.contains(&this_type) && imp.self_ty.starts_with(html::LINK_OPEN) {
        emit::declared_bounds(decl, &imp.self_ty)
    } else {
        Vec::new()
    };
    checks.implementation(key, &imp, &assoc, &extra);
}

fn trait_page(
    checks: &mut Checks,
    page: &str,
    path: &str,
    full: &str,
    generics: &[sig::Param],
    seen: &mut BTreeSet<String>,
) {
    let mut outer = vec![sig::Param {
        decl: format!("X: {full}{}", sig::args(generics)),
        name: "X".into(),
        lifetime: false,
    }];
    outer.extend(generics.iter().cloned());
    for (id, chunk) in html::sections(page) {
        match id.as_str() {
            "required-methods" | "provided-methods" => {
                for h in html::headers(chunk) {
                    let name = h
                        .anchor
                        .trim_start_matches("ty")
                        .trim_start_matches("method.");
                    let key = format!("{path}::{name}");
                    match sig::parse_fn(&html::code_text(h.html)) {
                        Ok(f) => {
                            let callee =
                                format!("<X as {full}{}>::{}", sig::args(generics), f.name);
                            checks.signature(key, &callee, "X", &outer, None, &f);
                        }
                        Err(e) => checks.drop(key, format!("unread signature: {e}")),
                    }
                }
            }
            "foreign-impls" | "implementors" => {
                for (header, items) in blocks(chunk) {
                    implementation(checks, &header, &items, seen, ("", &[]));
                }
            }
            _ => {}
        }
    }
}

/// Placeholders as their last segment: how a key reads.
fn short(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(html::LINK_OPEN) {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find(html::LINK_CLOSE)
            .map_or(rest.len(), |e| i + e);
        let inner = &rest[i + 1..end];
        out.push_str(inner.rsplit("::").next().unwrap_or(inner));
        rest = rest.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// Takes the excepted checks out, or weakens a signature's to its
/// parameters; an exception that matches nothing is an error (it would
/// hide a future gap), and so is one that `breakage` (docs/breakage.md)
/// has no section for. Returns each key with its justification.
fn apply_exceptions(
    checks: &mut Checks,
    exceptions: &[(&str, &str)],
    breakage: &str,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (key, section) in exceptions {
        let justified = breakage
            .lines()
            .any(|l| l.strip_prefix("## ").is_some_and(|h| h.trim() == *section));
        if !justified {
            return Err(format!(
                "exception `{key}` cites the section \"{section}\" of {BREAKAGE}, which has none: \
                 say there why the simulation differs, or remove the exception from xtask/src/parity.rs"
            ));
        }
        let Some(at) = checks.list.iter().position(|c| c.key == *key) else {
            return Err(format!(
                "exception `{key}` matches no check: remove it from xtask/src/parity.rs"
            ));
        };
        match checks.list[at].fallback.take() {
            Some(weaker) => {
                checks.list[at].code = weaker;
                checks.list[at].what = What::Parameters;
            }
            None => drop(checks.list.remove(at)),
        }
        out.push((key.to_string(), format!("{BREAKAGE}, \"{section}\"")));
    }
    Ok(out)
}

fn counts(checks: &Checks) -> BTreeMap<What, usize> {
    let mut n = BTreeMap::new();
    for c in &checks.list {
        *n.entry(c.what).or_insert(0) += 1;
    }
    n
}

fn dropped_by_reason(checks: &Checks) -> BTreeMap<String, Vec<&str>> {
    let mut by = BTreeMap::new();
    for (why, key) in &checks.dropped {
        // One rule per line: what a reason names in backticks is a detail.
        let rule: String = why
            .split('`')
            .enumerate()
            .map(|(i, part)| if i % 2 == 1 { "`…`" } else { part })
            .collect();
        by.entry(rule).or_insert_with(Vec::new).push(key.as_str());
    }
    by
}

fn summary(checks: &Checks, excepted: &[(String, String)]) -> String {
    let mut s = String::new();
    for (what, n) in counts(checks) {
        let _ = writeln!(s, "{n:>6}  {}", what.name());
    }
    let _ = writeln!(s, "{:>6}  dropped by rule:", checks.dropped.len());
    for (rule, keys) in dropped_by_reason(checks) {
        let _ = writeln!(s, "{:>10}  {rule}", keys.len());
    }
    let _ = writeln!(s, "{:>6}  exceptions", excepted.len());
    s
}

fn fn_name(key: &str, used: &mut BTreeSet<String>) -> String {
    let mut name = String::new();
    for c in key.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('_') {
            name.push('_');
        }
    }
    let name = name.trim_matches('_').to_string();
    let mut unique = name.clone();
    let mut n = 2;
    while !used.insert(unique.clone()) {
        unique = format!("{name}_{n}");
        n += 1;
    }
    unique
}

fn render(version: &str, checks: &Checks, excepted: &[(String, String)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "//! GENERATED by `cargo xtask parity` (xtask/src/parity.rs); do not edit.\n\
         //! Regenerate with `cargo xtask parity`; `cargo xtask parity --check` fails\n\
         //! when this file is stale.\n\
         //!\n\
         //! Tokio {version}'s whole public API (features `full` and `test-util`, this\n\
         //! platform), read from its rustdoc: one line per fact, which compiles only\n\
         //! if `sim_runtime` has it. Built normally (this crate is `pub use tokio::*`)\n\
         //! it proves the generator read Tokio right; built with `--cfg simulation` it\n\
         //! proves the simulation offers the same surface, so no crate in a\n\
         //! service's graph fails to build under `cargo sim`.\n//!"
    );
    for (what, n) in counts(checks) {
        let _ = writeln!(s, "//! {n:>5} {}", what.name());
    }
    let _ = writeln!(
        s,
        "//!\n//! Dropped by rule ({}; listed at the end):",
        checks.dropped.len()
    );
    for (rule, keys) in dropped_by_reason(checks) {
        let _ = writeln!(s, "//! {:>5} {rule}", keys.len());
    }
    let _ = writeln!(
        s,
        "//!\n//! Exceptions (what the simulation deliberately does not offer, each\n\
         //! justified in {BREAKAGE}): {}",
        excepted.len()
    );
    if excepted.is_empty() {
        let _ = writeln!(
            s,
            "//! none: every type above, parameters and results, is Tokio's own."
        );
    }
    for (key, why) in excepted {
        let _ = writeln!(s, "//! - `{key}`: {why}");
    }
    s.push_str(
        "\n/// The checks are the items below: compiling this file is the test.\n\
         #[test]\nfn tokio_api_compiles() {}\n\n\
         // Nothing below is called: an `unsafe` call only checks a signature, so it\n\
         // needs no SAFETY comment.\n\
         #[rustfmt::skip]\n\
         #[allow(deprecated, dead_code, non_snake_case, non_camel_case_types, unused_imports, unused_unsafe, clippy::all, clippy::pedantic, clippy::undocumented_unsafe_blocks)]\n\
         mod api {\n",
    );
    let mut used = BTreeSet::new();
    for c in &checks.list {
        let name = fn_name(&c.key, &mut used);
        let _ = writeln!(s, "// {}\n{}", c.key, c.code.replace("{NAME}", &name));
    }
    s.push_str("}\n\n// Dropped by rule, each with its rule:\n");
    for (why, key) in &checks.dropped {
        let _ = writeln!(s, "// - {key}: {why}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const BREAKAGE_DOC: &str = "# Breakage\n\n## Child processes\n\ntext\n";

    fn one_check() -> Checks {
        let mut checks = Checks::default();
        checks.path("fs::metadata".into(), "sim_runtime::fs::metadata");
        checks
    }

    #[test]
    fn an_exception_is_taken_out_only_with_its_section_in_breakage_md() {
        let mut checks = one_check();
        let out = apply_exceptions(
            &mut checks,
            &[("fs::metadata", "Child processes")],
            BREAKAGE_DOC,
        )
        .unwrap();
        assert!(checks.list.is_empty());
        assert_eq!(out[0].1, "docs/breakage.md, \"Child processes\"");

        let mut checks = one_check();
        let e = apply_exceptions(&mut checks, &[("fs::metadata", "Metadata")], BREAKAGE_DOC)
            .unwrap_err();
        assert!(e.contains("which has none"), "{e}");
        assert_eq!(checks.list.len(), 1, "nothing excepted");
    }

    #[test]
    fn an_exception_matching_no_check_is_an_error() {
        let mut checks = one_check();
        let e = apply_exceptions(
            &mut checks,
            &[("fs::nothing", "Child processes")],
            BREAKAGE_DOC,
        )
        .unwrap_err();
        assert!(e.contains("matches no check"), "{e}");
    }
}
