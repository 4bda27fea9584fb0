//! Compiles and runs functions expanded by the macros against a stand-in for
//! sim-runtime's `__private` module, so that the expansion is checked by
//! rustc (name resolution, `?` and return-type inference, attributes) and not
//! only as tokens.

// `::tokio` is the default crate path; make it name this test crate, whose
// root holds the stand-in `__private` module.
extern crate self as tokio;

#[path = "support/runtime.rs"]
pub mod __private;

use __private::{seen, Seen};

/// A second runtime, reached through `crate = "..."`; it marks its options
/// so a test can tell which one ran.
mod other {
    pub mod __private {
        pub use crate::__private::{MainOptions, TestOptions};

        pub fn run_test<F, Fut>(mut options: TestOptions, body: F) -> Fut::Output
        where
            F: FnOnce() -> Fut,
            Fut: std::future::Future,
        {
            options.file = "other";
            crate::__private::run_test(options, body)
        }

        pub fn run_main<Fut: std::future::Future>(
            mut options: MainOptions,
            body: Fut,
        ) -> Fut::Output {
            options.flavor = "other";
            crate::__private::run_main(options, body)
        }
    }
}

fn test_options() -> __private::TestOptions {
    match seen().as_slice() {
        [Seen::Test(options)] => options.clone(),
        other => panic!("expected one run_test, saw {other:?}"),
    }
}

#[sim_runtime_macros::test]
async fn defaults() {
    // The body runs inside run_test, after it recorded its options.
    assert_eq!(
        test_options(),
        __private::TestOptions {
            name: "expansion::defaults",
            file: file!(),
            package: "sim-runtime-macros",
            crate_name: "expansion",
            flavor: "current_thread",
            worker_threads: None,
            start_paused: false,
            runtime_name: None,
        }
    );
}

mod nested {
    #[sim_runtime_macros::test(flavor = "multi_thread", worker_threads = 3)]
    pub(crate) async fn multi_thread() {
        let options = super::test_options();
        assert_eq!(options.name, "expansion::nested::multi_thread");
        assert_eq!(options.flavor, "multi_thread");
        assert_eq!(options.worker_threads, Some(3));
    }
}

#[sim_runtime_macros::test(flavor = "local", start_paused = true, unhandled_panic = "ignore")]
async fn local_paused() {
    let options = test_options();
    assert_eq!(options.flavor, "local");
    assert!(options.start_paused);
}

#[sim_runtime_macros::test(crate = "crate::other")]
async fn crate_path() {
    assert_eq!(test_options().file, "other");
}

async fn may_fail(fail: bool) -> Result<u32, std::num::ParseIntError> {
    if fail {
        "x".parse::<u32>()
    } else {
        Ok(1)
    }
}

// `?` needs the block's return type: it comes from the function's, through
// run_test's signature, as with Tokio's block_on.
#[sim_runtime_macros::test]
async fn question_mark() -> Result<(), Box<dyn std::error::Error>> {
    let one = may_fail(false).await?;
    assert_eq!(one, 1);
    Ok(())
}

// Ignored so that the harness does not run it; `error_comes_back` calls it.
#[sim_runtime_macros::test]
#[ignore = "called by error_comes_back"]
async fn returns_error() -> Result<(), std::num::ParseIntError> {
    may_fail(true).await?;
    Ok(())
}

#[test]
fn error_comes_back() {
    assert!(returns_error().is_err());
}

/// A doc comment, and an inner attribute that must end up on the function.
#[sim_runtime_macros::test]
#[should_panic(expected = "boom")]
async fn should_panic_is_kept() {
    #![allow(unreachable_code)]
    panic!("boom");
    #[allow(clippy::diverging_sub_expression)]
    let _never_reached = 1;
}

#[sim_runtime_macros::test]
#[ignore = "only checks that `#[ignore]` is accepted"]
async fn ignored() {
    unreachable!("ignored tests do not run");
}

#[sim_runtime_macros::test]
#[cfg_attr(all(), ignore = "cfg_attr is kept and applied")]
async fn ignored_by_cfg_attr() {
    unreachable!("ignored tests do not run");
}

#[sim_runtime_macros::test]
async fn trailing_semicolon() {
    let _ = may_fail(false).await;
}

#[sim_runtime_macros::test]
async fn empty() {}

// `main` on any async fn: it becomes a blocking fn with the same parameters
// and return type.
#[sim_runtime_macros::main(flavor = "current_thread", start_paused = true, name = "primary")]
async fn add_one(x: u32) -> u32 {
    may_fail(false).await.unwrap() + x
}

#[sim_runtime_macros::main(worker_threads = 2, crate = "crate::other")]
pub async fn generic<T: std::fmt::Debug + Send>(value: T) -> String {
    format!("{value:?}")
}

#[sim_runtime_macros::main]
async fn main_like() -> Result<(), std::num::ParseIntError> {
    may_fail(false).await?;
    Ok(())
}

#[test]
fn main_runs_the_body() {
    assert_eq!(add_one(41), 42);
    assert_eq!(generic(7u8), "7");
    main_like().unwrap();
    assert_eq!(
        seen(),
        [
            Seen::Main(__private::MainOptions {
                flavor: "current_thread",
                worker_threads: None,
                start_paused: true,
                runtime_name: Some("primary"),
            }),
            Seen::Main(__private::MainOptions {
                flavor: "other",
                worker_threads: Some(2),
                start_paused: false,
                runtime_name: None,
            }),
            Seen::Main(__private::MainOptions {
                flavor: "multi_thread",
                worker_threads: None,
                start_paused: false,
                runtime_name: None,
            }),
        ]
    );
}
