//! One seed: the options a `#[sim::test]` passes, one run of one seed as
//! if on a new OS thread ([`run_one`]; a [`worker`]'s thread-locals are
//! made new after each run), and what the run leaves
//! ([`SeedResult`]). Everything that runs a seed — the sweep and its
//! triage (run.rs), the shrinker's replays, the fuzzer — goes through
//! here; this module imports none of them.

use super::timeline::{self, Recorded};
use super::trace;
use sim_runtime::__private::harness::{
    fresh_worker, in_fresh_run, replay_mismatch, run_seed, Recording, SeedOutcome, SeedSettings,
    TapeMode,
};
use sim_runtime::__private::TestOutput;
use sim_runtime::sim::Class;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The seeds an attribute names.
#[derive(Clone, Debug, Default)]
pub enum Seeds {
    /// `seeds = a..b`
    Range(u64, u64),
    /// `seed = n`
    One(u64),
    /// Neither: the fixed default seed, 0.
    #[default]
    Default,
}

/// What `#[sim::test(..)]` passes to the runner. Code that calls the
/// runner by hand fills what it needs and takes the rest from `default()`.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `module_path!()::fn_name`
    pub name: &'static str,
    pub file: &'static str,
    pub package: &'static str,
    pub crate_name: &'static str,
    pub manifest_dir: &'static str,
    pub seeds: Seeds,
    /// `time_limit = "30s"`-style, already parsed by the macro (ms).
    pub time_limit_ms: Option<u64>,
    /// `step_limit = n`: polls allowed per seed.
    pub step_limit: Option<u64>,
    /// `strict`: tasks alive when the body returns are a leak.
    pub strict: bool,
    /// `check_determinism`: each seed twice, compared decision by decision.
    pub check_determinism: bool,
    /// `schedule = "pct3"`: one strategy for every seed (`SIM_SCHEDULE`
    /// overrides it); `None` is the portfolio.
    pub schedule: Option<&'static str>,
    /// `coverage = "all"`: the sweep fails unless every `sometimes!` held
    /// and every `reachable!` was reached.
    pub coverage: bool,
    /// `early_timers = false|true`: for every seed (`SIM_EARLY_TIMERS`
    /// wins); `None`: half the seeds.
    pub early_timers: Option<bool>,
    /// `explore = n`: a guided exploration of `n` runs instead of the
    /// seeds (`SIM_EXPLORE` overrides it; explore.rs).
    pub explore: Option<u64>,
}

pub(crate) fn test_name(opts: &Options) -> String {
    opts.name
        .split_once("::")
        .map(|(_, rest)| rest)
        .unwrap_or(opts.name)
        .to_string()
}

pub(crate) fn cargo_target(opts: &Options) -> String {
    let in_tests_dir = opts.file.starts_with("tests/") || opts.file.contains("/tests/");
    if in_tests_dir {
        format!("--test {}", opts.crate_name)
    } else {
        "--lib".into()
    }
}

/// The workspace's root: the nearest directory above the package that
/// holds `Cargo.lock` (the package's own if none does).
pub(crate) fn workspace_root(opts: &Options) -> PathBuf {
    let mut dir = PathBuf::from(opts.manifest_dir);
    loop {
        if dir.join("Cargo.lock").exists() {
            return dir;
        }
        if !dir.pop() {
            return PathBuf::from(opts.manifest_dir);
        }
    }
}

/// The workspace's `target/sim/<test>/` directory.
pub(crate) fn trace_dir(opts: &Options, name: &str) -> PathBuf {
    workspace_root(opts)
        .join("target")
        .join("sim")
        .join(name.replace("::", "-"))
}

/// What one run of a seed leaves.
pub(crate) struct SeedResult {
    pub(crate) outcome: SeedOutcome,
    /// The swarm configuration the seed drew.
    pub(crate) swarm: Vec<(String, String)>,
    /// The seed's sometimes-assertion tallies.
    pub(crate) coverage: BTreeMap<super::coverage::Key, super::coverage::Tally>,
    pub(crate) trace: Vec<String>,
    pub(crate) dropped: u64,
    /// Faults the run injected: control-API faults and fault-point
    /// firings (its size, for shrinking).
    pub(crate) faults: u64,
    /// The run's recording, when it was recorded (timeline.rs).
    pub(crate) recorded: Option<Recorded>,
    /// What the run reached, for exploration (explore.rs).
    pub(crate) features: BTreeMap<super::explore::Feature, usize>,
    /// The faults of `sim::fake`s that happened, one line per fake and mode.
    pub(crate) fakes: Vec<String>,
}

