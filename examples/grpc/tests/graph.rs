//! tonic's own transport, unmodified: `transport::Server` serves the
//! counter and `Endpoint::connect` reaches it by node name, with no glue.
//! Under `cargo sim test` (`--cfg sim_graph`) tonic's `tokio` is the
//! simulation, its connector's socket2 socket becomes a simulated one and
//! its resolver's `getaddrinfo` answers with the node's address. Under
//! `--cfg simulation` alone tonic gets real Tokio: the file is empty then.
#![cfg(sim_graph)]

use counter::{AddRequest, CounterClient, CounterServer, Counters};
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Endpoint, Server};

#[sim::test(seeds = 0..20, check_determinism)]
async fn tonic_transport_server_and_endpoint_connect_run_simulated() {
    sim::node("counter").start(|| async {
        Server::builder()
            .add_service(CounterServer::new(Arc::new(Counters::new(false))))
            .serve("0.0.0.0:50051".parse().unwrap())
            .await
            .unwrap();
    });
    let channel = loop {
        match Endpoint::from_static("http://counter:50051")
            .connect()
            .await
        {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    };
    let mut client = CounterClient::from_channel(channel);
    let add = |id: &str| AddRequest {
        key: "visits".into(),
        delta: 2,
        request_id: id.into(),
    };
    assert_eq!(client.add(add("r1")).await.unwrap(), 2);
    // The same request id again is counted once.
    assert_eq!(client.add(add("r1")).await.unwrap(), 2);
    assert_eq!(client.add(add("r2")).await.unwrap(), 4);
    assert_eq!(client.get("visits").await.unwrap(), 4);
}
