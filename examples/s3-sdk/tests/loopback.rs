//! aws-sdk-s3 on real Tokio against sim-s3 on loopback (`cargo test`).

#![cfg(not(simulation))]

mod suite;

use sim_s3::{Faults, S3};

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let dir = tempfile::tempdir().unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let faults = Faults::new();
            let server = tokio::spawn(
                S3::new(dir.path()).bucket(suite::BUCKET).faults(&faults).serve(listener),
            );
            let s3 = suite::client(&format!("http://127.0.0.1:{port}"));
            suite::$name(&s3, &faults).await;
            server.abort();
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
