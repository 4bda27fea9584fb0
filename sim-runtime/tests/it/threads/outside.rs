//! What lies outside the run: locks held by threads outside it (another
//! run's, a plain thread's), pools an earlier run started, threads started
//! before the runtime, and the thread that built the runtime.

use super::*;

/// A std lock in a static that a thread outside the run holds (another
/// seed's, the test's own) is released from outside: a simulated thread
/// waiting on it is woken when it is, and the run goes on (it is not
/// declared deadlocked while the outside holder works).
#[test]
fn a_lock_held_outside_the_run_is_waited_for() {
    static SHARED: Mutex<u32> = Mutex::new(0);
    let (locked_tx, locked) = std::sync::mpsc::channel::<()>();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let outside = std::thread::spawn(move || {
        let held = SHARED.lock().unwrap();
        locked_tx.send(()).unwrap();
        rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        drop(held);
    });
    locked.recv().unwrap();
    let got = run(35, async move {
        let t = std::thread::spawn(|| {
            *SHARED.lock().unwrap() += 1;
            7
        });
        tx.send(()).unwrap();
        sim_runtime::task::spawn_blocking(move || t.join().unwrap())
            .await
            .unwrap()
    });
    outside.join().unwrap();
    assert_eq!(got, 7);
    assert_eq!(*SHARED.lock().unwrap(), 1);
}

/// A lock in a static is shared with every thread of the process: one
/// outside the run (another seed's run, here the test's own thread) may
/// hold it for a moment when a simulated thread comes to take it. The run
/// waits that out: it makes the same decisions, and the thread gets the
/// lock at the same virtual time, as when nobody else held it (before, the
/// run moved its clock and its tasks meanwhile, so a seed run beside other
/// seeds did not replay).
#[test]
fn a_static_lock_held_outside_for_a_moment_changes_no_decision() {
    static LOCK: Mutex<u32> = Mutex::new(0);
    async fn body() -> (Duration, u64) {
        let ticker = sim_runtime::spawn(async {
            for _ in 0..50 {
                sim_runtime::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let t = std::thread::spawn(|| {
            *LOCK.lock().unwrap() += 1;
            sim::elapsed()
        });
        let at = sim_runtime::task::spawn_blocking(move || t.join().unwrap())
            .await
            .unwrap();
        ticker.await.unwrap();
        (at, sim::fingerprint())
    }
    let free = run(38, body());
    let (locked_tx, locked) = std::sync::mpsc::channel::<()>();
    let outside = std::thread::spawn(move || {
        let held = LOCK.lock().unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        drop(held);
    });
    locked.recv().unwrap();
    let held = run(38, body());
    outside.join().unwrap();
    assert_eq!(held, free);
    assert_eq!(free.0, Duration::ZERO);
    assert_eq!(*LOCK.lock().unwrap(), 2);
}

/// Two simulations in one process (two tests of a binary, two jobs of a
/// sweep) share a `static` lock. One run's thread holds it across its
/// hand-offs for longer than a run watches a word for an outside holder
/// (2 s of real time); the other run's task waits for it. While the
/// holder's run still moves, the waiting run is not declared deadlocked: it
/// takes the lock once the holder lets go.
#[test]
fn a_static_lock_held_long_by_another_running_simulation_is_waited_for() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SHARED: Mutex<u32> = Mutex::new(0);
    static RELEASE: AtomicBool = AtomicBool::new(false);
    let (held_tx, held) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        sim_runtime::runtime::Builder::new_current_thread()
            .sim_seed(45)
            .sim_time_limit(None)
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let t = std::thread::spawn(move || {
                    let mut shared = SHARED.lock().unwrap();
                    held_tx.send(()).unwrap();
                    // Each sleep hands the baton back: the run moves.
                    while !RELEASE.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                    *shared += 1;
                });
                sim_runtime::task::spawn_blocking(move || t.join().unwrap())
                    .await
                    .unwrap();
            })
    });
    held.recv().unwrap();
    let waiter = std::thread::spawn(|| {
        run(46, async {
            *SHARED.lock().unwrap() += 10;
        })
    });
    // Real time, outside both simulations: longer than the waiting run's
    // first real wait on a static word (2 s) and its patience (2 s) together.
    std::thread::sleep(Duration::from_secs(5));
    RELEASE.store(true, Ordering::SeqCst);
    holder.join().unwrap();
    waiter.join().expect("the waiting run failed");
    assert_eq!(*SHARED.lock().unwrap(), 11);
}

