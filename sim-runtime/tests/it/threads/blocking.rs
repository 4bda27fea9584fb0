//! `spawn_blocking`: its closures are simulated threads, its pool's bound,
//! and blocking calls made while a runtime is entered.

use super::*;

/// A `spawn_blocking` closure runs on a thread of its own, so it may wait
/// on a `Condvar` that a task signals, or `blocking_recv` what a task
/// sends (on the executor's thread both would wait forever).
#[test]
fn spawn_blocking_waits_on_what_tasks_do() {
    let (got, at) = run(33, async {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let p = pair.clone();
        let waiter = sim_runtime::task::spawn_blocking(move || {
            let (lock, cv) = &*p;
            let mut ready = lock.lock().unwrap();
            while !*ready {
                ready = cv.wait(ready).unwrap();
            }
            sim::elapsed()
        });
        let (tx, mut rx) = sim_runtime::sync::mpsc::channel::<u8>(4);
        let receiver = sim_runtime::task::spawn_blocking(move || {
            let mut got = Vec::new();
            while let Some(v) = rx.blocking_recv() {
                got.push(v);
            }
            got
        });
        sim_runtime::time::sleep(Duration::from_millis(7)).await;
        {
            let (lock, cv) = &*pair;
            *lock.lock().unwrap() = true;
            cv.notify_one();
        }
        for v in 0..3 {
            tx.send(v).await.unwrap();
        }
        drop(tx);
        (receiver.await.unwrap(), waiter.await.unwrap())
    });
    assert_eq!(got, vec![0, 1, 2]);
    assert_eq!(at, Duration::from_millis(7));
}

/// `thread::sleep` in a `block_in_place` closure (which leaves the
/// executor's context) still sleeps in virtual time; a `spawn_blocking`
/// made with only the runtime entered, awaited through `Handle::block_on`,
/// runs on the runtime's simulated thread.
#[test]
fn sleeps_in_block_in_place_and_blocking_made_while_entered() {
    let rt = sim_runtime::runtime::Builder::new_multi_thread()
        .enable_all()
        .sim_seed(42)
        .build()
        .unwrap();
    let slept = rt.block_on(async {
        sim_runtime::task::block_in_place(|| std::thread::sleep(Duration::from_millis(5)));
        sim::elapsed()
    });
    assert_eq!(slept, Duration::from_millis(5));
    let _enter = rt.enter();
    let answer = sim_runtime::runtime::Handle::current()
        .block_on(sim_runtime::task::spawn_blocking(|| {
            std::thread::sleep(Duration::from_millis(100));
            42
        }))
        .unwrap();
    assert_eq!(answer, 42);
}

/// `task::id()` inside a `spawn_blocking` closure is its handle's id, as
/// on Tokio; inside a plain thread there is none.
#[test]
fn a_blocking_closure_knows_its_task_id() {
    run(43, async {
        let h = sim_runtime::task::spawn_blocking(sim_runtime::task::id);
        let id = h.id();
        assert_eq!(h.await.unwrap(), id);
        let t = std::thread::spawn(sim_runtime::task::try_id);
        let none = sim_runtime::task::spawn_blocking(move || t.join().unwrap())
            .await
            .unwrap();
        assert_eq!(none, None);
    });
}

