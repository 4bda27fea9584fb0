//! Tests of the expansion on token streams: the produced `compile_error!`
//! messages, and the shape of the function handed to the runtime.

use super::{expand, Kind};
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use std::collections::BTreeMap;

/// What an expansion produced: the rewritten function, if any, and the
/// messages of its `compile_error!`s.
struct Output {
    function: Option<syn::ItemFn>,
    errors: Vec<String>,
}

fn run(kind: Kind, rt_multi_thread: bool, args: TokenStream, item: TokenStream) -> Output {
    let tokens = expand(kind, rt_multi_thread, args, item);
    let file: syn::File = syn::parse2(tokens.clone())
        .unwrap_or_else(|e| panic!("the expansion does not parse ({e}): {tokens}"));
    let mut output = Output {
        function: None,
        errors: Vec::new(),
    };
    for item in file.items {
        match item {
            syn::Item::Fn(f) => {
                assert!(output.function.is_none(), "two functions: {tokens}");
                output.function = Some(f);
            }
            syn::Item::Macro(m) if m.mac.path.segments.last().unwrap().ident == "compile_error" => {
                let msg: syn::LitStr = syn::parse2(m.mac.tokens).unwrap();
                output.errors.push(msg.value());
            }
            // A bad item is given back unchanged next to the error.
            _ => {}
        }
    }
    output
}

fn test(args: TokenStream, item: TokenStream) -> Output {
    run(Kind::Test, true, args, item)
}

fn main(args: TokenStream, item: TokenStream) -> Output {
    run(Kind::Main, true, args, item)
}

/// The single error of an expansion that must fail; the function must still
/// be there, so that the rest of the crate keeps type-checking.
fn error(output: Output) -> String {
    assert_eq!(output.errors.len(), 1, "errors: {:?}", output.errors);
    output.errors.into_iter().next().unwrap()
}

fn test_error(args: TokenStream, item: TokenStream) -> String {
    let output = test(args, item);
    assert!(output.function.is_some(), "the function was dropped");
    error(output)
}

fn main_error(args: TokenStream, item: TokenStream) -> String {
    let output = main(args, item);
    assert!(output.function.is_some(), "the function was dropped");
    error(output)
}

/// The parts of a successful expansion, as token strings.
struct Call {
    function: String,
    options_type: String,
    options: BTreeMap<String, String>,
    /// The future (for main) or the closure returning it (for tests).
    body: String,
}

fn ok(output: Output) -> (syn::ItemFn, Call) {
    assert!(output.errors.is_empty(), "errors: {:?}", output.errors);
    let function = output.function.expect("no function");
    assert!(function.sig.asyncness.is_none(), "still async");
    assert_eq!(function.block.stmts.len(), 1, "the body is one call");
    let syn::Stmt::Expr(syn::Expr::Call(call), None) = &function.block.stmts[0] else {
        panic!(
            "the body is not a tail call: {}",
            function.block.to_token_stream()
        );
    };
    assert_eq!(call.args.len(), 2);
    let syn::Expr::Struct(options) = &call.args[0] else {
        panic!("the first argument is not the options struct");
    };
    let call = Call {
        function: call.func.to_token_stream().to_string(),
        options_type: options.path.to_token_stream().to_string(),
        options: options
            .fields
            .iter()
            .map(|f| {
                (
                    f.member.to_token_stream().to_string(),
                    f.expr.to_token_stream().to_string(),
                )
            })
            .collect(),
        body: call.args[1].to_token_stream().to_string(),
    };
    (function, call)
}

fn tokens(t: TokenStream) -> String {
    t.to_string()
}

/// An expression's tokens as syn prints them, to compare with `Call::body`
/// (syn re-emits `||` as two `|`).
fn expr(t: TokenStream) -> String {
    syn::parse2::<syn::Expr>(t)
        .unwrap()
        .to_token_stream()
        .to_string()
}

fn attrs(f: &syn::ItemFn) -> Vec<String> {
    f.attrs
        .iter()
        .map(|a| a.to_token_stream().to_string())
        .collect()
}

