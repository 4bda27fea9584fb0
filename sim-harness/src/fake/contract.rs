//! `sim::contract`: one contract suite, two implementations.
//!
//! A fake is only as good as its agreement with the real thing. A contract
//! suite is one async function, generic over the trait, that drives an
//! implementation through the trait and records each answer it promises
//! ([`Steps::step`]). [`check`] runs the same suite body against the real
//! implementation and against the fake, and fails on the first step where
//! their answers differ, showing both:
//!
//! ```ignore
//! async fn suite<R: UserRepository>(repo: R, steps: sim::contract::Steps) {
//!     let saved = repo.save(User::new(1, "ada")).await;
//!     steps.step("save a new user", saved.as_ref().map(|u| u.version));
//!     steps.step("find it", repo.find_by_id(1).await.map(|u| u.map(|u| u.name)));
//!     steps.step("delete it", repo.delete(1).await);
//!     steps.step("find it again", repo.find_by_id(1).await.map(|u| u.is_some()));
//! }
//!
//! #[tokio::test] // production: SQLite in memory; simulation: on the node's disk
//! async fn the_fake_keeps_the_contract() {
//!     sim::contract::check(
//!         "users",
//!         |steps| async move { suite(SqliteUsers::open(path).unwrap(), steps).await },
//!         |steps| suite(FakeUsers::new(), steps),
//!     )
//!     .await;
//! }
//! // sim::contract "users": the implementations disagree at step 4 `find it again`:
//! //     real said: Ok(false)
//! //     fake said: Ok(true)
//! ```
//!
//! Record what the contract promises, not what may differ by design (a
//! timestamp's value, an id the store picks): `map` an answer to the part
//! that is promised before recording it.
//!
//! It works the same in both builds: in a production `cargo test` against
//! the real implementation in its production setting, and under
//! `--cfg simulation` inside a run, where a real implementation on the
//! simulated disk or network (SQLite, a store) is compared directly with
//! the fake. The fake runs without faults here: a contract is its healthy
//! behaviour; its failure modes are for the service's tests.

use std::fmt::{Debug, Write as _};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// One step: what the suite called it, and the answer (`Debug`).
pub type Step = (String, String);

/// One implementation's record of a suite's steps (cheap to clone).
#[derive(Clone, Debug)]
pub struct Steps {
    side: &'static str,
    log: Arc<Mutex<Vec<Step>>>,
}

impl Steps {
    fn new(side: &'static str) -> Steps {
        Steps {
            side,
            log: Arc::default(),
        }
    }

    /// Records the answer of step `op` (by its `Debug` text).
    pub fn step<T: Debug>(&self, op: &str, answer: T) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((op.to_string(), format!("{answer:?}")));
    }

    /// Which implementation this record is of: `real` or `fake`.
    pub fn side(&self) -> &'static str {
        self.side
    }

    fn take(&self) -> Vec<Step> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Runs the suite against the real implementation (`real`), then against
/// the fake (`fake`), and panics with both answers at the first step where
/// they differ (or where one suite went on and the other stopped). Returns
/// the steps both agreed on.
pub async fn check<R, FutR, F, FutF>(name: &str, real: R, fake: F) -> Vec<Step>
where
    R: FnOnce(Steps) -> FutR,
    FutR: Future<Output = ()>,
    F: FnOnce(Steps) -> FutF,
    FutF: Future<Output = ()>,
{
    let real_steps = Steps::new("real");
    real(real_steps.clone()).await;
    let fake_steps = Steps::new("fake");
    fake(fake_steps.clone()).await;
    let (r, f) = (real_steps.take(), fake_steps.take());
    if let Err(e) = compare(name, &r, &f) {
        panic!("{e}");
    }
    r
}

/// Compares two implementations' steps: `Err` with the first difference
/// and the steps that agreed before it.
pub fn compare(name: &str, real: &[Step], fake: &[Step]) -> Result<(), String> {
    let first = (0..real.len().max(fake.len())).find(|&i| real.get(i) != fake.get(i));
    let Some(i) = first else { return Ok(()) };
    let mut s = format!("sim::contract {name:?}: the implementations disagree at ");
    match (real.get(i), fake.get(i)) {
        (Some((rop, ra)), Some((fop, fa))) if rop == fop => {
            let _ = write!(
                s,
                "step {} `{rop}`:\n    real said: {ra}\n    fake said: {fa}",
                i + 1
            );
        }
        (Some((rop, ra)), Some((fop, fa))) => {
            let _ = write!(
                s,
                "step {}: the suite took different steps:\n    real: `{rop}` said {ra}\n    \
                 fake: `{fop}` said {fa}",
                i + 1
            );
        }
        (Some((op, a)), None) | (None, Some((op, a))) => {
            let (went, stopped) = if real.len() > fake.len() {
                ("real", "fake")
            } else {
                ("fake", "real")
            };
            let _ = write!(
                s,
                "step {}: the {stopped} suite stopped after {i} step(s); the {went} went on \
                 with `{op}`, which said {a}",
                i + 1
            );
        }
        (None, None) => unreachable!("a difference is within one of the lists"),
    }
    if i > 0 {
        let _ = write!(s, "\n  the {i} step(s) before agreed:");
        for (n, (op, a)) in real[..i].iter().enumerate() {
            let _ = write!(s, "\n    {} `{op}`: {a}", n + 1);
        }
    }
    Err(s)
}
