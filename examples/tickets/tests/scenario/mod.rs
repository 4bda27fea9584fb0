//! One run: the server on a node with a simulated disk, a client asking
//! for numbers, and a crash and restart of the server at a seeded moment.
//! The client checks, with antithesis_sdk's `assert_always!`, that no
//! number comes twice.

use antithesis_sdk::{assert_always, assert_sometimes};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;
use tickets::{Client, Durability};
use tokio::time::{sleep, timeout};

const ADDR: &str = "tickets:7";

pub async fn scenario(durability: Durability) {
    let server = sim::node("tickets").start(move || async move {
        let _ = tickets::serve(7, PathBuf::from("/data/tickets"), durability).await;
    });
    let plan = sim::fork_seed("plan");
    let crash_at = Duration::from_millis(5 + plan % 60);
    let down_for = Duration::from_millis(1 + (plan >> 8) % 30);
    let s = server.clone();
    sim::at(crash_at, move || s.crash());
    sim::at(crash_at + down_for, move || server.restart());
    let back_at = tokio::time::Instant::now() + crash_at + down_for;

    let mut seen = BTreeSet::new();
    let mut client = None;
    let mut failures = 0u32;
    // Numbers until the server is back from its crash, and a few more.
    while seen.len() < 12 || tokio::time::Instant::now() < back_at + Duration::from_millis(10) {
        if client.is_none() {
            client = Client::connect(ADDR).await.ok();
            if client.is_none() {
                sleep(Duration::from_millis(1)).await;
                continue;
            }
        }
        let c = client.as_mut().unwrap();
        match timeout(Duration::from_millis(200), c.next()).await {
            Ok(Ok(n)) => {
                assert_always!(
                    seen.insert(n),
                    "no number is given twice",
                    &serde_json::json!({ "n": n, "given": seen.len() })
                );
                sleep(Duration::from_millis(3)).await;
            }
            _ => {
                failures += 1;
                client = None;
                sleep(Duration::from_millis(2)).await;
            }
        }
    }
    assert_sometimes!(failures > 0, "the client saw the server go away");
}
