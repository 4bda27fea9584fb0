//! aws-sdk-s3, its whole stack unmodified (smithy's runtime, hyper, its
//! retries and checksums) on the simulated Tokio against the sim-s3 node:
//! `cargo sim test -p s3-sdk`. Under `--cfg simulation` alone the SDK
//! gets real Tokio: the file is empty then.
//!
//! The cases check S3's answers, not a client's patience: no early timers
//! (which now and then jump the clock to the next deadline, so a request
//! may time out that the server would have answered).
#![cfg(sim_graph)]

mod suite;

use aws_sdk_s3::Client;
use sim_s3::{Faults, S3};

/// The S3 node, and a client for it.
fn s3() -> (Client, Faults) {
    let faults = Faults::new();
    let f = faults.clone();
    sim::node("s3").start(move || {
        S3::new("/s3")
            .bucket(suite::BUCKET)
            .faults(&f)
            .run("0.0.0.0:9000")
    });
    (suite::client("http://s3:9000"), faults)
}

#[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
async fn objects() {
    let (s3, faults) = s3();
    suite::objects(&s3, &faults).await
}

#[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
async fn listings() {
    let (s3, faults) = s3();
    suite::listings(&s3, &faults).await
}

#[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
async fn conditional_writes() {
    let (s3, faults) = s3();
    suite::conditional_writes(&s3, &faults).await
}

#[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
async fn multipart_and_copy() {
    let (s3, faults) = s3();
    suite::multipart_and_copy(&s3, &faults).await
}

#[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
async fn throttled() {
    let (s3, faults) = s3();
    suite::throttled(&s3, &faults).await
}

#[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
async fn streaming_upload() {
    let (s3, faults) = s3();
    suite::streaming_upload(&s3, &faults).await
}
