use crate::run;
use sim_runtime::task::{self, JoinSet};
use std::sync::{Arc, Mutex};

/// The interleaving of three yielding tasks, as a transcript.
fn interleaving(seed: u64) -> Vec<u32> {
    run(seed, async {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for t in 0..3u32 {
            let log = log.clone();
            handles.push(sim_runtime::spawn(async move {
                for i in 0..5 {
                    log.lock().unwrap().push(t * 10 + i);
                    task::yield_now().await;
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        let v = log.lock().unwrap().clone();
        v
    })
}

#[test]
fn same_seed_same_interleaving_and_seeds_differ() {
    assert_eq!(interleaving(7), interleaving(7));
    let distinct: std::collections::BTreeSet<Vec<u32>> = (0..20).map(interleaving).collect();
    assert!(
        distinct.len() > 5,
        "20 seeds gave only {} interleavings",
        distinct.len()
    );
}

#[test]
fn join_handle_returns_output_and_panics() {
    run(1, async {
        assert_eq!(sim_runtime::spawn(async { 5 }).await.unwrap(), 5);
        let err = sim_runtime::spawn(async { panic!("boom") })
            .await
            .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "boom");
    });
}

#[test]
fn abort_cancels_and_is_finished() {
    run(2, async {
        let h = sim_runtime::spawn(std::future::pending::<()>());
        let a = h.abort_handle();
        assert!(!a.is_finished());
        h.abort();
        let e = h.await.unwrap_err();
        assert!(e.is_cancelled());
        assert!(a.is_finished());
    });
}

#[test]
fn task_ids_and_names() {
    run(3, async {
        assert!(
            task::try_id().is_none(),
            "block_on's future is not a task, as in Tokio"
        );
        let h = task::Builder::new()
            .name("worker")
            .spawn(async { task::id() })
            .unwrap();
        let id = h.id();
        assert_eq!(h.await.unwrap(), id);
    });
}

#[test]
fn join_set_yields_in_completion_order() {
    run(4, async {
        let mut set = JoinSet::new();
        for ms in [30u64, 10, 20] {
            set.spawn(async move {
                sim_runtime::time::sleep(std::time::Duration::from_millis(ms)).await;
                ms
            });
        }
        let mut out = Vec::new();
        while let Some(r) = set.join_next().await {
            out.push(r.unwrap());
        }
        assert_eq!(out, vec![10, 20, 30]);
    });
}

#[test]
fn spawn_blocking_and_local() {
    run(5, async {
        assert_eq!(task::spawn_blocking(|| 2 + 2).await.unwrap(), 4);
        let local = task::LocalSet::new();
        let rc = std::rc::Rc::new(3);
        let v = local
            .run_until(async move { task::spawn_local(async move { *rc }).await.unwrap() })
            .await;
        assert_eq!(v, 3);
        local.spawn_local(async { task::yield_now().await });
        local.await;
    });
}

sim_runtime::task_local! {
    static REQUEST: u32;
}

#[test]
fn task_local_scopes() {
    run(6, async {
        let v = REQUEST
            .scope(9, async {
                task::yield_now().await;
                REQUEST.get()
            })
            .await;
        assert_eq!(v, 9);
    });
}

#[test]
fn select_draw_is_seeded() {
    fn firsts(seed: u64) -> Vec<u8> {
        run(seed, async {
            let mut out = Vec::new();
            for _ in 0..16 {
                sim_runtime::select! {
                    _ = async {} => out.push(0),
                    _ = async {} => out.push(1),
                }
            }
            out
        })
    }
    assert_eq!(firsts(11), firsts(11));
    let a = firsts(11);
    assert!(
        a.contains(&0) && a.contains(&1),
        "select! never chose one branch: {a:?}"
    );
    assert_ne!(firsts(11), firsts(12));
}

#[test]
fn runtime_handle_and_enter() {
    let rt = sim_runtime::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .sim_seed(1)
        .build()
        .unwrap();
    let h = rt.spawn(async { 1 });
    assert_eq!(rt.block_on(h).unwrap(), 1);
    let handle = rt.handle().clone();
    let _g = rt.enter();
    let h2 = sim_runtime::spawn(async { 2 });
    assert_eq!(handle.block_on(h2).unwrap(), 2);
    fn send_sync<T: Send + Sync>(_: &T) {}
    send_sync(&rt);
    send_sync(&handle);
}

#[test]
fn nested_block_on_is_refused_like_tokio() {
    let msg = crate::run_failing(1, || async {
        sim_runtime::runtime::Handle::current().block_on(async {});
    });
    assert!(
        msg.contains("Cannot start a runtime from within a runtime"),
        "{msg}"
    );
    // Tokio's whole text, which `#[should_panic(expected = ..)]` compares.
    assert!(
        msg.contains(
            "If you are in an async function, use `.await` on the future instead of blocking on it."
        ),
        "{msg}"
    );
}

#[test]
#[should_panic(expected = "max_io_events_per_tick must be non-zero")]
fn zero_io_events_per_tick_is_refused_like_tokio() {
    sim_runtime::runtime::Builder::new_current_thread().max_io_events_per_tick(0);
}

#[test]
fn aborted_future_is_dropped_in_its_task_context_and_drop_panics_are_contained() {
    run(7, async {
        struct Tell(Option<std::sync::mpsc::Sender<Option<task::Id>>>, bool);
        impl std::future::Future for Tell {
            type Output = ();
            fn poll(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<()> {
                std::task::Poll::Pending
            }
        }
        impl Drop for Tell {
            fn drop(&mut self) {
                self.0.take().unwrap().send(task::try_id()).unwrap();
                if self.1 {
                    panic!("panicked while being dropped");
                }
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let h = sim_runtime::spawn(Tell(Some(tx.clone()), false));
        let id = h.id();
        task::yield_now().await;
        h.abort();
        assert!(h.await.unwrap_err().is_cancelled());
        assert_eq!(rx.recv().unwrap(), Some(id));

        let h = sim_runtime::spawn(Tell(Some(tx), true));
        task::yield_now().await;
        h.abort();
        let err = h.await.unwrap_err();
        assert!(
            err.is_panic(),
            "a panicking destructor is the task's panic: {err:?}"
        );
    });
}

#[test]
fn zero_sleep_is_not_elapsed_before_its_poll() {
    run(8, async {
        let s = sim_runtime::time::sleep(std::time::Duration::ZERO);
        assert!(!s.is_elapsed());
        s.await;
    });
}

#[test]
fn a_yielding_task_waits_for_every_runnable_task() {
    for seed in 0..20 {
        let order = run(seed, async {
            let log = Arc::new(Mutex::new(Vec::new()));
            let l = log.clone();
            let yielder = sim_runtime::spawn(async move {
                l.lock().unwrap().push("yield");
                task::yield_now().await;
                l.lock().unwrap().push("resumed");
            });
            let mut others = Vec::new();
            for _ in 0..4 {
                let l = log.clone();
                others.push(sim_runtime::spawn(async move {
                    l.lock().unwrap().push("other")
                }));
            }
            yielder.await.unwrap();
            for o in others {
                o.await.unwrap();
            }
            let v = log.lock().unwrap().clone();
            v
        });
        let y = order.iter().position(|e| *e == "yield").unwrap();
        let r = order.iter().position(|e| *e == "resumed").unwrap();
        let others_after_yield = order[y..].iter().filter(|e| **e == "other").count();
        let others_before_resume = order[y..r].iter().filter(|e| **e == "other").count();
        assert_eq!(
            others_after_yield, others_before_resume,
            "seed {seed}: {order:?}"
        );
    }
}

#[test]
fn block_in_place_follows_the_flavor() {
    let msg = crate::run_failing(1, || async {
        task::block_in_place(|| ());
    });
    assert!(
        msg.starts_with("can call blocking only when running on the multi-threaded runtime"),
        "{msg}"
    );
    let rt = sim_runtime::runtime::Builder::new_multi_thread()
        .worker_threads(3)
        .sim_seed(2)
        .build()
        .unwrap();
    let inner = rt.block_on(async {
        assert_eq!(
            sim_runtime::runtime::Handle::current()
                .metrics()
                .num_workers(),
            3
        );
        // Outside the context, blocking code may drive another runtime.
        task::block_in_place(|| {
            sim_runtime::runtime::Builder::new_current_thread()
                .sim_seed(3)
                .build()
                .unwrap()
                .block_on(async { 7 })
        })
    });
    assert_eq!(inner, 7);
}

#[test]
fn dropping_a_runtime_inside_async_code_panics_like_tokio() {
    let msg = crate::run_failing(1, || async {
        let _ = sim_runtime::runtime::Builder::new_current_thread()
            .sim_seed(2)
            .build()
            .unwrap();
    });
    assert!(
        msg.starts_with("Cannot drop a runtime in a context where blocking is not allowed"),
        "{msg}"
    );
    run(3, async {
        let inner = sim_runtime::runtime::Builder::new_current_thread()
            .sim_seed(4)
            .build()
            .unwrap();
        inner.shutdown_timeout(std::time::Duration::ZERO);
    });
}

#[sim_runtime::test(crate = "sim_runtime", name = "named-runtime")]
async fn test_attribute_names_the_runtime() {
    assert_eq!(
        sim_runtime::runtime::Handle::current().name(),
        Some("named-runtime")
    );
}

#[test]
fn block_in_place_is_refused_inside_a_local_set_and_pause_on_multi_thread() {
    let rt = || {
        sim_runtime::runtime::Builder::new_multi_thread()
            .sim_seed(1)
            .build()
            .unwrap()
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        task::LocalSet::new().block_on(&rt(), async { task::block_in_place(|| ()) })
    }));
    let msg = r
        .unwrap_err()
        .downcast::<&str>()
        .map(|s| s.to_string())
        .unwrap_or_default();
    assert!(
        msg.starts_with("can call blocking only when running on the multi-threaded runtime"),
        "{msg}"
    );
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt().block_on(async { sim_runtime::time::pause() })
    }));
    assert!(
        r.is_err(),
        "time::pause() on multi_thread must panic as in Tokio"
    );
}

#[test]
fn spawn_local_outside_a_local_set_panics_like_tokio() {
    let msg = crate::run_failing(1, || async {
        task::spawn_local(async {});
    });
    assert!(
        msg.starts_with(
            "`spawn_local` called from outside of a `task::LocalSet` or `runtime::LocalRuntime`"
        ),
        "{msg}"
    );
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .sim_seed(2)
        .build_local(Default::default())
        .unwrap();
    assert_eq!(
        rt.block_on(async { task::spawn_local(async { 5 }).await.unwrap() }),
        5
    );
}

#[test]
fn a_yielder_is_not_starved_by_tasks_that_keep_waking_each_other() {
    run(5, async {
        let (tx1, mut rx1) = sim_runtime::sync::mpsc::unbounded_channel::<()>();
        let (tx2, mut rx2) = sim_runtime::sync::mpsc::unbounded_channel::<()>();
        tx1.send(()).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s1, s2) = (stop.clone(), stop.clone());
        let ping = sim_runtime::spawn(async move {
            while rx1.recv().await.is_some() && !s1.load(std::sync::atomic::Ordering::SeqCst) {
                tx2.send(()).unwrap();
            }
        });
        let pong = sim_runtime::spawn(async move {
            while rx2.recv().await.is_some() && !s2.load(std::sync::atomic::Ordering::SeqCst) {
                tx1.send(()).unwrap();
            }
        });
        task::yield_now().await;
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = (ping.await, pong.await);
    });
}

#[sim_runtime::test(crate = "sim_runtime", flavor = "local")]
async fn local_flavor_allows_spawn_local() {
    assert_eq!(task::spawn_local(async { 1 }).await.unwrap(), 1);
}

/// `runtime::worker_index` as Tokio answers it: `Some(0)` in a task and in
/// a current-thread `Runtime::block_on`; `None` in `spawn_blocking`, in a
/// multi-thread runtime's `block_on` future, in `Handle::block_on`, and
/// outside any runtime.
#[test]
fn worker_index_is_none_where_tokio_has_no_worker() {
    use sim_runtime::runtime::{worker_index, Builder};
    assert_eq!(worker_index(), None);
    let current = Builder::new_current_thread().enable_all().build().unwrap();
    current.block_on(async {
        assert_eq!(worker_index(), Some(0));
        let in_task = sim_runtime::spawn(async { worker_index() });
        assert_eq!(in_task.await.unwrap(), Some(0));
        let blocking = sim_runtime::task::spawn_blocking(worker_index);
        assert_eq!(blocking.await.unwrap(), None);
    });
    assert_eq!(current.handle().block_on(async { worker_index() }), None);
    drop(current);
    let multi = Builder::new_multi_thread().enable_all().build().unwrap();
    multi.block_on(async {
        assert_eq!(worker_index(), None);
        let in_task = sim_runtime::spawn(async { worker_index() });
        assert_eq!(in_task.await.unwrap(), Some(0));
    });
}

/// `tokio::io::stdout()`/`stderr()` work in a simulation (Tokio's run on a
/// blocking pool the simulation does not have; these write in place).
#[test]
fn stdout_and_stderr_write_in_a_simulation() {
    use sim_runtime::io::AsyncWriteExt;
    crate::run(2, async {
        let mut out = sim_runtime::io::stdout();
        out.write_all(b"sim: stdout from a simulated task\n")
            .await
            .unwrap();
        out.flush().await.unwrap();
        let mut err = sim_runtime::io::stderr();
        err.write_all(b"sim: stderr from a simulated task\n")
            .await
            .unwrap();
        err.shutdown().await.unwrap();
    });
}

/// After a shutdown, a write to stdout fails as Tokio's does.
#[test]
fn stdout_after_shutdown_is_the_shutdown_error() {
    use sim_runtime::io::AsyncWriteExt;
    let handle = crate::shut_down_runtime();
    let _enter = handle.enter();
    let err = handle
        .block_on(async { sim_runtime::io::stdout().write_all(b"x").await })
        .unwrap_err();
    assert!(sim_runtime::runtime::is_rt_shutdown_err(&err), "{err:?}");
}

/// Outside any runtime a write to stdout panics, as Tokio's does.
#[test]
fn stdout_outside_a_runtime_panics_as_in_tokio() {
    use sim_runtime::io::AsyncWriteExt;
    let caught = std::panic::catch_unwind(|| {
        let mut out = sim_runtime::io::stdout();
        let mut write = std::pin::pin!(out.write_all(b"x"));
        let waker = std::task::Waker::noop();
        let _ =
            std::future::Future::poll(write.as_mut(), &mut std::task::Context::from_waker(waker));
    })
    .unwrap_err();
    let text = crate::panic_text(&*caught);
    assert!(
        text.contains(
            "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
        ),
        "{text}"
    );
}

/// Counts its drops, and on which thread the last one happened.
struct Counted(Arc<Mutex<Vec<std::thread::ThreadId>>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(std::thread::current().id());
    }
}

