//! What simulated threads do not do yet (issue 35): each test here fails
//! under `cargo sim test -p threads --features pending`, as its comment
//! says (the same library code passes on real Tokio: `tests/roundtrip.rs`).
//! They sit behind the `pending` feature because most of these failures
//! end or wedge the whole test process (a run blocked for good exits with
//! status 101), which would take the passing tests of `tests/sim.rs` down
//! with them. When one passes, move it to `tests/sim.rs`.
#![cfg(all(sim_graph, feature = "pending"))]

use threads::*;
use tokio::sync::{mpsc, oneshot};

/// rayon's global pool, from a handler task, on every seed.
///
/// Today: the first run in the process that touches the global pool makes
/// its worker a simulated thread of that run, and the registry (a process
/// static in rayon-core) keeps pointing at it after the run ends and the
/// thread is ended where it stood. The next run that injects a job (the
/// same seed's rerun here, or any other seed or test) waits on a
/// `LockLatch` no thread will ever set: "sim: deadlock: a task blocked the
/// executor's thread in user code ..., and no simulated thread or timer can
/// ever release it", and the process exits with status 101. The report adds
/// a note that the run woke a futex word a thread of an earlier run was
/// left blocked on, and says to build the pool in the run
/// (`rayon::ThreadPoolBuilder`, as `tests/sim.rs` does) or run the seed alone.
#[sim::test(seeds = 0..12, check_determinism)]
async fn rayon_global_pool_in_a_handler() {
    let (tx, rx) = mpsc::channel::<SumRequest>(4);
    let server = tokio::spawn(serve_sums(rx, None));
    let clients: Vec<_> = [1_000u64, 12_345]
        .into_iter()
        .map(|n| {
            let tx = tx.clone();
            tokio::spawn(async move {
                let (reply, answer) = oneshot::channel();
                tx.send((n, reply)).await.unwrap();
                (n, answer.await.unwrap())
            })
        })
        .collect();
    drop(tx);
    for c in clients {
        let (n, sum) = c.await.unwrap();
        assert_eq!(sum, sum_of_squares_formula(n), "n={n}");
    }
    server.await.unwrap();
}

/// The same, reduced: two simulations one after the other in one process,
/// each summing on the global pool. Today the second deadlocks.
#[test]
fn rayon_global_pool_in_two_runs() {
    for seed in [1, 2] {
        let sum = sim::World::new(seed).block_on(async { sum_of_squares(100) });
        assert_eq!(sum, sum_of_squares_formula(100), "seed {seed}");
    }
}
