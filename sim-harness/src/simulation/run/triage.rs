//! The triage of a failing sweep: traces for its lowest failing seeds
//! (run again with the trace on), then the first failure run again by
//! itself (does it reproduce? its page and tape come from that rerun),
//! shrunk (shrunk.rs), and replayed in fresh processes (replay.rs). A
//! traced run of a seed is the same run as its untraced one (trace.rs).

use super::files::{write_timeline_as, write_trace};
use super::inevitable;
use super::plan::Plan;
use super::shrunk::{shrink_first, ShrunkRun};
use crate::simulation::replay;
use crate::simulation::seed::{run_one, trace_dir, How, Options, SeedResult};
use crate::simulation::shrink::Budget;
use crate::simulation::tape;
use crate::simulation::trace;
use sim_runtime::__private::harness::{cargo_prefix, SeedOutcome, TapeMode};
use sim_runtime::__private::TestOutput;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// How many failing seeds of a sweep get a trace file (the lowest; with
/// `SIM_TRACE=1`, every seed does): a sweep where most seeds fail (a
/// planted bug) would otherwise run each of them twice.
pub(super) const TRACED_FAILURES: usize = 16;

/// What the triage found out about the first failure, for the report.
pub(super) struct Triage {
    /// The first failure's shrunk run, when shrinking ran.
    pub shrunk: Option<ShrunkRun>,
    /// The timeline page of the first failure's rerun.
    pub page: Option<PathBuf>,
    /// The shrunk run's page, when it is smaller.
    pub shrunk_page: Option<PathBuf>,
    /// The tape's line: where it was written and how to replay it.
    pub tape: String,
    /// Whether the rerun failed the same way.
    pub reproduced: String,
    /// How the replays in fresh processes ended.
    pub fresh: String,
    /// When the failure became likely and certain (inevitable.rs).
    pub inevitable: Option<inevitable::Inevitability>,
    /// The replay line, when the seed alone does not replay the failure
    /// (a run an exploration branched: its tape does).
    pub replay: Option<String>,
}

/// Triages `failures` (not empty): their traces, then the first one's
/// rerun, shrinking and replays. `explored`: the one failure is a run of an
/// exploration, replayed from its own tape (the seed alone is another run).
pub(super) fn triage<F, Fut>(
    opts: &Options,
    plan: &Plan,
    make: &Arc<F>,
    failures: &mut BTreeMap<u64, SeedResult>,
    explored: bool,
) -> Triage
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let name = &plan.name;
    if !plan.traced {
        // In seed order, so which seeds have a trace file does not depend
        // on how the jobs interleaved. The first failing seed's trace is
        // its rerun's, below (it is run again anyway).
        let collector = trace::Collector::new();
        for r in failures.values_mut().skip(1).take(TRACED_FAILURES - 1) {
            trace_failure(opts, &collector, make, plan.tape.as_ref(), r);
            write_trace(opts, name, r);
        }
    }
    let first_seed = *failures
        .keys()
        .next()
        .expect("a failing sweep has a failure");
    let from = explored
        .then(|| failures[&first_seed].outcome.tape.as_ref())
        .flatten()
        .map(|t| t.bytes.clone());
    let again = rerun(opts, plan, make, first_seed, from);
    if !plan.traced {
        let r = failures.get_mut(&first_seed).expect("the first failure");
        adopt_trace(r, &again);
        write_trace(opts, name, r);
    }
    let first = &failures[&first_seed];
    // Shrink the failing run's tape (shrunk.rs); the report then tells the
    // shrunk run's story, and its page is the one drawn.
    let shrunk = match (&plan.tape, &again.outcome.tape, Budget::from_env()) {
        (None, Some(used), Some(budget))
            if !replay::is_child() && again.outcome.class == first.outcome.class =>
        {
            Some(shrink_first(
                opts,
                name,
                make,
                &again,
                used.bytes.clone(),
                budget,
            ))
        }
        _ => None,
    };
    // When did it become inevitable (inevitable.rs)? From the rerun, which
    // failed as the first failure did.
    let inevitable =
        (!replay::is_child() && inevitable::wanted() && again.outcome.class == first.outcome.class)
            .then(|| inevitable::estimate(opts, make, &again, plan.jobs))
            .flatten();
    let markers = inevitable.as_ref().map(|i| i.markers()).unwrap_or_default();
    let page = write_timeline_as(opts, name, &again, plan.wanted, "", &markers);
    let shrunk_page = shrunk
        .as_ref()
        .filter(|s| s.smaller)
        .and_then(|s| write_timeline_as(opts, name, &s.result, plan.wanted, ".shrunk", &[]));
    let (tape, written) = tape_line(opts, plan, &again);
    // An explored run is replayed from its tape, here and in fresh
    // processes; a seed's run from its seed.
    let by_tape = if explored { written.as_deref() } else { None };
    Triage {
        inevitable,
        tape,
        reproduced: reproduced(&again.outcome, &first.outcome),
        // And in fresh processes (replay.rs); a replay does not replay
        // itself.
        fresh: if replay::is_child() {
            "not run (this process is itself a replay)".to_string()
        } else if explored && by_tape.is_none() {
            "not run (the run's tape could not be written)".to_string()
        } else {
            replay::fresh(name, &first.outcome, by_tape)
        },
        replay: by_tape.map(|path| replay_line(opts, plan, path)),
        shrunk,
        page,
        shrunk_page,
    }
}

