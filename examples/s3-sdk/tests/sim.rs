//! aws-sdk-s3, its whole stack unmodified (smithy's runtime, hyper, its
//! retries and checksums) on the simulated Tokio against the sim-s3 node:
//! `cargo sim test -p s3-sdk`. Under `--cfg simulation` alone the SDK
//! gets real Tokio: the file is empty then.
#![cfg(sim_graph)]

mod suite;

use sim_s3::{Faults, S3};

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        // The cases check S3's answers, not a client's patience: no early
        // timers (see sim-s3's tests/sim.rs).
        #[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
        async fn $name() {
            let faults = Faults::new();
            let f = faults.clone();
            sim::node("s3").start(move || {
                S3::new("/s3").bucket(suite::BUCKET).faults(&f).run("0.0.0.0:9000")
            });
            let s3 = suite::client("http://s3:9000");
            suite::$name(&s3, &faults).await;
        }
    )*};
}

cases!(
    objects,
    listings,
    conditional_writes,
    multipart_and_copy,
    throttled,
    streaming_upload,
);
