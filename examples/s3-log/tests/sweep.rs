//! The planted bug's sweep: fails by design (`test = false`), run by
//! `tests/found.rs` through the harness; by hand:
//! `cargo sim test -p s3-log --test sweep`.
#![cfg(sim_graph)]

mod scenario;

#[sim::test(seeds = 0..200)]
async fn buggy_log() {
    scenario::scenario(s3_log::Variant::Buggy).await
}
