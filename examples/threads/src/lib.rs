//! Service code that starts OS threads, written the usual way with a plain
//! `tokio` dependency: a handler that sums with rayon, a task that fans out
//! over `std::thread::scope`, a crossbeam channel between a thread and a
//! task, log lines written by tracing-appender's worker thread, tasks
//! pinned to tokio-util's `LocalPoolHandle` workers, and a thread that
//! waits on a Tokio channel with `futures::executor::block_on`.
//!
//! `cargo test -p threads` runs it on real Tokio and real threads
//! (`tests/roundtrip.rs`). `cargo sim test -p threads` runs the same code
//! with every thread a simulated thread of its node (issue 35): it runs
//! only while it holds the simulation's baton, sleeps in virtual time, and
//! the seed picks who runs at every hand-off (`tests/sim.rs`).

use rayon::prelude::*;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// The sum of the squares of `1..=n`, split by rayon over the pool it runs
/// in (the global pool unless called inside `ThreadPool::install`).
pub fn sum_of_squares(n: u64) -> u64 {
    (1..=n).into_par_iter().map(|x| x * x).sum()
}

/// What `sum_of_squares(n)` must be.
pub fn sum_of_squares_formula(n: u64) -> u64 {
    n * (n + 1) * (2 * n + 1) / 6
}

/// A request to [`serve_sums`]: `n`, and where the answer goes.
pub type SumRequest = (u64, oneshot::Sender<u64>);

/// A handler loop: answers each request with `sum_of_squares(n)`, computed
/// on `pool` if given, else on rayon's global pool, inline in the task (as
/// a handler that does a little CPU work does).
pub async fn serve_sums(mut requests: mpsc::Receiver<SumRequest>, pool: Option<rayon::ThreadPool>) {
    while let Some((n, reply)) = requests.recv().await {
        let sum = match &pool {
            Some(pool) => pool.install(|| sum_of_squares(n)),
            None => sum_of_squares(n),
        };
        let _ = reply.send(sum);
    }
}

/// Each worker of `pool` runs a closure (`broadcast`) that answers its own
/// index: `[0, 1, .., n-1]` when the pool has `n` live workers.
pub fn worker_indices(pool: &rayon::ThreadPool) -> Vec<usize> {
    pool.broadcast(|ctx| ctx.index())
}

/// Sleeps `each` once per item of `0..items` on `pool`'s workers
/// (`par_iter`), and returns the items in order: the workers sleep side by
/// side, so this takes `items * each` only if one worker slept them all.
pub fn parallel_sleeps(pool: &rayon::ThreadPool, items: u32, each: Duration) -> Vec<u32> {
    pool.install(|| {
        (0..items)
            .into_par_iter()
            .map(|i| {
                std::thread::sleep(each);
                i
            })
            .collect()
    })
}

/// What [`scoped_counts`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scoped {
    /// Words in all the texts.
    pub words: usize,
    /// The texts' indices in the order their threads finished.
    pub finished: Vec<usize>,
    /// Each text upper-cased in place by its thread (a `&mut` borrow).
    pub shouted: Vec<String>,
}

