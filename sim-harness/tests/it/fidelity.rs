//! Fidelity regressions found by writing tests as a new user would: each
//! one is a program that cannot fail on a real runtime and must not fail in
//! simulation, under every strategy of the default portfolio.

// In a production build the bodies of `#[sim::test]`s are not compiled, so
// their helpers are unused there.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

use sim_runtime::time::{sleep, timeout, Duration};

/// A timeout of 150 ms around a sleep of 600 ms elapses, on every seed and
/// every strategy (early timers included): a clock jump never passes a live
/// earlier deadline.
#[sim::test(seeds = 0..400)]
async fn a_timeout_shorter_than_the_sleep_always_elapses() {
    let r = timeout(
        Duration::from_millis(150),
        sleep(Duration::from_millis(600)),
    )
    .await;
    assert!(
        r.is_err(),
        "a 600 ms sleep finished within a 150 ms timeout"
    );
}

/// The same with the sleep in a spawned task: the timeout around its
/// `JoinHandle` elapses first.
#[sim::test(seeds = 0..400)]
async fn a_timeout_around_a_longer_task_always_elapses() {
    let task = sim_runtime::spawn(sleep(Duration::from_millis(600)));
    let r = timeout(Duration::from_millis(150), task).await;
    assert!(r.is_err(), "a 600 ms task finished within a 150 ms timeout");
}

/// The same over simulated TCP: a server that answers 600 ms after it
/// accepts, a client that gives up 150 ms after it connected.
#[sim::test(seeds = 0..400)]
async fn a_timeout_around_a_slow_reply_always_elapses() {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    use sim_runtime::net::{TcpListener, TcpStream};
    sim::node("slow").start(|| async {
        let l = TcpListener::bind("0.0.0.0:9").await.unwrap();
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            sim_runtime::spawn(async move {
                sleep(Duration::from_millis(600)).await;
                let _ = s.write_all(b"!").await;
            });
        }
    });
    let mut c = loop {
        match TcpStream::connect("slow:9").await {
            Ok(c) => break c,
            Err(_) => sleep(Duration::from_millis(1)).await,
        }
    };
    let mut b = [0u8; 1];
    let r = timeout(Duration::from_millis(150), c.read_exact(&mut b)).await;
    assert!(
        r.is_err(),
        "a reply sent after 600 ms arrived within 150 ms"
    );
}

/// And the other way round: a sleep shorter than its timeout (by more than
/// a late timer's 10 ms) always finishes first, early timers or not.
#[sim::test(seeds = 0..400)]
async fn a_sleep_shorter_than_its_timeout_always_finishes() {
    let r = timeout(
        Duration::from_millis(600),
        sleep(Duration::from_millis(150)),
    )
    .await;
    assert!(
        r.is_ok(),
        "a 150 ms sleep did not finish within a 600 ms timeout"
    );
}

/// A service runs on Tokio's multi-thread runtime in production: a node
/// reports that flavor, and `block_in_place` works in it.
#[sim::test(seeds = 0..4)]
async fn the_body_runs_on_a_multi_thread_runtime() {
    use sim_runtime::runtime::{Handle, RuntimeFlavor};
    assert_eq!(
        Handle::current().runtime_flavor(),
        RuntimeFlavor::MultiThread
    );
    let v = sim_runtime::task::block_in_place(|| 7);
    assert_eq!(v, 7);
}
