//! The checks: one line of Rust per fact of Tokio's API, which compiles
//! only if the crate under test has it. Paths are still placeholders here
//! (`resolve.rs` makes them nameable); each check lists the generic names
//! it declares, so a name that is neither declared nor a path (a type from
//! a crate whose docs were not built) can be told apart.

use super::sig::{self, FnSig, Param};

/// What a check is about, for the counts.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum What {
    /// A public path: a type, trait, function, macro, module or re-export.
    Item,
    /// A type alias and what it stands for.
    Alias,
    /// A function's or method's signature.
    Signature,
    /// A signature whose result type has no public path (a future type
    /// private to Tokio): its parameters only.
    Parameters,
    /// A trait implemented by a type.
    Impl,
    /// An enum's variants, matched exhaustively.
    Variants,
    /// A public field and its type.
    Field,
    /// An associated constant and its type.
    Constant,
}

impl What {
    pub fn name(self) -> &'static str {
        match self {
            What::Item => "items (types, traits, functions, macros, modules, re-exports)",
            What::Alias => "type aliases with their targets",
            What::Signature => "function and method signatures",
            What::Parameters => "signatures checked without their result (a result type with no public path, or an exception)",
            What::Impl => "trait implementations",
            What::Variants => "enums matched exhaustively",
            What::Field => "public fields",
            What::Constant => "associated constants",
        }
    }
}

/// One check.
pub struct Check {
    /// What it checks, in Tokio's words (`net::TcpStream::peek`).
    pub key: String,
    pub what: What,
    /// One line of Rust; `{NAME}` is the function's name, placeholders are
    /// links (`html::LINK_OPEN`).
    pub code: String,
    /// The generic names the code declares.
    pub names: Vec<String>,
    /// A weaker check, for when `code` names what the test cannot.
    pub fallback: Option<String>,
}

/// The checks, and what could not be made into one, with why.
#[derive(Default)]
pub struct Checks {
    pub list: Vec<Check>,
    pub dropped: Vec<(String, String)>,
}

impl Checks {
    fn push(&mut self, key: String, what: What, code: String, names: Vec<String>) {
        self.list.push(Check {
            key,
            what,
            code,
            names,
            fallback: None,
        });
    }

    pub fn drop(&mut self, key: String, why: impl Into<String>) {
        self.dropped.push((why.into(), key));
    }

    /// A path that must exist (`use path as _;`).
    pub fn path(&mut self, key: String, path: &str) {
        let code = format!("#[allow(unused_imports)] use {path} as _;");
        self.push(key, What::Item, code, Vec::new());
    }

    /// A type with its generic parameters.
    pub fn type_item(&mut self, key: String, path: &str, generics: &[Param]) {
        let code = format!(
            "type {{NAME}}{} = {path}{};",
            names_decl(generics),
            sig::args(generics)
        );
        self.push(key, What::Item, code, names(generics));
    }

    /// A trait with its generic parameters.
    pub fn trait_item(&mut self, key: String, path: &str, generics: &[Param]) {
        let mut params = vec![Param {
            decl: format!("X: ?std::marker::Sized + {path}{}", sig::args(generics)),
            name: "X".into(),
            lifetime: false,
        }];
        params.extend(generics.iter().cloned());
        let code = format!("fn {{NAME}}{}() {{}}", sig::decls(&params));
        self.push(key, What::Item, code, names(&params));
    }

    /// An alias: a value of the alias is a value of its target.
    pub fn alias(&mut self, key: String, path: &str, generics: &[Param], target: &str) {
        let code = format!(
            "fn {{NAME}}{}(x: {path}{}) -> {target} {{ x }}",
            sig::decls(generics),
            sig::args(generics)
        );
        self.push(key, What::Alias, code, names(generics));
    }

    /// An enum's variants, matched exhaustively (with `_` if Tokio's is
    /// `#[non_exhaustive]`): a variant missing or added is an error.
    pub fn variants(
        &mut self,
        key: String,
        path: &str,
        generics: &[Param],
        variants: &[String],
        non_exhaustive: bool,
    ) {
        let mut arms: Vec<String> = variants
            .iter()
            .map(|v| format!("{path}::{v} {{ .. }} => {{}}"))
            .collect();
        if non_exhaustive {
            arms.push("_ => {}".into());
        }
        let code = format!(
            "fn {{NAME}}{}(x: {path}{}) {{ match x {{ {} }} }}",
            sig::decls(generics),
            sig::args(generics),
            arms.join(", ")
        );
        self.push(key, What::Variants, code, names(generics));
    }