/// One scoped thread per text (`std::thread::scope`), each borrowing its
/// text mutably: thread `i` first sleeps `pause * (texts.len() - i)` (a
/// slow read, say), so the last text's thread finishes first; then it
/// counts the words, upper-cases the text in place and notes that it
/// finished. The scope returns once every thread has.
pub fn scoped_counts(texts: &mut [String], pause: Duration) -> Scoped {
    let finished = Mutex::new(Vec::new());
    let n = texts.len();
    let words = std::thread::scope(|s| {
        let handles: Vec<_> = texts
            .iter_mut()
            .enumerate()
            .map(|(i, text)| {
                let finished = &finished;
                s.spawn(move || {
                    std::thread::sleep(pause * (n - i) as u32);
                    let words = text.split_whitespace().count();
                    *text = text.to_uppercase();
                    finished.lock().unwrap().push(i);
                    words
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    Scoped {
        words,
        finished: finished.into_inner().unwrap(),
        shouted: texts.to_vec(),
    }
}

/// A thread that sends `count` readings over a crossbeam channel, one every
/// `every` (the first after `every`), then hangs up.
pub fn sensor(
    count: u32,
    every: Duration,
) -> (
    crossbeam_channel::Receiver<u32>,
    std::thread::JoinHandle<()>,
) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let thread = std::thread::Builder::new()
        .name("sensor".into())
        .spawn(move || {
            for reading in 0..count {
                std::thread::sleep(every);
                tx.send(reading).unwrap();
            }
        })
        .unwrap();
    (rx, thread)
}

/// A task's side of [`sensor`]: `try_recv`, and a Tokio sleep of `poll`
/// while the channel is empty. Each reading with when it arrived, counted
/// from the call.
pub async fn drain_polling(
    rx: crossbeam_channel::Receiver<u32>,
    poll: Duration,
) -> Vec<(u32, Duration)> {
    let start = Instant::now();
    let mut got = Vec::new();
    loop {
        match rx.try_recv() {
            Ok(v) => got.push((v, start.elapsed())),
            Err(crossbeam_channel::TryRecvError::Empty) => tokio::time::sleep(poll).await,
            Err(crossbeam_channel::TryRecvError::Disconnected) => return got,
        }
    }
}

/// A task's side of [`sensor`] through `spawn_blocking`: the blocking
/// `recv` runs where Tokio runs blocking closures.
pub async fn drain_blocking(rx: crossbeam_channel::Receiver<u32>) -> Vec<u32> {
    tokio::task::spawn_blocking(move || rx.iter().collect())
        .await
        .unwrap()
}

/// A request to [`doubler`]: a number, and where its double goes.
pub type Doubling = (u32, oneshot::Sender<u32>);

/// A thread that blocks in crossbeam's `recv` for requests from tasks and
/// answers each on its Tokio oneshot, until every sender is gone.
pub fn doubler() -> (
    crossbeam_channel::Sender<Doubling>,
    std::thread::JoinHandle<u32>,
) {
    let (tx, rx) = crossbeam_channel::unbounded::<Doubling>();
    let thread = std::thread::Builder::new()
        .name("doubler".into())
        .spawn(move || {
            let mut served = 0;
            for (v, reply) in rx {
                let _ = reply.send(v * 2);
                served += 1;
            }
            served
        })
        .unwrap();
    (tx, thread)
}

/// A writer that keeps every byte written to it; clones share one buffer.
#[derive(Clone, Debug, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// What was written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `tasks` tasks each log `lines` events (`task=t line=i`), a Tokio sleep
/// of `pause` apart, through a fmt subscriber whose writer is
/// tracing-appender's `non_blocking` over `sink`: the formatting happens in
/// the tasks, the writing in tracing-appender's worker thread. Returns once
/// the tasks are done and the guard is dropped (which waits for the worker
/// to flush).
pub async fn log_from_tasks(sink: Captured, tasks: u32, lines: u32, pause: Duration) {
    use tracing::instrument::WithSubscriber;
    let (writer, guard) = tracing_appender::non_blocking(sink);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(writer)
        .without_time()
        .with_target(false)
        .with_ansi(false)
        .finish();
    let dispatch = tracing::Dispatch::new(subscriber);
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            tokio::spawn(
                async move {
                    for line in 0..lines {
                        tracing::info!(task, line, "logged");
                        tokio::time::sleep(pause).await;
                    }
                }
                .with_subscriber(dispatch.clone()),
            )
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    drop(guard);
}

/// Sums `values` in a task pinned to one of `pool`'s worker threads (its
/// own current-thread runtime): the task holds an `Rc` (not `Send`) across
/// a Tokio sleep of `pause` and a yield.
pub async fn pinned_sum(
    pool: &tokio_util::task::LocalPoolHandle,
    values: Vec<u64>,
    pause: Duration,
) -> u64 {
    pool.spawn_pinned(move || async move {
        let values = std::rc::Rc::new(values);
        tokio::time::sleep(pause).await;
        tokio::task::yield_now().await;
        values.iter().sum()
    })
    .await
    .unwrap()
}

/// A thread waits with `futures::executor::block_on` on a Tokio oneshot
/// that a task fills after a Tokio sleep of `after`; the thread answers
/// the double on another oneshot, which this awaits.
pub async fn doubled_by_a_blocked_thread(v: u32, after: Duration) -> u32 {
    let (tx, rx) = oneshot::channel::<u32>();
    let (back_tx, back_rx) = oneshot::channel::<u32>();
    let thread = std::thread::spawn(move || {
        let v = futures::executor::block_on(rx).unwrap();
        back_tx.send(v * 2).unwrap();
    });
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        tx.send(v).unwrap();
    });
    let doubled = back_rx.await.unwrap();
    // The thread has sent its answer and is ending: the join is brief.
    thread.join().unwrap();
    doubled
}

/// `threads` threads and `tasks` tasks each append their name `rounds`
/// times to one log under a std `Mutex`, yielding after each append
/// (`std::thread::yield_now` and `tokio::task::yield_now`): the log is the
/// interleaving.
pub async fn interleaving(threads: u32, tasks: u32, rounds: u32) -> Vec<String> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    log.lock().unwrap().push(format!("thread{t}"));
                    std::thread::yield_now();
                }
            })
        })
        .collect();
    let tasks: Vec<_> = (0..tasks)
        .map(|t| {
            let log = log.clone();
            tokio::spawn(async move {
                for _ in 0..rounds {
                    log.lock().unwrap().push(format!("task{t}"));
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    for h in handles {
        h.join().unwrap();
    }
    let log = log.lock().unwrap().clone();
    log
}
