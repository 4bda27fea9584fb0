//! The thread workloads of `sim-runtime/benches/executor/threads.rs`,
//! written against shuttle's own thread model (`shuttle::thread`,
//! `shuttle::sync`), so `cargo xtask bench --only threads` can put shuttle
//! beside real threads and sim.
//!
//! ```text
//! cd bench/shuttle
//! CARGO_TARGET_DIR=../../target/bench-shuttle \
//!     cargo run --release -- [--runs N] [--warmup N] [--only NAME]...
//! ```
//!
//! Each run of a workload is one execution of shuttle's `Runner` with its
//! random scheduler (`RandomScheduler::new(1)`: one schedule), with no step
//! bound (`MaxSteps::None`). Shuttle runs every thread of the test as a
//! continuation on the test's own OS thread, switching stacks itself, so a
//! hand-off never reaches the kernel. A crate of its own, outside sim's
//! workspace, so a normal build of sim never compiles shuttle.

#[allow(dead_code)]
#[path = "../../common.rs"]
mod common;

use common::{parse_args, report};
use shuttle::scheduler::RandomScheduler;
use shuttle::sync::{Condvar, Mutex};
use shuttle::{Config, MaxSteps, Runner};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MODE: &str = "shuttle";
const WORKLOADS: &[&str] = &["threads_pingpong", "threads_spawn"];
/// As in sim's executor bench.
const ROUND_TRIPS: usize = 100_000;
const SPAWNS: usize = 10_000;

/// One execution of `f` under shuttle's random scheduler.
fn execute(f: impl Fn() + Send + Sync + 'static) {
    let mut config = Config::new();
    config.max_steps = MaxSteps::None;
    Runner::new(RandomScheduler::new(1), config).run(f);
}

/// The test's main thread and one thread take turns `n` times each over a
/// `Mutex` + `Condvar` (the counter's parity says whose turn it is).
fn ping_pong(n: usize) {
    let pair = Arc::new((Mutex::new(0usize), Condvar::new()));
    let p = pair.clone();
    let peer = shuttle::thread::spawn(move || take_turns(&p, 1, n));
    take_turns(&pair, 0, n);
    peer.join().unwrap();
    assert_eq!(*pair.0.lock().unwrap(), 2 * n, "every turn was taken");
}

fn take_turns(pair: &(Mutex<usize>, Condvar), me: usize, n: usize) {
    let (lock, cv) = pair;
    let mut turn = lock.lock().unwrap();
    for _ in 0..n {
        while *turn % 2 != me {
            turn = cv.wait(turn).unwrap();
        }
        *turn += 1;
        cv.notify_one();
    }
}

/// `n` threads, each started and joined before the next.
fn spawn_join(n: usize) {
    for i in 0..n {
        let got = shuttle::thread::spawn(move || i + 1).join().unwrap();
        assert_eq!(got, i + 1);
    }
}

/// (a run of `n` − a run of none) / `count`, in µs.
fn per(d: Duration, empty: impl FnOnce(), count: usize) -> f64 {
    let start = Instant::now();
    empty();
    d.saturating_sub(start.elapsed()).as_secs_f64() * 1e6 / count as f64
}

fn main() {
    let opts = parse_args("bench-shuttle", WORKLOADS);
    if opts.wanted("threads_pingpong") {
        report(
            MODE,
            "threads_pingpong",
            "us/handoff",
            &opts,
            || execute(|| ping_pong(ROUND_TRIPS)),
            |d| per(d, || execute(|| ping_pong(0)), 2 * ROUND_TRIPS),
        );
    }
    if opts.wanted("threads_spawn") {
        report(
            MODE,
            "threads_spawn",
            "us/spawn",
            &opts,
            || execute(|| spawn_join(SPAWNS)),
            |d| per(d, || execute(|| spawn_join(0)), SPAWNS),
        );
    }
}
