//! `#[tokio::main]` and `#[tokio::test]` for sim-runtime under `--cfg simulation`.
//!
//! A service depends on `sim-runtime` under the name `tokio`. In a production
//! build `tokio::main` and `tokio::test` are real Tokio's macros, re-exported.
//! Built with `RUSTFLAGS="--cfg simulation"`, sim-runtime re-exports the
//! macros of this crate instead, so the same `async fn main` and the same
//! `#[tokio::test]` functions run inside a seeded simulation. This crate is
//! only compiled, and only used, under `--cfg simulation`.
//!
//! The macros accept exactly Tokio's arguments and reject bad ones with
//! Tokio's error messages, so code that compiles against one compiles against
//! the other:
//!
//! - `flavor = "current_thread" | "multi_thread" | "local"` (every flavor is
//!   the one seeded thread of the simulation; the flavor is still passed on
//!   so the runtime can report it);
//! - `worker_threads = N` (only with `multi_thread`, as in Tokio);
//! - `start_paused = true | false` (not with `multi_thread`);
//! - `crate = "path"`: where the runtime is found, `::tokio` by default;
//! - `unhandled_panic = "ignore" | "shutdown_runtime"` (not with
//!   `multi_thread`) and `name = "..."`: checked, then ignored, since the
//!   simulation decides itself what a panicking task means and names runs by
//!   their seed.
//!
//! A function such as
//!
//! ```text
//! #[tokio::test(start_paused = true)]
//! async fn heartbeat() -> std::io::Result<()> { /* body */ }
//! ```
//!
//! becomes a plain `#[test]` function that hands its body to the runtime:
//!
//! ```text
//! #[::core::prelude::v1::test]
//! fn heartbeat() -> std::io::Result<()> {
//!     ::tokio::__private::run_test(
//!         ::tokio::__private::TestOptions {
//!             name: ::core::concat!(::core::module_path!(), "::", ::core::stringify!(heartbeat)),
//!             file: ::core::file!(),
//!             package: ::core::env!("CARGO_PKG_NAME"),
//!             crate_name: ::core::env!("CARGO_CRATE_NAME"),
//!             flavor: "current_thread",
//!             worker_threads: ::core::option::Option::None,
//!             start_paused: true,
//!         },
//!         || async move { /* body */ },
//!     )
//! }
//! ```
//!
//! and `#[tokio::main]` likewise calls `__private::run_main(MainOptions { .. },
//! async move { .. })`. The `__private` module belongs to sim-runtime and is
//! not a public API.

use proc_macro::TokenStream;

mod entry;

use entry::Kind;

/// Runs an `async fn` (usually `main`) to completion inside a simulation.
///
/// Accepts the arguments of Tokio's `#[tokio::main]`; the default flavor is
/// `multi_thread`, as in Tokio. See the crate documentation.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Kind::Main, true, args.into(), item.into()).into()
}

/// Like [`macro@main`], for a runtime built without the `rt-multi-thread`
/// feature: as with Tokio, the `multi_thread` flavor (the default of `main`)
/// is then an error.
#[proc_macro_attribute]
pub fn main_rt(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Kind::Main, false, args.into(), item.into()).into()
}

/// Turns an `async fn` into a `#[test]` whose body runs inside a simulation.
///
/// Accepts the arguments of Tokio's `#[tokio::test]`; the default flavor is
/// `current_thread`, as in Tokio. See the crate documentation.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Kind::Test, true, args.into(), item.into()).into()
}

/// Like [`macro@test`], for a runtime built without the `rt-multi-thread`
/// feature: as with Tokio, `flavor = "multi_thread"` is then an error.
#[proc_macro_attribute]
pub fn test_rt(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Kind::Test, false, args.into(), item.into()).into()
}
