//! The store served with `axum::serve` and called through hyper-util's
//! pooled client with its own `HttpConnector`, `TokioExecutor` and
//! `TokioTimer`, with no glue: under `cargo sim test` (`--cfg sim_graph`)
//! axum's and hyper-util's `tokio` is the simulation, the connector's
//! socket2 socket becomes a simulated one (`TcpSocket::from_std_stream`),
//! and its resolver's `getaddrinfo` answers with the node's address. Under
//! `--cfg simulation` alone those crates get real Tokio, which has no
//! runtime inside a simulation: the file is empty then.
#![cfg(sim_graph)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;
use tokio::net::TcpListener;

async fn store() {
    let listener = TcpListener::bind("0.0.0.0:8080").await.unwrap();
    axum::serve(listener, notes::store_app()).await.unwrap();
}

#[sim::test(seeds = 0..20, check_determinism)]
async fn axum_serve_and_hyper_utils_runtime_run_simulated() {
    let node = sim::node("store").start(store);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .build_http();
    let call = |method: &str, body: &'static str| {
        let req = Request::builder()
            .method(method)
            .uri("http://store:8080/kv/a")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let fut = client.request(req);
        async move {
            let resp = tokio::time::timeout(Duration::from_secs(1), fut)
                .await
                .ok()?
                .ok()?;
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.ok()?.to_bytes();
            Some((status, String::from_utf8_lossy(&body).into_owned()))
        }
    };
    // Until answered: the store may not listen yet, and with early timers
    // the timeout may fire while a request is being served.
    let answer = |method: &'static str, body: &'static str| {
        let call = &call;
        async move {
            loop {
                if let Some(r) = call(method, body).await {
                    break r;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    let put = answer("PUT", "one").await;
    assert!(put.0 < 300, "PUT answered {put:?}");
    assert_eq!(answer("GET", "").await, (200, "one".into()));
    // A crashed store does not answer within the client's timeout.
    node.crash();
    assert_eq!(call("GET", "").await, None);
}

/// reqwest, unmodified, calls the axum store by node name: its hyper-util
/// connector and resolver run on the simulated network.
#[sim::test(seeds = 0..20, check_determinism)]
async fn reqwest_calls_axum_by_node_name() {
    let node = sim::node("store").start(store);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let put = loop {
        match client
            .put("http://store:8080/kv/b")
            .body("two")
            .send()
            .await
        {
            Ok(r) => break r,
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    };
    assert!(put.status().is_success(), "PUT answered {}", put.status());
    let got = loop {
        if let Ok(r) = client.get("http://store:8080/kv/b").send().await {
            break r.text().await.unwrap();
        }
    };
    assert_eq!(got, "two");
    // An unknown name fails as DNS would.
    let e = client.get("http://nowhere:8080/").send().await.unwrap_err();
    assert!(e.is_connect(), "{e:?}");
    node.crash();
    assert!(client.get("http://store:8080/kv/b").send().await.is_err());
}

/// tokio-tungstenite, unmodified: `connect_async` reaches a WebSocket echo
/// server (`accept_async` on a Tokio listener) by node name.
#[sim::test(seeds = 0..20, check_determinism)]
async fn tungstenite_connect_async_reaches_a_node() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    sim::node("ws").start(|| async {
        let l = TcpListener::bind("0.0.0.0:9001").await.unwrap();
        loop {
            let (s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let mut ws = tokio_tungstenite::accept_async(s).await.unwrap();
                while let Some(Ok(m)) = ws.next().await {
                    if m.is_text() && ws.send(m).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let (mut ws, _) = loop {
        match tokio_tungstenite::connect_async("ws://ws:9001/").await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    };
    ws.send(Message::text("hello")).await.unwrap();
    let echoed = ws.next().await.unwrap().unwrap();
    assert_eq!(echoed.into_text().unwrap().as_str(), "hello");
}
