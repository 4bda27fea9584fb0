//! OS threads inside a simulation (issue 35): each is a simulated thread of
//! its node that runs only while it holds the baton, and blocks, sleeps and
//! joins in virtual time.

use crate::run;
use sim_runtime::sim;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A thread that sleeps moves virtual time, not real time, and its join
/// (from the test's own future, on the executor's thread) returns its value.
#[test]
fn a_thread_sleeps_in_virtual_time_and_joins() {
    let wall = std::time::Instant::now();
    let (value, elapsed) = run(1, async {
        let h = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_secs(30));
            7
        });
        let v = h.join().unwrap();
        (v, sim::elapsed())
    });
    assert_eq!(value, 7);
    assert_eq!(elapsed, Duration::from_secs(30));
    assert!(wall.elapsed() < Duration::from_secs(20), "slept for real");
}

/// A task awaits a Tokio channel that a thread feeds with `blocking_send`.
#[test]
fn a_task_awaits_a_channel_fed_by_a_thread() {
    let got = run(2, async {
        let (tx, mut rx) = sim_runtime::sync::mpsc::channel::<u32>(1);
        let h = std::thread::spawn(move || {
            for i in 0..5 {
                std::thread::sleep(Duration::from_millis(10));
                tx.blocking_send(i).unwrap();
            }
        });
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push((v, sim::elapsed().as_millis()));
        }
        h.join().unwrap();
        got
    });
    assert_eq!(got, vec![(0, 10), (1, 20), (2, 30), (3, 40), (4, 50)]);
}

/// Two threads ping-pong over a `Mutex` + `Condvar`, and time out on
/// virtual time when nobody signals.
#[test]
fn threads_hand_off_over_a_mutex_and_condvar() {
    let (turns, timed_out) = run(3, async {
        let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
        let mut handles = Vec::new();
        for me in 0..2u32 {
            let pair = pair.clone();
            handles.push(std::thread::spawn(move || {
                let (lock, cv) = &*pair;
                let mut n = lock.lock().unwrap();
                while *n < 100 {
                    if *n % 2 == me {
                        *n += 1;
                        cv.notify_all();
                    } else {
                        n = cv.wait(n).unwrap();
                    }
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        let (lock, cv) = &*pair;
        let t0 = sim::elapsed();
        let g = lock.lock().unwrap();
        let (_g, r) = cv.wait_timeout(g, Duration::from_millis(250)).unwrap();
        let turns = *lock.try_lock().map(|g| *g).as_ref().unwrap_or(&0);
        (turns, (r.timed_out(), sim::elapsed() - t0))
    });
    let _ = turns;
    assert_eq!(timed_out, (true, Duration::from_millis(250)));
}

/// The same seed gives the same interleaving of threads, and different
/// seeds different ones.
#[test]
fn thread_interleavings_are_a_function_of_the_seed() {
    fn interleaving(seed: u64) -> (Vec<u32>, u64) {
        run(seed, async {
            let log = Arc::new(Mutex::new(Vec::new()));
            let handles: Vec<_> = (0..4u32)
                .map(|t| {
                    let log = log.clone();
                    std::thread::spawn(move || {
                        for _ in 0..5 {
                            log.lock().unwrap().push(t);
                            std::thread::yield_now();
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            let v = log.lock().unwrap().clone();
            (v, sim::fingerprint())
        })
    }
    let a = interleaving(11);
    assert_eq!(a, interleaving(11));
    let others: std::collections::BTreeSet<Vec<u32>> =
        (12..20).map(|s| interleaving(s).0).collect();
    assert!(others.len() > 1, "every seed gave the same interleaving");
}

/// `std::thread::sleep` in a `spawn_blocking` closure sleeps in virtual
/// time (it used to block the run in real time, refused); a thread started
/// from a task runs and is joined from another.
#[test]
fn sleeps_and_threads_inside_tasks_are_simulated() {
    let wall = std::time::Instant::now();
    let elapsed = run(12, async {
        sim_runtime::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(50)))
            .await
            .unwrap();
        let h =
            sim_runtime::spawn(async { std::thread::Builder::new().name("w".into()).spawn(|| 5) });
        let t = h.await.unwrap().unwrap();
        assert_eq!(t.thread().name(), Some("w"));
        assert_eq!(t.join().unwrap(), 5);
        sim::elapsed()
    });
    assert_eq!(elapsed, Duration::from_millis(50));
    assert!(wall.elapsed() < Duration::from_secs(20));
}