/// `n` blocking jobs, each sleeping 10 ms: the most that ran at once, how
/// many finished and the virtual time they took.
async fn sleeping_blocking_jobs(n: usize) -> (usize, usize, Duration) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let t0 = sim::elapsed();
    let jobs: Vec<_> = (0..n)
        .map(|_| {
            let (inside, most) = (inside.clone(), most.clone());
            sim_runtime::task::spawn_blocking(move || {
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    let mut done = 0;
    for j in jobs {
        j.await.unwrap();
        done += 1;
    }
    (most.load(Ordering::SeqCst), done, sim::elapsed() - t0)
}

/// As Tokio's, a node's blocking pool starts at most 512 threads (the
/// default `max_blocking_threads`): more jobs than that wait in order for
/// a worker to finish, rather than each starting a thread (a client that
/// retried a stuck call once a second once made 16,000 of them).
#[test]
fn the_blocking_pool_stops_at_512_threads_and_queues_the_rest() {
    let _many = crate::many_threads();
    let (most, done, elapsed) = run(45, sleeping_blocking_jobs(520));
    assert_eq!(most, 512, "jobs running at once");
    assert_eq!(done, 520);
    assert_eq!(
        elapsed,
        Duration::from_millis(20),
        "the last 8 ran after the first wave"
    );
}

/// `Builder::max_blocking_threads` sets that bound.
#[test]
fn max_blocking_threads_bounds_the_pool() {
    let (most, done, elapsed) = sim_runtime::runtime::Builder::new_current_thread()
        .sim_seed(46)
        .max_blocking_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(sleeping_blocking_jobs(5));
    assert_eq!((most, done), (2, 5));
    assert_eq!(elapsed, Duration::from_millis(30), "three waves of two");
}

fn blocking_rt(seed: u64) -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .sim_seed(seed)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// As Tokio's `shutdown_timeout`: the tasks are dropped, then the
/// `spawn_blocking` closures already started run to their end, and so do
/// those queued behind them (Tokio's busy worker takes the next job before
/// it looks at the shutdown), the clock moving while they sleep; their
/// handles give their values after the runtime is gone. Before, the
/// shutdown dropped them unrun and their handles said cancelled.
#[test]
fn shutdown_waits_for_the_blocking_closures_it_started() {
    let rt = blocking_rt(47);
    let _enter = rt.enter();
    let blocking = || {
        sim_runtime::task::spawn_blocking(|| {
            std::thread::sleep(Duration::from_secs(1));
            sim::elapsed()
        })
    };
    let (first, queued) = (blocking(), blocking());
    let task = rt.spawn(std::future::pending::<()>());
    rt.shutdown_timeout(Duration::from_secs(1000));
    let handle = sim_runtime::runtime::Handle::current();
    assert_eq!(handle.block_on(first).unwrap(), Duration::from_secs(1));
    assert_eq!(handle.block_on(queued).unwrap(), Duration::from_secs(2));
    assert!(handle.block_on(task).unwrap_err().is_cancelled());
}

/// A runtime dropped with a `spawn_blocking` closure running waits for it,
/// as Tokio's drop does (a last flush handed to the pool reaches its end),
/// for up to ten minutes of virtual time (Tokio's would wait for ever);
/// `shutdown_timeout` waits up to its timeout of virtual time and
/// `shutdown_background` not at all. A closure still running then is
/// stopped where it stands and its handle says cancelled (Tokio's thread
/// would go on detached, outside any runtime: docs/breakage.md).
#[test]
fn drop_waits_for_blocking_work_and_the_timeouts_bound_the_wait() {
    type Shut = fn(sim_runtime::runtime::Runtime);
    let ended = |seed: u64, secs: u64, shut: Shut| {
        let done = Arc::new(Mutex::new(None));
        let rt = blocking_rt(seed);
        let d = done.clone();
        let handle = rt.spawn_blocking(move || {
            std::thread::sleep(Duration::from_secs(secs));
            *d.lock().unwrap() = Some(sim::elapsed().as_secs());
        });
        let h = rt.handle().clone();
        shut(rt);
        let joined = h.block_on(handle);
        let done = *done.lock().unwrap();
        (done, joined.map_err(|e| e.is_cancelled()))
    };
    assert_eq!(ended(48, 3, drop), (Some(3), Ok(())));
    assert_eq!(ended(49, 599, drop), (Some(599), Ok(())));
    assert_eq!(ended(50, 601, drop), (None, Err(true)));
    let within: Shut = |rt| rt.shutdown_timeout(Duration::from_secs(5));
    assert_eq!(ended(51, 3, within), (Some(3), Ok(())));
    let short: Shut = |rt| rt.shutdown_timeout(Duration::from_secs(1));
    assert_eq!(ended(52, 3, short), (None, Err(true)));
    assert_eq!(
        ended(53, 3, |rt| rt.shutdown_background()),
        (None, Err(true))
    );
}
