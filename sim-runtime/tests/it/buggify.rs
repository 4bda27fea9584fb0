//! Fault points (`sim::buggify`): determinism, independence from the
//! schedule and from other sites, their rates, off outside a simulation and
//! under `SIM_BUGGIFY=off`, and the runtime's own sites.

use sim_runtime::__private::harness::{buggify_for, run_seed, SeedOutcome, SeedSettings};
use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::sim;
use std::future::{poll_fn, Future};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

/// Runs `body` as a harness seed (buggify on for three seeds in four,
/// unless `SIM_BUGGIFY` says otherwise) on a fresh thread, as the harness
/// does.
fn run<F, Fut>(seed: u64, schedule: &str, body: F) -> SeedOutcome
where
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = ()>,
{
    let settings = SeedSettings {
        seed,
        schedule: Some(schedule.to_string()),
        early_timers: Some(false),
        step_limit: Some(200_000),
        ..SeedSettings::default()
    };
    std::thread::scope(|s| s.spawn(|| run_seed(&settings, body)).join().unwrap())
}

/// The first `n` seeds with fault points on (in the harness's default).
fn seeds_on(n: usize) -> Vec<u64> {
    (0..).filter(|&s| buggify_for(s)).take(n).collect()
}

/// One scheduling step: wake itself and go to the back of the run queue,
/// so the schedule picks among every runnable task.
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

fn site(o: &SeedOutcome, name: &str) -> Option<(bool, u64)> {
    o.buggify
        .iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, active, fired)| (*active, *fired))
}

