//! Fault points and sometimes-assertions: their draws, their reports, and
//! the coverage check.
#![cfg(simulation)]

use sim::__private::{run, Options, Seeds};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

fn options(name: &'static str, seeds: Seeds) -> Options {
    Options {
        name,
        file: file!(),
        package: env!("CARGO_PKG_NAME"),
        crate_name: env!("CARGO_CRATE_NAME"),
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds,
        schedule: Some("random"),
        ..Options::default()
    }
}

fn report<F, Fut>(opts: Options, body: F) -> String
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let err = catch_unwind(AssertUnwindSafe(|| run(opts, body))).expect_err("the run must fail");
    err.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn fault_points_fire_on_some_seeds_and_replay() {
    static FIRED: Mutex<Vec<(u64, u32)>> = Mutex::new(Vec::new());
    run(options("coverage::rates", Seeds::Range(0, 400)), || async {
        let mut n = 0;
        for _ in 0..20 {
            if sim::buggify!("rates.site") {
                n += 1;
            }
        }
        FIRED.lock().unwrap().push((sim::seed(), n));
    });
    let fired = FIRED.lock().unwrap().clone();
    let seeds_firing = fired.iter().filter(|(_, n)| *n > 0).count();
    // On for 3 seeds in 4, active for 1 run in 4: about 19% of seeds.
    assert!(
        (40..120).contains(&seeds_firing),
        "{seeds_firing} of 400 seeds fired"
    );
    // When active, each evaluation fires with p = 1/4: about 5 of 20.
    let per_seed: Vec<u32> = fired
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(_, n)| *n)
        .collect();
    let mean = per_seed.iter().sum::<u32>() as f64 / per_seed.len() as f64;
    assert!((3.0..7.0).contains(&mean), "mean firings {mean}");
    // The same seed draws the same firings.
    let again = AtomicU64::new(0);
    let (seed, n) = *fired.iter().find(|(_, n)| *n > 0).unwrap();
    let again = std::sync::Arc::new(again);
    let a = again.clone();
    run(options("coverage::replay", Seeds::One(seed)), move || {
        let a = a.clone();
        async move {
            for _ in 0..20 {
                if sim::buggify!("rates.site") {
                    a.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    });
    assert_eq!(again.load(Ordering::SeqCst), u64::from(n));
}

#[test]
fn a_new_site_does_not_shift_the_schedule() {
    use sim_runtime::__private::harness::{buggify_for, run_seed, SeedSettings};
    let seed = (0..).find(|&s| buggify_for(s)).unwrap();
    let order = |extra_site: bool| {
        let settings = SeedSettings {
            seed,
            schedule: Some("random".into()),
            ..SeedSettings::default()
        };
        std::thread::spawn(move || {
            let log = std::sync::Arc::new(Mutex::new(Vec::new()));
            let l = log.clone();
            let o = run_seed(&settings, move || async move {
                if extra_site {
                    for _ in 0..10 {
                        let _ = sim::buggify!("an.unrelated.site");
                    }
                }
                let hs: Vec<_> = (0..8)
                    .map(|i| {
                        let l = l.clone();
                        sim_runtime::spawn(async move {
                            sim_runtime::task::yield_now().await;
                            l.lock().unwrap().push(i);
                        })
                    })
                    .collect();
                for h in hs {
                    h.await.unwrap();
                }
            });
            assert!(o.passed());
            let v = log.lock().unwrap().clone();
            v
        })
        .join()
        .unwrap()
    };
    assert_eq!(
        order(false),
        order(true),
        "the schedule's picks are unchanged"
    );
}

#[test]
fn the_report_lists_the_active_fault_points() {
    let r = report(
        options("coverage::active", Seeds::Range(0, 200)),
        || async {
            if sim::buggify!("report.site") {
                panic!("the rare path has a bug");
            }
        },
    );
    assert!(
        r.contains("sim: fault points active: report.site (fired "),
        "{r}"
    );
    assert!(r.contains("the rare path has a bug"), "{r}");
}

#[test]
fn always_and_unreachable_fail_the_seed() {
    let r = report(options("coverage::always", Seeds::One(1)), || async {
        sim::always!(sim::seed() == 0, "seed is zero");
    });
    assert!(r.contains("class: assertion"), "{r}");
    assert!(
        r.contains("always!(\"seed is zero\") did not hold at"),
        "{r}"
    );
    let r = report(options("coverage::unreachable", Seeds::One(1)), || async {
        sim::unreachable!("never here");
    });
    assert!(
        r.contains("unreachable!(\"never here\") was reached at"),
        "{r}"
    );
}

#[test]
fn coverage_all_names_the_sites_never_held_or_reached() {
    let mut o = options("coverage::all", Seeds::Range(0, 20));
    o.coverage = true;
    let r = report(o, || async {
        sim::sometimes!(sim::seed() > 1_000, "a seed above a thousand");
        sim::sometimes!(sim::seed() % 2 == 0, "an even seed");
        if sim::seed() > 1_000 {
            sim::reachable!("the far branch");
        }
    });
    assert!(r.contains("sim: coverage:"), "{r}");
    assert!(r.contains("sim: class: coverage"), "{r}");
    assert!(r.contains("coverage = \"all\""), "{r}");
    assert!(r.contains("\"a seed above a thousand\""), "{r}");
    assert!(r.contains("never held"), "{r}");
    assert!(r.contains("\"the far branch\""), "{r}");
    assert!(r.contains("never reached"), "{r}");
    assert!(!r.contains("\"an even seed\""), "held on even seeds: {r}");
}

#[test]
fn the_runtime_has_fault_points_of_its_own() {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    let r = report(
        options("coverage::short_read", Seeds::Range(0, 300)),
        || async {
            let l = sim_runtime::net::TcpListener::bind("127.0.0.1:9")
                .await
                .unwrap();
            let mut c = sim_runtime::net::TcpStream::connect("127.0.0.1:9")
                .await
                .unwrap();
            let (mut s, _) = l.accept().await.unwrap();
            c.write_all(&[7u8; 1000]).await.unwrap();
            sim_runtime::time::sleep(std::time::Duration::from_millis(5)).await;
            let mut buf = [0u8; 1000];
            let n = s.read(&mut buf).await.unwrap();
            assert_eq!(n, 1000, "everything had arrived, yet the read was short");
        },
    );
    assert!(
        r.contains("fault points active: sim.net.short_read (fired "),
        "{r}"
    );
}

#[test]
fn the_network_can_deliver_slowly() {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    let r = report(
        options("coverage::slow_delivery", Seeds::Range(0, 300)),
        || async {
            let l = sim_runtime::net::TcpListener::bind("127.0.0.1:9")
                .await
                .unwrap();
            let mut c = sim_runtime::net::TcpStream::connect("127.0.0.1:9")
                .await
                .unwrap();
            let (mut s, _) = l.accept().await.unwrap();
            let start = sim::elapsed();
            c.write_all(b"ping").await.unwrap();
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).await.unwrap();
            assert!(
                sim::elapsed() == start,
                "loopback took {:?}",
                sim::elapsed() - start
            );
        },
    );
    assert!(r.contains("sim.net.slow_delivery (fired "), "{r}");
    assert!(r.contains("loopback took "), "{r}");
}

#[test]
fn every_site_of_the_binary_is_registered_at_link_time() {
    use sim::__private::{SiteKind, SITES};
    // Sites of this file, including ones in tests that have not run (and
    // never will run in this process, when a filter picks one test).
    for (name, kind) in [
        ("a seed above a thousand", SiteKind::Sometimes),
        ("the far branch", SiteKind::Reachable),
        ("seed is zero", SiteKind::Always),
        ("never here", SiteKind::Unreachable),
        ("a site in a failing sweep", SiteKind::Sometimes),
    ] {
        let site = SITES
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name:?} is not registered"));
        assert_eq!(site.kind, kind);
        assert!(site.file.ends_with("coverage.rs"), "{}", site.file);
        assert!(site.line > 0);
    }
}

#[test]
fn a_failing_sweeps_report_lists_the_sites_not_covered() {
    let r = report(
        options("coverage::failing", Seeds::Range(0, 10)),
        || async {
            sim::sometimes!(sim::seed() > 1_000, "a site in a failing sweep");
            assert_ne!(sim::seed(), 3, "seed 3 fails");
        },
    );
    assert!(r.contains("seed 3 fails"), "{r}");
    assert!(r.contains("sim: not covered by the sweep: "), "{r}");
    assert!(
        r.contains("\"a site in a failing sweep\" at ") && r.contains("(never held)"),
        "{r}"
    );
}