    /// A public field and its type.
    pub fn field(&mut self, key: String, path: &str, generics: &[Param], field: &str, ty: &str) {
        let code = format!(
            "fn {{NAME}}{}(x: &{path}{}) -> &{ty} {{ &x.{field} }}",
            sig::decls(generics),
            sig::args(generics)
        );
        self.push(key, What::Field, code, names(generics));
    }

    /// An associated constant and its type.
    pub fn constant(&mut self, key: String, imp: &sig::ImplHeader, name: &str, ty: &str) {
        let ty = sig::replace_ident(ty, "Self", &imp.self_ty);
        let code = format!(
            "fn {{NAME}}{}(){} {{ let _: {ty} = <{}>::{name}; }}",
            sig::decls(&imp.generics),
            where_clause(&[imp.where_.as_deref()]),
            imp.self_ty
        );
        self.push(key, What::Constant, code, names(&imp.generics));
    }

    /// A function's signature: `callee` is what to call (`path::f`,
    /// `<Type>::m`, `<X as Trait>::m`), `self_ty` what `Self` means, `outer`
    /// and `outer_where` the generics of the impl or trait around it.
    pub fn signature(
        &mut self,
        key: String,
        callee: &str,
        self_ty: &str,
        outer: &[Param],
        outer_where: Option<&str>,
        f: &FnSig,
    ) {
        match signature_code(callee, self_ty, outer, outer_where, f) {
            Ok(code) => {
                let mut all = names(outer);
                all.extend(names(&f.generics));
                self.push(key, What::Signature, code, all);
                if f.ret.is_some() {
                    let fallback = parameters_code(callee, self_ty, outer, outer_where, f).ok();
                    self.list.last_mut().expect("just pushed").fallback = fallback;
                }
            }
            Err(why) => self.drop(key, why),
        }
    }

    /// `self_ty: trait_` holds: checked by calling a function bounded by
    /// the trait (a `where` clause alone would be assumed, not proved).
    /// `assoc` are the impl's associated types (`Output = T`); `extra` are
    /// bounds the header leaves out (an auto-trait impl rustdoc made up does
    /// not repeat the type's own `T: AsRawFd`).
    pub fn implementation(
        &mut self,
        key: String,
        header: &sig::ImplHeader,
        assoc: &[(String, String)],
        extra: &[String],
    ) {
        let Some(tr) = &header.trait_ else { return };
        let mut bound = tr.clone();
        if !assoc.is_empty() {
            let list: Vec<String> = assoc.iter().map(|(n, t)| format!("{n} = {t}")).collect();
            bound = if bound.ends_with('>') {
                format!("{}, {}>", &bound[..bound.len() - 1], list.join(", "))
            } else {
                format!("{bound}<{}>", list.join(", "))
            };
        }
        let self_ty = &header.self_ty;
        let bound = sig::replace_ident(&bound, "Self", self_ty);
        // Unsized only where the type is: most traits need `Sized`.
        let unsized_param = header.generics.iter().any(|p| p.decl.contains('?'))
            || header.where_.as_deref().is_some_and(|w| w.contains('?'));
        let unsized_ty =
            self_ty == "str" || self_ty.starts_with('[') || self_ty.starts_with("dyn ");
        let maybe = if unsized_param || unsized_ty {
            "?std::marker::Sized + "
        } else {
            ""
        };
        // The inner function cannot see the outer one's generics: it gets
        // copies of them, its lifetimes inferred at the call.
        let mut inner: Vec<Param> = header.generics.clone();
        inner.push(Param {
            decl: format!("X: {maybe}{bound}"),
            name: "X".into(),
            lifetime: false,
        });
        let mut call_args = vec![self_ty.clone()];
        call_args.extend(
            header
                .generics
                .iter()
                .filter(|p| !p.lifetime)
                .map(|p| p.name.clone()),
        );
        let mut wheres: Vec<Option<&str>> = vec![header.where_.as_deref()];
        wheres.extend(extra.iter().map(|e| Some(e.as_str())));
        let w = where_clause(&wheres);
        // `X` first among the types: the call names it first.
        let mut ordered: Vec<Param> = inner.iter().filter(|p| p.lifetime).cloned().collect();
        ordered.push(inner.last().expect("pushed").clone());
        ordered.extend(header.generics.iter().filter(|p| !p.lifetime).cloned());
        let code = format!(
            "fn {{NAME}}{}(_: std::marker::PhantomData<{self_ty}>){w} {{ fn is{}(_: std::marker::PhantomData<{self_ty}>){w} {{}} is::<{}>(std::marker::PhantomData); }}",
            sig::decls(&header.generics),
            plain_decls(&ordered),
            call_args.join(", ")
        );
        let mut all = names(&header.generics);
        all.push("X".into());
        self.push(key, What::Impl, code, all);
    }
}