/// A process-wide pool (as rayon's global one) whose worker an earlier run
/// started: the worker ended with that run, so a later run that hands it
/// work waits forever. The deadlock report says why and what to do.
#[test]
fn work_for_a_pool_an_earlier_run_started_is_a_reported_deadlock() {
    use std::sync::OnceLock;
    type Pool = (Mutex<Vec<u32>>, Condvar, Mutex<u32>, Condvar);
    static POOL: OnceLock<Arc<Pool>> = OnceLock::new();
    fn pool() -> Arc<Pool> {
        POOL.get_or_init(|| {
            let p: Arc<Pool> = Arc::new(Default::default());
            let w = p.clone();
            std::thread::spawn(move || loop {
                let (jobs, ready, done, finished) = &*w;
                let mut q = jobs.lock().unwrap();
                while q.is_empty() {
                    q = ready.wait(q).unwrap();
                }
                let n = q.pop().unwrap();
                drop(q);
                *done.lock().unwrap() += n;
                finished.notify_all();
            });
            p
        })
        .clone()
    }
    async fn use_pool() -> u32 {
        sim_runtime::task::spawn_blocking(|| {
            let p = pool();
            let (jobs, ready, done, finished) = &*p;
            let before = *done.lock().unwrap();
            jobs.lock().unwrap().push(1);
            ready.notify_one();
            let mut d = done.lock().unwrap();
            while *d == before {
                d = finished.wait(d).unwrap();
            }
            *d
        })
        .await
        .unwrap()
    }
    assert_eq!(
        run(38, use_pool()),
        1,
        "the run that starts the pool uses it"
    );
    let msg = crate::run_failing(39, use_pool);
    assert!(msg.contains("deadlock"), "{msg}");
    assert!(
        msg.contains("note: this run woke a futex word")
            && msg.contains("rayon::ThreadPoolBuilder"),
        "{msg}"
    );
}

/// A test that builds its own runtime and starts threads before (or
/// between) its `block_on`s, as Tokio's own tests do: the threads are the
/// runtime's simulated threads; they run while it runs, and joining one
/// from the test's thread runs the runtime until the thread ends.
#[test]
fn threads_started_by_a_runtime_s_owner_run_in_it() {
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(40)
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    let (tx, rx) = sim_runtime::sync::oneshot::channel();
    let spawner = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        handle.spawn(async move { tx.send(sim::elapsed()).unwrap() });
    });
    let at = rt.block_on(async move { rx.await.unwrap() });
    assert_eq!(at, Duration::from_millis(50));
    spawner.join().unwrap();
    // Joined outside block_on: the runtime runs until the thread ends.
    let rt2 = rt.handle().clone();
    let sleeper = std::thread::spawn(move || {
        rt2.block_on(async { sim_runtime::time::sleep(Duration::from_secs(5)).await });
        7
    });
    assert_eq!(sleeper.join().unwrap(), 7);
    assert_eq!(
        rt.block_on(async { sim::elapsed() }),
        Duration::from_millis(5050)
    );
}

/// A thread started before any runtime exists is a real thread outside the
/// simulation; when it feeds a Tokio channel that the runtime's task awaits
/// (Tokio's own `sync_mpsc::blocking_send`), the run waits for it rather
/// than declaring a deadlock the moment nothing inside can move.
#[test]
fn a_thread_started_before_the_runtime_may_still_wake_its_task() {
    let (tx, mut rx) = sim_runtime::sync::mpsc::channel::<u32>(1);
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let producer = std::thread::spawn(move || {
        // Sends only once the run has nothing else to do.
        wait.recv().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        tx.blocking_send(10).unwrap();
    });
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(42)
        .build()
        .unwrap();
    let got = rt.block_on(async move {
        go.send(()).unwrap();
        rx.recv().await
    });
    assert_eq!(got, Some(10));
    producer.join().unwrap();
}

