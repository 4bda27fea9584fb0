//! OS threads inside a simulation (issue 35): each is a simulated thread of
//! its node that runs only while it holds the baton, and blocks, sleeps and
//! joins in virtual time. Here: starting, blocking, sleeping and joining;
//! `lifecycle.rs`: a node's death, pause and a run's end; `outside.rs`:
//! what lies outside the run (other runs, threads started before it, the
//! runtime's owner); `blocking.rs`: `spawn_blocking` and its pool.

use crate::run;
use sim_runtime::sim;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

mod blocking;
mod lifecycle;
mod outside;

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

/// A thread that builds its own `Runtime` and blocks on it runs that
/// runtime's tasks, timers and sockets in the same simulation, on its node;
/// one runtime per node on its own thread is how many cluster test
/// harnesses start their nodes. The run replays exactly.
#[test]
fn a_thread_per_node_with_its_own_runtime() {
    let (reply, fp) = thread_per_node(21);
    assert_eq!(reply, [2, 4, 6, 8]);
    assert_eq!(thread_per_node(21), (reply, fp));
}

fn thread_per_node(seed: u64) -> ([u8; 4], u64) {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    use sim_runtime::net::{TcpListener, TcpStream};
    run(seed, async {
        let server = sim::node("server").build();
        // The thread starts on the server node (as a harness would start it
        // from the node's task), builds its runtime and serves one client.
        sim::spawn_on(server, async {
            std::thread::Builder::new()
                .name("server-main".into())
                .spawn(|| {
                    let rt = sim_runtime::runtime::Runtime::new().unwrap();
                    rt.block_on(async {
                        let l = TcpListener::bind("0.0.0.0:9").await.unwrap();
                        let (mut s, _) = l.accept().await.unwrap();
                        let mut buf = [0u8; 4];
                        s.read_exact(&mut buf).await.unwrap();
                        // A task of this runtime, and a timer.
                        let doubled = sim_runtime::spawn(async move {
                            sim_runtime::time::sleep(Duration::from_millis(5)).await;
                            buf.map(|b| b * 2)
                        })
                        .await
                        .unwrap();
                        s.write_all(&doubled).await.unwrap();
                    });
                })
                .unwrap();
        });
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
        let mut c = TcpStream::connect("server:9").await.unwrap();
        c.write_all(&[1, 2, 3, 4]).await.unwrap();
        let mut back = [0u8; 4];
        c.read_exact(&mut back).await.unwrap();
        (back, sim::fingerprint())
    })
}

/// `Handle::block_on` on a thread, with the handle of the test's runtime.
#[test]
fn handle_block_on_inside_a_thread() {
    let v = run(22, async {
        let handle = sim_runtime::runtime::Handle::current();
        let (tx, rx) = sim_runtime::sync::oneshot::channel::<u32>();
        let t = std::thread::spawn(move || {
            handle.block_on(async {
                let v = rx.await.unwrap();
                sim_runtime::time::sleep(Duration::from_secs(2)).await;
                v + 1
            })
        });
        sim_runtime::time::sleep(Duration::from_secs(1)).await;
        tx.send(41).unwrap();
        let v = sim_runtime::task::spawn_blocking(move || t.join().unwrap())
            .await
            .unwrap();
        (v, sim::elapsed())
    });
    assert_eq!(v, (42, Duration::from_secs(3)));
}

/// Two threads that take two std locks in opposite orders deadlock; the
/// report names both threads among the stuck tasks.
#[test]
fn a_lock_order_deadlock_between_threads_is_reported() {
    let msg = crate::run_failing(34, || async {
        let a = Arc::new(Mutex::new(0));
        let b = Arc::new(Mutex::new(0));
        let (a2, b2) = (a.clone(), b.clone());
        let t1 = std::thread::spawn(move || {
            let _x = a.lock().unwrap();
            std::thread::sleep(Duration::from_millis(1));
            let _y = b.lock().unwrap();
        });
        let t2 = std::thread::spawn(move || {
            let _y = b2.lock().unwrap();
            std::thread::sleep(Duration::from_millis(1));
            let _x = a2.lock().unwrap();
        });
        let (r1, r2) = sim_runtime::join!(
            sim_runtime::task::spawn_blocking(move || t1.join()),
            sim_runtime::task::spawn_blocking(move || t2.join())
        );
        let _ = (r1, r2);
    });
    assert!(msg.contains("deadlock"), "{msg}");
    for t in ["thread 1", "thread 2"] {
        assert!(
            msg.contains(&format!("an OS thread ({t}, started at ")),
            "{msg}"
        );
    }
    assert!(
        msg.contains("sim-runtime/tests/it/threads/mod.rs:"),
        "{msg}"
    );
    assert!(msg.contains("blocked on a futex word at 0x"), "{msg}");
}