/// `<decl, ..>` in the order given (lifetimes must already come first).
fn plain_decls(params: &[Param]) -> String {
    let list: Vec<&str> = params.iter().map(|p| p.decl.as_str()).collect();
    format!("<{}>", list.join(", "))
}

/// The bounds a type's declaration puts on its parameters, said of the
/// arguments of `self_ty` (`AsyncFd<Inner>` and `AsyncFd<T: AsRawFd>` give
/// `Inner: AsRawFd`).
pub fn declared_bounds(decl: &[Param], self_ty: &str) -> Vec<String> {
    let Some(open) = self_ty.find('<') else {
        return Vec::new();
    };
    let Some(close) = sig::matching(self_ty, open) else {
        return Vec::new();
    };
    let args = sig::split_top(&self_ty[open + 1..close], b',');
    let mut out = Vec::new();
    for (p, arg) in decl.iter().zip(&args) {
        if p.lifetime {
            continue;
        }
        if let Some((_, bounds)) = p.decl.split_once(':') {
            // `?Sized` relaxes; only requirements carry over.
            let required: Vec<String> = sig::split_top(bounds, b'+')
                .into_iter()
                .filter(|t| !t.starts_with('?'))
                .collect();
            if required.is_empty() {
                continue;
            }
            let mut b = required.join(" + ");
            for (q, a) in decl.iter().zip(&args) {
                b = sig::replace_ident(&b, &q.name, a);
            }
            out.push(format!("{arg}: {b}"));
        }
    }
    out
}

fn names(params: &[Param]) -> Vec<String> {
    params.iter().map(|p| p.name.clone()).collect()
}

/// `<'a, T>` without bounds (a type alias ignores them, and warns).
fn names_decl(params: &[Param]) -> String {
    let bare: Vec<Param> = params
        .iter()
        .map(|p| Param {
            decl: p.name.clone(),
            ..p.clone()
        })
        .collect();
    sig::decls(&bare)
}

fn where_clause(parts: &[Option<&str>]) -> String {
    let list: Vec<&str> = parts.iter().flatten().copied().collect();
    if list.is_empty() {
        String::new()
    } else {
        format!(" where {}", list.join(", "))
    }
}

fn is_receiver(p: &str) -> bool {
    let pat = p.split(':').next().unwrap_or(p).trim();
    pat.ends_with("self") && !pat.ends_with("_self")
}

/// Whether a type has an elided lifetime (`&T`, `Foo<'_>`).
fn has_elided(t: &str) -> bool {
    t.contains("'_")
        || t.match_indices('&')
            .any(|(i, _)| !t[i + 1..].trim_start().starts_with('\''))
}

/// Names the elided lifetimes of `t` `'elided_self` (only the first `&`
/// when `first_only`).
fn name_elided(t: &str, first_only: bool) -> String {
    let mut out = String::new();
    let mut done = false;
    let mut rest = t;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let named = rest.trim_start().starts_with('\'');
        let wanted = !first_only || !done;
        if wanted && !named {
            out.push_str("'elided_self ");
            done = true;
        }
    }
    out.push_str(rest);
    if first_only {
        out
    } else {
        out.replace("'_", "'elided_self")
    }
}

