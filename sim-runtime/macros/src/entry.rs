//! Parsing, validation and expansion of `#[tokio::main]` and `#[tokio::test]`.
//!
//! The arguments, their checks and the error messages follow tokio-macros
//! 2.7 (the version Tokio 1.54 depends on) one for one, because a user's code
//! must compile, or fail, the same way with and without `--cfg simulation`.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{braced, Attribute, Path, Signature, Token, Visibility};

/// Which of the two macros is being expanded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Main,
    Test,
}

impl Kind {
    /// The name users write, which is the name Tokio's messages use.
    fn macro_name(self) -> &'static str {
        match self {
            Kind::Main => "tokio::main",
            Kind::Test => "tokio::test",
        }
    }

    /// Tokio's defaults: a server's `main` gets the thread pool, a test gets
    /// one thread.
    fn default_flavor(self) -> Flavor {
        match self {
            Kind::Main => Flavor::MultiThread,
            Kind::Test => Flavor::CurrentThread,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flavor {
    CurrentThread,
    MultiThread,
    Local,
}

impl Flavor {
    fn parse(s: &str) -> Result<Flavor, String> {
        match s {
            "current_thread" => Ok(Flavor::CurrentThread),
            "multi_thread" => Ok(Flavor::MultiThread),
            "local" => Ok(Flavor::Local),
            // Old names get Tokio's hints rather than a bare "no such flavor".
            "single_thread" => {
                Err("The single threaded runtime flavor is called `current_thread`.".into())
            }
            "basic_scheduler" => {
                Err("The `basic_scheduler` runtime flavor has been renamed to `current_thread`."
                    .into())
            }
            "threaded_scheduler" => {
                Err("The `threaded_scheduler` runtime flavor has been renamed to `multi_thread`."
                    .into())
            }
            other => Err(format!(
                "No such runtime flavor `{other}`. The runtime flavors are `current_thread`, `local`, and `multi_thread`."
            )),
        }
    }

    /// The string the runtime receives in `TestOptions`/`MainOptions`.
    fn as_str(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current_thread",
            Flavor::MultiThread => "multi_thread",
            Flavor::Local => "local",
        }
    }
}

/// What the expansion needs once the arguments are checked.
struct Options {
    flavor: Flavor,
    worker_threads: Option<usize>,
    start_paused: bool,
    krate: Option<Path>,
    /// `name = ".."`: the runtime's name (`Handle::name`).
    name: Option<String>,
}

/// What is expanded when the arguments are wrong: the function is still
/// emitted (next to the error) so that IDEs and later diagnostics keep
/// working. Like Tokio, it uses the defaults and not the user's `crate`.
const ERROR_OPTIONS: Options = Options {
    flavor: Flavor::CurrentThread,
    worker_threads: None,
    start_paused: false,
    krate: None,
    name: None,
};

/// The arguments as written, each with the span of its value so that an error
/// about a combination can point at the offending value.
struct Args {
    kind: Kind,
    rt_multi_thread: bool,
    flavor: Option<Flavor>,
    worker_threads: Option<(usize, Span)>,
    start_paused: Option<(bool, Span)>,
    krate: Option<Path>,
    unhandled_panic: Option<Span>,
    name: Option<String>,
}

impl Args {
    fn new(kind: Kind, rt_multi_thread: bool) -> Args {
        Args {
            kind,
            rt_multi_thread,
            flavor: None,
            worker_threads: None,
            start_paused: None,
            krate: None,
            unhandled_panic: None,
            name: None,
        }
    }

    fn set(&mut self, field: &str, lit: &syn::Lit) -> syn::Result<()> {
        let span = lit.span();
        let twice = |name: &str| syn::Error::new(span, format!("`{name}` set multiple times."));
        match field {
            "flavor" => {
                if self.flavor.is_some() {
                    return Err(twice("flavor"));
                }
                let flavor = parse_string(lit, "flavor")?;
                self.flavor = Some(Flavor::parse(&flavor).map_err(|e| syn::Error::new(span, e))?);
            }
            "worker_threads" => {
                if self.worker_threads.is_some() {
                    return Err(twice("worker_threads"));
                }
                let n = parse_int(lit, "worker_threads")?;
                if n == 0 {
                    return Err(syn::Error::new(span, "`worker_threads` may not be 0."));
                }
                self.worker_threads = Some((n, span));
            }
            "start_paused" => {
                if self.start_paused.is_some() {
                    return Err(twice("start_paused"));
                }
                self.start_paused = Some((parse_bool(lit, "start_paused")?, span));
            }
            "crate" => {
                if self.krate.is_some() {
                    return Err(twice("crate"));
                }
                self.krate = Some(parse_path(lit, "crate")?);
            }
            "unhandled_panic" => {
                if self.unhandled_panic.is_some() {
                    return Err(twice("unhandled_panic"));
                }
                let value = parse_string(lit, "unhandled_panic")?;
                if !matches!(value.as_str(), "ignore" | "shutdown_runtime") {
                    return Err(syn::Error::new(
                        span,
                        format!("No such unhandled panic behavior `{value}`. The unhandled panic behaviors are `ignore` and `shutdown_runtime`."),
                    ));
                }
                self.unhandled_panic = Some(span);
            }
            "name" => {
                if self.name.is_some() {
                    return Err(twice("name"));
                }
                self.name = Some(parse_string(lit, "name")?);
            }
            _ => unreachable!("the caller only passes known argument names"),
        }
        Ok(())
    }

    /// Checks the combinations, in Tokio's order, and settles the defaults.
    fn finish(self) -> syn::Result<Options> {
        let flavor = self.flavor.unwrap_or(self.kind.default_flavor());
        let macro_name = self.kind.macro_name();
        let requires = |option: &str, flavor: &str| {
            format!(
                "The `{option}` option requires the `{flavor}` runtime flavor. Use `#[{macro_name}(flavor = \"{flavor}\")]`"
            )
        };

        let worker_threads = match (flavor, self.worker_threads) {
            (Flavor::CurrentThread | Flavor::Local, Some((_, span))) => {
                return Err(syn::Error::new(
                    span,
                    requires("worker_threads", "multi_thread"),
                ));
            }
            (Flavor::CurrentThread | Flavor::Local, None) => None,
            (Flavor::MultiThread, n) if self.rt_multi_thread => n.map(|(n, _)| n),
            (Flavor::MultiThread, _) => {
                let msg = if self.flavor.is_none() {
                    "The default runtime flavor is `multi_thread`, but the `rt-multi-thread` feature is disabled."
                } else {
                    "The runtime flavor `multi_thread` requires the `rt-multi-thread` feature."
                };
                return Err(syn::Error::new(Span::call_site(), msg));
            }
        };

        let start_paused = match (flavor, self.start_paused) {
            (Flavor::MultiThread, Some((_, span))) => {
                return Err(syn::Error::new(
                    span,
                    requires("start_paused", "current_thread"),
                ));
            }
            (_, paused) => paused.is_some_and(|(paused, _)| paused),
        };

        if let (Flavor::MultiThread, Some(span)) = (flavor, self.unhandled_panic) {
            return Err(syn::Error::new(
                span,
                requires("unhandled_panic", "current_thread"),
            ));
        }

        Ok(Options {
            flavor,
            worker_threads,
            start_paused,
            krate: self.krate,
            name: self.name,
        })
    }
}

const KNOWN_ARGS: &str =
    "`flavor`, `worker_threads`, `start_paused`, `crate`, `unhandled_panic`, `name`";

fn parse_int(lit: &syn::Lit, field: &str) -> syn::Result<usize> {
    match lit {
        syn::Lit::Int(int) => int.base10_parse::<usize>().map_err(|e| {
            syn::Error::new(
                lit.span(),
                format!("Failed to parse value of `{field}` as integer: {e}"),
            )
        }),
        _ => Err(syn::Error::new(
            lit.span(),
            format!("Failed to parse value of `{field}` as integer."),
        )),
    }
}

fn parse_string(lit: &syn::Lit, field: &str) -> syn::Result<String> {
    match lit {
        syn::Lit::Str(s) => Ok(s.value()),
        // Tokio accepts a literal syn does not recognise as its text; keep
        // that so the same inputs are accepted.
        syn::Lit::Verbatim(v) => Ok(v.to_string()),
        _ => Err(syn::Error::new(
            lit.span(),
            format!("Failed to parse value of `{field}` as string."),
        )),
    }
}

fn parse_path(lit: &syn::Lit, field: &str) -> syn::Result<Path> {
    match lit {
        syn::Lit::Str(s) => s.parse::<Path>().map_err(|_| {
            syn::Error::new(
                lit.span(),
                format!(
                    "Failed to parse value of `{field}` as path: \"{}\"",
                    s.value()
                ),
            )
        }),
        _ => Err(syn::Error::new(
            lit.span(),
            format!("Failed to parse value of `{field}` as path."),
        )),
    }
}

fn parse_bool(lit: &syn::Lit, field: &str) -> syn::Result<bool> {
    match lit {
        syn::Lit::Bool(b) => Ok(b.value),
        _ => Err(syn::Error::new(
            lit.span(),
            format!("Failed to parse value of `{field}` as bool."),
        )),
    }
}

/// Checks the function and the arguments, in the order Tokio does, so that
/// when several things are wrong the same one is reported.
fn check(
    kind: Kind,
    rt_multi_thread: bool,
    input: &ItemFn,
    args: TokenStream,
) -> syn::Result<Options> {
    match kind {
        Kind::Main => {
            if input.sig.ident == "main" && !input.sig.inputs.is_empty() {
                return Err(syn::Error::new_spanned(
                    &input.sig.ident,
                    "the main function cannot accept arguments",
                ));
            }
        }
        Kind::Test => {
            // Tokio adds `#[test]` itself; a second one would register the
            // function twice (or run it outside any runtime).
            if let Some(attr) = input.attrs().find(|a| is_test_attribute(a)) {
                return Err(syn::Error::new_spanned(
                    attr,
                    "second test attribute is supplied, consider removing or changing the order of your test attributes",
                ));
            }
        }
    }

    let args = Punctuated::<syn::Meta, Token![,]>::parse_terminated.parse2(args)?;

    if input.sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            input.sig.fn_token,
            "the `async` keyword is missing from the function declaration",
        ));
    }

    let macro_name = kind.macro_name();
    let mut parsed = Args::new(kind, rt_multi_thread);
    for arg in args {
        match arg {
            syn::Meta::NameValue(nv) => {
                // Tokio compares names case-insensitively; so do we.
                let name = nv
                    .path
                    .get_ident()
                    .ok_or_else(|| syn::Error::new_spanned(&nv, "Must have specified ident"))?
                    .to_string()
                    .to_lowercase();
                let lit = match &nv.value {
                    syn::Expr::Lit(syn::ExprLit { lit, .. }) => lit,
                    expr => return Err(syn::Error::new_spanned(expr, "Must be a literal")),
                };
                match name.as_str() {
                    "flavor" | "worker_threads" | "start_paused" | "crate" | "unhandled_panic"
                    | "name" => parsed.set(&name, lit)?,
                    "core_threads" => {
                        return Err(syn::Error::new_spanned(
                            &nv,
                            "Attribute `core_threads` is renamed to `worker_threads`",
                        ));
                    }
                    other => {
                        return Err(syn::Error::new_spanned(
                            &nv,
                            format!("Unknown attribute {other} is specified; expected one of: {KNOWN_ARGS}."),
                        ));
                    }
                }
            }
            syn::Meta::Path(path) => {
                let name = path
                    .get_ident()
                    .ok_or_else(|| syn::Error::new_spanned(&path, "Must have specified ident"))?
                    .to_string()
                    .to_lowercase();
                let msg = match name.as_str() {
                    "threaded_scheduler" | "multi_thread" => {
                        format!("Set the runtime flavor with #[{macro_name}(flavor = \"multi_thread\")].")
                    }
                    "basic_scheduler" | "current_thread" | "single_threaded" => {
                        format!("Set the runtime flavor with #[{macro_name}(flavor = \"current_thread\")].")
                    }
                    "flavor" | "worker_threads" | "start_paused" | "crate" | "unhandled_panic"
                    | "name" => format!("The `{name}` attribute requires an argument."),
                    other => {
                        format!("Unknown attribute {other} is specified; expected one of: {KNOWN_ARGS}.")
                    }
                };
                return Err(syn::Error::new_spanned(path, msg));
            }
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "Unknown attribute inside the macro",
                ));
            }
        }
    }
    parsed.finish()
}

