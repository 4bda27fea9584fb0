use crate::run;
use sim_runtime::time::{self, Duration, Instant, MissedTickBehavior};
use std::sync::{Arc, Mutex};

#[test]
fn an_hour_of_sleep_is_virtual() {
    let wall = std::time::Instant::now();
    let elapsed = run(1, async {
        let start = Instant::now();
        for _ in 0..60 {
            time::sleep(Duration::from_secs(60)).await;
        }
        start.elapsed()
    });
    assert_eq!(elapsed, Duration::from_secs(3600));
    // Not a speed assertion: an hour of real sleeping would not end at all
    // within the test's lifetime; this only guards against real sleeping.
    assert!(wall.elapsed() < Duration::from_secs(60));
}

#[test]
fn sleep_lasts_at_least_its_duration_rounded_to_ms() {
    run(2, async {
        let start = Instant::now();
        time::sleep(Duration::from_micros(1500)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(2));
        time::sleep(Duration::ZERO).await;
        assert_eq!(start.elapsed(), Duration::from_millis(2));
    });
}

#[test]
fn std_clocks_follow_virtual_time() {
    run(3, async {
        let std_start = std::time::Instant::now();
        let wall_start = std::time::SystemTime::now();
        time::sleep(Duration::from_secs(5)).await;
        assert_eq!(std_start.elapsed(), Duration::from_secs(5));
        assert_eq!(wall_start.elapsed().unwrap(), Duration::from_secs(5));
        assert_eq!(Instant::now().into_std(), std::time::Instant::now());
    });
}

