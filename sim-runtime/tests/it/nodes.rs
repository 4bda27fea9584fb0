use crate::run;
use sim_runtime::signal::unix::SignalKind;
use sim_runtime::sim;
use sim_runtime::time::{self, Duration, Instant};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

#[test]
fn tasks_inherit_their_node_and_kill_drops_them_in_context() {
    run(1, async {
        let a = sim::node("a").build();
        let dropped_on = Arc::new(std::sync::Mutex::new(None));
        struct Guard(Arc<std::sync::Mutex<Option<sim::Node>>>);
        impl Drop for Guard {
            fn drop(&mut self) {
                *self.0.lock().unwrap() = Some(sim::current_node());
                // A Drop impl that spawns: attributed to the dying node and
                // cancelled with it.
                let h = sim_runtime::spawn(async {});
                drop(h);
            }
        }
        let g = Guard(dropped_on.clone());
        let h = sim::spawn_on(a, async move {
            let _g = g;
            let child = sim_runtime::spawn(async { sim::current_node() });
            assert_eq!(child.await.unwrap(), sim::current_node());
            std::future::pending::<()>().await;
        });
        time::sleep(Duration::from_millis(1)).await;
        sim::kill(a);
        assert!(h.await.unwrap_err().is_cancelled());
        assert_eq!(*dropped_on.lock().unwrap(), Some(a));
        assert!(!sim::is_alive(a));
        let late = sim::spawn_on(a, async { 1 });
        assert!(
            late.await.unwrap_err().is_cancelled(),
            "a dead node runs nothing"
        );
        sim::revive(a);
        assert_eq!(sim::spawn_on(a, async { 2 }).await.unwrap(), 2);
    });
}

#[test]
fn paused_node_neither_polls_nor_fires_timers() {
    run(2, async {
        let a = sim::node("a").build();
        let ticks = Arc::new(AtomicU32::new(0));
        let t = ticks.clone();
        sim::spawn_on(a, async move {
            loop {
                time::sleep(Duration::from_millis(10)).await;
                t.fetch_add(1, Ordering::SeqCst);
            }
        });
        time::sleep(Duration::from_millis(55)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 5);
        sim::pause(a);
        time::sleep(Duration::from_millis(100)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 5);
        sim::resume(a);
        time::sleep(Duration::from_millis(1)).await;
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            6,
            "the held timer fires on resume"
        );
    });
}

#[test]
fn node_clocks_skew_and_drift() {
    run(3, async {
        let a = sim::node("a").build();
        sim::skew_clock(a, Duration::from_secs(30), true);
        sim::set_drift_ppm(a, 100_000); // 10% fast
        let main_wall = std::time::SystemTime::now();
        let (a_wall, a_elapsed) = sim::spawn_on(a, async {
            let w = std::time::SystemTime::now();
            let start = Instant::now();
            time::sleep(Duration::from_secs(11)).await;
            (w, start.elapsed())
        })
        .await
        .unwrap();
        assert_eq!(
            a_wall.duration_since(main_wall).unwrap(),
            Duration::from_secs(30)
        );
        assert!(a_elapsed >= Duration::from_secs(11), "{a_elapsed:?}");
        // 11 local seconds at +10% take 10 global seconds.
        assert!(
            sim::elapsed() >= Duration::from_secs(10)
                && sim::elapsed() < Duration::from_millis(10_002)
        );
    });
}