/// Whether `attr` is `#[test]`, `#[core::prelude::*::test]` or
/// `#[std::prelude::*::test]` (with or without a leading `::`): the forms
/// Tokio recognises as a second test attribute.
fn is_test_attribute(attr: &Attribute) -> bool {
    let syn::Meta::Path(path) = &attr.meta else {
        return false;
    };
    let segments: Vec<_> = path.segments.iter().collect();
    if segments.iter().any(|s| !s.arguments.is_none()) {
        return false;
    }
    match segments.as_slice() {
        [only] => path.leading_colon.is_none() && only.ident == "test",
        [root, prelude, _edition, test] => {
            (root.ident == "core" || root.ident == "std")
                && prelude.ident == "prelude"
                && test.ident == "test"
        }
        _ => false,
    }
}

/// Expands `#[tokio::main]` (`Kind::Main`) or `#[tokio::test]` on `item`.
///
/// On an error the function is still expanded, with default options, and the
/// error is appended: the error is then the only thing the user sees about
/// the attribute, while the rest of the crate still type-checks.
pub(crate) fn expand(
    kind: Kind,
    rt_multi_thread: bool,
    args: TokenStream,
    item: TokenStream,
) -> TokenStream {
    let input: ItemFn = match syn::parse2(item.clone()) {
        Ok(input) => input,
        Err(e) => return with_error(item, e),
    };
    match check(kind, rt_multi_thread, &input, args) {
        Ok(options) => rewrite(kind, input, &options),
        Err(e) => with_error(rewrite(kind, input, &ERROR_OPTIONS), e),
    }
}

