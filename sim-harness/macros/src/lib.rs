//! `#[sim::test]`.
//!
//! ```text
//! #[sim::test]                        // the default seed, 0
//! #[sim::test(seed = 7)]
//! #[sim::test(seeds = 0..500)]
//! #[sim::test(seeds = 0..500, time_limit = "10m", strict, check_determinism)]
//! ```
//!
//! Under `--cfg simulation` the test runs once per seed through
//! `sim::__private::run`; without it, it is an ignored test whose reason
//! says how to run it (and its body is not compiled, so the crate builds
//! without the simulator).

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Error, Expr, ExprLit, ExprRange, ItemFn, Lit, Meta, RangeLimits, Token};

struct Args(Punctuated<Meta, Token![,]>);

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Ok(Args(Punctuated::parse_terminated(input)?))
    }
}

fn int(e: &Expr, what: &str) -> syn::Result<u64> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse(),
        _ => Err(Error::new_spanned(
            e,
            format!("`{what}` takes an integer literal"),
        )),
    }
}

/// "30s", "10m", "500ms", "2h" → milliseconds.
fn duration_ms(e: &Expr) -> syn::Result<u64> {
    let Expr::Lit(ExprLit {
        lit: Lit::Str(s), ..
    }) = e
    else {
        return Err(Error::new_spanned(
            e,
            "`time_limit` takes a string like \"30s\", \"10m\", \"500ms\" or \"2h\"",
        ));
    };
    let v = s.value();
    let (num, unit) = v
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| v.split_at(i))
        .unwrap_or((&v, ""));
    let n: u64 = num
        .parse()
        .map_err(|_| Error::new_spanned(s, "`time_limit`: expected a number then a unit"))?;
    let ms = match unit {
        "ms" => n,
        "s" => n * 1_000,
        "m" | "min" => n * 60_000,
        "h" => n * 3_600_000,
        _ => {
            return Err(Error::new_spanned(
                s,
                "`time_limit`: the unit is one of ms, s, m, h (e.g. \"30s\")",
            ))
        }
    };
    Ok(ms)
}

