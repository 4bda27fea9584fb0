//! A stand-in for sim-runtime's `__private` module, with the same names and
//! field types, that records the options it is given and polls the body on
//! the calling thread. Test crates mount it as `__private` at their root and
//! declare `extern crate self as tokio;`, so the default `::tokio` path
//! reaches it.

// Each test crate uses a different part of it.
#![allow(dead_code)]

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

#[derive(Clone, Debug, PartialEq)]
pub struct TestOptions {
    pub name: &'static str,
    pub file: &'static str,
    pub package: &'static str,
    pub crate_name: &'static str,
    pub flavor: &'static str,
    pub worker_threads: Option<usize>,
    pub start_paused: bool,
    pub runtime_name: Option<&'static str>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MainOptions {
    pub flavor: &'static str,
    pub worker_threads: Option<usize>,
    pub start_paused: bool,
    pub runtime_name: Option<&'static str>,
}

pub fn run_test<F, Fut>(options: TestOptions, body: F) -> Fut::Output
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    SEEN.with(|s| s.borrow_mut().push(Seen::Test(options)));
    block_on(body())
}

pub fn run_main<Fut: Future>(options: MainOptions, body: Fut) -> Fut::Output {
    SEEN.with(|s| s.borrow_mut().push(Seen::Main(options)));
    block_on(body)
}

/// The options one expansion passed to the stand-in.
#[derive(Clone, Debug, PartialEq)]
pub enum Seen {
    Test(TestOptions),
    Main(MainOptions),
}

thread_local! {
    static SEEN: RefCell<Vec<Seen>> = const { RefCell::new(Vec::new()) };
}

/// Every call this thread made to the stand-in, oldest first. The test
/// harness runs each test on its own thread, so a test sees only its own.
pub fn seen() -> Vec<Seen> {
    SEEN.with(|s| s.borrow().clone())
}

/// Polls a future that never waits on anything; enough for these bodies.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}
