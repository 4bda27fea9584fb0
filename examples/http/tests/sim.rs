//! The notes service across simulated nodes: a store, two api nodes and a
//! client, with a seeded fault plan (the link from an api node to the
//! store cut for a while, an api node crashed and restarted). Every note
//! the service acknowledged (201) must read back, through either api node,
//! once the faults are over; each seed runs twice and must make the same
//! decisions (`check_determinism`).
#![cfg(simulation)]

use axum::http::StatusCode;
use notes::{NotesClient, Reply};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::time::sleep;

const APIS: [&str; 2] = ["http://api1", "http://api2"];

async fn store() {
    notes::run_store(TcpListener::bind("0.0.0.0:8080").await.unwrap()).await
}

async fn api() {
    let listener = TcpListener::bind("0.0.0.0:80").await.unwrap();
    notes::run_api(listener, "http://store:8080".into()).await
}

/// Until both api nodes answer `/health`.
async fn until_up(client: &NotesClient) {
    for api in APIS {
        while !matches!(client.get(api, "").await, Reply::Status(..)) {
            sleep(Duration::from_millis(5)).await;
        }
    }
}

#[sim::test(seeds = 0..30, check_determinism)]
async fn acknowledged_notes_survive_partitions_and_api_crashes() {
    sim::node("store").start(store);
    let api1 = sim::node("api1").start(api);
    let api2 = sim::node("api2").start(api);
    let client = NotesClient::default();
    until_up(&client).await;

    // The plan, from the seed: which api node loses the store and when,
    // which api node crashes and when it comes back.
    let plan = sim::fork_seed("plan");
    let ms = |shift: u32, range: u64| Duration::from_millis(20 + (plan >> shift) % range);
    // A cut may outlast an api node's retries (3 × 500 ms): then it
    // must answer 503, never 201.
    let (cut, cut_at, cut_for) = (
        ["api1", "api2"][(plan & 1) as usize],
        ms(1, 400),
        ms(12, 3000),
    );
    let (crashed, crash_at, down_for) = (
        [&api1, &api2][((plan >> 2) & 1) as usize].clone(),
        ms(24, 600),
        ms(36, 500),
    );
    let start = sim::elapsed();
    sim::at(start + cut_at, move || sim::net::partition(cut, "store"));
    sim::at(start + cut_at + cut_for, move || {
        sim::net::heal(cut, "store")
    });
    let c = crashed.clone();
    sim::at(start + crash_at, move || c.crash());
    sim::at(start + crash_at + down_for, move || crashed.restart());

    let mut acked = Vec::new();
    let mut unavailable = 0;
    let mut refused = 0;
    for i in 0..40 {
        let (id, text) = (format!("n{i}"), format!("note {i}"));
        match client.put(APIS[i % 2], &id, &text).await {
            Reply::Status(StatusCode::CREATED, _) => acked.push((id, text)),
            Reply::Status(StatusCode::SERVICE_UNAVAILABLE, _) => refused += 1,
            Reply::NoAnswer => unavailable += 1,
            other => panic!("PUT {id}: unexpected {other:?}"),
        }
        sleep(Duration::from_millis(25)).await;
    }
    tracing::info!(acked = acked.len(), refused, unavailable, "writes done");
    sim::sometimes!(
        refused > 0,
        "an api node refused a write it could not store"
    );
    assert!(!acked.is_empty(), "no write was acknowledged");

    // The faults are over by 4 s past the start.
    sleep((start + Duration::from_secs(4)).saturating_sub(sim::elapsed())).await;
    until_up(&client).await;
    for (i, (id, text)) in acked.iter().enumerate() {
        let got = read(&client, APIS[i % 2], id).await;
        assert_eq!(
            got,
            Reply::Status(StatusCode::OK, text.clone()),
            "acknowledged note {id}"
        );
    }
}

/// A read, retried while there is no answer or the store is unreachable:
/// an early timer may fire any one call's timeout mid-request (a run has at
/// most 32 early jumps), but a note the store lost reads as 404 at once.
async fn read(client: &NotesClient, api: &str, id: &str) -> Reply {
    let mut got = Reply::NoAnswer;
    for _ in 0..40 {
        got = client.get(api, id).await;
        match &got {
            Reply::NoAnswer => {}
            Reply::Status(s, _) if s.is_server_error() => {}
            _ => break,
        }
    }
    got
}
