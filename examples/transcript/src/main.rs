//! A plain Tokio program, written as anyone would, with every common source
//! of nondeterminism: task interleaving, timers due at the same instant,
//! `select!`, `HashMap` iteration, `rand`, `SystemTime` and `Instant`.
//!
//! Built normally it is just a Tokio program. Under `--cfg simulation` its
//! transcript is a function of `SIM_SEED`: the same in every process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[tokio::main]
async fn main() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));

    // Interleaving of yielding tasks.
    let mut handles = Vec::new();
    for t in 0..3 {
        let log = log.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..3 {
                log.lock().unwrap().push(format!("task {t} step {i}"));
                tokio::task::yield_now().await;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }

    // Timers due at the same instant.
    let mut handles = Vec::new();
    for t in 0..4 {
        let log = log.clone();
        handles.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            log.lock().unwrap().push(format!("timer {t} fired"));
        }));
    }
    for h in handles {
        h.await.unwrap();
    }

    // select! between two ready branches.
    let mut picks = String::new();
    for _ in 0..8 {
        tokio::select! {
            _ = async {} => picks.push('a'),
            _ = async {} => picks.push('b'),
        }
    }
    log.lock().unwrap().push(format!("select picks {picks}"));

    // HashMap iteration order.
    let map: HashMap<u32, u32> = (0..8).map(|i| (i, i * i)).collect();
    let order: Vec<u32> = map.keys().copied().collect();
    log.lock().unwrap().push(format!("hashmap order {order:?}"));

    // rand, both major versions.
    let r08: u32 = rand08::random();
    let r09: u32 = rand09::random();
    log.lock()
        .unwrap()
        .push(format!("rand 0.8 {r08} rand 0.9 {r09}"));

    // Clocks.
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let start = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    log.lock().unwrap().push(format!(
        "wall {}.{:09} slept {:?}",
        wall.as_secs(),
        wall.subsec_nanos(),
        start.elapsed()
    ));

    for line in log.lock().unwrap().iter() {
        println!("{line}");
    }
}
