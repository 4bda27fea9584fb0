//! The catalog's sweep (`cargo xtask canaries`): one `#[sim::test]` per
//! planted bug over seeds 0..200, run once per strategy with
//! `SIM_SCHEDULE` (and once with `SIM_EARLY_TIMERS=off`). Not part of
//! `cargo test` (`test = false` in Cargo.toml): every sweep here fails by
//! design — each is a bug being found. `tests/canaries.rs` checks the
//! bounds and the fixes in `cargo test`. The eight hard canaries are here
//! too: `cargo xtask canaries --hard` sweeps them from several starting
//! seeds with `SIM_SEEDS` to measure seeds-to-find.
#![cfg_attr(not(simulation), allow(unused_imports, unused_macros))]

use canaries::Variant::Buggy;

/// One sweep per canary; the virtual-time limit is what turns the
/// retry-forever client into a failure (class livelock). A replay line
/// names the test, so each canary is its own function.
macro_rules! canary {
    ($($bug:ident),* $(,)?) => {$(
        #[sim::test(seeds = 0..200, time_limit = "60s")]
        async fn $bug() {
            canaries::scenario(stringify!($bug), Buggy).await
        }
    )*};
}

canary!(
    lost_update,
    missed_wakeup,
    lock_order,
    retry_forever,
    run_ahead,
    partial_batch,
    acked_write,
    unsynced_ack,
    eof_as_miss,
    rejected_fill,
    yield_ahead,
    thread_lost_update,
    stale_term,
    torn_log,
    depth3,
    healed_retry,
    drifted_lease,
    compact_crash,
    skewed_pair,
    stale_forward,
);

/// The catalog, one tab-separated line per canary, for `cargo xtask
/// canaries` (which runs this binary with `--nocapture`): name, bound,
/// needs, bug, and a hard canary's first failing seed (`-` for the others).
#[test]
fn catalog() {
    for c in canaries::CATALOG {
        let first = c.first.map_or_else(|| "-".to_string(), |f| f.to_string());
        println!(
            "canary\t{}\t{}\t{}\t{}\t{first}",
            c.name, c.bound, c.needs, c.bug
        );
    }
}