#[test]
fn same_instant_timers_fire_in_seeded_order() {
    fn order(seed: u64) -> Vec<u32> {
        run(seed, async {
            let log = Arc::new(Mutex::new(Vec::new()));
            let mut hs = Vec::new();
            for i in 0..6 {
                let log = log.clone();
                hs.push(sim_runtime::spawn(async move {
                    time::sleep(Duration::from_millis(10)).await;
                    log.lock().unwrap().push(i);
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
            let v = log.lock().unwrap().clone();
            v
        })
    }
    assert_eq!(order(5), order(5));
    let distinct: std::collections::BTreeSet<_> = (0..10).map(order).collect();
    assert!(distinct.len() > 3);
}

#[test]
fn dropped_sleep_neither_wakes_nor_pulls_time_forward() {
    run(4, async {
        let start = Instant::now();
        {
            let s = time::sleep(Duration::from_secs(100));
            let _ = time::timeout(Duration::from_millis(1), s).await;
        }
        assert_eq!(start.elapsed(), Duration::from_millis(1));
        time::sleep(Duration::from_secs(1)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(1001));
    });
}

#[test]
fn timeout_and_elapsed() {
    run(5, async {
        let r = time::timeout(Duration::from_millis(50), std::future::pending::<()>()).await;
        let e = r.unwrap_err();
        assert_eq!(e.to_string(), "deadline has elapsed");
        let io: std::io::Error = e.into();
        assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
        let ok = time::timeout(Duration::from_millis(50), async { 3 }).await;
        assert_eq!(ok.unwrap(), 3);
    });
}

#[test]
fn interval_ticks_and_missed_tick_behaviours() {
    run(6, async {
        let start = Instant::now();
        let mut iv = time::interval(Duration::from_millis(10));
        assert_eq!(iv.tick().await, start);
        assert_eq!(iv.tick().await, start + Duration::from_millis(10));
        // Miss three ticks, then Burst catches up at once.
        time::sleep(Duration::from_millis(35)).await;
        assert_eq!(iv.tick().await, start + Duration::from_millis(20));
        assert_eq!(Instant::now(), start + Duration::from_millis(45));
        iv.set_missed_tick_behavior(MissedTickBehavior::Skip);
        assert_eq!(iv.tick().await, start + Duration::from_millis(30));
        assert_eq!(iv.tick().await, start + Duration::from_millis(50));
    });
}

#[test]
fn sleep_reset_wakes_waiter_at_new_deadline() {
    run(7, async {
        let start = Instant::now();
        let sleep = time::sleep(Duration::from_secs(10));
        tokio_pin(sleep, start).await;
    });
    async fn tokio_pin(sleep: time::Sleep, start: Instant) {
        sim_runtime::pin!(sleep);
        let _ = time::timeout(Duration::from_millis(1), sleep.as_mut()).await;
        sleep.as_mut().reset(start + Duration::from_millis(20));
        sleep.await;
        assert_eq!(Instant::now(), start + Duration::from_millis(20));
    }
}

#[test]
fn advance_moves_exactly() {
    run(8, async {
        let start = Instant::now();
        time::pause();
        time::advance(Duration::from_micros(10)).await;
        assert_eq!(start.elapsed(), Duration::from_micros(10));
        time::resume();
    });
}

#[test]
fn pause_rules_follow_tokio() {
    let msg = crate::run_failing(9, || async {
        time::advance(Duration::from_millis(1)).await;
    });
    assert!(msg.starts_with("time is not frozen"), "{msg}");
    let msg = crate::run_failing(9, || async {
        time::pause();
        time::pause();
    });
    assert!(msg.starts_with("time is already frozen"), "{msg}");
}

#[test]
fn on_thread_park_runs_each_time_the_simulation_idles() {
    let parks = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let p = parks.clone();
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(1)
        .on_thread_park(move || {
            p.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
        .build()
        .unwrap();
    rt.block_on(async {
        for _ in 0..3 {
            time::sleep(Duration::from_millis(1)).await;
        }
    });
    assert_eq!(parks.load(std::sync::atomic::Ordering::SeqCst), 3);
}

/// After `shutdown_timeout` the timer is gone, as Tokio's: polling a sleep
/// (made before or after the shutdown) panics with Tokio's message.
#[test]
fn a_sleep_after_shutdown_panics_as_in_tokio() {
    for made_before in [true, false] {
        let rt = sim_runtime::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let _enter = handle.enter();
        let early = made_before.then(|| time::sleep(Duration::from_millis(100)));
        rt.shutdown_timeout(Duration::from_secs(1));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let f = early.unwrap_or_else(|| time::sleep(Duration::from_millis(100)));
            handle.block_on(f);
        }))
        .unwrap_err();
        let text = crate::panic_text(&*caught);
        assert!(
            text.contains("A Tokio 1.x context was found, but it is being shutdown."),
            "{text}"
        );
    }
}

/// Polls its inner future with a waker of its own that forwards to the
/// task's (as `FuturesUnordered` or a hand-written combinator does), and
/// counts the wakes. The executor keeps a task's own waker as its slot and
/// id; a foreign waker like this one must still be kept and called.
struct Forwarding<F> {
    inner: std::pin::Pin<Box<F>>,
    waker: Arc<ForwardWaker>,
}

struct ForwardWaker {
    outer: Mutex<Option<std::task::Waker>>,
    wakes: std::sync::atomic::AtomicUsize,
}

impl std::task::Wake for ForwardWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Some(w) = self.outer.lock().unwrap().take() {
            w.wake();
        }
    }
}

impl<F: std::future::Future> Forwarding<F> {
    fn new(inner: F) -> Self {
        Forwarding {
            inner: Box::pin(inner),
            waker: Arc::new(ForwardWaker {
                outer: Mutex::new(None),
                wakes: Default::default(),
            }),
        }
    }
}

impl<F: std::future::Future> std::future::Future for Forwarding<F> {
    type Output = (F::Output, usize);
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        *self.waker.outer.lock().unwrap() = Some(cx.waker().clone());
        let waker = std::task::Waker::from(self.waker.clone());
        let mut inner_cx = std::task::Context::from_waker(&waker);
        match self.inner.as_mut().poll(&mut inner_cx) {
            std::task::Poll::Ready(v) => std::task::Poll::Ready((
                v,
                self.waker.wakes.load(std::sync::atomic::Ordering::SeqCst),
            )),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

#[test]
fn timers_and_yields_wake_foreign_wakers() {
    run(11, async {
        let start = Instant::now();
        let ((), wakes) = Forwarding::new(time::sleep(Duration::from_millis(10))).await;
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        assert_eq!(wakes, 1, "the timer woke the combinator's waker once");
        let ((), wakes) = Forwarding::new(sim_runtime::task::yield_now()).await;
        assert_eq!(wakes, 1, "yield_now woke the combinator's waker once");
        // In a spawned task too, with other tasks sharing the deadline.
        let hs: Vec<_> = (0..4)
            .map(|i| {
                sim_runtime::spawn(async move {
                    let ((), wakes) =
                        Forwarding::new(time::sleep(Duration::from_millis(5 + i % 2))).await;
                    wakes
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.await.unwrap(), 1);
        }
        assert_eq!(start.elapsed(), Duration::from_millis(16));
    });
}

/// `Sleep::deadline` is `Instant::now()` at the `sleep` call plus the
/// duration, before and after the sleep, from inside the run and after it
/// (the deadline is kept as nanoseconds and made into an `Instant` on
/// request).
#[test]
fn sleep_deadline_is_now_plus_duration_wherever_it_is_read() {
    let (sleep, expected) = run(3, async {
        time::sleep(Duration::from_millis(7)).await;
        let start = Instant::now();
        let s = time::sleep(Duration::from_millis(5));
        assert_eq!(s.deadline(), start + Duration::from_millis(5));
        let mut s = Box::pin(s);
        s.as_mut().await;
        assert_eq!(s.deadline(), start + Duration::from_millis(5));
        assert_eq!(Instant::now(), start + Duration::from_millis(5));
        let later = time::sleep(Duration::from_secs(3));
        (later, Instant::now() + Duration::from_secs(3))
    });
    assert_eq!(sleep.deadline(), expected);
}
