//! Strategies: the portfolio, PCT (and its spin demotion), early timers.

use sim_runtime::__private::harness::{run_seed, strategy, SeedOutcome, SeedSettings};
use sim_runtime::time::{self, Duration};
use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::Poll;

/// One step: wake itself and go to the back of the run queue (not a
/// deferred `yield_now`), so the schedule picks among all runnable tasks.
async fn step() {
    let mut woke = false;
    poll_fn(|cx| {
        if woke {
            Poll::Ready(())
        } else {
            woke = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

fn run<F, Fut>(seed: u64, schedule: &str, body: F) -> SeedOutcome
where
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = ()>,
{
    let settings = SeedSettings {
        seed,
        schedule: Some(schedule.to_string()),
        step_limit: Some(200_000),
        ..SeedSettings::default()
    };
    // Each seed on a fresh thread, as the harness does.
    std::thread::scope(|s| s.spawn(|| run_seed(&settings, body)).join().unwrap())
}

#[test]
fn the_portfolio_names_a_strategy_per_seed() {
    let names: Vec<String> = (0..6)
        .map(|s| {
            strategy(s, None, None)
                .split(" + ")
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        ["random", "pct2", "random", "pct3", "random", "pct4"]
    );
    assert_eq!(
        strategy(7, Some("fifo"), None).split(" + ").next(),
        Some("fifo")
    );
    let early = (0..200)
        .filter(|&s| strategy(s, None, None).contains("early timers"))
        .count();
    assert!(
        (60..140).contains(&early),
        "early timers on about half the seeds: {early}"
    );
}

/// The bug: task A must run 20 steps before task B's one step. Uniform
/// random interleaving finds it with probability 2^-20; PCT whenever A's
/// priority is above B's (about half the seeds).
async fn ahead_bug() {
    {
        let progress = Arc::new(AtomicU32::new(0));
        let p = progress.clone();
        let a = sim_runtime::spawn(async move {
            for _ in 0..20 {
                p.fetch_add(1, Ordering::SeqCst);
                step().await;
            }
        });
        let b = sim_runtime::spawn(async move {
            assert!(
                progress.load(Ordering::SeqCst) < 20,
                "B ran after A's 20 steps"
            );
        });
        a.await.unwrap();
        b.await.unwrap();
    }
}

#[test]
fn pct_finds_what_uniform_random_misses() {
    let found = |schedule: &str| {
        (0..40)
            .filter(|&s| !run(s, schedule, ahead_bug).passed())
            .count()
    };
    assert_eq!(
        found("random"),
        0,
        "2^-20 per seed: uniform random misses it"
    );
    let pct = found("pct2");
    assert!(
        pct >= 8,
        "PCT finds it on a good share of seeds: {pct} of 40"
    );
}

#[test]
fn pct_demotes_a_spinning_task() {
    for seed in 0..20 {
        let o = run(seed, "pct3", || async {
            let flag = Arc::new(AtomicBool::new(false));
            let f = flag.clone();
            let spinner = sim_runtime::spawn(async move {
                while !f.load(Ordering::SeqCst) {
                    step().await;
                }
            });
            let setter = sim_runtime::spawn(async move {
                step().await;
                flag.store(true, Ordering::SeqCst);
            });
            spinner.await.unwrap();
            setter.await.unwrap();
        });
        assert!(o.passed(), "seed {seed}: {:?} {}", o.class, o.message);
        // Demoted after 64 picks in a row, not at a change point that may
        // lie tens of thousands of steps away.
        assert!(
            o.step < 500,
            "seed {seed}: the spinner ran {} steps",
            o.step
        );
    }
}

#[test]
fn pct_replays_its_seed() {
    let body = || async {
        let mut hs = Vec::new();
        for i in 0..5u64 {
            hs.push(sim_runtime::spawn(async move {
                for _ in 0..i {
                    step().await;
                }
                time::sleep(Duration::from_millis(i)).await;
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    };
    for schedule in ["pct2", "pct3", "pct4"] {
        let a = run(11, schedule, body);
        let b = run(11, schedule, body);
        assert_eq!(a.fingerprint, b.fingerprint, "{schedule}");
        assert_eq!(a.schedule.split(" + ").next(), Some(schedule));
    }
    assert_ne!(
        run(11, "pct3", body).fingerprint,
        run(11, "random", body).fingerprint
    );
}

/// A timeout around a computation that takes no virtual time fires only
/// with early timers, and never before its deadline.
#[test]
fn early_timers_fire_a_timeout_mid_computation() {
    let body = || async {
        let start = time::Instant::now();
        let r = time::timeout(Duration::from_millis(10), async {
            for _ in 0..5_000 {
                step().await;
            }
        })
        .await;
        if r.is_err() {
            assert!(start.elapsed() >= Duration::from_millis(10), "never early");
            panic!("the timeout fired mid-computation");
        }
    };
    let mut with = 0;
    let mut without = 0;
    for seed in 0..40 {
        let failed = !run(seed, "random", body).passed();
        if strategy(seed, Some("random"), None).contains("early timers") {
            with += usize::from(failed);
        } else {
            without += usize::from(failed);
        }
    }
    assert_eq!(
        without, 0,
        "without early timers the clock waits for the computation"
    );
    assert!(with > 0, "early timers fire the timeout on some seeds");
}

/// An early-timer jump waits while a scripted action (`sim::at`) is
/// runnable: a fault script happens at its time, even while other tasks
/// keep the clock jumping.
#[test]
fn early_timers_never_delay_a_scripted_action() {
    let jumped = Arc::new(AtomicU32::new(0));
    for seed in 0..60 {
        let settings = SeedSettings {
            seed,
            schedule: Some(if seed % 2 == 0 { "random" } else { "pct3" }.into()),
            early_timers: Some(true),
            step_limit: Some(200_000),
            ..SeedSettings::default()
        };
        let jumped = jumped.clone();
        let o = std::thread::scope(|s| {
            s.spawn(|| {
                run_seed(&settings, move || async move {
                    let at = Duration::from_millis(10);
                    let fired = Arc::new(AtomicBool::new(false));
                    let f = fired.clone();
                    sim_runtime::sim::at(at, move || f.store(true, Ordering::SeqCst));
                    // Busy tasks: the clock moves while they are runnable
                    // only by early jumps.
                    let busy = Arc::new(AtomicU32::new(3));
                    for _ in 0..3 {
                        let busy = busy.clone();
                        sim_runtime::spawn(async move {
                            for _ in 0..2_000 {
                                step().await;
                            }
                            busy.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                    while sim_runtime::sim::elapsed() < Duration::from_millis(30) {
                        let now = sim_runtime::sim::elapsed();
                        // At 10 ms itself the two timers' order is seeded.
                        if now != at {
                            assert_eq!(fired.load(Ordering::SeqCst), now > at, "at {now:?}");
                        }
                        time::sleep(Duration::from_millis(1)).await;
                    }
                    if busy.load(Ordering::SeqCst) > 0 {
                        jumped.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .join()
            .unwrap()
        });
        assert!(o.passed(), "seed {seed}: {:?} {}", o.class, o.message);
    }
    // The busy tasks' 6,000 steps take no virtual time: where 30 ms passed
    // before they finished, the clock jumped past the action's time.
    let jumped = jumped.load(Ordering::SeqCst);
    assert!(
        jumped >= 30,
        "early jumps reached 30 ms on {jumped} of 60 seeds"
    );
}

/// An early jump never goes past the virtual-time limit: a timer beyond
/// the limit while the main task is busy is no livelock (that needs
/// nothing to be runnable).
#[test]
fn early_jumps_stop_at_the_time_limit() {
    for seed in 0..40 {
        let settings = SeedSettings {
            seed,
            schedule: Some("random".into()),
            early_timers: Some(true),
            time_limit: Some(Duration::from_secs(1)),
            step_limit: Some(200_000),
            ..SeedSettings::default()
        };
        let o = std::thread::scope(|s| {
            s.spawn(|| {
                run_seed(&settings, || async {
                    // A timer an hour away (a TCP retransmission, a lease).
                    let _far = sim_runtime::spawn(time::sleep(Duration::from_secs(3600)));
                    for _ in 0..2_000 {
                        step().await;
                    }
                })
            })
            .join()
            .unwrap()
        });
        assert!(o.passed(), "seed {seed}: {:?} {}", o.class, o.message);
    }
}
