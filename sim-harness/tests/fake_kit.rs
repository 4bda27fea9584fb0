//! `sim::fake` and `sim::contract` in any build (the production build too):
//! explicit faults apply, the heal wakes a hung operation, a contract's
//! difference names the step and both answers.

// `#[sim_runtime::test]` expands to paths under `::tokio`.
extern crate sim_runtime as tokio;

use sim::contract::{compare, Step};
use sim::fake::{Faults, Mode, Versioned, ANY};
use std::time::Duration;

#[sim_runtime::test]
async fn explicit_faults_count_down_and_heal() {
    let f = Faults::new("users");
    f.fail("save", 2);
    assert!(f.op("save").await.is_err());
    assert!(f.op("find").await.is_ok());
    let e = f.op("save").await.unwrap_err();
    assert_eq!(e.to_string(), "users.save: injected failure (sim::fake)");
    assert!(f.op("save").await.is_ok());
    f.fail(ANY, u32::MAX);
    for op in ["a", "b", "a"] {
        assert!(f.op(op).await.is_err());
    }
    f.heal();
    assert!(f.op("a").await.is_ok());
    let mut row = Versioned::new(None);
    f.drop_writes("save", 1);
    assert!(!f.write("save", &mut row, Some(1)));
    assert_eq!(*row.latest(), None);
    assert!(f.write("save", &mut row, Some(1)));
    assert_eq!(*row.latest(), Some(1));
    assert_eq!(f.happened_count(Mode::Fail), 5);
    assert_eq!(f.happened_count(Mode::DropWrite), 1);
}

#[sim_runtime::test]
async fn a_hung_operation_completes_after_the_heal() {
    let f = Faults::new("users");
    f.hang("find");
    let hung = sim_runtime::time::timeout(Duration::from_millis(50), f.op("find")).await;
    assert!(hung.is_err(), "a hung operation does not complete");
    let g = f.clone();
    let op = sim_runtime::spawn(async move { g.op("find").await });
    sim_runtime::task::yield_now().await;
    f.heal();
    assert_eq!(op.await.unwrap(), Ok(()));
    assert_eq!(f.happened_count(Mode::Hang), 2);
}

#[test]
fn the_skew_offsets_the_fake_s_clock() {
    let f = Faults::new("users");
    let t = std::time::UNIX_EPOCH + Duration::from_secs(86_400);
    assert_eq!(f.skewed(t), t);
    f.skew(Duration::from_secs(3600));
    assert_eq!(f.skewed(t), t + Duration::from_secs(3600));
    f.skew_behind(Duration::from_secs(60));
    assert_eq!(f.skewed(t), t - Duration::from_secs(60));
    assert_eq!(f.happened_count(Mode::Skew), 2);
    f.heal();
    assert_eq!(f.skewed(t), t);
}

fn steps(s: &[(&str, &str)]) -> Vec<Step> {
    s.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn a_contract_difference_names_the_step_and_both_answers() {
    let real = steps(&[
        ("save", "Ok(1)"),
        ("find", "Ok(Some(1))"),
        ("delete", "Ok(true)"),
    ]);
    assert_eq!(compare("c", &real, &real), Ok(()));
    let fake = steps(&[
        ("save", "Ok(1)"),
        ("find", "Ok(None)"),
        ("delete", "Ok(true)"),
    ]);
    assert_eq!(
        compare("c", &real, &fake).unwrap_err(),
        "sim::contract \"c\": the implementations disagree at step 2 `find`:\n    real said: \
         Ok(Some(1))\n    fake said: Ok(None)\n  the 1 step(s) before agreed:\n    1 `save`: Ok(1)"
    );
    let short = steps(&[("save", "Ok(1)")]);
    let e = compare("c", &real, &short).unwrap_err();
    assert!(
        e.contains("step 2: the fake suite stopped after 1 step(s); the real went on with `find`"),
        "{e}"
    );
}

async fn suite(double: bool, steps: sim::contract::Steps) {
    steps.step("one", 1);
    steps.step("two", if double { 4 } else { 2 });
}

/// Polls a future that never waits (the suites above) to its end.
fn now<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the suite waited"),
    }
}

#[test]
fn check_runs_one_suite_against_both() {
    let agreed = now(sim::contract::check(
        "same",
        |s| suite(false, s),
        |s| suite(false, s),
    ));
    assert_eq!(agreed, steps(&[("one", "1"), ("two", "2")]));
}

#[test]
#[should_panic(expected = "step 2 `two`:\n    real said: 2\n    fake said: 4")]
fn check_fails_on_the_first_difference() {
    now(sim::contract::check(
        "differ",
        |s| suite(false, s),
        |s| suite(true, s),
    ));
}
