//! `sim::fake` under simulation: its faults in the failing seed's report
//! and on its timeline page, its modes in coverage, its draws a function of
//! the seed, the harness's heal healing fakes, and the staleness bounds.
#![cfg(simulation)]

use sim::__private::{run, Options, Seeds};
use sim::fake::{Faults, Mode, Staleness, Versioned};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::Duration;

fn options(name: &'static str, seeds: Seeds) -> Options {
    Options {
        name,
        file: file!(),
        package: env!("CARGO_PKG_NAME"),
        crate_name: env!("CARGO_CRATE_NAME"),
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds,
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
fn a_failing_seed_s_report_and_page_show_the_fake_s_faults() {
    let r = report(options("fake::report", Seeds::One(3)), || async {
        let pay = Faults::new("payments");
        pay.fail("charge", 1);
        let _ = pay.op("charge").await;
        pay.drop_writes("refund", 2);
        assert!(!pay.applies("refund"));
        assert!(!pay.applies("refund"));
        assert!(pay.applies("refund"));
        panic!("the caller gave up");
    });
    assert!(
        r.contains(
            "sim: fake faults: payments: partial failure: charge ×1; payments: silent drop: \
             refund ×2\n"
        ),
        "{r}"
    );
    let page = r
        .lines()
        .find_map(|l| l.strip_prefix("sim: timeline: "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("no page in the report:\n{r}"));
    let html = std::fs::read_to_string(page).unwrap();
    // Marks on the caller's lane: (mode, node, fake, operation, detail, how).
    assert!(
        html.contains("\"fake: partial failure main payments charge error injected\""),
        "{page}"
    );
    assert!(
        html.contains("\"fake: silent drop main payments refund dropped injected\""),
        "{page}"
    );
}

#[test]
fn an_armed_mode_that_never_happens_is_reported_by_coverage() {
    let r = report(
        Options {
            coverage: true,
            ..options("fake::coverage", Seeds::Range(0, 3))
        },
        || async {
            let users = Faults::new("users");
            users.hang("find");
            users.fail("save", 1);
            assert!(users.op("save").await.is_err());
        },
    );
    assert!(r.contains("\"fake users: hang\" at "), "{r}");
    assert!(r.contains("(armed, never happened)"), "{r}");
    assert!(!r.contains("\"fake users: partial failure\""), "{r}");
}

/// What each seed's drawn faults did: (seed, per mode counts, fingerprint).
type Drawn = (u64, Vec<u64>, u64);

fn sweep_drawn(name: &'static str) -> Vec<Drawn> {
    static OUT: Mutex<Vec<Drawn>> = Mutex::new(Vec::new());
    OUT.lock().unwrap().clear();
    run(options(name, Seeds::Range(0, 120)), || async {
        let f = Faults::new("store");
        f.drawn();
        let mut row = Versioned::new(0u64);
        for i in 1..=40u64 {
            let op = tokio_free_op(&f, "put").await;
            if op.is_ok() {
                f.write("put", &mut row, i);
            }
            let _ = f.read("get", &row);
        }
        let counts = Mode::ALL.iter().map(|m| f.happened_count(*m)).collect();
        OUT.lock()
            .unwrap()
            .push((sim::seed(), counts, sim::fingerprint()));
    });
    let mut v = OUT.lock().unwrap().clone();
    v.sort();
    v
}

/// An operation bounded by a virtual-time timeout (a drawn hang ends by
/// itself, or here).
async fn tokio_free_op(f: &Faults, op: &str) -> Result<(), ()> {
    match sim_runtime::time::timeout(Duration::from_secs(5), f.op(op)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

#[test]
fn drawn_faults_are_a_function_of_the_seed_and_every_mode_happens() {
    let a = sweep_drawn("fake::drawn_a");
    let b = sweep_drawn("fake::drawn_b");
    assert_eq!(a, b, "same seeds, same faults and fingerprints");
    for (i, mode) in Mode::ALL.iter().enumerate() {
        let seeds = a.iter().filter(|(_, c, _)| c[i] > 0).count();
        // Active in a run with p = 1/4 (fault points are on for 3 seeds in
        // 4): some seeds, not all.
        assert!((5..100).contains(&seeds), "{mode}: {seeds} of 120 seeds");
    }
}

#[test]
fn the_harness_heal_heals_every_fake() {
    run(options("fake::heal", Seeds::Range(0, 5)), || async {
        let f = Faults::new("queue");
        f.hang("pop");
        f.drawn();
        sim::heal_after(Duration::from_secs(5));
        f.op("pop").await.unwrap();
        assert_eq!(sim::elapsed(), Duration::from_secs(5));
        // Drawn modes stopped with the heal.
        for _ in 0..200 {
            f.op("pop").await.unwrap();
        }
    });
}

#[test]
fn a_stale_read_stays_within_its_bounds() {
    run(options("fake::stale", Seeds::Range(0, 20)), || async {
        let f = Faults::new("kv");
        let mut row = Versioned::new(0u64);
        for v in 1..=5 {
            sim_runtime::time::sleep(Duration::from_secs(10)).await;
            f.write("put", &mut row, v);
        }
        sim_runtime::time::sleep(Duration::from_secs(1)).await;
        // Versions 4 (replaced 1 s ago), 3 (11 s), 2 (21 s) ...
        f.stale_reads(Staleness::writes(3));
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50 {
            seen.insert(*f.read("get", &row));
        }
        assert!(seen.iter().all(|v| (2..=4).contains(v)), "{seen:?}");
        f.stale_reads(Staleness::within(Duration::from_secs(15)));
        for _ in 0..50 {
            assert!((3..=4).contains(f.read("get", &row)));
        }
        f.stale_reads(Staleness::writes(3).and_within(Duration::from_secs(5)));
        assert_eq!(*f.read("get", &row), 4);
        f.heal();
        assert_eq!(*f.read("get", &row), 5);
        assert_eq!(f.happened_count(Mode::StaleRead), 101);
    });
}

#[test]
fn a_fake_fault_in_the_quiet_phase_fails_the_run() {
    let r = report(options("fake::quiet", Seeds::One(1)), || async {
        let f = Faults::new("mail");
        sim::heal_after(Duration::from_secs(1));
        sim_runtime::time::sleep(Duration::from_secs(2)).await;
        f.fail("send", 1);
    });
    assert!(
        r.contains("sim: fake \"mail\": partial failure at 2s is a fault in the quiet phase"),
        "{r}"
    );
}
