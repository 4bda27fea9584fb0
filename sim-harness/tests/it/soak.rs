//! Threads killed where they stand, seed after seed: the scenario of
//! `cargo xtask bench --only thread-soak`'s harness half, which runs it
//! for 1,000, 10,000 and 100,000 seeds (`SIM_SEEDS`) in batches of fresh
//! processes (`SIM_SEEDS_PER_PROCESS`) and reads each sweep's summary
//! line. Here, a few seeds: it passes, and says nothing of memory.

use sim_runtime::time::{sleep, Duration};
use std::sync::{Arc, Condvar, Mutex};

#[path = "../../../sim-runtime/benches/executor/sleeper.rs"]
mod sleeper;
use sleeper::sleeper;

/// On node `a`, a sleeper and a thread blocked on a condition variable
/// nobody signals; on node `b`, a thread that sleeps 2 ms and ends, joined
/// from `spawn_blocking` (awaited); on the main node, a sleeper still
/// running when the seed ends. Then, 5 ms later, `a` is crashed (even
/// seeds) or killed (odd ones) and `b` killed: their threads end where
/// they stand.
#[sim::test(seeds = 0..4)]
async fn threads_killed_where_they_stand() {
    let a = sim::node("a").build();
    let b = sim::node("b").build();
    a.spawn(async {
        std::thread::spawn(sleeper);
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        std::thread::spawn(move || {
            let (lock, cv) = &*pair;
            drop(cv.wait_while(lock.lock().unwrap(), |go| !*go).unwrap());
        });
    });
    let b_done = b.spawn(async {
        let t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(2)));
        sim_runtime::task::spawn_blocking(move || t.join().unwrap())
            .await
            .unwrap();
    });
    std::thread::spawn(sleeper);
    b_done.await.unwrap();
    sleep(Duration::from_millis(5)).await;
    if sim::seed() % 2 == 0 {
        a.crash();
    } else {
        a.kill();
    }
    b.kill();
    sleep(Duration::from_millis(3)).await;
}
