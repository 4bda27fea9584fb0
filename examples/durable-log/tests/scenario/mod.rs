//! The crash scenario, shared by `tests/sim.rs` and the canary catalog
//! (`examples/canaries`, its `unsynced_ack`): a client appends records to
//! the log on node `log`, the machine crashes at a seeded moment, comes
//! back, and the recovered log is checked against what was acknowledged.

use durable_log::{check, recover, serve, Durability};
use std::path::Path;
use std::time::Duration;
use tokio::sim;
use tokio::sync::{mpsc, oneshot};

/// Records the client tries to append.
const RECORDS: usize = 20;
/// The crash lands somewhere in this window of virtual time.
const CRASH_WINDOW_US: u64 = 30_000;

/// One run: whether every acknowledged record was recovered, the
/// fingerprint and the virtual time at the end.
pub async fn scenario(durability: Durability) -> (Result<(), String>, u64, Duration) {
    let node = sim::node("log").build();
    // Each disk operation takes a millisecond, so the crash can land
    // between any two of them.
    sim::fs::set_latency(node, Duration::from_millis(1));
    let (tx, rx) = mpsc::channel(1);
    sim::spawn_on(node, serve("/data/log".into(), durability, rx));
    let crash_at = Duration::from_micros(sim::fork_seed("crash") % CRASH_WINDOW_US);
    sim::at(crash_at, move || sim::crash(node));

    let mut acked = Vec::new();
    for i in 0..RECORDS {
        let record = format!("record {i}").into_bytes();
        let (ack, acked_rx) = oneshot::channel();
        if tx.send((record.clone(), ack)).await.is_err() {
            break;
        }
        match acked_rx.await {
            Ok(()) => acked.push(record),
            Err(_) => break, // the service died with the request
        }
    }
    drop(tx);
    // After the crash (if the client finished first), restart the machine
    // and read back what the disk kept.
    tokio::time::sleep_until(tokio::time::Instant::now() + Duration::from_micros(CRASH_WINDOW_US))
        .await;
    if sim::is_alive(node) {
        sim::crash(node);
    }
    sim::revive(node);
    let recovered = sim::spawn_on(node, async { recover(Path::new("/data/log")).await })
        .await
        .unwrap()
        .unwrap();
    sim::fs::check(node);
    (
        check(&acked, &recovered),
        sim::fingerprint(),
        sim::elapsed(),
    )
}
