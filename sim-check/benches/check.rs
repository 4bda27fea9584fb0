//! The checker's speed on histories from a simulated correct store (the
//! tests' generator, `tests/it/store.rs`): deterministic, linearizable by
//! construction. Run with `cargo bench -p sim-check`; prints one line per
//! workload and fails if a verdict is not `Ok`.

#[path = "../tests/it/store.rs"]
#[allow(dead_code)]
mod store;

use sim_check::{linearizable, History, Kv, Model, Register};
use std::time::{Duration, Instant};
use store::{Exec, Rng, Shape};

struct Workload {
    name: &'static str,
    goal: Duration,
}

fn measure<M: Exec>(w: &Workload, model: &M, seed: u64, shape: &Shape)
where
    M::Input: Clone,
{
    let h: History<M::Input, M::Output> = store::run(model, &mut Rng::new(seed), shape);
    let unknown = h
        .ops()
        .iter()
        .filter(|op| op.outcome().is_uncertain())
        .count();
    // Best of three: the machine is shared.
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let verdict = linearizable(model, &h);
        best = best.min(start.elapsed());
        if let Err(e) = verdict {
            panic!("{}: a correct store's history was rejected:\n{e}", w.name);
        }
    }
    println!(
        "{:<44} {:>6} ops {:>5} uncertain  {:>9.3} ms  (goal < {} ms)",
        w.name,
        h.len(),
        unknown,
        best.as_secs_f64() * 1e3,
        w.goal.as_millis()
    );
}

fn main() {
    // `cargo test --benches` runs this with `--bench`-less arguments; only
    // `cargo bench` measures.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    measure(
        &Workload {
            name: "kv: 10,000 ops, 10 clients, 100 keys",
            goal: Duration::from_secs(1),
        },
        &Kv::<u8, u8>::new(),
        1,
        &Shape {
            clients: 10,
            ops: 10_000,
            keys: 100,
            unknown: 0,
            fail: 0,
            pending: false,
        },
    );
    measure(
        &Workload {
            name: "kv: same, 20% unknown",
            goal: Duration::from_secs(1),
        },
        &Kv::<u8, u8>::new(),
        2,
        &Shape {
            clients: 10,
            ops: 10_000,
            keys: 100,
            unknown: 20,
            fail: 0,
            pending: false,
        },
    );
    let register = Register::new(0u8);
    measure(
        &Workload {
            name: "register: 1,000 ops, 10 clients, 20% unknown",
            goal: Duration::from_secs(5),
        },
        &register,
        3,
        &Shape {
            clients: 10,
            ops: 1_000,
            keys: 10,
            unknown: 20,
            fail: 0,
            pending: false,
        },
    );
    let _ = register.init();
}
