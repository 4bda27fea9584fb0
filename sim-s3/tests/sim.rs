//! The suite simulated, object_store and its whole stack (reqwest, hyper,
//! rustls' absence, its retries and backoff) unmodified on the simulated
//! Tokio: `cargo sim test -p sim-s3`. The S3 node's objects live on its
//! simulated disk, through crashes. Under `--cfg simulation` alone
//! object_store gets real Tokio, which has no runtime inside a simulation:
//! the file is empty then.
#![cfg(sim_graph)]

mod suite;

use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions};
use sim_s3::{Faults, S3};
use std::time::Duration;

/// The S3 node, serving `suite::BUCKET` from `/s3` on its disk.
fn s3_node(faults: &Faults) -> sim::Node {
    let f = faults.clone();
    sim::node("s3").start(move || {
        S3::new("/s3")
            .bucket(suite::BUCKET)
            .faults(&f)
            .run("0.0.0.0:9000")
    })
}

// The cases check S3's answers, not a client's patience: without early
// timers (which now and then jump the clock to the next deadline, so a
// 500 ms timeout may end a request the server would have answered).
macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[sim::test(seeds = 0..4, check_determinism, early_timers = false)]
        async fn $name() {
            let faults = Faults::new();
            let _node = s3_node(&faults);
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
    throttled_and_failing,
    conflicting,
    lost_reply,
    reset_mid_body,
    hang_until_healed,
    slow_first_byte,
    list_lag,
);

/// Every write the client saw acknowledged survives a crash of the S3
/// node; a write in flight at the crash is there whole or not at all.
#[sim::test(seeds = 0..20, check_determinism)]
async fn acknowledged_objects_survive_a_crash() {
    let faults = Faults::new();
    let node = s3_node(&faults);
    // Patient: with early timers a request may time out and be retried.
    let s3 = suite::client_with("http://s3:9000", Duration::from_secs(5), 10);
    let mut acked = Vec::new();
    let mut rng = sim::Rng::from_seed(sim::fork_seed("crash"));
    let crash_after = rng.below(10) as usize;
    for i in 0..12usize {
        let key = Path::from(format!("log/{i:04}"));
        let body = format!("entry {i}").repeat(100);
        if i == crash_after {
            // Crash while this write is in flight.
            let at = Duration::from_micros(rng.below(3_000));
            let n = node.clone();
            sim::at(at, move || n.crash());
        }
        match s3.put(&key, body.clone().into()).await {
            Ok(_) => acked.push((key, body)),
            Err(_) => {
                if !node.is_alive() {
                    node.restart();
                }
            }
        }
    }
    if !node.is_alive() {
        node.restart();
    }
    for (key, body) in &acked {
        let got = s3.get(key).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], body.as_bytes(), "{key} lost or torn");
    }
    // Whatever is listed is whole.
    let listed = s3
        .list_with_delimiter(Some(&Path::from("log")))
        .await
        .unwrap();
    for meta in listed.objects {
        let got = s3.get(&meta.location).await.unwrap().bytes().await.unwrap();
        assert_eq!(got.len() as u64, meta.size);
        assert!(got.starts_with(b"entry "), "{} is torn", meta.location);
    }
}

/// Faults drawn from the seed: an idempotent write retried by the client
/// lands exactly as written; a conditional create is never doubled.
#[sim::test(seeds = 0..40, check_determinism)]
async fn drawn_faults_keep_writes_whole() {
    let faults = Faults::new();
    faults.drawn();
    let _node = s3_node(&faults);
    let s3 = suite::client_with("http://s3:9000", Duration::from_secs(5), 10);
    for i in 0..8 {
        let key = Path::from(format!("k{i}"));
        let _ = s3.put(&key, format!("v{i}").into()).await;
        let create = PutOptions::from(PutMode::Create);
        let _ = s3
            .put_opts(&Path::from(format!("c{i}")), "once".into(), create)
            .await;
    }
    faults.heal();
    for i in 0..8 {
        if let Ok(got) = s3.get(&Path::from(format!("k{i}"))).await {
            assert_eq!(&got.bytes().await.unwrap()[..], format!("v{i}").as_bytes());
        }
    }
}
