//! docs/breakage.md, checked: the parts of tokio-util and tokio-stream that
//! call the real `tokio` runtime fail a simulation with a message that
//! names the cause, and the replacements the catalog recommends work. Under
//! `cargo sim` (`--cfg sim_graph`) those crates' `tokio` is the simulation
//! too, and the same calls simply work.
#![cfg(simulation)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;
use tokio_stream::StreamExt;

/// Runs `body` in a fresh simulation; the panic text if it failed.
fn failure<F: std::future::Future<Output = ()>>(body: F) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    catch_unwind(AssertUnwindSafe(|| rt.block_on(body)))
        .err()
        .map(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
}

fn assert_names_the_real_tokio(what: &str, text: Option<String>) {
    if cfg!(sim_graph) {
        assert_eq!(text, None, "{what} failed under cargo sim");
        return;
    }
    let text = text.unwrap_or_else(|| panic!("{what} did not fail"));
    assert!(
        text.contains("sim: this panic comes from the real `tokio` crate")
            && text.contains("docs/breakage.md"),
        "{what}: {text}"
    );
}

#[test]
fn task_tracker_spawn_names_the_real_tokio_and_track_future_works() {
    assert_names_the_real_tokio(
        "TaskTracker::spawn",
        failure(async {
            let tracker = tokio_util::task::TaskTracker::new();
            tracker.spawn(tokio::time::sleep(Duration::from_millis(5)));
            tracker.close();
            tracker.wait().await;
        }),
    );
    assert_eq!(
        failure(async {
            let tracker = tokio_util::task::TaskTracker::new();
            tokio::spawn(tracker.track_future(tokio::time::sleep(Duration::from_millis(5))));
            tracker.close();
            tracker.wait().await;
            assert!(tracker.is_empty());
        }),
        None
    );
}

#[test]
fn stream_timeout_names_the_real_tokio_and_timeout_around_next_works() {
    assert_names_the_real_tokio(
        "StreamExt::timeout",
        failure(async {
            let s = tokio_stream::pending::<()>().timeout(Duration::from_millis(5));
            tokio::pin!(s);
            assert!(matches!(s.next().await, Some(Err(_))), "the timeout fired");
        }),
    );
    assert_eq!(
        failure(async {
            let mut s = tokio_stream::pending::<()>();
            let r = tokio::time::timeout(Duration::from_millis(5), s.next()).await;
            assert!(r.is_err(), "the timeout fired");
        }),
        None
    );
}

#[test]
fn delay_queue_names_the_real_tokio() {
    assert_names_the_real_tokio(
        "DelayQueue::insert",
        failure(async {
            let mut q = tokio_util::time::DelayQueue::new();
            q.insert("k", Duration::from_millis(5));
            let t0 = tokio::time::Instant::now();
            assert_eq!(q.next().await.map(|e| e.into_inner()), Some("k"));
            assert!(t0.elapsed() >= Duration::from_millis(5));
        }),
    );
}
