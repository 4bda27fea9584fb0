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

/// A worker thread on node `w`: counts its rounds (one per 10 ms) and, if
/// it ever ran its thread-local destructors, says so.
fn start_counter(
    w: sim::Node,
) -> (
    Arc<std::sync::atomic::AtomicU32>,
    Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    let rounds = Arc::new(AtomicU32::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let (r, d) = (rounds.clone(), dropped.clone());
    sim::spawn_on(w, async move {
        std::thread::spawn(move || {
            struct Mark(Arc<AtomicBool>);
            impl Drop for Mark {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            thread_local! { static MARK: std::cell::RefCell<Option<Mark>> = const { std::cell::RefCell::new(None) }; }
            MARK.with(|m| *m.borrow_mut() = Some(Mark(d)));
            let _also = Mark(Arc::new(AtomicBool::new(false)));
            loop {
                r.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
    });
    (rounds, dropped)
}

/// Killing or crashing a node stops its threads where they stand: they
/// never run again, and none of their destructors runs.
#[test]
fn a_dead_node_s_threads_never_run_again() {
    use std::sync::atomic::Ordering;
    for crash in [false, true] {
        let (at_death, later, dropped) = run(31, async move {
            let w = sim::node("w").build();
            let (rounds, dropped) = start_counter(w);
            sim_runtime::time::sleep(Duration::from_millis(55)).await;
            if crash {
                sim::crash(w);
            } else {
                sim::kill(w);
            }
            let at_death = rounds.load(Ordering::SeqCst);
            sim_runtime::time::sleep(Duration::from_millis(100)).await;
            (
                at_death,
                rounds.load(Ordering::SeqCst),
                dropped.load(Ordering::SeqCst),
            )
        });
        assert_eq!(at_death, 6, "rounds at 0, 10, .., 50 ms");
        assert_eq!(later, at_death, "a thread of a dead node ran again");
        assert!(!dropped, "a thread of a dead node ran its destructors");
    }
}

/// What a destructor got through: `began` when it started, `ended` when
/// it returned.
#[derive(Clone, Default)]
struct DropMarks {
    began: Arc<std::sync::atomic::AtomicBool>,
    ended: Arc<std::sync::atomic::AtomicBool>,
}

impl DropMarks {
    fn get(&self) -> (bool, bool) {
        use std::sync::atomic::Ordering;
        (
            self.began.load(Ordering::SeqCst),
            self.ended.load(Ordering::SeqCst),
        )
    }
}

/// A guard that, dropped, tells its worker thread to stop and then waits
/// for it: by joining it (`JoinHandle::join`, RocksDB's shape), or by
/// sleeping until the worker counted itself out (fjall's).
struct StopsItsWorker {
    stop: Option<std::sync::mpsc::Sender<()>>,
    worker: Option<std::thread::JoinHandle<()>>,
    running: Arc<std::sync::atomic::AtomicU32>,
    marks: DropMarks,
}

impl StopsItsWorker {
    fn start(marks: DropMarks, join: bool) -> StopsItsWorker {
        use std::sync::atomic::{AtomicU32, Ordering};
        let running = Arc::new(AtomicU32::new(1));
        let r = running.clone();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            let _ = stopped.recv();
            r.fetch_sub(1, Ordering::SeqCst);
        });
        StopsItsWorker {
            stop: Some(stop),
            worker: join.then_some(worker),
            running,
            marks,
        }
    }
}

impl Drop for StopsItsWorker {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        self.marks.began.store(true, Ordering::SeqCst);
        drop(self.stop.take());
        match self.worker.take() {
            Some(w) => w.join().unwrap(),
            None => {
                while self.running.load(Ordering::SeqCst) > 0 {
                    std::thread::sleep(Duration::from_micros(10));
                }
            }
        }
        self.marks.ended.store(true, Ordering::SeqCst);
    }
}

/// A dead node's threads never run again, so a destructor of its tasks that
/// waits for one of them (a join, or a sleep until a worker counts itself
/// out) would wait forever: it stops where it stands, as the process did,
/// and the run goes on (before, the run blocked in the destructor and the
/// process exited with a deadlock report).
#[test]
fn a_dead_node_s_destructor_that_waits_for_its_thread_stops_there() {
    for join in [true, false] {
        let marks = DropMarks::default();
        let m = marks.clone();
        let (at_death, after) = run(40, async move {
            let n = sim::node("n").build();
            let (started_tx, started) = sim_runtime::sync::oneshot::channel();
            let m2 = m.clone();
            let task = sim::spawn_on(n, async move {
                let _guard = StopsItsWorker::start(m2, join);
                started_tx.send(()).unwrap();
                std::future::pending::<()>().await;
            });
            started.await.unwrap();
            sim::crash(n);
            let at_death = m.get();
            // Its joiner hears that the task was cancelled, as of any task
            // of a dead node.
            assert!(task.await.unwrap_err().is_cancelled(), "join: {join}");
            sim_runtime::time::sleep(Duration::from_millis(100)).await;
            (at_death, sim::elapsed())
        });
        assert_eq!(at_death, (true, false), "join: {join}");
        assert_eq!(marks.get(), (true, false), "join: {join}");
        assert_eq!(after, Duration::from_millis(100), "join: {join}");
    }
}

/// What a task whose destructor was left still held is never dropped: a
/// channel it held never closes. A run that waits for that closing is a
/// deadlock, and the report says why.
#[test]
fn a_channel_held_by_a_task_whose_destructor_was_left_never_closes_and_the_report_says_why() {
    let msg = crate::run_failing(43, || async {
        let n = sim::node("store").build();
        let (acks_tx, mut acks) = sim_runtime::sync::mpsc::unbounded_channel::<u32>();
        sim::spawn_on(n, async move {
            let _guard = StopsItsWorker::start(DropMarks::default(), true);
            acks_tx.send(1).unwrap();
            std::future::pending::<()>().await;
            drop(acks_tx);
        });
        assert_eq!(acks.recv().await, Some(1));
        sim::crash(n);
        acks.recv().await
    });
    assert!(msg.contains("nothing is runnable"), "{msg}");
    assert!(
        msg.contains("a destructor of task 1 of dead node 'store' was left where it would wait"),
        "{msg}"
    );
}

/// At the end of a run, tasks are dropped while their nodes' threads can
/// still run: a destructor that stops its worker and waits for it
/// completes (before, the threads were stopped first and the wait was a
/// deadlock that ended the process).
#[test]
fn a_destructor_that_stops_and_waits_for_its_thread_completes_at_the_end_of_a_run() {
    for join in [true, false] {
        let marks = DropMarks::default();
        let m = marks.clone();
        run(41, async move {
            let n = sim::node("n").build();
            let (started_tx, started) = sim_runtime::sync::oneshot::channel();
            sim::spawn_on(n, async move {
                let _guard = StopsItsWorker::start(m, join);
                started_tx.send(()).unwrap();
                std::future::pending::<()>().await;
            });
            started.await.unwrap();
        });
        assert_eq!(marks.get(), (true, true), "join: {join}");
    }
}

/// A destructor run at the end of a run that waits for what can never
/// happen (a condition variable nobody will signal) is left where it
/// stands: the run ends normally.
#[test]
fn a_destructor_waiting_forever_at_the_end_of_a_run_is_left_there() {
    struct WaitsForever(DropMarks);
    impl Drop for WaitsForever {
        fn drop(&mut self) {
            use std::sync::atomic::Ordering;
            self.0.began.store(true, Ordering::SeqCst);
            let pair = (Mutex::new(false), Condvar::new());
            let mut signalled = pair.0.lock().unwrap();
            while !*signalled {
                signalled = pair.1.wait(signalled).unwrap();
            }
            self.0.ended.store(true, Ordering::SeqCst);
        }
    }
    let marks = DropMarks::default();
    let m = marks.clone();
    let value = run(42, async move {
        sim_runtime::spawn(async move {
            let _w = WaitsForever(m);
            std::future::pending::<()>().await;
        });
        sim_runtime::task::yield_now().await;
        7
    });
    assert_eq!(value, 7);
    assert_eq!(marks.get(), (true, false));
}

/// Pausing a node freezes its threads; resuming lets them go on.
#[test]
fn a_paused_node_s_threads_are_frozen() {
    use std::sync::atomic::Ordering;
    let (paused, resumed) = run(32, async {
        let w = sim::node("w").build();
        let (rounds, _) = start_counter(w);
        sim_runtime::time::sleep(Duration::from_millis(25)).await;
        sim::pause(w);
        let at_pause = rounds.load(Ordering::SeqCst);
        sim_runtime::time::sleep(Duration::from_millis(100)).await;
        let still = rounds.load(Ordering::SeqCst);
        sim::resume(w);
        sim_runtime::time::sleep(Duration::from_millis(100)).await;
        ((at_pause, still), rounds.load(Ordering::SeqCst))
    });
    assert_eq!(paused.0, paused.1, "a paused node's thread ran");
    assert!(resumed > paused.1, "a resumed node's thread stayed frozen");
}

/// The OS threads of a run, finished or killed, are all gone when it ends:
/// seeds after seeds leave none behind. (The threads are named, so the
/// count is theirs alone, whatever other tests run meanwhile.)
#[test]
fn runs_leave_no_os_threads_behind() {
    const NAME: &str = "leak-probe";
    fn probes() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim_end() == NAME)
            .count()
    }
    let spawn = |f: fn()| {
        std::thread::Builder::new()
            .name(NAME.into())
            .spawn(f)
            .unwrap()
    };
    for seed in 40..140 {
        let alive_inside = run(seed, async move {
            let w = sim::node("w").build();
            sim::spawn_on(w, async move {
                spawn(|| loop {
                    std::thread::sleep(Duration::from_millis(1));
                });
            });
            let h = spawn(|| std::thread::sleep(Duration::from_millis(3)));
            // Never joined, never ends.
            spawn(|| loop {
                std::thread::sleep(Duration::from_millis(1));
            });
            sim_runtime::time::sleep(Duration::from_millis(20)).await;
            sim::kill(w);
            h.join().unwrap();
            sim::fs::on_real_disk(probes)
        });
        assert_eq!(alive_inside, 1, "one thread is still running in the run");
    }
    assert_eq!(probes(), 0, "a run left OS threads behind");
}

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
    assert!(msg.contains("sim-runtime/tests/it/threads.rs:"), "{msg}");
    assert!(msg.contains("blocked on a futex word at 0x"), "{msg}");
}

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