#[test]
fn the_same_seed_fires_the_same_way_with_the_same_fingerprint() {
    let body = |log: Arc<Mutex<Vec<(u64, &'static str)>>>| async move {
        let tasks: Vec<_> = ["det.a", "det.b", "det.c"]
            .into_iter()
            .map(|name| {
                let log = log.clone();
                sim_runtime::spawn(async move {
                    for _ in 0..30 {
                        if sim::buggify(name, 1, 2) {
                            log.lock().unwrap().push((sim::step(), name));
                        }
                        step().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    };
    let mut some_fired = false;
    for seed in seeds_on(24) {
        let (a, b) = (Arc::default(), Arc::default());
        let one = run(seed, "random", || body(Arc::clone(&a)));
        let two = run(seed, "random", || body(Arc::clone(&b)));
        assert!(
            one.passed() && two.passed(),
            "{} / {}",
            one.message,
            two.message
        );
        assert_eq!(*a.lock().unwrap(), *b.lock().unwrap(), "seed {seed}");
        assert_eq!(one.buggify, two.buggify, "seed {seed}");
        assert_eq!(one.fingerprint, two.fingerprint, "seed {seed}");
        assert_eq!(
            one.buggify.len(),
            3,
            "every site reached: {:?}",
            one.buggify
        );
        some_fired |= !a.lock().unwrap().is_empty();
    }
    assert!(some_fired, "no site fired on 24 seeds with fault points on");
}

#[test]
fn a_sites_activation_depends_on_its_name_not_on_the_order_of_first_use() {
    let mut actives = 0;
    for seed in seeds_on(64) {
        let ab = run(seed, "fifo", || async {
            sim::buggify("order.a", 1, 4);
            sim::buggify("order.b", 1, 4);
        });
        let zba = run(seed, "fifo", || async {
            sim::buggify("order.z", 1, 4);
            sim::buggify("order.b", 1, 4);
            sim::buggify("order.a", 1, 4);
        });
        for name in ["order.a", "order.b"] {
            let (x, y) = (site(&ab, name).unwrap(), site(&zba, name).unwrap());
            assert_eq!(x.0, y.0, "seed {seed}: {name}'s activation moved");
            actives += usize::from(x.0);
        }
    }
    assert!(actives > 0, "no site active on 64 seeds");
}

#[test]
fn a_new_site_does_not_shift_the_schedules_picks() {
    // Eight tasks take steps under the random schedule; in the second run
    // every step also evaluates a fault point (active on some seeds, firing
    // often): which task runs at which step must not change.
    let body = |extra: bool, log: Arc<Mutex<Vec<(u64, u32)>>>| async move {
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let log = log.clone();
                sim_runtime::spawn(async move {
                    for _ in 0..6 {
                        if extra {
                            let _ = sim::buggify("unrelated.site", 1, 2);
                        }
                        log.lock().unwrap().push((sim::step(), i));
                        step().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    };
    let mut fired_somewhere = false;
    for seed in seeds_on(32) {
        let (a, b) = (Arc::default(), Arc::default());
        let without = run(seed, "random", || body(false, Arc::clone(&a)));
        let with = run(seed, "random", || body(true, Arc::clone(&b)));
        assert!(without.passed() && with.passed());
        assert_eq!(
            *a.lock().unwrap(),
            *b.lock().unwrap(),
            "seed {seed}: the schedule's picks moved"
        );
        assert!(without.buggify.is_empty());
        fired_somewhere |= site(&with, "unrelated.site").is_some_and(|(_, f)| f > 0);
    }
    assert!(fired_somewhere, "the extra site never fired: a weak test");
}

#[test]
fn rates_are_as_specified() {
    const SEEDS: u64 = 800;
    const EVALS: u64 = 40;
    let (mut on, mut active_quarter, mut active_half) = (0u64, 0u64, 0u64);
    let (mut fired_quarter, mut fired_half) = (0u64, 0u64);
    for seed in 0..SEEDS {
        let o = run(seed, "fifo", || async {
            for _ in 0..EVALS {
                sim::buggify("rate.quarter", 1, 4);
                sim::buggify("rate.half", 1, 2);
            }
        });
        assert!(o.passed(), "{}", o.message);
        assert_eq!(!o.buggify.is_empty(), buggify_for(seed), "seed {seed}");
        if o.buggify.is_empty() {
            continue;
        }
        on += 1;
        let (q, h) = (
            site(&o, "rate.quarter").unwrap(),
            site(&o, "rate.half").unwrap(),
        );
        if q.0 {
            active_quarter += 1;
            fired_quarter += q.1;
        } else {
            assert_eq!(q.1, 0, "an inactive site fired");
        }
        if h.0 {
            active_half += 1;
            fired_half += h.1;
        } else {
            assert_eq!(h.1, 0, "an inactive site fired");
        }
    }
    let frac = |n: u64, d: u64| n as f64 / d as f64;
    // On for three seeds in four.
    assert!(
        (0.69..0.81).contains(&frac(on, SEEDS)),
        "on for {on} of {SEEDS}"
    );
    // Each site active in a quarter of those runs.
    for (name, a) in [("quarter", active_quarter), ("half", active_half)] {
        assert!(
            (0.18..0.32).contains(&frac(a, on)),
            "rate.{name} active on {a} of {on}"
        );
    }
    // Once active, each evaluation fires with the site's probability.
    let q = frac(fired_quarter, active_quarter * EVALS);
    let h = frac(fired_half, active_half * EVALS);
    assert!((0.21..0.29).contains(&q), "p = 1/4 fired at {q}");
    assert!((0.45..0.55).contains(&h), "p = 1/2 fired at {h}");
}

#[test]
fn fault_points_are_off_outside_a_simulation() {
    for _ in 0..1000 {
        assert!(!sim::buggify("outside", 1, 1));
    }
    // And inside a plain runtime (no harness), unless SIM_BUGGIFY=on.
    if std::env::var_os("SIM_BUGGIFY").is_none() {
        super::run(1, async {
            for name in NAMES {
                assert!(!sim::buggify(name, 1, 1));
            }
        });
    }
}

/// Sites for the child below: enough that some are active on any seed.
const NAMES: [&str; 32] = [
    "c00", "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11", "c12",
    "c13", "c14", "c15", "c16", "c17", "c18", "c19", "c20", "c21", "c22", "c23", "c24", "c25",
    "c26", "c27", "c28", "c29", "c30", "c31",
];

/// Run as a child process by the next test: counts, over 64 harness seeds,
/// the seeds with fault points on and the sites that fired (each fires
/// every time once active).
#[test]
fn child_counts_fault_points() {
    let (mut on, mut fired) = (0, 0);
    for seed in 0..64 {
        let o = run(seed, "fifo", || async {
            for name in NAMES {
                sim::buggify(name, 1, 1);
            }
        });
        on += u32::from(!o.buggify.is_empty());
        fired += o.buggify.iter().filter(|(_, _, f)| *f > 0).count();
    }
    println!("buggify-child: on for {on} of 64 seeds; {fired} firings");
}

fn child(envs: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "buggify::child_counts_fault_points",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd.env_remove("SIM_BUGGIFY").env_remove("SIM_SEED");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn sim_buggify_forces_fault_points_on_or_off() {
    let (ok, text) = child(&[("SIM_BUGGIFY", "off")]);
    assert!(ok, "{text}");
    assert!(text.contains("on for 0 of 64 seeds; 0 firings"), "{text}");
    let (ok, text) = child(&[("SIM_BUGGIFY", "on")]);
    assert!(ok, "{text}");
    assert!(text.contains("on for 64 of 64 seeds"), "{text}");
    assert!(!text.contains("; 0 firings"), "{text}");
    let (ok, text) = child(&[]);
    assert!(ok, "{text}");
    assert!(
        !text.contains("on for 0 of") && !text.contains("on for 64 of"),
        "{text}"
    );
    let (ok, text) = child(&[("SIM_BUGGIFY", "sometimes")]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("SIM_BUGGIFY=\"sometimes\" is malformed; accepted: on, off"),
        "{text}"
    );
}

#[test]
fn the_runtimes_own_fault_points_fire_only_when_on() {
    let body = || async {
        let l = sim_runtime::net::TcpListener::bind("127.0.0.1:9")
            .await
            .unwrap();
        let mut c = sim_runtime::net::TcpStream::connect("127.0.0.1:9")
            .await
            .unwrap();
        let (mut s, _) = l.accept().await.unwrap();
        for _ in 0..8 {
            // `advance` moves the clock exactly as asked, fault points or not.
            sim_runtime::time::pause();
            let t0 = sim::elapsed();
            sim_runtime::time::advance(Duration::from_micros(2500)).await;
            assert_eq!(sim::elapsed() - t0, Duration::from_micros(2500));
            sim_runtime::time::resume();
            // A timer may fire late, by at most 10 ms (after rounding up to
            // the millisecond, as every sleep is); never early.
            let t0 = sim::elapsed();
            sim_runtime::time::sleep(Duration::from_millis(10)).await;
            let slept = sim::elapsed() - t0;
            assert!(
                (Duration::from_millis(10)..=Duration::from_millis(21)).contains(&slept),
                "a 10 ms sleep took {slept:?}"
            );
            // Bytes arrive in order, perhaps late and in shorter reads.
            c.write_all(&[7u8; 1000]).await.unwrap();
            let mut buf = [0u8; 1000];
            s.read_exact(&mut buf).await.unwrap();
            assert_eq!(buf, [7u8; 1000]);
        }
    };
    let own = [
        "sim.net.short_read",
        "sim.net.slow_delivery",
        "sim.time.late_timer",
    ];
    let mut fired = [0u64; 3];
    for seed in 0..160 {
        let o = run(seed, "random", body);
        assert!(o.passed(), "seed {seed}: {}", o.message);
        if !buggify_for(seed) {
            assert!(o.buggify.is_empty(), "seed {seed}: {:?}", o.buggify);
            continue;
        }
        for (i, name) in own.iter().enumerate() {
            let (active, f) = site(&o, name).unwrap_or_else(|| panic!("{name} not reached"));
            assert!(active || f == 0);
            fired[i] += f;
        }
    }
    for (name, f) in own.iter().zip(fired) {
        assert!(f > 0, "{name} never fired on 160 seeds");
    }
}