#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    match expand(args, item) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(args: TokenStream, item: TokenStream) -> syn::Result<proc_macro2::TokenStream> {
    let args: Args = syn::parse(args)?;
    let f: ItemFn = syn::parse(item)?;
    if f.sig.asyncness.is_none() {
        return Err(Error::new_spanned(
            f.sig.fn_token,
            "#[sim::test] goes on an `async fn` (its body runs on the simulation's driver node)",
        ));
    }
    if !f.sig.inputs.is_empty() {
        return Err(Error::new_spanned(
            &f.sig.inputs,
            "a #[sim::test] function takes no parameters",
        ));
    }
    if !f.sig.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &f.sig.generics,
            "a #[sim::test] function cannot be generic",
        ));
    }
    let mut seeds = quote!(::sim::__private::Seeds::Default);
    let mut seen_seeds = false;
    let mut time_limit = quote!(::core::option::Option::None);
    let mut step_limit = quote!(::core::option::Option::None);
    let mut strict = false;
    let mut check = false;
    let mut schedule = quote!(::core::option::Option::None);
    let mut coverage = false;
    let mut early = quote!(::core::option::Option::None);
    let mut explore = quote!(::core::option::Option::None);
    for meta in args.0 {
        match &meta {
            Meta::NameValue(nv) if nv.path.is_ident("seeds") => {
                if seen_seeds {
                    return Err(Error::new_spanned(&meta, "give `seeds` or `seed`, once"));
                }
                seen_seeds = true;
                let Expr::Range(ExprRange {
                    start: Some(a),
                    end: Some(b),
                    limits,
                    ..
                }) = &nv.value
                else {
                    return Err(Error::new_spanned(
                        &nv.value,
                        "`seeds` takes a range of integers: `seeds = 0..500`",
                    ));
                };
                let a = int(a, "seeds")?;
                let mut b = int(b, "seeds")?;
                if matches!(limits, RangeLimits::Closed(_)) {
                    b += 1;
                }
                if a >= b {
                    return Err(Error::new_spanned(&nv.value, "`seeds` is an empty range"));
                }
                seeds = quote!(::sim::__private::Seeds::Range(#a, #b));
            }
            Meta::NameValue(nv) if nv.path.is_ident("seed") => {
                if seen_seeds {
                    return Err(Error::new_spanned(&meta, "give `seeds` or `seed`, once"));
                }
                seen_seeds = true;
                let s = int(&nv.value, "seed")?;
                seeds = quote!(::sim::__private::Seeds::One(#s));
            }
            Meta::NameValue(nv) if nv.path.is_ident("explore") => {
                let n = int(&nv.value, "explore")?;
                if n == 0 {
                    return Err(Error::new_spanned(
                        &nv.value,
                        "`explore` takes the number of runs to spend: `explore = 2000`",
                    ));
                }
                explore = quote!(::core::option::Option::Some(#n));
            }
            Meta::NameValue(nv) if nv.path.is_ident("time_limit") => {
                let ms = duration_ms(&nv.value)?;
                time_limit = quote!(::core::option::Option::Some(#ms));
            }
            Meta::NameValue(nv) if nv.path.is_ident("step_limit") => {
                let n = int(&nv.value, "step_limit")?;
                step_limit = quote!(::core::option::Option::Some(#n));
            }
            Meta::NameValue(nv) if nv.path.is_ident("schedule") => {
                let Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) = &nv.value
                else {
                    return Err(Error::new_spanned(
                        &nv.value,
                        "`schedule` takes a string: \"portfolio\", \"random\", \"fifo\", \"pct2\", \"pct3\" or \"pct4\"",
                    ));
                };
                let v = s.value();
                if !["portfolio", "random", "fifo", "pct2", "pct3", "pct4"].contains(&v.as_str()) {
                    return Err(Error::new_spanned(
                        s,
                        "unknown schedule; use \"portfolio\", \"random\", \"fifo\", \"pct2\", \"pct3\" or \"pct4\"",
                    ));
                }
                schedule = quote!(::core::option::Option::Some(#v));
            }
            Meta::NameValue(nv) if nv.path.is_ident("coverage") => {
                match &nv.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) if s.value() == "all" => coverage = true,
                    other => {
                        return Err(Error::new_spanned(
                            other,
                            "`coverage` takes \"all\": every sometimes!/reachable! site must be hit by the sweep",
                        ))
                    }
                }
            }
            Meta::NameValue(nv) if nv.path.is_ident("early_timers") => {
                let v = match &nv.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Bool(b), ..
                    }) => b.value,
                    other => {
                        return Err(Error::new_spanned(
                            other,
                            "`early_timers` takes `true` or `false` (default: half the seeds)",
                        ))
                    }
                };
                early = quote!(::core::option::Option::Some(#v));
            }
            Meta::NameValue(nv) if nv.path.is_ident("claims") => {
                // Read from the source by `cargo xtask tidy`; checked here
                // for form only.
                let bad = || {
                    Error::new_spanned(
                        &nv.value,
                        "`claims` takes an array of failure-mode ids, each a string literal \
                         naming a row of a failure-mode table (see `cargo xtask failure-modes`)",
                    )
                };
                let Expr::Array(list) = &nv.value else {
                    return Err(bad());
                };
                if list.elems.is_empty() {
                    return Err(bad());
                }
                for e in &list.elems {
                    match e {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(_), ..
                        }) => {}
                        _ => return Err(bad()),
                    }
                }
            }
            Meta::Path(p) if p.is_ident("strict") => strict = true,
            Meta::Path(p) if p.is_ident("check_determinism") => check = true,
            _ => {
                return Err(Error::new_spanned(
                    &meta,
                    "unknown argument; #[sim::test] takes `seeds = a..b`, `seed = n`, \
                     `explore = runs`, `time_limit = \"30s\"`, `step_limit = n`, `schedule = \"pct3\"`, \
                     `coverage = \"all\"`, `early_timers = false`, `claims = [..]`, \
                     `strict`, `check_determinism`",
                ))
            }
        }
    }
    let attrs = &f.attrs;
    let vis = &f.vis;
    let name = &f.sig.ident;
    let body = &f.block;
    let output = &f.sig.output;
    let name_str = name.to_string();
    let reason = "a simulation test: run it with `cargo sim test` (or, where tokio is renamed to \
                  sim-runtime, RUSTFLAGS=\"--cfg simulation\" cargo test)";
    Ok(quote! {
        #[cfg(simulation)]
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis fn #name() {
            async fn __sim_body() #output #body
            ::sim::__private::run(
                ::sim::__private::Options {
                    name: ::core::concat!(::core::module_path!(), "::", #name_str),
                    file: ::core::file!(),
                    package: ::core::env!("CARGO_PKG_NAME"),
                    crate_name: ::core::env!("CARGO_CRATE_NAME"),
                    manifest_dir: ::core::env!("CARGO_MANIFEST_DIR"),
                    seeds: #seeds,
                    time_limit_ms: #time_limit,
                    step_limit: #step_limit,
                    strict: #strict,
                    check_determinism: #check,
                    schedule: #schedule,
                    coverage: #coverage,
                    early_timers: #early,
                    explore: #explore,
                },
                __sim_body,
            );
        }

        #[cfg(not(simulation))]
        #[::core::prelude::v1::test]
        #[ignore = #reason]
        #(#attrs)*
        #vis fn #name() {}
    })
}
