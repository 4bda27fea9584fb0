//! The failover scenario, shared by `tests/sim.rs` (the fixed store passes
//! it on every seed; the planted bug is found) and `tests/demo.rs` (the
//! planted bug, for `cargo xtask demo`).
//!
//! Three replicas. A workload of 2–3 clients (`sim::Workload`, drawn from
//! the swarm) writes keys through the primary `kv1` while, at seeded
//! moments, a backup is cut off from the primary and then the primary
//! crashes. The driver fails over to a seeded backup and reads every key
//! there. Every call goes into a `sim::History`, and the service promises
//! that the history is linearizable as a key-value map: a write the
//! primary acknowledged is seen by every later read. A write that timed out
//! or was answered `ERR` may or may not have happened (unknown); one that
//! never connected certainly did not (failed).

use kv::{Client, Config, Replication};
use sim::check::{Kv, KvOp, KvRet};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::time::{sleep, timeout};

/// Keys the clients write: few, so writes to one key overlap.
const KEYS: u64 = 4;

type History = sim::History<KvOp<String, String>, KvRet<String>>;

/// The fault plan's own random stream (splitmix64), seeded from the run's
/// seed by label, so the plan does not shift when the services draw.
struct Plan(u64);

impl Plan {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }

    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo))
    }
}

pub async fn acked_writes_survive_failover(replication: Replication) {
    let primary = sim::node("kv1")
        .ip("10.0.0.11")
        .start(move || kv::serve(Config::primary(&["kv2:7000", "kv3:7000"], replication)));
    sim::node("kv2")
        .ip("10.0.0.12")
        .start(|| kv::serve(Config::backup()));
    sim::node("kv3")
        .ip("10.0.0.13")
        .start(|| kv::serve(Config::backup()));

    let mut plan = Plan(sim::fork_seed("faults"));
    // Each backup sits at its own distance from the primary.
    for backup in ["kv2", "kv3"] {
        let latency = plan.ms(1, 8);
        sim::net::set_latency("kv1", backup, latency, latency / 4);
        sim::net::set_latency(backup, "kv1", latency, latency / 4);
    }
    let backups = ["kv2", "kv3"];
    let new_primary = backups[plan.below(2) as usize];
    let crash_at = plan.ms(20, 400);
    let crashed = primary.clone();
    sim::at(crash_at, move || crashed.crash());
    // A quarter of the plans first cut the primary off from one backup: a
    // primary that acknowledges before replicating keeps acknowledging.
    if plan.below(4) == 0 {
        let cut = backups[plan.below(2) as usize];
        sim::at(plan.ms(0, crash_at.as_millis() as u64), move || {
            sim::net::partition("kv1", cut)
        });
    }

    // Let the replicas listen.
    sleep(Duration::from_millis(1)).await;
    let history = History::new();
    // Each client's connection to the primary, kept between its writes.
    let conns: Rc<RefCell<BTreeMap<u32, Client>>> = Rc::default();
    let h = history.clone();
    sim::Workload::new("kv")
        .clients(2..=3)
        .ops(8..=15)
        .think_ms(0..=20)
        .duration(crash_at)
        .op("put", 1, move |mut op| {
            let (h, conns) = (h.clone(), conns.clone());
            async move {
                let key = format!("k{}", op.rng().below(KEYS));
                let value = format!("v{}-{}", op.client(), op.index());
                let call = h.invoke(op.client(), KvOp::Put(key.clone(), value.clone()));
                let conn = conns.borrow_mut().remove(&op.client());
                let conn = match conn {
                    Some(c) => c,
                    None => {
                        match timeout(Duration::from_secs(2), Client::connect("kv1:7000")).await {
                            Ok(Ok(c)) => c,
                            // Never reached the primary: certainly not written.
                            _ => return call.fail(),
                        }
                    }
                };
                let mut conn = conn;
                match timeout(Duration::from_secs(2), conn.put(&key, &value)).await {
                    Ok(Ok(())) => {
                        conns.borrow_mut().insert(op.client(), conn);
                        call.ok(KvRet::Put)
                    }
                    // A timeout, a reset, or `ERR not replicated` (the
                    // primary stored it and keeps forwarding): it may have
                    // happened.
                    _ => call.unknown(),
                }
            }
        })
        .run()
        .await;

    // Failover: once the primary is down, the chosen backup serves.
    sleep(crash_at.saturating_sub(sim::elapsed()) + Duration::from_secs(1)).await;
    assert!(!primary.is_alive(), "the plan crashed the primary");
    let mut reader = Client::connect(&format!("{new_primary}:7000"))
        .await
        .expect("the new primary accepts connections");
    // The reader is a client of its own, after the writers.
    const READER: u32 = 1_000;
    for k in 0..KEYS {
        let key = format!("k{k}");
        let call = history.invoke(READER, KvOp::Get(key.clone()));
        let got = reader.get(&key).await.expect("the new primary answers");
        call.ok(KvRet::Get(got));
    }
    tracing::info!(
        ops = history.len(),
        "failed over to {new_primary}; checking the history"
    );
    history.assert_linearizable(&Kv::new());
}
