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

/// Polls `fut` once, outside any runtime.
fn poll_once<F: std::future::Future + Unpin>(fut: &mut F) -> std::task::Poll<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::future::Future::poll(std::pin::Pin::new(fut), &mut cx)
}

/// Records on which thread it was dropped, and whether it was polled.
struct Probe {
    dropped_on: Arc<Mutex<Vec<std::thread::ThreadId>>>,
    polled: Arc<std::sync::atomic::AtomicBool>,
}

impl Probe {
    fn task(&self) -> impl std::future::Future<Output = u32> + Send + 'static {
        let me = Probe {
            dropped_on: self.dropped_on.clone(),
            polled: self.polled.clone(),
        };
        async move {
            me.polled.store(true, std::sync::atomic::Ordering::SeqCst);
            7
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.dropped_on
            .lock()
            .unwrap()
            .push(std::thread::current().id());
    }
}

/// Tokio's `rt_local::test_spawn_from_guard_other_thread`: a thread builds
/// a `LocalRuntime`, hands a clone of its handle to another thread and
/// ends, its runtime shut down with it. The other thread enters the handle
/// and spawns: as on Tokio, each task is dropped at once, unpolled, on the
/// spawning thread, and its handle is finished and reports it cancelled,
/// whether it came from `tokio::spawn`, `Handle::spawn` or `spawn_blocking`
/// (whose closure never runs). The handle may arrive before the runtime has
/// shut down (the thread sends it first): the spawning thread waits for
/// that rather than racing it.
#[test]
fn spawning_through_the_handle_of_a_runtime_another_thread_shut_down_is_cancelled() {
    let (tx, rx) = std::sync::mpsc::channel();
    let owner = std::thread::spawn(move || {
        let rt = sim_runtime::runtime::Builder::new_current_thread()
            .enable_all()
            .name("ended")
            .build_local(Default::default())
            .unwrap();
        assert_eq!(
            rt.block_on(async { sim_runtime::spawn(async { 1 }).await.unwrap() }),
            1
        );
        tx.send(rt.handle().clone()).unwrap();
    });
    let handle = rx.recv().unwrap();
    let here = std::thread::current().id();
    let guard = handle.enter();
    let current = sim_runtime::runtime::Handle::current();
    assert_eq!(current.id(), handle.id());
    assert_eq!(current.name(), Some("ended"));
    let probe = Probe {
        dropped_on: Arc::new(Mutex::new(Vec::new())),
        polled: Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = ran.clone();
    let mut tasks = vec![
        sim_runtime::spawn(probe.task()),
        handle.spawn(probe.task()),
        current.spawn(probe.task()),
        sim_runtime::task::spawn_blocking(move || {
            r.store(true, std::sync::atomic::Ordering::SeqCst);
            7
        }),
    ];
    assert_eq!(*probe.dropped_on.lock().unwrap(), vec![here; 3]);
    assert!(!probe.polled.load(std::sync::atomic::Ordering::SeqCst));
    assert!(tasks.iter().all(|t| t.is_finished()));
    let mut ids: Vec<_> = tasks.iter().map(|t| t.id()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), tasks.len(), "each task has an id of its own");
    for task in &mut tasks {
        let std::task::Poll::Ready(Err(e)) = poll_once(task) else {
            panic!("the task of a runtime that has shut down was not cancelled");
        };
        assert!(e.is_cancelled(), "{e:?}");
        assert_eq!(e.id(), task.id());
    }
    // As Tokio's blocking pool of a runtime that has shut down.
    let err = sim_runtime::task::Builder::new()
        .spawn_blocking(|| 7)
        .unwrap_err();
    assert_eq!(err.to_string(), "blocking pool shutting down");
    drop(guard);
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    owner.join().unwrap();
    // Outside the guard the thread has no runtime again.
    assert!(sim_runtime::runtime::Handle::try_current().is_err());
}

/// A `LocalRuntime` that has shut down, entered from another thread:
/// `spawn_local` panics as on Tokio, the task being local to the thread that
/// built the runtime.
#[test]
fn spawn_local_through_the_handle_of_a_local_runtime_shut_down_elsewhere_panics_as_tokio() {
    let handle = std::thread::spawn(|| {
        let rt = sim_runtime::runtime::Builder::new_current_thread()
            .enable_all()
            .build_local(Default::default())
            .unwrap();
        rt.handle().clone()
    })
    .join()
    .unwrap();
    let _guard = handle.enter();
    let caught = std::panic::catch_unwind(|| {
        sim_runtime::task::spawn_local(async {});
    })
    .unwrap_err();
    let text = crate::panic_text(&*caught);
    assert!(
        text.contains(
            "Local tasks can only be spawned on a LocalRuntime from the thread the runtime was \
             created on"
        ),
        "{text}"
    );
}

/// A runtime that is still running is its own thread's: a thread that is
/// none of its simulation's may not use its handle (after waiting a moment
/// for it to end, in case its owner was about to drop it). Once the owner
/// has shut it down, the same handle spawns cancelled tasks there.
#[test]
fn a_running_runtime_used_from_a_thread_that_is_none_of_its_simulation_s_is_refused() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let owner = std::thread::spawn(move || {
        let rt = sim_runtime::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tx.send(rt.handle().clone()).unwrap();
        done_rx.recv().unwrap();
    });
    let handle = rx.recv().unwrap();
    let refused = |what: &str, use_it: &dyn Fn()| {
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(use_it)).expect_err(what);
        let text = crate::panic_text(&*caught);
        assert!(
            text.contains("used from a thread other than the one that built it"),
            "{what}: {text}"
        );
    };
    refused("spawn", &|| drop(handle.spawn(async {})));
    // A clone would touch the executor's reference count from here.
    refused("clone", &|| drop(handle.clone()));
    done_tx.send(()).unwrap();
    owner.join().unwrap();
    let mut task = handle.spawn(async { 1 });
    assert!(task.is_finished());
    assert!(matches!(poll_once(&mut task), std::task::Poll::Ready(Err(e)) if e.is_cancelled()));
}
