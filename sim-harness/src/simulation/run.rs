//! The run of a `#[sim::test]`, in three steps, each a module of its own:
//!
//! 1. the **sweep** (run/sweep.rs): the seeds of the plan (run/plan.rs:
//!    the attribute, `SIM_SEED`, `SIM_SEEDS`, `SIM_SHARD`), `SIM_JOBS` at
//!    once, on workers whose thread-locals are made new after each seed,
//!    each seed in its own simulation (seed.rs), in batches of fresh
//!    processes when there are many (run/recycle.rs); or,
//!    with `explore = n` / `SIM_EXPLORE`, a guided exploration (explore.rs);
//! 2. the **triage** of a failing sweep (run/triage.rs): traces for its
//!    lowest failing seeds, the first failure run again (does it
//!    reproduce?), shrunk (run/shrunk.rs) and replayed in fresh processes;
//! 3. the **report** (run/report.rs): the first failing seed in full
//!    (class, step, virtual time, message, the trace's last lines and
//!    path, the verdicts of the triage), the other failing seeds listed.
//!
//! The files a seed leaves (its trace, its timeline page) are written by
//! run/files.rs, the runner's one door to the real disk besides the tape,
//! the results and the sweep's log of the seeds it starts and ends
//! (run/seeds_log.rs: on stderr a sweep prints one line, then its report).

mod files;
mod inevitable;
mod plan;
mod recycle;
mod report;
mod seeds_log;
mod shrunk;
mod sweep;
mod triage;

use super::seed::Options;
use sim_runtime::__private::TestOutput;
use std::future::Future;
use std::sync::Arc;

/// Runs a `#[sim::test]` body once per seed; panics with the report if any
/// seed fails.
pub fn run<F, Fut>(opts: Options, make: F)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let plan = plan::Plan::new(&opts);
    let make = Arc::new(make);
    if let Some(budget) = plan.explore {
        return explored(&opts, &plan, &make, budget);
    }
    let mut swept = sweep::sweep(&opts, &plan, &make);
    if recycle::is_child() {
        // A batch of a parent's sweep: the parent concludes.
        return;
    }
    if swept.failures.is_empty() {
        report::coverage_only(&opts, &plan.name, &swept);
        return;
    }
    let triage = triage::triage(&opts, &plan, &make, &mut swept.failures, false);
    let report = report::Report {
        opts: &opts,
        name: &plan.name,
        swept: &swept,
        triage: &triage,
        all_traced: plan.traced,
    };
    panic!("{}", report.render());
}

/// A guided exploration of `budget` runs instead of the seeds
/// (explore.rs); its failure is triaged and reported as a seed's is, from
/// its own tape.
fn explored<F, Fut>(opts: &Options, plan: &plan::Plan, make: &Arc<F>, budget: u64)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let seed = plan.seeds.first().copied().unwrap_or(0);
    let found = super::explore::explore(
        opts,
        &plan.name,
        seed,
        plan.seeds.clone(),
        plan.jobs,
        budget,
        plan.check,
        make,
    );
    let Some((failure, how)) = found.failure else {
        // Its coverage is checked as a sweep's is (`coverage = "all"`).
        let swept = sweep::Swept {
            failures: std::collections::BTreeMap::new(),
            missing: found.missing,
            ran: found.ran,
            explored: None,
        };
        report::coverage_only(opts, &plan.name, &swept);
        return;
    };
    let mut swept = sweep::Swept {
        failures: std::collections::BTreeMap::from([(failure.outcome.seed, failure)]),
        missing: found.missing,
        ran: found.ran,
        explored: Some(how),
    };
    let triage = triage::triage(opts, plan, make, &mut swept.failures, true);
    let report = report::Report {
        opts,
        name: &plan.name,
        swept: &swept,
        triage: &triage,
        all_traced: plan.traced,
    };
    panic!("{}", report.render());
}
