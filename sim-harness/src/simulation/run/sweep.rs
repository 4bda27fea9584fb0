//! The sweep: every seed of the plan, `jobs` at a time, each on its own
//! thread and in its own simulation (seed.rs), and what the sweep keeps of
//! them: the failures, the results records, the coverage, the seeds that
//! left tasks behind.

use super::files::{write_timeline, write_trace};
use super::plan::{self, Plan};
use super::seeds_log::SeedsLog;
use crate::simulation::coverage;
use crate::simulation::results;
use crate::simulation::seed::{rerun_difference, run_one, worker, How, Options, SeedResult};
use crate::simulation::tape;
use crate::simulation::timeline::{warn_leftovers, Leftovers};
use crate::simulation::trace;
use sim_runtime::__private::harness::{cargo_prefix, replay_env, strategy, TapeMode};
use sim_runtime::__private::TestOutput;
use sim_runtime::sim::Class;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the sweep leaves for the triage and the report.
pub(crate) struct Swept {
    /// The failing seeds' runs, by seed.
    pub failures: BTreeMap<u64, SeedResult>,
    /// The `sometimes!`/`reachable!` sites no seed covered.
    pub missing: Vec<String>,
    /// The seeds the sweep ran (all of them, or up to the plateau).
    pub ran: usize,
    /// An exploration's failure: which of its runs it was.
    pub explored: Option<String>,
}

/// What the job threads share.
struct Shared {
    /// The index of the next seed to run.
    next: AtomicUsize,
    failures: Mutex<BTreeMap<u64, SeedResult>>,
    records: Mutex<BTreeMap<u64, results::Record>>,
    /// Seeds whose body returned with tasks still running: (count, first).
    leftovers: Mutex<Leftovers>,
    /// The sweep's coverage, folded in seed order.
    coverage: Mutex<coverage::Sweep>,
    /// Where each seed is said to start and end.
    log: SeedsLog,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs every seed of `plan`; then warns of leftover tasks, cuts the
/// sweep at a coverage plateau and writes the results.
pub(super) fn sweep<F, Fut>(opts: &Options, plan: &Plan, make: &Arc<F>) -> Swept
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    if let Some(per) = plan.per_process.filter(|&n| plan.seeds.len() >= n) {
        if let Some(swept) = super::recycle::sweep(opts, plan, make, per) {
            return swept;
        }
    }
    let shared = Shared {
        next: AtomicUsize::new(0),
        failures: Mutex::new(BTreeMap::new()),
        records: Mutex::new(BTreeMap::new()),
        leftovers: Mutex::new((0, None)),
        coverage: Mutex::new(coverage::Sweep::new(plan.plateau)),
        log: SeedsLog::open(opts, plan),
    };
    std::thread::scope(|s| {
        for _ in 0..plan.jobs {
            worker(s, opts, || job(opts, plan, make, &shared));
        }
    });
    finish(opts, plan, shared)
}

/// One job thread: takes the next seed until none is left (or coverage
/// stopped growing).
fn job<F, Fut>(opts: &Options, plan: &Plan, make: &Arc<F>, shared: &Shared)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let name = &plan.name;
    let collector = trace::Collector::new();
    loop {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        let Some(&seed) = plan.seeds.get(i) else {
            break;
        };
        if !lock(&shared.coverage).counts(i) {
            break;
        }
        // Written before the seed runs, straight to the file (or stderr):
        // it survives a crash or a kill of the process.
        shared.log.starting(&format!(
            "sim: {name} seed {seed} (strategy {}) · replay: {} {} test -p {} {} -- {name} \
             --exact",
            strategy(seed, opts.schedule, opts.early_timers),
            replay_env(seed),
            cargo_prefix(),
            opts.package,
            plan.target,
        ));
        let r = run_checked(
            opts,
            plan.traced.then_some(&collector),
            seed,
            make,
            plan.check,
            plan.wanted.every_seed(),
            plan.tape.as_ref(),
        );
        keep(opts, plan, shared, i, r);
    }
}