/// A drift set mid-run changes the clocks' rate from then on: neither the
/// monotonic nor the wall clock jumps (a slower rate set late would
/// otherwise move them back by what the old rate had run up).
#[test]
fn a_drift_changed_mid_run_changes_the_rate_not_the_reading() {
    run(5, async {
        let a = sim::node("a").build();
        sim::skew_clock(a, Duration::from_secs(30), true);
        let (before, wall_before, after, wall_after, later) = sim::spawn_on(a, async move {
            let start = Instant::now();
            time::sleep(Duration::from_secs(10)).await;
            let before = start.elapsed();
            let wall_before = std::time::SystemTime::now();
            sim::set_drift_ppm(a, -100_000); // 10% slow from now on
            let after = start.elapsed();
            let wall_after = std::time::SystemTime::now();
            time::sleep(Duration::from_secs(9)).await;
            (before, wall_before, after, wall_after, start.elapsed())
        })
        .await
        .unwrap();
        assert_eq!(before, Duration::from_secs(10));
        assert_eq!(after, before, "the monotonic clock did not jump");
        assert_eq!(wall_after, wall_before, "nor the wall clock");
        // 9 local seconds at -10% take 10 global seconds.
        assert!(later >= Duration::from_secs(19), "{later:?}");
        assert!(
            sim::elapsed() >= Duration::from_secs(20)
                && sim::elapsed() < Duration::from_millis(20_002),
            "{:?}",
            sim::elapsed()
        );
        // A skew set after the drift change keeps the clock's reading
        // apart from the skew.
        let main_wall = std::time::SystemTime::now();
        sim::skew_clock(a, Duration::from_secs(60), true);
        let a_wall = sim::spawn_on(a, async { std::time::SystemTime::now() })
            .await
            .unwrap();
        let ahead = a_wall.duration_since(main_wall).unwrap();
        // 20 s at 0 then 10 s at -10%: 1 s behind the main node, then 60 s
        // ahead.
        assert_eq!(ahead, Duration::from_secs(59), "{ahead:?}");
    });
}

#[test]
fn signals_reach_listeners_or_kill_by_default() {
    run(4, async {
        let a = sim::node("a").build();
        let got = sim::spawn_on(a, async {
            let mut term = sim_runtime::signal::unix::signal(SignalKind::terminate()).unwrap();
            term.recv().await;
            "graceful"
        });
        time::sleep(Duration::from_millis(1)).await;
        sim::signal(a, SignalKind::terminate());
        assert_eq!(got.await.unwrap(), "graceful");

        let b = sim::node("b").build();
        let h = sim::spawn_on(b, std::future::pending::<()>());
        time::sleep(Duration::from_millis(1)).await;
        sim::signal(b, SignalKind::terminate());
        assert!(
            h.await.unwrap_err().is_cancelled(),
            "SIGTERM without a handler kills"
        );
        assert!(!sim::is_alive(b));

        let c = sim::node("c").build();
        let h = sim::spawn_on(c, async { sim_runtime::signal::ctrl_c().await.unwrap() });
        time::sleep(Duration::from_millis(1)).await;
        sim::signal(c, SignalKind::interrupt());
        h.await.unwrap();
    });
}

#[test]
fn a_task_that_kills_and_revives_its_own_node_does_not_survive() {
    run(5, async {
        let a = sim::node("a").build();
        let h = sim::spawn_on(a, async move {
            sim::kill(a);
            sim::revive(a);
            sim_runtime::task::yield_now().await;
            "survived"
        });
        assert!(h.await.unwrap_err().is_cancelled());
        assert_eq!(sim::spawn_on(a, async { 1 }).await.unwrap(), 1);
    });
}

#[test]
fn crash_drops_tasks_and_scripted_actions_run_at_their_virtual_time() {
    run(3, async {
        let a = sim::node("a").build();
        let h = sim::spawn_on(a, std::future::pending::<()>());
        let start = sim::elapsed();
        let when = start + Duration::from_secs(5);
        let seen = Arc::new(std::sync::Mutex::new(None));
        let s = seen.clone();
        sim::at(when, move || {
            *s.lock().unwrap() = Some(sim::elapsed());
            sim::crash(a);
        });
        // A scripted action that is cancelled never runs.
        let cancelled = sim::at(when, || panic!("an aborted script ran"));
        cancelled.abort();
        assert!(
            h.await.unwrap_err().is_cancelled(),
            "crash drops the node's tasks"
        );
        assert_eq!(*seen.lock().unwrap(), Some(when));
        assert!(!sim::is_alive(a));
        sim::revive(a);
        assert_eq!(sim::spawn_on(a, async { 3 }).await.unwrap(), 3);
    });
}