/// The command that replays the tape at `path`.
fn replay_line(opts: &Options, plan: &Plan, path: &std::path::Path) -> String {
    format!(
        "{}={} {} test -p {} {} -- {} --exact",
        tape::VAR,
        path.display(),
        cargo_prefix(),
        opts.package,
        plan.target,
        plan.name
    )
}

/// Runs the first failing seed again by itself: does it reproduce? The
/// rerun is recorded: its timeline page is drawn and its draws are written
/// down as a tape (neither recorder changes a decision, so the
/// fingerprints still compare). From a tape, the rerun replays it.
fn rerun<F, Fut>(
    opts: &Options,
    plan: &Plan,
    make: &Arc<F>,
    seed: u64,
    from: Option<Vec<u8>>,
) -> SeedResult
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    run_one(
        opts,
        seed,
        make,
        How {
            trace: Some(trace::Collector::new()),
            draw: true,
            tape: Some(match (&plan.tape, from) {
                (Some(t), _) => TapeMode::Replay(t.bytes.clone()),
                (None, Some(bytes)) => TapeMode::Replay(bytes),
                (None, None) => TapeMode::Record,
            }),
            ..How::default()
        },
    )
}

/// The rerun's tape: written (with the command that replays it, and its
/// path), or the tape the sweep replayed.
fn tape_line(opts: &Options, plan: &Plan, again: &SeedResult) -> (String, Option<PathBuf>) {
    let name = &plan.name;
    match (&plan.tape, &again.outcome.tape) {
        (Some(t), _) => (format!("replayed from {}", t.path.display()), None),
        (None, Some(used)) => {
            let seed = again.outcome.seed;
            match tape::write(&trace_dir(opts, name), name, seed, &used.bytes) {
                Ok(path) => (
                    format!(
                        "{} ({} bytes of draws) · replay: {}",
                        path.display(),
                        used.bytes.len(),
                        replay_line(opts, plan, &path)
                    ),
                    Some(path),
                ),
                Err(e) => (format!("not written: {e}"), None),
            }
        }
        (None, None) => ("not recorded".into(), None),
    }
}

/// Whether the rerun `again` failed as `first` did, with its fingerprint.
fn reproduced(again: &SeedOutcome, first: &SeedOutcome) -> String {
    match (again.class, first.class) {
        (Some(a), Some(b)) if a == b && again.fingerprint == first.fingerprint => format!(
            "yes: the same failure with the same fingerprint ({:#018x})",
            again.fingerprint
        ),
        (Some(a), _) => format!(
            "NO: the rerun failed differently ({a}, fingerprint {:#018x} vs {:#018x}): the run \
             is not deterministic",
            again.fingerprint, first.fingerprint
        ),
        (None, _) => "NO: the rerun passed: the run is not deterministic".into(),
    }
}

/// Gives a failing seed, run untraced, the trace of a second run of it
/// with the trace on: the same run, as a seed's run is a function of its
/// seed (or tape). When the second run differs, its trace says so first.
fn trace_failure<F, Fut>(
    opts: &Options,
    collector: &trace::Collector,
    make: &Arc<F>,
    tape: Option<&tape::Tape>,
    r: &mut SeedResult,
) where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let second = run_one(
        opts,
        r.outcome.seed,
        make,
        How {
            tape: tape.map(|t| TapeMode::Replay(t.bytes.clone())),
            trace: Some(collector.clone()),
            ..How::default()
        },
    );
    adopt_trace(r, &second);
}

/// Takes `second`'s trace (a traced run of `r`'s seed) for `r`, saying
/// first when the two runs differ.
fn adopt_trace(r: &mut SeedResult, second: &SeedResult) {
    let (o, s) = (&r.outcome, &second.outcome);
    let differs = s.class != o.class || s.fingerprint != o.fingerprint;
    let mut trace = second.trace.clone();
    if differs {
        trace.insert(
            0,
            format!(
                "(this trace is of the seed's second run, which {}: the run is not \
                 deterministic)",
                match s.class {
                    Some(c) => format!(
                        "failed differently ({c}, fingerprint {:#018x} vs {:#018x})",
                        s.fingerprint, o.fingerprint
                    ),
                    None => "passed".to_string(),
                }
            ),
        );
    }
    r.trace = trace;
    r.dropped = second.dropped;
}