/// Keeps what the sweep needs of seed number `i`'s run, and writes its
/// files when they are asked for as the sweep goes.
fn keep(opts: &Options, plan: &Plan, shared: &Shared, i: usize, mut r: SeedResult) {
    let seed = r.outcome.seed;
    shared.log.ended(seed, r.outcome.class);
    if super::super::replay::is_child() {
        super::super::replay::tell_parent(&r.outcome);
    }
    if super::recycle::is_child() {
        super::recycle::tell(
            &results::Record::new(&r.outcome, &r.coverage),
            &r.outcome.leftover,
        );
    }
    if !r.outcome.leftover.is_empty() {
        let mut l = lock(&shared.leftovers);
        l.0 += 1;
        if l.1.as_ref().is_none_or(|(s, _)| seed < *s) {
            l.1 = Some((seed, r.outcome.leftover.clone()));
        }
    }
    if plan.results_dir.is_some() {
        let record = results::Record::new(&r.outcome, &r.coverage);
        lock(&shared.records).insert(seed, record);
    }
    let tallies = std::mem::take(&mut r.coverage);
    if lock(&shared.coverage).add(i, tallies) {
        // Coverage stopped growing: take no more seeds.
        shared.next.store(plan.seeds.len(), Ordering::Relaxed);
    }
    if plan.traced && (plan.always_trace || !r.outcome.passed()) {
        write_trace(opts, &plan.name, &r);
    }
    if plan.wanted.every_seed() {
        write_timeline(opts, &plan.name, &r, plan.wanted);
    }
    if !r.outcome.passed() {
        lock(&shared.failures).insert(seed, r);
    }
}

/// After the last seed: the leftover tasks' warning, then [`conclude`].
fn finish(opts: &Options, plan: &Plan, shared: Shared) -> Swept {
    let failures = shared
        .failures
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let records = shared
        .records
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    warn_leftovers(
        &plan.name,
        opts.strict,
        plan.seeds.len(),
        shared
            .leftovers
            .into_inner()
            .unwrap_or_else(|e| e.into_inner()),
    );
    let sweep = shared
        .coverage
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    conclude(opts, plan, failures, records, sweep)
}

/// What a sweep concludes from its seeds (run here, or in fresh processes:
/// recycle.rs): the coverage's missing sites, the plateau's cut, the
/// results files.
pub(super) fn conclude(
    opts: &Options,
    plan: &Plan,
    mut failures: BTreeMap<u64, SeedResult>,
    mut records: BTreeMap<u64, results::Record>,
    sweep: coverage::Sweep,
) -> Swept {
    let name = &plan.name;
    let missing = coverage::missing(&sweep.totals);
    if let (Some(n), Some(at)) = (plan.plateau, sweep.stop) {
        eprintln!(
            "sim: {name}: coverage stopped growing for {n} seeds; stopped after {at} of {} seeds",
            plan.seeds.len()
        );
        // Seeds past the plateau that were already running when it was
        // found are not part of the sweep (whatever SIM_JOBS is).
        let counted: std::collections::BTreeSet<u64> = plan.seeds[..at].iter().copied().collect();
        failures.retain(|seed, _| counted.contains(seed));
        records.retain(|seed, _| counted.contains(seed));
    }
    if let Some(dir) = &plan.results_dir {
        let planned = plan::planned(opts);
        let run = results::Run {
            package: opts.package,
            crate_name: opts.crate_name,
            target: &plan.target,
            test: name,
            shard: plan::shard().unwrap_or((1, 1)),
            planned: &planned,
            stopped: sweep.stop.is_some(),
        };
        results::write(dir, &run, &records);
    }
    Swept {
        failures,
        missing,
        ran: sweep.stop.unwrap_or(plan.seeds.len()),
        explored: None,
    }
}

/// Runs one seed, with the determinism check if asked: the second run is
/// compared with the first decision by decision.
pub(super) fn run_checked<F, Fut>(
    opts: &Options,
    traced: Option<&trace::Collector>,
    seed: u64,
    make: &Arc<F>,
    check: bool,
    draw: bool,
    tape: Option<&tape::Tape>,
) -> SeedResult
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let replay = || tape.map(|t| TapeMode::Replay(t.bytes.clone()));
    let first = run_one(
        opts,
        seed,
        make,
        How {
            record: check,
            draw,
            tape: replay(),
            trace: traced.cloned(),
            ..How::default()
        },
    );
    if !check || !first.outcome.passed() {
        return first;
    }
    let mut second = run_one(
        opts,
        seed,
        make,
        How {
            compare: first.outcome.recording.clone(),
            draw,
            tape: replay(),
            trace: traced.cloned(),
            ..How::default()
        },
    );
    let what = format!("seed {seed}");
    if let Some(text) = rerun_difference(&first.outcome, &second.outcome, &what, "when run again") {
        second.outcome.class = Some(Class::Nondeterminism);
        second.outcome.message = text;
    }
    second
}