#[test]
fn test_expands_to_the_contract() {
    let (f, call) = ok(test(
        quote!(),
        quote! {
            async fn adds() {
                assert_eq!(1 + 1, 2);
            }
        },
    ));
    assert_eq!(attrs(&f), [tokens(quote!(#[::core::prelude::v1::test]))]);
    assert_eq!(call.function, tokens(quote!(::tokio::__private::run_test)));
    assert_eq!(
        call.options_type,
        tokens(quote!(::tokio::__private::TestOptions))
    );
    let expected: BTreeMap<String, String> = [
        (
            "name",
            quote!(::core::concat!(
                ::core::module_path!(),
                "::",
                ::core::stringify!(adds)
            )),
        ),
        ("file", quote!(::core::file!())),
        ("package", quote!(::core::env!("CARGO_PKG_NAME"))),
        ("crate_name", quote!(::core::env!("CARGO_CRATE_NAME"))),
        ("flavor", quote!("current_thread")),
        ("worker_threads", quote!(::core::option::Option::None)),
        ("start_paused", quote!(false)),
        ("runtime_name", quote!(::core::option::Option::None)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), tokens(v)))
    .collect();
    assert_eq!(call.options, expected);
    assert_eq!(
        call.body,
        expr(quote!(|| async move {
            assert_eq!(1 + 1, 2);
        }))
    );
}

#[test]
fn main_expands_to_the_contract() {
    let (f, call) = ok(main(
        quote!(),
        quote! {
            async fn main() -> std::io::Result<()> {
                serve().await?;
                Ok(())
            }
        },
    ));
    assert!(
        f.attrs.is_empty(),
        "main gets no attributes: {:?}",
        attrs(&f)
    );
    assert_eq!(f.sig.ident, "main");
    assert_eq!(
        f.sig.output.to_token_stream().to_string(),
        tokens(quote!(-> std::io::Result<()>))
    );
    assert_eq!(call.function, tokens(quote!(::tokio::__private::run_main)));
    assert_eq!(
        call.options_type,
        tokens(quote!(::tokio::__private::MainOptions))
    );
    let expected: BTreeMap<String, String> = [
        // Tokio's default for main is the thread pool.
        ("flavor", quote!("multi_thread")),
        ("worker_threads", quote!(::core::option::Option::None)),
        ("start_paused", quote!(false)),
        ("runtime_name", quote!(::core::option::Option::None)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), tokens(v)))
    .collect();
    assert_eq!(call.options, expected);
    assert_eq!(
        call.body,
        expr(quote!(async move {
            serve().await?;
            Ok(())
        }))
    );
}

#[test]
fn arguments_reach_the_options() {
    let (_, call) = ok(test(
        quote!(flavor = "multi_thread", worker_threads = 4),
        quote!(
            async fn t() {}
        ),
    ));
    assert_eq!(call.options["flavor"], tokens(quote!("multi_thread")));
    assert_eq!(
        call.options["worker_threads"],
        tokens(quote!(::core::option::Option::Some(4usize)))
    );

    let (_, call) = ok(test(
        quote!(start_paused = true),
        quote!(
            async fn t() {}
        ),
    ));
    assert_eq!(call.options["flavor"], tokens(quote!("current_thread")));
    assert_eq!(call.options["start_paused"], tokens(quote!(true)));

    let (_, call) = ok(main(
        quote!(flavor = "local", start_paused = true),
        quote!(
            async fn main() {}
        ),
    ));
    assert_eq!(call.options["flavor"], tokens(quote!("local")));
    assert_eq!(call.options["start_paused"], tokens(quote!(true)));

    let (_, call) = ok(main(
        quote!(worker_threads = 2),
        quote!(
            async fn main() {}
        ),
    ));
    assert_eq!(call.options["flavor"], tokens(quote!("multi_thread")));
    assert_eq!(
        call.options["worker_threads"],
        tokens(quote!(::core::option::Option::Some(2usize)))
    );
}

#[test]
fn crate_argument_replaces_tokio() {
    let (_, call) = ok(test(
        quote!(crate = "my::rt"),
        quote!(
            async fn t() {}
        ),
    ));
    assert_eq!(call.function, tokens(quote!(my::rt::__private::run_test)));
    assert_eq!(
        call.options_type,
        tokens(quote!(my::rt::__private::TestOptions))
    );

    let (_, call) = ok(main(
        quote!(crate = "::renamed"),
        quote!(
            async fn main() {}
        ),
    ));
    assert_eq!(
        call.function,
        tokens(quote!(::renamed::__private::run_main))
    );

    assert_eq!(
        test_error(
            quote!(crate = "not a path"),
            quote!(
                async fn t() {}
            )
        ),
        "Failed to parse value of `crate` as path: \"not a path\""
    );
    assert_eq!(
        test_error(
            quote!(crate = 1),
            quote!(
                async fn t() {}
            )
        ),
        "Failed to parse value of `crate` as path."
    );
}

#[test]
fn accepted_but_unused_arguments() {
    for args in [
        quote!(unhandled_panic = "ignore"),
        quote!(unhandled_panic = "shutdown_runtime"),
        quote!(flavor = "local", unhandled_panic = "shutdown_runtime"),
        quote!(name = "my-runtime"),
        quote!(flavor = "multi_thread", name = "pool"),
    ] {
        ok(test(
            args,
            quote!(
                async fn t() {}
            ),
        ));
    }
    ok(main(
        quote!(
            flavor = "current_thread",
            unhandled_panic = "ignore",
            name = "m"
        ),
        quote!(
            async fn main() {}
        ),
    ));
    ok(main(
        quote!(name = "m"),
        quote!(
            async fn main() {}
        ),
    ));
}

#[test]
fn names_are_case_insensitive_like_tokio() {
    let (_, call) = ok(test(
        quote!(Flavor = "multi_thread", WORKER_THREADS = 3),
        quote!(
            async fn t() {}
        ),
    ));
    assert_eq!(
        call.options["worker_threads"],
        tokens(quote!(::core::option::Option::Some(3usize)))
    );
}

#[test]
fn user_attributes_signature_and_visibility_are_kept() {
    let (f, call) = ok(test(
        quote!(),
        quote! {
            /// Checks the thing.
            #[should_panic(expected = "boom")]
            #[ignore]
            #[cfg_attr(miri, ignore = "slow")]
            pub(crate) async fn fails() -> Result<(), String> {
                #![allow(unreachable_code)]
                panic!("boom");
            }
        },
    ));
    // The user's attributes first, the lifted inner attribute next, and
    // `#[test]` last, as Tokio orders them.
    assert_eq!(
        attrs(&f),
        [
            tokens(quote!(
                /// Checks the thing.
            )),
            tokens(quote!(#[should_panic(expected = "boom")])),
            tokens(quote!(#[ignore])),
            tokens(quote!(#[cfg_attr(miri, ignore = "slow")])),
            tokens(quote!(#[allow(unreachable_code)])),
            tokens(quote!(#[::core::prelude::v1::test])),
        ]
    );
    assert_eq!(f.vis.to_token_stream().to_string(), "pub (crate)");
    assert_eq!(
        f.sig.to_token_stream().to_string(),
        tokens(quote!(fn fails() -> Result<(), String>))
    );
    // The inner attribute is not left inside the async block.
    assert_eq!(
        call.body,
        expr(quote!(|| async move {
            panic!("boom");
        }))
    );
}

#[test]
fn main_works_on_any_async_fn_and_keeps_its_parameters() {
    let (f, call) = ok(main(
        quote!(flavor = "current_thread"),
        quote! {
            pub async fn serve<T: Send>(port: u16, value: T) -> T where T: Clone {
                let _ = port;
                value
            }
        },
    ));
    assert_eq!(
        f.sig.to_token_stream().to_string(),
        tokens(quote!(fn serve<T: Send>(port: u16, value: T) -> T where T: Clone))
    );
    assert_eq!(
        call.body,
        expr(quote!(async move {
            let _ = port;
            value
        }))
    );
}

#[test]
fn body_ending_in_a_semicolon_or_empty_is_kept_as_is() {
    let (_, call) = ok(test(
        quote!(),
        quote!(
            async fn t() -> u32 {
                1;
            }
        ),
    ));
    assert_eq!(
        call.body,
        expr(quote!(|| async move {
            1;
        }))
    );
    let (_, call) = ok(main(
        quote!(),
        quote!(
            async fn main() {}
        ),
    ));
    assert_eq!(call.body, expr(quote!(async move {})));
}

#[test]
fn missing_async_is_an_error() {
    let msg = "the `async` keyword is missing from the function declaration";
    assert_eq!(
        test_error(
            quote!(),
            quote!(
                fn t() {}
            )
        ),
        msg
    );
    assert_eq!(
        main_error(
            quote!(),
            quote!(
                fn main() {}
            )
        ),
        msg
    );
    // Arguments are not looked at before that.
    assert_eq!(
        test_error(
            quote!(bogus = 1),
            quote!(
                fn t() {}
            )
        ),
        msg
    );
}

#[test]
fn main_with_parameters_is_an_error() {
    assert_eq!(
        main_error(
            quote!(),
            quote!(
                async fn main(args: Vec<String>) {}
            )
        ),
        "the main function cannot accept arguments"
    );
    // Checked before anything else, as in Tokio.
    assert_eq!(
        main_error(
            quote!(bogus),
            quote!(
                fn main(x: u8) {}
            )
        ),
        "the main function cannot accept arguments"
    );
}

#[test]
fn test_with_parameters_is_left_to_rustc() {
    // Tokio does not check; rustc's `#[test]` rejects it ("functions used as
    // tests can not have any arguments"), and it will here too.
    let (f, _) = ok(test(
        quote!(),
        quote!(
            async fn t(x: u8) {}
        ),
    ));
    assert_eq!(f.sig.inputs.len(), 1);
}

#[test]
fn a_second_test_attribute_is_an_error() {
    let msg = "second test attribute is supplied, consider removing or changing the order of your test attributes";
    for attr in [
        quote!(#[test]),
        quote!(#[::core::prelude::v1::test]),
        quote!(#[core::prelude::rust_2021::test]),
        quote!(#[std::prelude::v1::test]),
        quote!(#[::std::prelude::rust_2024::test]),
    ] {
        assert_eq!(
            test_error(quote!(), quote!(#attr async fn t() {})),
            msg,
            "{attr}"
        );
    }
    // Checked before the arguments, as in Tokio.
    assert_eq!(
        test_error(
            quote!(bogus),
            quote!(
                #[test]
                fn t() {}
            )
        ),
        msg
    );
    // An inner `#![test]` counts too.
    assert_eq!(
        test_error(
            quote!(),
            quote!(
                async fn t() {
                    #![test]
                }
            )
        ),
        msg
    );
    // Other attributes named `test` are someone else's and are kept.
    for attr in [
        quote!(#[::test]),
        quote!(#[test_case(1)]),
        quote!(#[other::test]),
        quote!(#[core::prelude::v1::test(x)]),
    ] {
        ok(test(quote!(), quote!(#attr async fn t() {})));
    }
    // `#[tokio::main]` does not care.
    ok(main(
        quote!(),
        quote!(
            #[test]
            async fn t() {}
        ),
    ));
}

#[test]
fn unknown_arguments_are_errors() {
    let expected = "`flavor`, `worker_threads`, `start_paused`, `crate`, `unhandled_panic`, `name`";
    assert_eq!(
        test_error(
            quote!(threads = 4),
            quote!(
                async fn t() {}
            )
        ),
        format!("Unknown attribute threads is specified; expected one of: {expected}.")
    );
    assert_eq!(
        main_error(
            quote!(seed),
            quote!(
                async fn main() {}
            )
        ),
        format!("Unknown attribute seed is specified; expected one of: {expected}.")
    );
    assert_eq!(
        test_error(
            quote!(core_threads = 4),
            quote!(
                async fn t() {}
            )
        ),
        "Attribute `core_threads` is renamed to `worker_threads`"
    );
    assert_eq!(
        test_error(
            quote!(flavor("local")),
            quote!(
                async fn t() {}
            )
        ),
        "Unknown attribute inside the macro"
    );
    assert_eq!(
        test_error(
            quote!(a::b = 1),
            quote!(
                async fn t() {}
            )
        ),
        "Must have specified ident"
    );
    assert_eq!(
        test_error(
            quote!(a::b),
            quote!(
                async fn t() {}
            )
        ),
        "Must have specified ident"
    );
    assert_eq!(
        test_error(
            quote!(worker_threads = N),
            quote!(
                async fn t() {}
            )
        ),
        "Must be a literal"
    );
}

#[test]
fn bare_names_get_tokio_hints() {
    assert_eq!(
        test_error(
            quote!(multi_thread),
            quote!(
                async fn t() {}
            )
        ),
        "Set the runtime flavor with #[tokio::test(flavor = \"multi_thread\")]."
    );
    assert_eq!(
        main_error(
            quote!(basic_scheduler),
            quote!(
                async fn main() {}
            )
        ),
        "Set the runtime flavor with #[tokio::main(flavor = \"current_thread\")]."
    );
    for name in [
        "flavor",
        "worker_threads",
        "start_paused",
        "crate",
        "unhandled_panic",
        "name",
    ] {
        let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
        // `crate` is a keyword: written bare it is still a path of one segment.
        let arg = if name == "crate" {
            quote!(crate)
        } else {
            quote!(#ident)
        };
        assert_eq!(
            test_error(
                arg,
                quote!(
                    async fn t() {}
                )
            ),
            format!("The `{name}` attribute requires an argument."),
        );
    }
}

#[test]
fn flavor_values() {
    let cases = [
        ("single_thread", "The single threaded runtime flavor is called `current_thread`."),
        ("basic_scheduler", "The `basic_scheduler` runtime flavor has been renamed to `current_thread`."),
        ("threaded_scheduler", "The `threaded_scheduler` runtime flavor has been renamed to `multi_thread`."),
        ("fast", "No such runtime flavor `fast`. The runtime flavors are `current_thread`, `local`, and `multi_thread`."),
    ];
    for (flavor, msg) in cases {
        assert_eq!(
            test_error(
                quote!(flavor = #flavor),
                quote!(
                    async fn t() {}
                )
            ),
            msg
        );
    }
    assert_eq!(
        test_error(
            quote!(flavor = 1),
            quote!(
                async fn t() {}
            )
        ),
        "Failed to parse value of `flavor` as string."
    );
}

#[test]
fn value_types_are_checked() {
    let t = || {
        quote!(
            async fn t() {}
        )
    };
    assert_eq!(
        test_error(quote!(flavor = "multi_thread", worker_threads = "4"), t()),
        "Failed to parse value of `worker_threads` as integer."
    );
    assert_eq!(
        test_error(quote!(flavor = "multi_thread", worker_threads = 0), t()),
        "`worker_threads` may not be 0."
    );
    assert_eq!(
        test_error(quote!(flavor = "multi_thread", worker_threads = -1), t()),
        "Failed to parse value of `worker_threads` as integer: invalid digit found in string"
    );
    assert!(test_error(
        quote!(
            flavor = "multi_thread",
            worker_threads = 99999999999999999999999
        ),
        t()
    )
    .starts_with("Failed to parse value of `worker_threads` as integer: "));
    assert_eq!(
        test_error(quote!(start_paused = "yes"), t()),
        "Failed to parse value of `start_paused` as bool."
    );
    assert_eq!(
        test_error(quote!(unhandled_panic = "abort"), t()),
        "No such unhandled panic behavior `abort`. The unhandled panic behaviors are `ignore` and `shutdown_runtime`."
    );
    assert_eq!(
        test_error(quote!(unhandled_panic = true), t()),
        "Failed to parse value of `unhandled_panic` as string."
    );
    assert_eq!(
        test_error(quote!(name = 7), t()),
        "Failed to parse value of `name` as string."
    );
}

#[test]
fn arguments_given_twice_are_errors() {
    let t = || {
        quote!(
            async fn t() {}
        )
    };
    for (args, name) in [
        (quote!(flavor = "local", flavor = "local"), "flavor"),
        (
            quote!(
                flavor = "multi_thread",
                worker_threads = 1,
                worker_threads = 2
            ),
            "worker_threads",
        ),
        (
            quote!(start_paused = true, start_paused = true),
            "start_paused",
        ),
        (quote!(crate = "a", crate = "a"), "crate"),
        (
            quote!(unhandled_panic = "ignore", unhandled_panic = "ignore"),
            "unhandled_panic",
        ),
        (quote!(name = "a", name = "b"), "name"),
    ] {
        assert_eq!(
            test_error(args, t()),
            format!("`{name}` set multiple times.")
        );
    }
}

#[test]
fn flavor_combinations_are_checked() {
    let t = || {
        quote!(
            async fn t() {}
        )
    };
    let m = || {
        quote!(
            async fn main() {}
        )
    };
    assert_eq!(
        test_error(quote!(worker_threads = 2), t()),
        "The `worker_threads` option requires the `multi_thread` runtime flavor. Use `#[tokio::test(flavor = \"multi_thread\")]`"
    );
    assert_eq!(
        main_error(quote!(flavor = "local", worker_threads = 2), m()),
        "The `worker_threads` option requires the `multi_thread` runtime flavor. Use `#[tokio::main(flavor = \"multi_thread\")]`"
    );
    assert_eq!(
        main_error(quote!(start_paused = true), m()),
        "The `start_paused` option requires the `current_thread` runtime flavor. Use `#[tokio::main(flavor = \"current_thread\")]`"
    );
    // Even `false` is refused with the thread pool, as in Tokio.
    assert_eq!(
        test_error(quote!(flavor = "multi_thread", start_paused = false), t()),
        "The `start_paused` option requires the `current_thread` runtime flavor. Use `#[tokio::test(flavor = \"current_thread\")]`"
    );
    assert_eq!(
        main_error(quote!(unhandled_panic = "ignore"), m()),
        "The `unhandled_panic` option requires the `current_thread` runtime flavor. Use `#[tokio::main(flavor = \"current_thread\")]`"
    );
}

#[test]
fn without_rt_multi_thread_the_thread_pool_is_refused() {
    let output = run(
        Kind::Main,
        false,
        quote!(),
        quote!(
            async fn main() {}
        ),
    );
    assert_eq!(
        error(output),
        "The default runtime flavor is `multi_thread`, but the `rt-multi-thread` feature is disabled."
    );
    let output = run(
        Kind::Test,
        false,
        quote!(flavor = "multi_thread"),
        quote!(
            async fn t() {}
        ),
    );
    assert_eq!(
        error(output),
        "The runtime flavor `multi_thread` requires the `rt-multi-thread` feature."
    );
    ok(run(
        Kind::Main,
        false,
        quote!(flavor = "current_thread"),
        quote!(
            async fn main() {}
        ),
    ));
    ok(run(
        Kind::Test,
        false,
        quote!(),
        quote!(
            async fn t() {}
        ),
    ));
}

#[test]
fn on_error_the_function_is_expanded_with_defaults() {
    let output = test(
        quote!(crate = "mine", flavor = "bogus"),
        quote!(
            async fn t() -> u8 {
                7
            }
        ),
    );
    let f = output.function.as_ref().unwrap().clone();
    let (_, call) = ok(Output {
        function: Some(f),
        errors: Vec::new(),
    });
    // As Tokio does, the default crate path and flavor are used.
    assert_eq!(call.function, tokens(quote!(::tokio::__private::run_test)));
    assert_eq!(call.options["flavor"], tokens(quote!("current_thread")));
    assert_eq!(output.errors.len(), 1);
}

#[test]
fn a_non_function_is_given_back_with_the_error() {
    let item = quote!(
        struct S;
    );
    let tokens = expand(Kind::Test, true, quote!(), item.clone()).to_string();
    assert!(tokens.starts_with(&item.to_string()), "{tokens}");
    assert!(tokens.contains("compile_error"), "{tokens}");
}

#[test]
fn syntax_errors_in_the_body_are_left_to_rustc() {
    // The body is not parsed as statements, so a broken one still expands,
    // without an error of ours, and rustc reports the error where it is.
    let output = expand(Kind::Test, true, quote!(), quote!(async fn t() { let = ; })).to_string();
    assert!(!output.contains("compile_error"), "{output}");
    assert!(output.contains("async move { let = ; }"), "{output}");
}
