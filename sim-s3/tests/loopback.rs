//! The suite on real Tokio: the server on a loopback port and a temporary
//! directory, object_store's S3 client against it (`cargo test`).

#![cfg(not(simulation))]

mod suite;

use sim_s3::{Faults, S3};
use std::future::Future;

/// Starts a server on a free port; runs `case` with a client for it.
async fn with_server<F, Fut>(case: F)
where
    F: FnOnce(object_store::aws::AmazonS3, Faults) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let faults = Faults::new();
    let server = S3::new(dir.path())
        .bucket(suite::BUCKET)
        .faults(&faults)
        .serve(listener);
    let server = tokio::spawn(server);
    case(suite::client(&format!("http://127.0.0.1:{port}")), faults).await;
    server.abort();
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            with_server(|s3, faults| async move { suite::$name(&s3, &faults).await }).await;
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
