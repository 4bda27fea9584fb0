//! The failover scenario, shared by `tests/sim.rs` (the fixed store passes
//! it on every seed; the planted bug is found) and `tests/demo.rs` (the
//! planted bug, for `cargo xtask demo`).
//!
//! Three replicas; the driver writes keys through the primary `kv1` while,
//! at seeded moments, a backup is cut off from the primary and then the
//! primary crashes. The driver fails over to a seeded backup and checks
//! that every write the primary acknowledged is there.

use kv::{Client, Config, Replication};
use std::time::Duration;
use tokio::time::{sleep, timeout};

/// Writes the driver attempts (it stops early when the primary is gone).
const WRITES: usize = 40;

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
    let mut acked = Vec::new();
    let mut client: Option<Client> = None;
    for i in 0..WRITES {
        if !primary.is_alive() {
            break;
        }
        let (key, value) = (format!("k{i}"), format!("v{i}"));
        let put = async {
            if client.is_none() {
                client = Some(Client::connect("kv1:7000").await?);
            }
            client.as_mut().expect("connected").put(&key, &value).await
        };
        match timeout(Duration::from_secs(2), put).await {
            Ok(Ok(())) => acked.push((key, value)),
            // Not acknowledged: the write may or may not have happened.
            _ => client = None,
        }
        // The client thinks a while between writes.
        sleep(plan.ms(0, 20)).await;
    }

    // Failover: once the primary is down, the chosen backup serves.
    sleep(crash_at.saturating_sub(sim::elapsed()) + Duration::from_secs(1)).await;
    assert!(!primary.is_alive(), "the plan crashed the primary");
    let mut reader = Client::connect(&format!("{new_primary}:7000"))
        .await
        .expect("the new primary accepts connections");
    let mut lost = Vec::new();
    for (key, value) in &acked {
        let got = reader.get(key).await.expect("the new primary answers");
        if got.as_deref() != Some(value.as_str()) {
            lost.push(key.clone());
        }
    }
    assert!(
        lost.is_empty(),
        "after failover to {new_primary}, {} of {} acknowledged writes are missing: {lost:?}",
        lost.len(),
        acked.len()
    );
}
