//! A node's death (kill, crash: its threads stop where they stand and its
//! destructors are left), its pause, and the end of a run.

use super::*;

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
            sim::fs::on_real_disk(|| settled(probes, 1))
        });
        assert_eq!(alive_inside, 1, "one thread is still running in the run");
    }
    assert_eq!(settled(probes, 0), 0, "a run left OS threads behind");
}

/// `count()` once it is `want`, or what it still is after reading it
/// again for a little while (a joined thread's /proc entry may outlive its
/// join by a moment: the kernel clears the id word the join waits on
/// before it lets the task go).
fn settled(count: fn() -> usize, want: usize) -> usize {
    let mut n = count();
    for _ in 0..10_000 {
        if n == want {
            break;
        }
        std::hint::spin_loop();
        n = count();
    }
    n
}