impl SeedResult {
    /// A seed's result as its results record tells it (a seed a fresh
    /// process ran: run/recycle.rs), without its trace or recording.
    pub(crate) fn from_record(r: &super::results::Record) -> SeedResult {
        SeedResult {
            outcome: r.outcome(),
            swarm: Vec::new(),
            coverage: r.tallies(),
            trace: Vec::new(),
            dropped: 0,
            faults: 0,
            recorded: None,
            features: BTreeMap::new(),
            fakes: Vec::new(),
        }
    }
}

/// What one run of a seed records or follows.
#[derive(Default)]
pub(crate) struct How {
    /// Keep the decision log (for a determinism check).
    pub(crate) record: bool,
    /// Compare each decision with this log.
    pub(crate) compare: Option<Recording>,
    /// Record the timeline (the page and the exports).
    pub(crate) draw: bool,
    /// Record the draws as a tape, or take them from one.
    pub(crate) tape: Option<TapeMode>,
    /// Collect the trace's text (trace.rs). Without it the run's events
    /// go nowhere and cost no formatting: a passing seed's text is never
    /// read, so only a failing seed (rerun) or `SIM_TRACE` builds it.
    pub(crate) trace: Option<trace::Collector>,
}

/// The determinism check's verdict on a run that passed (`first`) and its
/// second run (`second`): why they differ (the second failed, or made
/// another decision first), or `None`. `what` names the run in the text
/// ("seed 7"), `again` how it was run again ("when run again").
pub(crate) fn rerun_difference(
    first: &SeedOutcome,
    second: &SeedOutcome,
    what: &str,
    again: &str,
) -> Option<String> {
    if second.passed() {
        return replay_mismatch(first, second);
    }
    Some(format!(
        "{what} passed once and failed {again} ({}): {}",
        second.class.map_or("?", Class::name),
        second.message
    ))
}

/// Starts a worker of the runner, named as the test: the runs `run_one`
/// makes on it go on this one thread, its thread-locals made new after
/// each (sim-runtime's libc/tls.rs), instead of on a new thread per run
/// (`SIM_THREAD_PER_SEED=1` keeps a thread per run).
pub(crate) fn worker<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    opts: &Options,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    fresh_worker(s, test_name(opts), f)
}

/// Runs `seed` once, as `how` says, as if on a new OS thread: on this one
/// if it is a fresh worker ([`worker`]), else on a new one.
pub(crate) fn run_one<F, Fut>(opts: &Options, seed: u64, make: &Arc<F>, how: How) -> SeedResult
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let How {
        record,
        compare,
        draw,
        tape,
        trace,
    } = how;
    let settings = SeedSettings {
        tape,
        seed,
        time_limit: opts.time_limit_ms.map(Duration::from_millis),
        step_limit: opts.step_limit,
        strict: opts.strict,
        schedule: opts.schedule.map(str::to_string),
        early_timers: opts.early_timers,
        record,
        compare,
        test: Some((
            test_name(opts),
            opts.package.to_string(),
            cargo_target(opts),
        )),
    };
    let make = make.clone();
    let body = move || {
        super::liveness::reset();
        timeline::set_recording(draw);
        // Untraced, the seed's events still go to no subscriber of the
        // user's (a global one would see every seed's).
        let (lines, guard) = match &trace {
            Some(collector) => {
                let (lines, guard) = collector.install();
                (Some(lines), guard)
            }
            None => (
                None,
                tracing::dispatcher::set_default(&tracing::Dispatch::none()),
            ),
        };
        let outcome = run_seed(&settings, || async move {
            if let Err(e) = make().await.into_outcome() {
                panic!("{e}");
            }
        });
        drop(guard);
        let recorded = timeline::take();
        timeline::set_recording(false);
        let (trace, dropped) = lines.map(|l| l.take()).unwrap_or_default();
        let faults = super::liveness::injected()
            + outcome
                .buggify
                .iter()
                .map(|(_, _, fired)| fired)
                .sum::<u64>();
        SeedResult {
            faults,
            recorded,
            swarm: super::swarm::take(),
            coverage: super::coverage::take(),
            features: super::explore::take(),
            fakes: super::fake::take(),
            outcome: classify(outcome),
            trace,
            dropped,
        }
    };
    // On a sweep's worker, the run goes on this thread, its thread-locals
    // made new before and after; anywhere else, on a new OS thread.
    in_fresh_run(&test_name(opts), body).unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// The harness's own classes: `sim::eventually` fails the body with a
/// liveness marker.
fn classify(mut o: SeedOutcome) -> SeedOutcome {
    if o.class == Some(Class::Assertion) {
        if let Some(rest) = o.message.strip_prefix(super::LIVENESS_MARKER) {
            o.message = rest.to_string();
            o.class = Some(Class::Liveness);
        }
    }
    o
}