/// A task is one allocation shared by the executor, its handles and its
/// wakers: a waker that outlives the task and the runtime, dropped on another
/// thread, frees it there, while the future and the output were each dropped
/// exactly once, on the simulation's thread; a handle dropped before the task
/// finishes leaves nothing behind, and one dropped after drops the output.
#[test]
fn a_task_outlives_its_run_only_as_long_as_its_wakers_and_handles() {
    let futures = Arc::new(Mutex::new(Vec::new()));
    let outputs = Arc::new(Mutex::new(Vec::new()));
    let sim_thread = std::thread::current().id();
    let (f, o) = (futures.clone(), outputs.clone());
    let kept = run(3, async move {
        // Finishes; its handle is awaited, so its output goes to the caller.
        let (f1, o1) = (Counted(f.clone()), o.clone());
        let waker = Arc::new(Mutex::new(None));
        let w = waker.clone();
        let h = sim_runtime::spawn(async move {
            let _f = f1;
            std::future::poll_fn(|cx| {
                *w.lock().unwrap() = Some(cx.waker().clone());
                std::task::Poll::Ready(())
            })
            .await;
            Counted(o1)
        });
        let out = h.await.unwrap();
        drop(out);
        // Never finishes; its handle is dropped first, then it is aborted.
        let f2 = Counted(f.clone());
        let h2 = sim_runtime::spawn(async move {
            let _f = f2;
            std::future::pending::<()>().await
        });
        let a = h2.abort_handle();
        drop(h2);
        task::yield_now().await;
        a.abort();
        task::yield_now().await;
        assert!(a.is_finished());
        // Finishes while nobody holds its handle: the output is dropped at once.
        let o3 = o.clone();
        drop(sim_runtime::spawn(async move { Counted(o3) }));
        task::yield_now().await;
        let waker = waker
            .lock()
            .unwrap()
            .take()
            .expect("the first task kept its waker");
        waker
    });
    // The runtime is gone; the waker still refers to the first task.
    std::thread::spawn(move || {
        kept.wake_by_ref();
        drop(kept);
    })
    .join()
    .unwrap();
    let futures = futures.lock().unwrap();
    let outputs = outputs.lock().unwrap();
    assert_eq!(futures.len(), 2, "each future dropped once");
    assert_eq!(outputs.len(), 2, "each output dropped once");
    assert!(futures
        .iter()
        .chain(outputs.iter())
        .all(|t| *t == sim_thread));
}

/// A `LocalSet` given tasks outside `block_on`, on the thread that built a
/// runtime, runs them when driven on it, and dropping the set drops them
/// (Tokio's `drop_cancels_tasks`): the tasks go to that runtime.
#[test]
fn a_local_set_takes_tasks_before_it_runs() {
    use std::rc::Rc;
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(44)
        .build()
        .unwrap();
    let kept = Rc::new(());
    let inside = kept.clone();
    let (started_tx, started_rx) = sim_runtime::sync::oneshot::channel();
    let local = task::LocalSet::new();
    let first = local.spawn_local(async { 7 });
    local.spawn_local(async move {
        let _kept = inside;
        started_tx.send(()).unwrap();
        std::future::pending::<()>().await;
    });
    let got = local.block_on(&rt, async {
        started_rx.await.unwrap();
        first.await.unwrap()
    });
    assert_eq!(got, 7);
    assert_eq!(Rc::strong_count(&kept), 2);
    drop(local);
    drop(rt);
    assert_eq!(Rc::strong_count(&kept), 1);
}
