//! In production the server is plain Tokio on a real temporary directory,
//! and the SDK's macros are the real crate's (no platform: no-ops).
#![cfg(not(simulation))]

use tickets::{Client, Durability};

#[tokio::test]
async fn numbers_go_up_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let server = tokio::spawn(tickets::serve(
        47_611,
        path.clone(),
        Durability::SyncThenAnswer,
    ));
    let mut c = loop {
        match Client::connect("127.0.0.1:47611").await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
        }
    };
    assert_eq!(c.next().await.unwrap(), 1);
    assert_eq!(c.next().await.unwrap(), 2);
    server.abort();
    let _ = server.await;
    drop(c);
    let server = tokio::spawn(tickets::serve(47_612, path, Durability::SyncThenAnswer));
    let mut c = loop {
        match Client::connect("127.0.0.1:47612").await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
        }
    };
    assert_eq!(c.next().await.unwrap(), 3);
    server.abort();
}