/// The thread that built a runtime waits, outside `block_on`, on a std
/// channel: the runtime runs meanwhile as Tokio's threads would go on by
/// themselves (its simulated threads; a multi-thread runtime's tasks).
#[test]
fn a_runtime_s_owner_waiting_outside_block_on_lets_it_run() {
    let rt = sim_runtime::runtime::Builder::new_multi_thread()
        .enable_all()
        .sim_seed(41)
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        sim_runtime::time::sleep(Duration::from_millis(10)).await;
        tx.send(sim::elapsed()).unwrap();
    });
    assert_eq!(rx.recv().unwrap(), Duration::from_millis(10));
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let handle = rt.handle().clone();
    let t = std::thread::spawn(move || {
        handle.block_on(async { sim_runtime::time::sleep(Duration::from_millis(5)).await });
        tx.send(7).unwrap();
    });
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)).unwrap(), 7);
    t.join().unwrap();
    assert_eq!(
        rt.block_on(async { sim::elapsed() }),
        Duration::from_millis(15)
    );
}

/// Of two `Runtime::block_on`s of one current-thread runtime on two
/// threads, the first holds the runtime's one worker
/// (`runtime::worker_index()` is `Some(0)` in its future) and the concurrent
/// one does not (`None`), as in Tokio.
#[test]
fn the_first_of_two_concurrent_block_ons_holds_the_worker() {
    let rt = Arc::new(
        sim_runtime::runtime::Builder::new_current_thread()
            .enable_all()
            .sim_seed(43)
            .build()
            .unwrap(),
    );
    let (entered_tx, entered_rx) = std::sync::mpsc::sync_channel(1);
    let (release_tx, release_rx) = sim_runtime::sync::oneshot::channel::<()>();
    let owner_rt = rt.clone();
    let owner = std::thread::spawn(move || {
        owner_rt.block_on(async {
            entered_tx.send(()).unwrap();
            release_rx.await.unwrap();
            sim_runtime::runtime::worker_index()
        })
    });
    entered_rx.recv().unwrap();
    let other_rt = rt.clone();
    let other = std::thread::spawn(move || {
        other_rt.block_on(async { sim_runtime::runtime::worker_index() })
    });
    assert_eq!(other.join().unwrap(), None);
    release_tx.send(()).unwrap();
    assert_eq!(owner.join().unwrap(), Some(0));
}

/// A task spawned from a thread (off the runtime's worker) waits in
/// Tokio's global queue, and `global_queue_depth` counts it until the
/// runtime runs it; one spawned from a task (on the worker) does not count.
#[test]
fn a_task_spawned_from_off_the_worker_waits_in_the_global_queue() {
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(44)
        .build()
        .unwrap();
    let depths = rt.block_on(async {
        let metrics = sim_runtime::runtime::Handle::current().metrics();
        let local = sim_runtime::spawn(async {});
        let from_task = metrics.global_queue_depth();
        let handle = sim_runtime::runtime::Handle::current();
        // The join blocks the executor's thread: the thread runs, no task.
        std::thread::spawn(move || drop(handle.spawn(async {})))
            .join()
            .unwrap();
        let from_thread = metrics.global_queue_depth();
        local.await.unwrap();
        sim_runtime::task::yield_now().await;
        (from_task, from_thread, metrics.global_queue_depth())
    });
    assert_eq!(depths, (0, 1, 0));
}

/// As Tokio's current-thread runtime, whose tasks run only inside a
/// `block_on`: while the thread that built it joins a thread outside
/// `block_on`, the thread runs and the runtime's tasks wait (the spawned
/// task is still in the global queue after the join), unless a thread's
/// `Runtime::block_on` holds the worker, which runs them.
#[test]
fn a_current_thread_runtime_runs_no_task_while_its_owner_waits_outside_block_on() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let rt = Arc::new(
        sim_runtime::runtime::Builder::new_current_thread()
            .enable_all()
            .sim_seed(45)
            .build()
            .unwrap(),
    );
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    rt.spawn(async move { r.store(true, Ordering::SeqCst) });
    let r = ran.clone();
    let seen = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        r.load(Ordering::SeqCst)
    })
    .join()
    .unwrap();
    assert!(!seen, "a task ran with no block_on holding the worker");
    assert_eq!(rt.metrics().global_queue_depth(), 1);
    // A thread's block_on holds the worker: the task runs, and so does one
    // the thread awaits.
    let rt2 = rt.clone();
    let got = std::thread::spawn(move || {
        rt2.block_on(async { sim_runtime::spawn(async { 5 }).await.unwrap() })
    })
    .join()
    .unwrap();
    assert_eq!(got, 5);
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(rt.metrics().global_queue_depth(), 0);
}
