//! On real Tokio and real OS threads (a plain `cargo test`). Under `cargo
//! sim test` these `#[tokio::test]`s run in a simulation instead, on the
//! default seed, with every thread simulated: the same library code,
//! unchanged (`tests/sim.rs` runs it over many seeds and checks virtual
//! time).

use std::time::Duration;
use threads::*;
use tokio::sync::{mpsc, oneshot};

const MS: Duration = Duration::from_millis(1);

/// Sums from a handler task on rayon's global pool.
#[tokio::test]
async fn rayon_global_pool_in_a_handler() {
    let (tx, rx) = mpsc::channel::<SumRequest>(1);
    let server = tokio::spawn(serve_sums(rx, None));
    let (reply, answer) = oneshot::channel();
    tx.send((12_345, reply)).await.unwrap();
    assert_eq!(answer.await.unwrap(), sum_of_squares_formula(12_345));
    drop(tx);
    server.await.unwrap();
}

/// A pool of three: every worker runs, and a handler's sums are right.
#[tokio::test]
async fn rayon_pool_of_three_in_a_handler() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    assert_eq!(worker_indices(&pool), vec![0, 1, 2]);
    assert_eq!(parallel_sleeps(&pool, 6, MS), vec![0, 1, 2, 3, 4, 5]);
    let (tx, rx) = mpsc::channel::<SumRequest>(1);
    let server = tokio::spawn(serve_sums(rx, Some(pool)));
    let (reply, answer) = oneshot::channel();
    tx.send((777, reply)).await.unwrap();
    assert_eq!(answer.await.unwrap(), sum_of_squares_formula(777));
    drop(tx);
    server.await.unwrap();
}

/// Scoped threads borrow the texts mutably and finish in the order of
/// their sleeps (20 ms apart: wide enough for a loaded machine).
#[tokio::test]
async fn thread_scope_in_a_task() {
    let mut texts: Vec<String> = ["a b c", "d e", "f"]
        .into_iter()
        .map(String::from)
        .collect();
    let s = tokio::spawn(async move { scoped_counts(&mut texts, 20 * MS) })
        .await
        .unwrap();
    assert_eq!(s.words, 6);
    assert_eq!(s.finished, vec![2, 1, 0]);
    assert_eq!(s.shouted, vec!["A B C", "D E", "F"]);
}

/// A producer thread's readings reach a polling task, in order.
#[tokio::test]
async fn crossbeam_channel_from_a_thread_to_a_polling_task() {
    let (rx, producer) = sensor(5, MS);
    let got = drain_polling(rx, MS).await;
    producer.join().unwrap();
    let values: Vec<u32> = got.iter().map(|(v, _)| *v).collect();
    assert_eq!(values, vec![0, 1, 2, 3, 4]);
    assert!(got.windows(2).all(|w| w[0].1 <= w[1].1));
}

/// The same drained by `recv` in `spawn_blocking`.
#[tokio::test]
async fn crossbeam_channel_from_a_thread_to_spawn_blocking() {
    let (rx, producer) = sensor(3, MS);
    assert_eq!(drain_blocking(rx).await, vec![0, 1, 2]);
    producer.join().unwrap();
}

/// Tasks ask a thread blocked in crossbeam's `recv`.
#[tokio::test]
async fn crossbeam_channel_from_tasks_to_a_thread() {
    let (tx, thread) = doubler();
    for v in 0..5 {
        let (reply, answer) = oneshot::channel();
        tx.send((v, reply)).unwrap();
        assert_eq!(answer.await.unwrap(), v * 2);
    }
    drop(tx);
    assert_eq!(thread.join().unwrap(), 5);
}

/// Every line logged by tasks reaches the writer through tracing-appender's
/// worker thread by the time the guard drops.
#[tokio::test]
async fn tracing_appender_non_blocking_writes_every_line() {
    let sink = Captured::default();
    log_from_tasks(sink.clone(), 2, 3, MS).await;
    let text = sink.text();
    for task in 0..2 {
        let mine: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(&format!("task={task} ")))
            .collect();
        let want: Vec<String> = (0..3)
            .map(|line| format!(" INFO logged task={task} line={line}"))
            .collect();
        assert_eq!(mine, want, "{text}");
    }
    assert_eq!(text.lines().count(), 6, "{text}");
}

/// Tasks pinned to `LocalPoolHandle`'s workers.
#[tokio::test]
async fn local_pool_handle_spawn_pinned() {
    let pool = tokio_util::task::LocalPoolHandle::new(2);
    assert_eq!(pinned_sum(&pool, vec![1, 2, 3, 4], MS).await, 10);
}

/// `futures::executor::block_on` in a thread, on a oneshot a task fills.
#[tokio::test]
async fn futures_block_on_in_a_thread_waits_for_a_task() {
    assert_eq!(doubled_by_a_blocked_thread(21, 5 * MS).await, 42);
}

/// Threads and tasks each append every round.
#[tokio::test]
async fn threads_and_tasks_share_a_log() {
    let log = interleaving(2, 2, 3).await;
    assert_eq!(log.len(), 12);
    for who in ["thread0", "thread1", "task0", "task1"] {
        assert_eq!(log.iter().filter(|n| *n == who).count(), 3, "{log:?}");
    }
}
