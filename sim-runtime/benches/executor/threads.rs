//! OS threads (issue 35 items 5 and 9), run only when named:
//!
//! - `threads_pingpong`: two threads hand a turn back and forth over a std
//!   `Mutex` + `Condvar`, [`ROUND_TRIPS`] times (two hand-offs each);
//! - `threads_spawn`: a thread started and joined, [`SPAWNS`] times in turn;
//! - `thread_soak` (simulation only): seed after seed in one process, each
//!   starting threads on nodes that are then crashed or killed (their
//!   threads killed where they stand) and leaving others running at the
//!   end; prints the process's OS threads and resident set as it goes.
//!
//! The workloads are plain std code. A normal build runs them in the plain
//! process on real threads; a simulation build runs them in a simulated
//! run, inside `spawn_blocking` (a simulated thread of the main node), so
//! every thread they start is simulated and every hand-off goes through
//! the seed. The same workloads against shuttle's thread model are in
//! `bench/shuttle`. `cargo xtask bench --only threads` and `--only
//! thread-soak` run them.

#[cfg(simulation)]
#[path = "sleeper.rs"]
mod sleeper;

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Round trips of `threads_pingpong` (each two hand-offs).
pub const ROUND_TRIPS: usize = 100_000;
/// Threads started and joined by `threads_spawn`.
pub const SPAWNS: usize = 10_000;

/// The caller and one thread take turns `n` times each: the turn counter's
/// parity says whose turn it is; each side waits on the condition variable
/// until it is its own, takes it, and signals.
fn ping_pong(n: usize) {
    let pair = Arc::new((Mutex::new(0usize), Condvar::new()));
    let p = pair.clone();
    let peer = std::thread::spawn(move || take_turns(&p, 1, n));
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
        let got = std::thread::spawn(move || i + 1).join().unwrap();
        assert_eq!(got, i + 1);
    }
}

/// Runs `f` where this build runs threads: in simulation, inside
/// `spawn_blocking` of a fresh run; otherwise, here.
fn on_threads(f: impl FnOnce() + Send + 'static) {
    #[cfg(simulation)]
    super::workloads::runtime(0, false).block_on(async move {
        sim_runtime::task::spawn_blocking(f).await.unwrap();
    });
    #[cfg(not(simulation))]
    f();
}

/// `threads_pingpong` and `threads_spawn`, when named: µs per hand-off and
/// per start + join, each as (a run of the workload − a run of none, the
/// same set-up) over its count.
pub fn report(opts: &super::Opts) {
    let named = |n: &str| opts.only.iter().any(|o| o == n);
    let per = |d: Duration, empty: fn(), count: usize| {
        let start = Instant::now();
        empty();
        let setup = start.elapsed();
        d.saturating_sub(setup).as_secs_f64() * 1e6 / count as f64
    };
    if named("threads_pingpong") {
        super::report(
            "threads_pingpong",
            "us/handoff",
            opts,
            || on_threads(|| ping_pong(ROUND_TRIPS)),
            |d| per(d, || on_threads(|| ping_pong(0)), 2 * ROUND_TRIPS),
        );
    }
    if named("threads_spawn") {
        super::report(
            "threads_spawn",
            "us/spawn",
            opts,
            || on_threads(|| spawn_join(SPAWNS)),
            |d| per(d, || on_threads(|| spawn_join(0)), SPAWNS),
        );
    }
    #[cfg(simulation)]
    if named("thread_soak") {
        soak(opts.seeds);
    }
}

/// The seeds after which `thread_soak` reports.
#[cfg(simulation)]
pub const SOAK_MARKS: [u64; 4] = [100, 1_000, 10_000, 100_000];

/// `thread_soak`: `seeds` seeds in turn, each a fresh run. After each mark
/// of [`SOAK_MARKS`] (up to `seeds`) it prints
/// `SOAK sim <seeds> <OS threads> <VmRSS KiB> <seconds so far>`, as
/// `/proc/self/status` gives them.
#[cfg(simulation)]
pub fn soak(seeds: u64) {
    let start = Instant::now();
    let status = || {
        let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |name: &str| -> u64 {
            s.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        (field("Threads:"), field("VmRSS:"))
    };
    let (threads, rss) = status();
    println!("SOAK sim 0 {threads} {rss} 0.000");
    for seed in 0..seeds {
        soak_seed(seed);
        let done = seed + 1;
        if SOAK_MARKS.contains(&done) || done == seeds {
            let (threads, rss) = status();
            let s = start.elapsed().as_secs_f64();
            eprintln!("  sim thread_soak {done:>7} seeds: {threads} threads, {rss} KiB resident, {s:.1} s");
            println!("SOAK sim {done} {threads} {rss} {s:.3}");
        }
    }
}

/// One seed of `thread_soak`: on node `a`, a thread looping on 1 ms sleeps
/// (with a thread-local it filled) and one blocked on a condition variable
/// nobody signals; on node `b`, a thread that sleeps 2 ms and ends, joined
/// by its task; on the main node, a thread looping on sleeps that is still
/// running when the run ends. After 5 ms `a` is crashed (even seeds) or
/// killed (odd seeds), and `b` is killed; the run ends 3 ms later.
#[cfg(simulation)]
fn soak_seed(seed: u64) {
    use sim_runtime::sim;
    use sleeper::sleeper;
    super::workloads::runtime(seed, true).block_on(async move {
        let a = sim::node("a").build();
        let b = sim::node("b").build();
        sim::spawn_on(a, async {
            std::thread::spawn(sleeper);
            let pair = Arc::new((Mutex::new(false), Condvar::new()));
            std::thread::spawn(move || {
                let (lock, cv) = &*pair;
                drop(cv.wait_while(lock.lock().unwrap(), |go| !*go).unwrap());
            });
        });
        let b_done = sim::spawn_on(b, async {
            let t = std::thread::spawn(|| std::thread::sleep(Duration::from_millis(2)));
            sim_runtime::task::spawn_blocking(move || t.join().unwrap())
                .await
                .unwrap();
        });
        std::thread::spawn(sleeper);
        sim_runtime::time::sleep(Duration::from_millis(5)).await;
        assert!(b_done.is_finished(), "b's thread ended and was joined");
        if seed % 2 == 0 {
            sim::crash(a);
        } else {
            sim::kill(a);
        }
        sim::kill(b);
        sim_runtime::time::sleep(Duration::from_millis(3)).await;
    });
}
