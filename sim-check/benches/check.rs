//! The checker's speed on histories from a simulated correct store (the
//! tests' generator, `tests/it/store.rs`): deterministic, linearizable by
//! construction unless answers are corrupted on purpose. Run with
//! `cargo bench -p sim-check`; prints one line per workload (best of three
//! runs: the machine may be shared) and panics if a verdict is not the
//! expected one. With `--porcupine DIR`, checks Porcupine's published
//! histories from a copy of its repository instead (`check/porcupine.rs`).

#[path = "../tests/it/store.rs"]
#[allow(dead_code)]
mod store;

#[path = "check/porcupine.rs"]
mod porcupine;

use sim_check::{linearizable, CheckError, History, Kv, OpId, Register, RegisterOp, RegisterRet};
use std::time::{Duration, Instant};
use store::{Exec, Rng, Shape};

/// What the check must answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    Violation,
}

fn best_of_three(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap()
}

fn line(name: &str, ops: usize, uncertain: usize, took: Duration, goal: Option<Duration>) {
    let goal = goal.map_or_else(String::new, |g| format!("  (goal < {} ms)", g.as_millis()));
    println!(
        "{name:<58} {ops:>7} ops {uncertain:>5} uncertain {:>10.3} ms{goal}",
        took.as_secs_f64() * 1e3
    );
}

fn measure<M: Exec>(
    name: &str,
    goal: Option<Duration>,
    model: &M,
    h: &History<M::Input, M::Output>,
    expect: Expect,
) {
    let uncertain = h
        .ops()
        .iter()
        .filter(|op| op.outcome().is_uncertain())
        .count();
    let took = best_of_three(|| match (linearizable(model, h), expect) {
        (Ok(()), Expect::Ok) | (Err(CheckError::Violation(_)), Expect::Violation) => {}
        (verdict, _) => panic!("{name}: unexpected verdict: {verdict:?}"),
    });
    line(name, h.len(), uncertain, took, goal);
}

fn main() {
    // `cargo test --all-targets` runs this without `--bench`: only
    // `cargo bench` measures.
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    // `--porcupine DIR [MS [FILE...]]`: Porcupine's published histories
    // instead (see porcupine.rs), each timed over at least MS ms (default
    // 100); only the files named, if any.
    if let Some(at) = args.iter().position(|a| a == "--porcupine") {
        let dir = args.get(at + 1).expect("--porcupine DIR");
        let ms = args.get(at + 2).and_then(|m| m.parse().ok()).unwrap_or(100);
        let only = args.get(at + 3..).unwrap_or_default();
        porcupine::run(std::path::Path::new(dir), Duration::from_millis(ms), only);
        return;
    }
    let kv = Kv::<u8, u8>::new();
    let shape = Shape {
        clients: 10,
        ops: 10_000,
        keys: 100,
        unknown: 0,
        fail: 0,
        pending: false,
    };
    let h = store::run(&kv, &mut Rng::new(1), &shape);
    measure(
        "kv: 10,000 ops, 10 clients, 100 keys",
        Some(Duration::from_secs(1)),
        &kv,
        &h,
        Expect::Ok,
    );
    let shape = Shape {
        unknown: 20,
        ..shape
    };
    let h = store::run(&kv, &mut Rng::new(2), &shape);
    measure(
        "kv: the same with 20% unknown outcomes",
        Some(Duration::from_secs(1)),
        &kv,
        &h,
        Expect::Ok,
    );

    let register = Register::new(0u8);
    let shape = Shape {
        clients: 10,
        ops: 1_000,
        keys: 10,
        unknown: 20,
        fail: 0,
        pending: false,
    };
    let h = store::run(&register, &mut Rng::new(3), &shape);
    measure(
        "register: 1,000 ops, 10 clients, 20% unknown",
        Some(Duration::from_secs(5)),
        &register,
        &h,
        Expect::Ok,
    );
    let shape = Shape {
        unknown: 0,
        ..shape
    };
    let h = store::run(&register, &mut Rng::new(1), &shape);
    let h = store::corrupt(&register, &mut Rng::new(101), &h, 1);
    measure(
        "register: 1,000 ops, 1% answers corrupted (prove, shrink)",
        None,
        &register,
        &h,
        Expect::Violation,
    );

    // Recording: 100,000 operations from 10 clients, each invoked and
    // answered (what the harness does during a run).
    let mut n = 0;
    let took = best_of_three(|| {
        let mut h: History<RegisterOp<u32>, RegisterRet<u32>> = History::with_capacity(100_000);
        let mut open: Vec<Option<OpId>> = vec![None; 10];
        for i in 0..100_000u32 {
            let c = (i % 10) as usize;
            if let Some(id) = open[c].take() {
                h.ok(id, RegisterRet::Write, Duration::from_nanos(u64::from(i)));
            }
            open[c] = Some(h.invoke(
                c as u32,
                RegisterOp::Write(i),
                Duration::from_nanos(u64::from(i)),
            ));
        }
        n = h.len();
        std::hint::black_box(&h);
    });
    line("record: invoke and answer, 10 clients", n, 0, took, None);
}
