//! The log simulated whole, object_store and its stack unmodified against
//! the sim-s3 node: `cargo sim test -p s3-log`. Under `--cfg simulation`
//! alone object_store gets real Tokio: the file is empty then.
#![cfg(sim_graph)]

mod scenario;

use s3_log::Variant;

/// The fix keeps every acknowledged record, once, through drawn faults.
/// (`SIM_SEEDS=0..10000` for a longer sweep.)
#[sim::test(seeds = 0..1000)]
async fn every_acknowledged_record_is_in_the_log_once() {
    scenario::scenario(Variant::Fixed).await
}

/// Same seed, same run: the fingerprint check over a few seeds.
#[sim::test(seeds = 0..5, check_determinism)]
async fn the_log_runs_the_same_for_a_seed() {
    scenario::scenario(Variant::Fixed).await
}
