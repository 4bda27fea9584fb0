//! The counter across simulated nodes: two client nodes add to one counter
//! through tonic while a seeded plan cuts one client off for a while,
//! resets the other's connections, and crashes and restarts a client node.
//! A client retries an `Add` (same request id) until it is answered, so
//! every increment it saw acknowledged is counted exactly once: at the end
//! the counter is at least the acknowledged increments and at most the
//! increments sent. Each seed runs twice (`check_determinism`).
#![cfg(simulation)]

use counter::{AddRequest, CounterClient, Counters};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::time::{sleep, timeout};

const URI: &str = "http://counter:50051";

/// Increments acknowledged and sent, over every client incarnation, and
/// the incarnation of each client node that finished its run.
#[derive(Default)]
struct Tally {
    acked: AtomicI64,
    sent: AtomicI64,
    finished: Mutex<BTreeMap<&'static str, u32>>,
}

/// A client node: `n` increments of 1, each retried until answered.
async fn client(name: &'static str, n: u32, tally: Arc<Tally>) {
    let incarnation = sim::runtime::sim::incarnation(sim::runtime::sim::current_node());
    let mut client = CounterClient::new(URI).expect("a valid URI");
    for i in 0..n {
        let request = AddRequest {
            key: "visits".into(),
            delta: 1,
            request_id: format!("{name}-{incarnation}-{i}"),
        };
        tally.sent.fetch_add(1, Ordering::SeqCst);
        loop {
            match timeout(Duration::from_millis(300), client.add(request.clone())).await {
                Ok(Ok(_)) => break,
                Ok(Err(status)) => tracing::debug!(%status, "add failed; retrying"),
                Err(_) => tracing::debug!("add timed out; retrying"),
            }
            sleep(Duration::from_millis(20)).await;
        }
        tally.acked.fetch_add(1, Ordering::SeqCst);
        sleep(Duration::from_millis(10)).await;
    }
    tally.finished.lock().unwrap().insert(name, incarnation);
}

async fn scenario(forget_ids: bool) {
    let counters = Arc::new(Counters::new(forget_ids));
    sim::node("counter").start(move || {
        let counters = counters.clone();
        async move {
            let listener = TcpListener::bind("0.0.0.0:50051").await.unwrap();
            counter::serve(listener, counters).await
        }
    });
    let tally = Arc::new(Tally::default());
    let t = tally.clone();
    let c1 = sim::node("client1").start(move || client("client1", 30, t.clone()));
    let t = tally.clone();
    sim::node("client2").start(move || client("client2", 30, t.clone()));

    let plan = sim::fork_seed("plan");
    let ms = |shift: u32, range: u64| Duration::from_millis(5 + (plan >> shift) % range);
    let (cut_at, cut_for) = (ms(0, 400), ms(10, 600));
    sim::at(cut_at, || sim::net::partition("client2", "counter"));
    sim::at(cut_at + cut_for, || sim::net::heal("client2", "counter"));
    sim::at(ms(20, 600), || {
        sim::net::reset_between("client1", "counter");
    });
    let (crash_at, down_for) = (ms(30, 500), ms(40, 300));
    let c1_id = c1.id();
    let c = c1.clone();
    sim::at(crash_at, move || c.crash());
    sim::at(crash_at + down_for, move || c1.restart());

    // Wait until the faults are over (by 1.2 s) and each client node's
    // current incarnation has finished. Not a fixed sleep: an early timer
    // may jump the clock to the next deadline while the clients still have
    // work, so a far deadline would be reached before they are done.
    loop {
        sleep(Duration::from_millis(50)).await;
        let finished = tally.finished.lock().unwrap().clone();
        let current = sim::runtime::sim::incarnation(c1_id);
        if sim::elapsed() > Duration::from_millis(1200)
            && finished.get("client1") == Some(&current)
            && finished.contains_key("client2")
        {
            break;
        }
    }
    let mut reader = CounterClient::new(URI).unwrap();
    let value = loop {
        if let Ok(Ok(v)) = timeout(Duration::from_millis(300), reader.get("visits")).await {
            break v;
        }
    };
    let (acked, sent) = (
        tally.acked.load(Ordering::SeqCst),
        tally.sent.load(Ordering::SeqCst),
    );
    assert!(
        acked >= 60,
        "both clients finished their 30 adds: {acked} acked"
    );
    assert!(
        (acked..=sent).contains(&value),
        "the counter is {value}: {acked} increments were acknowledged, {sent} sent"
    );
}

#[sim::test(seeds = 0..30, check_determinism)]
async fn every_acknowledged_add_counts_exactly_once() {
    scenario(false).await
}

/// The same plan against a server that forgets request ids: a retried add
/// whose first answer was lost counts twice, and some seed shows it.
#[test]
fn a_server_that_forgets_request_ids_double_counts() {
    let outcome = std::panic::catch_unwind(|| {
        sim::__private::run(
            sim::__private::Options {
                name: "sim::every_acknowledged_add_counts_exactly_once",
                file: "tests/sim.rs",
                package: "counter",
                crate_name: "sim",
                manifest_dir: env!("CARGO_MANIFEST_DIR"),
                seeds: sim::__private::Seeds::Range(0, 30),
                ..Default::default()
            },
            || scenario(true),
        )
    });
    let report = *outcome
        .expect_err("no seed caught the double count")
        .downcast::<String>()
        .unwrap();
    assert!(report.contains("increments were acknowledged"), "{report}");
}
