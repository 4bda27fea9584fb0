//! Two writers append to one log in the simulated S3 while its faults are
//! drawn from the seed (lost replies, 503s, 500s, 409s, slow first bytes)
//! and early timers end requests the store was still serving. Then the
//! faults heal, and the log must hold every acknowledged record, and no
//! record twice.

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use s3_log::{Log, Variant};
use sim_s3::{Faults, S3};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WRITERS: [&str; 2] = ["a", "b"];
const APPENDS: usize = 4;

pub fn client() -> AmazonS3 {
    AmazonS3Builder::new()
        .with_endpoint("http://s3:9000")
        .with_virtual_hosted_style_request(false)
        .with_bucket_name("log")
        .with_region("us-east-1")
        .with_access_key_id("sim")
        .with_secret_access_key("sim")
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(true)
                .with_timeout(Duration::from_secs(1)),
        )
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(20),
                max_backoff: Duration::from_millis(200),
                base: 2.0,
            },
            max_retries: 3,
            retry_timeout: Duration::from_secs(10),
        })
        .build()
        .expect("object_store's S3 client builds")
}

pub async fn scenario(variant: Variant) {
    let faults = Faults::new();
    faults.drawn();
    let f = faults.clone();
    sim::node("s3").start(move || S3::new("/s3").bucket("log").faults(&f).run("0.0.0.0:9000"));
    // What each append's caller was told: `true` acknowledged.
    let told: Arc<Mutex<BTreeMap<String, bool>>> = Arc::default();
    let writers: Vec<_> = WRITERS
        .iter()
        .map(|w| {
            let told = told.clone();
            sim::node(format!("writer-{w}")).build().spawn(async move {
                let log = Log::new(Arc::new(client()), w, variant);
                for i in 0..APPENDS {
                    let record = format!("{w}{i}");
                    let acked = log.append(&record).await.is_ok();
                    told.lock().unwrap().insert(record, acked);
                }
            })
        })
        .collect();
    for w in writers {
        w.await.expect("a writer");
    }
    faults.heal();
    let reader = Log::new(Arc::new(client()), "reader", variant);
    let log = loop {
        match reader.read().await {
            Ok(log) => break log,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let mut seen = BTreeMap::new();
    for (segment, record) in &log {
        if let Some(first) = seen.insert(record.clone(), segment.clone()) {
            panic!(
                "record {record:?} is in the log twice (segment {first} committed again); \
                 the log: {log:?}"
            );
        }
    }
    for (record, acked) in told.lock().unwrap().iter() {
        assert!(
            !acked || seen.contains_key(record),
            "record {record:?} was acknowledged but is not in the log: {log:?}"
        );
    }
}