/// The parameters of a signature only: a wrapper with Tokio's parameter
/// types that calls the function and ignores what it returns (a future is
/// made, not awaited).
fn parameters_code(
    callee: &str,
    self_ty: &str,
    outer: &[Param],
    outer_where: Option<&str>,
    f: &FnSig,
) -> Result<String, String> {
    let mut params = Vec::new();
    for p in &f.params {
        params.push(sig::param_type(p, self_ty)?);
    }
    let own_where = f
        .where_
        .as_deref()
        .map(|w| sig::replace_ident(w, "Self", self_ty));
    let mut all = outer.to_vec();
    all.extend(f.generics.iter().cloned());
    let args: Vec<String> = (0..params.len()).map(|i| format!("a{i}")).collect();
    let typed: Vec<String> = args
        .iter()
        .zip(&params)
        .map(|(a, t)| format!("{a}: {t}"))
        .collect();
    let mut call = format!("{callee}({})", args.join(", "));
    if f.is_unsafe {
        call = format!("unsafe {{ {call} }}");
    }
    Ok(format!(
        "fn {{NAME}}{}({}){} {{ let _ = {call}; }}",
        sig::decls(&all),
        typed.join(", "),
        where_clause(&[outer_where, own_where.as_deref()])
    ))
}

/// The check of one signature. A plain function becomes a function pointer
/// of exactly its type (`let _: fn(&T) -> R = T::m;`); an async or generic
/// one, or one with `impl Trait`, a wrapper with the same parameters and
/// result that calls it.
fn signature_code(
    callee: &str,
    self_ty: &str,
    outer: &[Param],
    outer_where: Option<&str>,
    f: &FnSig,
) -> Result<String, String> {
    let mut params = Vec::new();
    for p in &f.params {
        params.push(sig::param_type(p, self_ty)?);
    }
    if params.iter().any(|p| p.contains("...")) {
        return Err("a variadic function".into());
    }
    let fix = |s: &str| sig::replace_ident(s, "Self", self_ty);
    let ret = f.ret.as_deref().map(fix);
    let own_where = f.where_.as_deref().map(fix);
    let arrow = ret.as_ref().map(|r| format!(" -> {r}")).unwrap_or_default();
    let own_lifetimes: Vec<&Param> = f.generics.iter().filter(|p| p.lifetime).collect();
    let has_impl = params
        .iter()
        .chain(ret.iter())
        .any(|t| sig::mentions(t, "impl"));
    let pointer = !f.is_async
        && !has_impl
        && own_where.is_none()
        && f.generics
            .iter()
            .all(|p| p.lifetime && !p.decl.contains(':'))
        && own_lifetimes
            .iter()
            .all(|l| params.iter().any(|t| sig::mentions(t, &l.name)));
    let unsafe_ = if f.is_unsafe { "unsafe " } else { "" };
    if pointer {
        let mut binder: Vec<String> = own_lifetimes.iter().map(|p| p.name.clone()).collect();
        let mut params = params;
        let mut arrow = arrow;
        // In a function pointer type the `&self` elision rule does not
        // apply: the receiver's lifetime is named, and so are the elided
        // ones of the result.
        let receiver = f.params.first().is_some_and(|p| is_receiver(p));
        if receiver && ret.as_deref().is_some_and(has_elided) && params[0].contains('&') {
            params[0] = name_elided(&params[0], true);
            arrow = format!(
                " -> {}",
                name_elided(ret.as_deref().unwrap_or_default(), false)
            );
            binder.push("'elided_self".into());
        }
        let binder = if binder.is_empty() {
            String::new()
        } else {
            format!("for<{}> ", binder.join(", "))
        };
        // The pointer's types' implied bounds (`T: 'a` of `Ref<'a, T>`)
        // come from a parameter of the same type.
        let implied = if self_ty == "Self" || self_ty == "X" {
            String::new()
        } else {
            format!("_: std::marker::PhantomData<{self_ty}>")
        };
        return Ok(format!(
            "fn {{NAME}}{}({implied}){} {{ let _: {binder}{unsafe_}fn({}){arrow} = {callee}; }}",
            sig::decls(outer),
            where_clause(&[outer_where]),
            params.join(", ")
        ));
    }
    let mut all = outer.to_vec();
    all.extend(f.generics.iter().cloned());
    let args: Vec<String> = (0..params.len()).map(|i| format!("a{i}")).collect();
    let typed: Vec<String> = args
        .iter()
        .zip(&params)
        .map(|(a, t)| format!("{a}: {t}"))
        .collect();
    let mut call = format!("{callee}({})", args.join(", "));
    if f.is_async {
        call.push_str(".await");
    }
    if f.is_unsafe {
        call = format!("unsafe {{ {call} }}");
    }
    Ok(format!(
        "{}fn {{NAME}}{}({}){arrow}{} {{ {call} }}",
        if f.is_async { "async " } else { "" },
        sig::decls(&all),
        typed.join(", "),
        where_clause(&[outer_where, own_where.as_deref()])
    ))
}
