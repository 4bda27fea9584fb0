//! The main demo (`cargo xtask demo`): the primary that acknowledges a write
//! before its backups have it. Not part of `cargo test` (`test = false` in
//! Cargo.toml): this sweep fails by design — it is the bug being found.
//! `tests/sim.rs` runs the same test against the fixed store.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

// The scenario drives the simulation (`sim::node`, `sim::net`, …), which
// exists only under `--cfg simulation`.
#[cfg(simulation)]
mod scenario;

use kv::Replication;

#[sim::test(seeds = 0..200)]
async fn acked_writes_survive_failover() {
    scenario::acked_writes_survive_failover(Replication::AckBeforeReplicate).await
}