/// `available_parallelism` is the node's CPU count: 1 by default, what the
/// node was built with otherwise, on every machine.
#[test]
fn available_parallelism_is_the_node_s_cpu_count() {
    let (main, big, threads) = run(36, async {
        let big = sim::node("big").cpus(6).build();
        let main = std::thread::available_parallelism().unwrap().get();
        let on_big = sim::spawn_on(big, async {
            let n = std::thread::available_parallelism().unwrap().get();
            // A thread of the node sees the same machine.
            let t = std::thread::spawn(|| std::thread::available_parallelism().unwrap().get());
            (
                n,
                sim_runtime::task::spawn_blocking(move || t.join().unwrap())
                    .await
                    .unwrap(),
            )
        })
        .await
        .unwrap();
        (main, on_big.0, on_big.1)
    });
    assert_eq!((main, big, threads), (1, 6, 6));
}

/// glibc gives a joined thread's `pthread_t` to the next thread it starts:
/// a join finds the thread of that id that is still to be joined, so many
/// threads started and joined one after the other all run.
#[test]
fn threads_started_and_joined_in_turn_reuse_ids() {
    let sum = run(37, async {
        sim_runtime::task::spawn_blocking(|| {
            (0..50u64)
                .map(|i| std::thread::spawn(move || i).join().unwrap())
                .sum::<u64>()
        })
        .await
        .unwrap()
    });
    assert_eq!(sum, 49 * 50 / 2);
}

/// A thread's sleep is virtual time on a runtime built without Tokio's
/// timers too (Tokio's `task_abort::remote_abort_local_set_3929`): it needs
/// no `enable_time`, as on Linux.
#[test]
fn a_thread_sleeps_on_a_runtime_without_tokio_timers() {
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .sim_seed(43)
        .build()
        .unwrap();
    let slept = rt.block_on(async {
        let start = std::time::Instant::now();
        std::thread::spawn(|| std::thread::sleep(Duration::from_millis(10)))
            .join()
            .unwrap();
        start.elapsed()
    });
    assert_eq!(slept, Duration::from_millis(10));
}

/// A test harness that starts each cluster node as a thread with its own
/// runtime, unmodified: a thread of the main node that names itself after
/// a node (std's `Builder::name`) is that node's thread, so its listener
/// is on the node's address and a partition of the node reaches it.
#[test]
fn a_thread_named_after_a_node_is_that_node() {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    use sim_runtime::net::{TcpListener, TcpStream};
    let (served_on, partitioned) = run(44, async {
        sim::node("n1").build();
        // The harness's code: a thread per node, each with its runtime.
        let node_main = std::thread::Builder::new()
            .name("n1".into())
            .spawn(|| {
                let rt = sim_runtime::runtime::Runtime::new().unwrap();
                rt.block_on(async {
                    let l = TcpListener::bind("0.0.0.0:7").await.unwrap();
                    loop {
                        let (mut s, _) = l.accept().await.unwrap();
                        sim_runtime::spawn(async move {
                            let node = sim::node_name(sim::current_node());
                            s.write_all(node.as_bytes()).await.unwrap();
                        });
                    }
                })
            })
            .unwrap();
        drop(node_main);
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
        let mut c = TcpStream::connect("n1:7").await.unwrap();
        let mut name = String::new();
        c.read_to_string(&mut name).await.unwrap();
        let n1 = sim::lookup_node("n1").unwrap();
        sim::net::partition(sim::current_node(), n1);
        let cut = sim_runtime::time::timeout(Duration::from_secs(1), TcpStream::connect("n1:7"))
            .await
            .map_or(true, |r| r.is_err());
        (name, cut)
    });
    assert_eq!(served_on, "n1");
    assert!(
        partitioned,
        "a partition of the node did not reach its thread"
    );
}