fn with_error(mut tokens: TokenStream, error: syn::Error) -> TokenStream {
    tokens.extend(error.into_compile_error());
    tokens
}

/// Builds the synchronous function that hands the body to the runtime.
fn rewrite(kind: Kind, mut input: ItemFn, options: &Options) -> TokenStream {
    input.sig.asyncness = None;

    // When the body's type does not match the return type, rustc reports the
    // mismatch on the function's tail expression, which is our call. Giving
    // the call the location of the body's last statement (its path starts
    // there, its parentheses end there) makes the error point at the user's
    // code, as Tokio's expansion does, rather than at the attribute.
    let (last_start, last_end) = {
        let mut last = input.stmts.last().cloned().unwrap_or_default().into_iter();
        let start = last.next().map_or_else(Span::call_site, |t| t.span());
        let end = last.last().map_or(start, |t| t.span());
        (
            Span::call_site().located_at(start),
            Span::call_site().located_at(end),
        )
    };

    let krate = match &options.krate {
        Some(path) => path.to_token_stream(),
        None => quote_spanned!(last_start=> ::tokio),
    };
    let flavor = options.flavor.as_str();
    let worker_threads = match options.worker_threads {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let start_paused = options.start_paused;
    let runtime_name = match &options.name {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let body = input.body();

    let (function, arguments) = match kind {
        Kind::Test => {
            let ident = &input.sig.ident;
            (
                quote_spanned!(last_start=> #krate::__private::run_test),
                quote! {
                    #krate::__private::TestOptions {
                        name: ::core::concat!(
                            ::core::module_path!(),
                            "::",
                            ::core::stringify!(#ident)
                        ),
                        file: ::core::file!(),
                        package: ::core::env!("CARGO_PKG_NAME"),
                        crate_name: ::core::env!("CARGO_CRATE_NAME"),
                        flavor: #flavor,
                        worker_threads: #worker_threads,
                        start_paused: #start_paused,
                        runtime_name: #runtime_name,
                    },
                    || async move #body,
                },
            )
        }
        Kind::Main => (
            quote_spanned!(last_start=> #krate::__private::run_main),
            quote! {
                #krate::__private::MainOptions {
                    flavor: #flavor,
                    worker_threads: #worker_threads,
                    start_paused: #start_paused,
                    runtime_name: #runtime_name,
                },
                async move #body,
            },
        ),
    };
    let mut arguments = Group::new(Delimiter::Parenthesis, arguments);
    arguments.set_span(last_end);
    let call = quote!(#function #arguments);

    // Like Tokio, `#[test]` comes after the user's attributes, so that an
    // attribute macro listed below ours still sees it when it expands.
    let generated = match kind {
        Kind::Test => quote!(#[::core::prelude::v1::test]),
        Kind::Main => TokenStream::new(),
    };
    input.into_tokens(generated, call)
}

/// An `async fn` with its body kept as a list of token streams, one per
/// statement, instead of a syntax tree.
///
/// Parsing the body fully (as `syn::ItemFn` does) would make any syntax error
/// in it an error of the macro, reported by syn, with the whole function lost;
/// keeping tokens leaves those errors to rustc, with the function intact.
struct ItemFn {
    outer_attrs: Vec<Attribute>,
    vis: Visibility,
    sig: Signature,
    brace_token: syn::token::Brace,
    inner_attrs: Vec<Attribute>,
    /// Each statement with its terminating `;`, if it has one.
    stmts: Vec<TokenStream>,
}

impl ItemFn {
    fn attrs(&self) -> impl Iterator<Item = &Attribute> {
        self.outer_attrs.iter().chain(&self.inner_attrs)
    }

    fn body(&self) -> Body<'_> {
        Body {
            brace_token: self.brace_token,
            stmts: &self.stmts,
        }
    }

    fn into_tokens(self, generated_attrs: TokenStream, call: TokenStream) -> TokenStream {
        let mut tokens = TokenStream::new();
        for attr in &self.outer_attrs {
            attr.to_tokens(&mut tokens);
        }
        // The body becomes an async block, where inner attributes such as
        // `#![allow(..)]` are not allowed; as outer attributes of the
        // function they keep their meaning.
        for mut attr in self.inner_attrs {
            attr.style = syn::AttrStyle::Outer;
            attr.to_tokens(&mut tokens);
        }
        tokens.extend(generated_attrs);
        self.vis.to_tokens(&mut tokens);
        self.sig.to_tokens(&mut tokens);
        self.brace_token
            .surround(&mut tokens, |tokens| tokens.extend(call));
        tokens
    }
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let outer_attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;

        let content;
        let brace_token = braced!(content in input);
        let inner_attrs = Attribute::parse_inner(&content)?;

        // Splitting at top-level `;` is enough to find the last statement,
        // which is all the expansion needs to know about the body.
        let mut stmts = Vec::new();
        let mut stmt = TokenStream::new();
        while !content.is_empty() {
            if let Some(semi) = content.parse::<Option<Token![;]>>()? {
                semi.to_tokens(&mut stmt);
                stmts.push(std::mem::take(&mut stmt));
            } else {
                stmt.extend([content.parse::<TokenTree>()?]);
            }
        }
        if !stmt.is_empty() {
            stmts.push(stmt);
        }

        Ok(ItemFn {
            outer_attrs,
            vis,
            sig,
            brace_token,
            inner_attrs,
            stmts,
        })
    }
}

/// The function's block, re-emitted with its original braces so that spans
/// inside it (and so `?`, type errors and lints) stay the user's.
struct Body<'a> {
    brace_token: syn::token::Brace,
    stmts: &'a [TokenStream],
}

impl ToTokens for Body<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.brace_token.surround(tokens, |tokens| {
            for stmt in self.stmts {
                stmt.to_tokens(tokens);
            }
        });
    }
}

#[cfg(test)]
mod tests;
