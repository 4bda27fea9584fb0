//! The counter on loopback: adds, a retried add that must not count twice,
//! a read. In production this is tonic over real sockets; under `--cfg
//! simulation`, over the simulated ones.

use counter::{AddRequest, CounterClient, Counters};
use std::sync::Arc;
use tokio::net::TcpListener;

fn add(key: &str, delta: i64, id: &str) -> AddRequest {
    AddRequest {
        key: key.into(),
        delta,
        request_id: id.into(),
    }
}

#[tokio::test]
async fn adds_count_once_per_request_id() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(counter::serve(listener, Arc::new(Counters::default())));
    let mut client = CounterClient::new(&uri).unwrap();
    assert_eq!(client.add(add("hits", 2, "a")).await.unwrap(), 2);
    assert_eq!(client.add(add("hits", 3, "b")).await.unwrap(), 5);
    // A retry of "b": the same answer, not counted again.
    assert_eq!(client.add(add("hits", 3, "b")).await.unwrap(), 5);
    assert_eq!(client.get("hits").await.unwrap(), 5);
    assert_eq!(client.get("misses").await.unwrap(), 0);
}
