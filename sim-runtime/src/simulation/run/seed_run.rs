//! One seed, run: the one place a simulation is made for a seed, driven to
//! the end of its body, torn down and read back, and the one check that a
//! seed replays. Both runners stand on it: the harness's
//! ([`harness::run_seed`](super::harness::run_seed), for `#[sim::test]`),
//! which classifies the outcome, and `#[tokio::test]`'s
//! ([`private::run_test`](super::private::run_test)), which raises it as
//! the test's own panic.

use crate::simulation::core::config::{Config, Schedule};
use crate::simulation::core::executor::Exec;
use crate::simulation::core::report::{self, Failure, Snapshot};
use crate::simulation::core::trace::{Decision, Divergence, Trace};
use crate::simulation::runtime::{Runtime, RuntimeFlavor};
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

/// The runtime a seed's body runs on.
pub(crate) enum Shape {
    /// A harness run: the nodes are services that run on Tokio's
    /// multi-thread runtime in production (`#[tokio::main]`'s default), so
    /// exploring schedules may run any runnable task next, a yielder
    /// included, and `block_in_place` works; the test owns the one clock,
    /// so `time::pause` works too.
    Nodes,
    /// A `#[tokio::test]` body, as its attribute asks.
    Test {
        multi_thread: bool,
        local: bool,
        /// Reported by metrics only: every flavor runs on one thread.
        workers: usize,
        start_paused: bool,
        name: Option<&'static str>,
    },
}

/// What a seed's run left.
pub(crate) struct Ended<T> {
    /// The body's output, or its panic.
    pub result: std::thread::Result<T>,
    /// A panic raised while the runtime was torn down (a task's destructor).
    pub teardown_panic: Option<Box<dyn Any + Send>>,
    /// The tasks still alive when the body returned.
    pub leftover: Vec<String>,
    /// Where the run stood when the body ended.
    pub at: Snapshot,
    /// The failure the executor reported, when one ended the run.
    pub failure: Option<Failure>,
    pub fingerprint: u64,
    pub decisions: u64,
    /// The decision log, when the run was recorded.
    pub record: Option<Vec<Decision>>,
    /// Where a run compared with a recording first differed from it.
    pub divergence: Option<Divergence>,
    /// The exploration strategy, by name.
    pub strategy: String,
    /// Fault points: name, active, times fired.
    pub buggify: Vec<(String, bool, u64)>,
    /// Where the run's last panic was raised (`file:line`), when it was
    /// quiet and panicked.
    pub site: Option<String>,
}

/// Runs `body()` in a fresh simulation of `config` on the current thread.
/// `quiet`: the caller reports failures itself (the default panic hook and
/// the executor print nothing on this thread meanwhile).
pub(crate) fn run<Fut: Future>(
    config: Config,
    trace: Trace,
    shape: &Shape,
    quiet: bool,
    body: impl FnOnce() -> Fut,
) -> Ended<Fut::Output> {
    let exec = Exec::with_trace(config, trace);
    let flavor = match *shape {
        Shape::Nodes => {
            exec.compat.set_multi_thread(true);
            exec.compat.set_one_clock(true);
            RuntimeFlavor::MultiThread
        }
        Shape::Test {
            multi_thread,
            local,
            workers,
            start_paused,
            name,
        } => {
            exec.compat.set_time_frozen(start_paused);
            exec.compat.set_multi_thread(multi_thread);
            exec.compat.set_local_runtime(local);
            exec.compat.set_workers(workers);
            if let Some(name) = name {
                exec.compat.set_name(name.into());
            }
            if multi_thread {
                RuntimeFlavor::MultiThread
            } else {
                RuntimeFlavor::CurrentThread
            }
        }
    };
    let rt = Runtime::with_exec_flavor(exec.clone(), flavor);
    let quiet = quiet.then(report::QuietPanics::new);
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(body())));
    let site = quiet.as_ref().and_then(|_| report::take_panic_site());
    let (leftover, at) = {
        let core = exec.core();
        // (Idle `spawn_blocking` workers are the runtime's, not leftovers.)
        let leftover = if result.is_ok() && core.alive_tasks() > 0 {
            core.describe_tasks()
        } else {
            Vec::new()
        };
        (leftover, core.snapshot())
    };
    let failure = exec.last_failure.borrow().clone();
    // Dropping the runtime drops the remaining tasks; a panic there is part
    // of this seed's outcome.
    let teardown_panic = std::panic::catch_unwind(AssertUnwindSafe(|| drop(rt))).err();
    drop(quiet);
    let mut core = exec.core_mut();
    core.trace_mut().finish();
    let config = core.config();
    let strategy = strategy_name(config.schedule, config.early_timers, config.yield_ahead);
    let buggify = core
        .driver_if_used::<crate::simulation::buggify::Buggify>()
        .map(|b| {
            b.sites
                .iter()
                .map(|(name, s)| (name.to_string(), s.active, s.fired))
                .collect()
        })
        .unwrap_or_default();
    super::record::collect(&mut core);
    let trace = core.trace_mut();
    Ended {
        result,
        teardown_panic,
        leftover,
        at,
        failure,
        fingerprint: trace.fingerprint(),
        decisions: trace.decisions(),
        record: trace.take_record(),
        divergence: trace.divergence().cloned(),
        strategy,
        buggify,
        site,
    }
}

/// A strategy's name, as reports print it.
pub(crate) fn strategy_name(schedule: Schedule, early: bool, yield_ahead: bool) -> String {
    let mut s = schedule.name().to_string();
    if early {
        s.push_str(" + early timers");
    }
    if yield_ahead {
        s.push_str(" + yields ahead");
    }
    s
}

/// Where a run compared with a recording first differed from it.
pub(crate) fn divergence_text(d: &Divergence) -> String {
    let show = |x: Option<Decision>| {
        x.map(|d| d.to_string())
            .unwrap_or_else(|| "(the run ended)".into())
    };
    format!(
        "first difference at decision #{}: first run: {}; second run: {}",
        d.index,
        show(d.expected),
        show(d.actual)
    )
}

/// The check that a seed replays: `None` when its second run made the
/// first run's decisions (and so reached its fingerprint), otherwise what
/// the nondeterminism report says. `divergence` is the second run's
/// [`divergence_text`]; `fingerprints` the two runs' fingerprints.
pub(crate) fn replay_mismatch(
    seed: u64,
    divergence: Option<&str>,
    fingerprints: (u64, u64),
) -> Option<String> {
    if divergence.is_none() && fingerprints.0 == fingerprints.1 {
        return None;
    }
    Some(format!(
        "seed {seed} made different decisions when run again: {}. Something outside the seed \
         steers the run (an OS thread, real I/O, a global counter, time read outside the \
         simulation).",
        divergence.unwrap_or("the fingerprints differ although no decision did")
    ))
}
