//! The run of a `#[sim::test]`: which seeds (attribute, `SIM_SEED`,
//! `SIM_SEEDS`, `SIM_SHARD`), how many at once (`SIM_JOBS`), each on its own
//! OS thread and its own simulation, then one report: the first failing
//! seed in full (class, step, virtual time, message, the trace's last lines
//! and path, whether a rerun reproduced it), the other failing seeds listed.

use super::results;
use super::shrink;
use super::tape;
use super::timeline::{self, warn_leftovers, Leftovers, Recorded, Wanted};
use super::trace;
use sim_runtime::__private::harness::{
    cargo_prefix, replay_env, replay_mismatch, run_seed, strategy, Recording, SeedOutcome,
    SeedSettings, TapeMode,
};
use sim_runtime::__private::TestOutput;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
}

/// Reads an environment variable, failing clearly on a malformed value.
fn env(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => None,
        Ok(v) => Some(v.trim().to_string()),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            panic!("sim: {name} is not valid UTF-8")
        }
    }
}

fn parse_u64(var: &str, v: &str, forms: &str) -> u64 {
    v.replace('_', "").parse().unwrap_or_else(|_| {
        panic!("sim: {var}={v:?} is malformed: {v:?} is not a number. Accepted forms: {forms}")
    })
}

/// `0..1000`, `0..=9`, `3,7,9`, or `7`.
pub(crate) fn parse_seed_list(var: &str, v: &str) -> Vec<u64> {
    const FORMS: &str = "a range `0..1000` (or `0..=999`), a list `3,7,9`, or one seed `7`";
    let num = |part: &str| -> u64 {
        part.trim().replace('_', "").parse().unwrap_or_else(|_| {
            panic!(
                "sim: {var}={v:?} is malformed: {part:?} is not a number. Accepted forms: {FORMS}"
            )
        })
    };
    if let Some((a, b)) = v.split_once("..=") {
        let (a, b) = (num(a), num(b));
        assert!(
            a <= b,
            "sim: {var}={v:?} is an empty range. Accepted forms: {FORMS}"
        );
        return (a..=b).collect();
    }
    if let Some((a, b)) = v.split_once("..") {
        let (a, b) = (num(a), num(b));
        assert!(
            a < b,
            "sim: {var}={v:?} is an empty range. Accepted forms: {FORMS}"
        );
        return (a..b).collect();
    }
    v.split(',').map(num).collect()
}

/// `k/n`, 1 ≤ k ≤ n: this process runs the seeds whose position in the list
/// is `k - 1` modulo `n`.
pub(crate) fn parse_shard(v: &str) -> (usize, usize) {
    const FORMS: &str = "`k/n` with 1 ≤ k ≤ n, e.g. SIM_SHARD=2/4";
    let Some((k, n)) = v.split_once('/') else {
        panic!("sim: SIM_SHARD={v:?} is malformed. Accepted form: {FORMS}")
    };
    let (k, n) = (
        parse_u64("SIM_SHARD", k, FORMS),
        parse_u64("SIM_SHARD", n, FORMS),
    );
    assert!(
        n >= 1 && k >= 1 && k <= n,
        "sim: SIM_SHARD={v:?} is out of range. Accepted form: {FORMS}"
    );
    (k as usize, n as usize)
}

fn parse_bool(var: &str, v: &str) -> bool {
    match v {
        "1" | "true" | "yes" | "on" => true,
        "0" | "false" | "no" | "off" => false,
        _ => panic!("sim: {var}={v:?} is malformed. Accepted forms: 1 or 0 (true/false)"),
    }
}

/// The seeds this process runs, after the environment and the shard.
pub(crate) fn seeds(opts: &Options) -> Vec<u64> {
    let list = planned(opts);
    match shard() {
        Some((k, n)) => list
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % n == k - 1)
            .map(|(_, s)| s)
            .collect(),
        None => list,
    }
}

/// `SIM_SHARD`, parsed: `(k, n)`.
fn shard() -> Option<(usize, usize)> {
    env("SIM_SHARD").map(|v| parse_shard(&v))
}

/// The seeds of the whole run, before the shard takes its slice.
fn planned(opts: &Options) -> Vec<u64> {
    if let Some(v) = env("SIM_SEED") {
        vec![parse_u64("SIM_SEED", &v, "one seed, e.g. SIM_SEED=7")]
    } else if let Some(v) = env("SIM_SEEDS") {
        parse_seed_list("SIM_SEEDS", &v)
    } else {
        match opts.seeds {
            Seeds::Range(a, b) => (a..b).collect(),
            Seeds::One(s) => vec![s],
            Seeds::Default => vec![0],
        }
    }
}

fn jobs() -> usize {
    match env("SIM_JOBS") {
        Some(v) => {
            let n = parse_u64("SIM_JOBS", &v, "a number of threads ≥ 1, e.g. SIM_JOBS=4");
            assert!(
                n >= 1,
                "sim: SIM_JOBS=0: at least one job runs. Accepted form: a number ≥ 1"
            );
            n as usize
        }
        // Every core: a sweep scales with them (`cargo xtask bench --only
        // scaling`).
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
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
fn workspace_root(opts: &Options) -> PathBuf {
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

pub(crate) struct SeedResult {
    pub(crate) outcome: SeedOutcome,
    /// The swarm configuration the seed drew.
    swarm: Vec<(String, String)>,
    /// The seed's sometimes-assertion tallies.
    coverage: BTreeMap<super::coverage::Key, super::coverage::Tally>,
    pub(crate) trace: Vec<String>,
    pub(crate) dropped: u64,
    /// Faults the run injected: control-API faults and fault-point
    /// firings (its size, for shrinking).
    pub(crate) faults: u64,
    /// The run's recording, when it was recorded (timeline.rs).
    recorded: Option<Recorded>,
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
    let classify = |mut o: SeedOutcome| {
        // `sim::eventually` fails the body with a liveness marker.
        if o.class == Some("assertion") {
            if let Some(rest) = o.message.strip_prefix(super::LIVENESS_MARKER) {
                o.message = rest.to_string();
                o.class = Some("liveness");
            }
        }
        o
    };
    // A fresh OS thread per seed: no thread-local state leaks between seeds.
    std::thread::Builder::new()
        .name(test_name(opts))
        .spawn(move || {
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
                outcome: classify(outcome),
                trace,
                dropped,
            }
        })
        .expect("sim: could not start the thread for a seed")
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Runs one seed, with the determinism check if asked: the second run is
/// compared with the first decision by decision.
fn run_checked<F, Fut>(
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
    if !second.outcome.passed() {
        second.outcome.message = format!(
            "seed {seed} passed once and failed when run again ({}): {}",
            second.outcome.class.unwrap_or("?"),
            second.outcome.message
        );
        second.outcome.class = Some("nondeterminism");
    } else if let Some(text) = replay_mismatch(&first.outcome, &second.outcome) {
        second.outcome.class = Some("nondeterminism");
        second.outcome.message = text;
    }
    second
}

/// Runs a `#[sim::test]` body once per seed; panics with the report if any
/// seed fails.
pub fn run<F, Fut>(opts: Options, make: F)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let name = test_name(&opts);
    // The steering variables, read once for the whole sweep.
    sim_runtime::__private::harness::reload_env();
    // `SIM_TAPE`: one run, from the tape's draws, of the seed it recorded.
    let tape = tape::from_env(&name);
    let seeds = match &tape {
        Some(t) => vec![t.seed],
        None => seeds(&opts),
    };
    let check = opts.check_determinism
        || env("SIM_CHECK_DETERMINISM").is_some_and(|v| parse_bool("SIM_CHECK_DETERMINISM", &v));
    let always_trace = env("SIM_TRACE").is_some_and(|v| parse_bool("SIM_TRACE", &v));
    let wanted = Wanted::from_env();
    // Checked before any seed runs: a bad directory fails at once.
    let results_dir = results::dir(env(results::VAR), &workspace_root(&opts));
    let records: Mutex<BTreeMap<u64, results::Record>> = Mutex::new(BTreeMap::new());
    // Seeds whose body returned with tasks still running: (count, first).
    let leftovers: Mutex<Leftovers> = Mutex::new((0, None));
    let mut jobs = jobs().min(seeds.len().max(1));
    let shared = sim_runtime::__private::harness::process_global_state();
    if jobs > 1 && !shared.is_empty() {
        // Simulations take turns anyway (the runtime's libc/cstate.rs): one job
        // does the same work without threads waiting for theirs.
        eprintln!(
            "sim: {} is one per process, so seeds run one at a time (SIM_JOBS={jobs} not used)",
            shared.join(", ")
        );
        jobs = 1;
    }
    let make = Arc::new(make);
    let next = AtomicUsize::new(0);
    let failures: Mutex<BTreeMap<u64, SeedResult>> = Mutex::new(BTreeMap::new());
    let plateau = env("SIM_COVERAGE_PLATEAU").map(|v| {
        parse_u64(
            "SIM_COVERAGE_PLATEAU",
            &v,
            "a number of seeds ≥ 1, e.g. SIM_COVERAGE_PLATEAU=200",
        )
        .max(1)
    });
    // The sweep's coverage, folded in seed order.
    let sweep = Mutex::new(super::coverage::Sweep::new(plateau));
    let target = cargo_target(&opts);
    // A passing seed's trace is never read: seeds are traced from the start
    // only when every seed's trace or page is asked for; after the sweep,
    // the first failing ones are run again with the trace on
    // (trace.rs `trace_failure`).
    let traced = always_trace || wanted.every_seed();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let collector = trace::Collector::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&seed) = seeds.get(i) else { break };
                    if !sweep.lock().unwrap_or_else(|e| e.into_inner()).counts(i) {
                        break;
                    }
                    // Unbuffered, before the seed runs: it survives a crash or
                    // a kill of the process.
                    eprintln!(
                        "sim: {name} seed {seed} (strategy {}) · replay: {} {} test -p {} \
                         {target} -- {name} --exact",
                        strategy(seed, opts.schedule, opts.early_timers),
                        replay_env(seed),
                        cargo_prefix(),
                        opts.package
                    );
                    let mut r = run_checked(
                        &opts,
                        traced.then_some(&collector),
                        seed,
                        &make,
                        check,
                        wanted.every_seed(),
                        tape.as_ref(),
                    );
                    if super::replay::is_child() {
                        super::replay::tell_parent(&r.outcome);
                    }
                    if !r.outcome.leftover.is_empty() {
                        let mut l = leftovers.lock().unwrap_or_else(|e| e.into_inner());
                        l.0 += 1;
                        if l.1.as_ref().is_none_or(|(s, _)| seed < *s) {
                            l.1 = Some((seed, r.outcome.leftover.clone()));
                        }
                    }
                    if results_dir.is_some() {
                        let record = results::Record::new(&r.outcome, &r.coverage);
                        records
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(seed, record);
                    }
                    let tallies = std::mem::take(&mut r.coverage);
                    if sweep
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .add(i, tallies)
                    {
                        // Coverage stopped growing: take no more seeds.
                        next.store(seeds.len(), Ordering::Relaxed);
                    }
                    if traced && (always_trace || !r.outcome.passed()) {
                        write_trace(&opts, &name, &r);
                    }
                    if wanted.every_seed() {
                        write_timeline(&opts, &name, &r, wanted);
                    }
                    if !r.outcome.passed() {
                        failures
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(seed, r);
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    warn_leftovers(
        &name,
        opts.strict,
        seeds.len(),
        leftovers.into_inner().unwrap_or_else(|e| e.into_inner()),
    );
    let sweep = sweep.into_inner().unwrap_or_else(|e| e.into_inner());
    let missing = super::coverage::missing(&sweep.totals);
    if let (Some(n), Some(at)) = (plateau, sweep.stop) {
        eprintln!(
            "sim: {name}: coverage stopped growing for {n} seeds; stopped after {at} of {} seeds",
            seeds.len()
        );
        // Seeds past the plateau that were already running when it was
        // found are not part of the sweep (whatever SIM_JOBS is).
        let counted: std::collections::BTreeSet<u64> = seeds[..at].iter().copied().collect();
        failures.retain(|seed, _| counted.contains(seed));
        records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|seed, _| counted.contains(seed));
    }
    if !traced {
        // In seed order, so which seeds have a trace file does not depend
        // on how the jobs interleaved. The first failing seed's trace is
        // its rerun's, below (it is run again anyway).
        let collector = trace::Collector::new();
        for r in failures
            .values_mut()
            .skip(1)
            .take(trace::TRACED_FAILURES - 1)
        {
            trace::trace_failure(&opts, &collector, &make, tape.as_ref(), r);
            write_trace(&opts, &name, r);
        }
    }
    if let Some(dir) = &results_dir {
        let planned = planned(&opts);
        let run = results::Run {
            package: opts.package,
            crate_name: opts.crate_name,
            target: &target,
            test: &name,
            shard: shard().unwrap_or((1, 1)),
            planned: &planned,
            stopped: sweep.stop.is_some(),
        };
        let records = records.into_inner().unwrap_or_else(|e| e.into_inner());
        results::write(dir, &run, &records);
    }
    // The seeds the sweep ran (all of them, or up to the plateau).
    let ran = sweep.stop.unwrap_or(seeds.len());
    let Some(&first_seed) = failures.keys().next() else {
        if !missing.is_empty() {
            if opts.coverage {
                panic!(
                    "sim: coverage: {name}: {} site(s) of this binary were not covered by the {ran} \
                     seed(s), and the test asks for coverage = \"all\"\nsim: class: coverage\n    {}",
                    missing.len(),
                    missing.join("\n    ")
                );
            }
            eprintln!(
                "sim: {name}: {} site(s) not covered:\n    {}",
                missing.len(),
                missing.join("\n    ")
            );
        }
        return;
    };
    // Run the first failing seed again by itself: does it reproduce?
    // The rerun is recorded: its timeline page is drawn and its draws are
    // written down as a tape (neither recorder changes a decision, so the
    // fingerprints still compare). From a tape, the rerun replays it.
    let again = run_one(
        &opts,
        first_seed,
        &make,
        How {
            trace: Some(trace::Collector::new()),
            draw: true,
            tape: Some(match &tape {
                Some(t) => TapeMode::Replay(t.bytes.clone()),
                None => TapeMode::Record,
            }),
            ..How::default()
        },
    );
    if !traced {
        let r = failures.get_mut(&first_seed).expect("the first failure");
        trace::adopt_trace(r, &again);
        write_trace(&opts, &name, r);
    }
    let first = &failures[&first_seed];
    // Shrink the failing run's tape (shrink.rs); the report then tells the
    // shrunk run's story, and its page is the one drawn.
    let shrunk = match (&tape, &again.outcome.tape, shrink::Budget::from_env()) {
        (None, Some(used), Some(budget))
            if !super::replay::is_child() && again.outcome.class == first.outcome.class =>
        {
            Some(shrink::shrink_first(
                &opts,
                &name,
                &make,
                &again,
                used.bytes.clone(),
                budget,
            ))
        }
        _ => None,
    };
    let page = write_timeline(&opts, &name, &again, wanted);
    let shrunk_page = shrunk
        .as_ref()
        .filter(|s| s.smaller)
        .and_then(|s| write_timeline_as(&opts, &name, &s.result, wanted, ".shrunk"));
    let tape_line = match (&tape, &again.outcome.tape) {
        (Some(t), _) => format!("replayed from {}", t.path.display()),
        (None, Some(used)) => {
            match tape::write(&trace_dir(&opts, &name), &name, first_seed, &used.bytes) {
                Ok(path) => format!(
                    "{} ({} bytes of draws) · replay: {}={} {} test -p {} {target} -- {name} \
                     --exact",
                    path.display(),
                    used.bytes.len(),
                    tape::VAR,
                    path.display(),
                    cargo_prefix(),
                    opts.package
                ),
                Err(e) => format!("not written: {e}"),
            }
        }
        (None, None) => "not recorded".into(),
    };
    let reproduced = match (again.outcome.class, first.outcome.class) {
        (Some(a), Some(b)) if a == b && again.outcome.fingerprint == first.outcome.fingerprint => {
            format!(
                "yes: the same failure with the same fingerprint ({:#018x})",
                again.outcome.fingerprint
            )
        }
        (Some(a), _) => format!(
            "NO: the rerun failed differently ({a}, fingerprint {:#018x} vs {:#018x}): the run \
             is not deterministic",
            again.outcome.fingerprint, first.outcome.fingerprint
        ),
        (None, _) => "NO: the rerun passed: the run is not deterministic".into(),
    };
    // And in fresh processes (replay.rs); a replay does not replay itself.
    let fresh = if super::replay::is_child() {
        "not run (this process is itself a replay)".to_string()
    } else {
        super::replay::fresh(&name, &first.outcome)
    };
    panic!(
        "{}",
        report(
            &opts,
            &name,
            ran,
            &failures,
            first,
            (&reproduced, &fresh),
            &missing,
            (page.as_deref(), shrunk_page.as_deref()),
            &tape_line,
            shrunk.as_ref(),
            traced,
        )
    );
}

/// Writes the page (and the exports asked for) of a recorded seed next to
/// its trace; returns the page's path.
fn write_timeline(opts: &Options, name: &str, r: &SeedResult, wanted: Wanted) -> Option<PathBuf> {
    write_timeline_as(opts, name, r, wanted, "")
}

/// `write_timeline`, with `infix` after the seed in each file's name
/// (`7.shrunk.html` for `.shrunk`).
fn write_timeline_as(
    opts: &Options,
    name: &str,
    r: &SeedResult,
    wanted: Wanted,
    infix: &str,
) -> Option<PathBuf> {
    let rec = r.recorded.as_ref()?;
    let o = &r.outcome;
    let end = timeline::Ending {
        test: name,
        seed: o.seed,
        class: o.class,
        message: &o.message,
        step: o.step,
        now_ns: o.now.as_nanos() as u64,
        schedule: &o.schedule,
        tasks: &o.leftover,
    };
    let dir = trace_dir(opts, name);
    let mut page = None;
    // The page comes first, then the exports.
    for (i, (file, bytes)) in timeline::files(rec, &r.trace, &end, wanted)
        .into_iter()
        .enumerate()
    {
        let path = dir.join(file.replacen('.', &format!("{infix}."), 1));
        match std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, bytes)) {
            Ok(()) if i == 0 => page = Some(path),
            Ok(()) => {}
            Err(e) => eprintln!("sim: could not write {}: {e}", path.display()),
        }
    }
    page
}

fn write_trace(opts: &Options, name: &str, r: &SeedResult) {
    write_trace_as(opts, name, r, &format!("{}.trace", r.outcome.seed));
}

pub(crate) fn write_trace_as(opts: &Options, name: &str, r: &SeedResult, file: &str) {
    let dir = trace_dir(opts, name);
    let path = dir.join(file);
    let mut text = String::new();
    if r.dropped > 0 {
        let _ = writeln!(text, "({} earlier lines dropped)", r.dropped);
    }
    for l in &r.trace {
        text.push_str(l);
        text.push('\n');
    }
    let o = &r.outcome;
    let _ = writeln!(
        text,
        "--- seed {} · strategy {} · step {} · virtual time {:?} · {}",
        o.seed,
        o.schedule,
        o.step,
        o.now,
        o.class.unwrap_or("passed")
    );
    if !o.message.is_empty() {
        let _ = writeln!(text, "{}", o.message);
    }
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, text)) {
        eprintln!("sim: could not write the trace {}: {e}", path.display());
    }
}

#[allow(clippy::too_many_arguments)]
fn report(
    opts: &Options,
    name: &str,
    total: usize,
    failures: &BTreeMap<u64, SeedResult>,
    first: &SeedResult,
    (reproduced, fresh): (&str, &str),
    missing: &[String],
    (page, shrunk_page): (Option<&std::path::Path>, Option<&std::path::Path>),
    tape: &str,
    shrunk: Option<&shrink::ShrunkRun>,
    all_traced: bool,
) -> String {
    let o = &first.outcome;
    let mut s = String::new();
    let seeds: Vec<String> = failures.keys().map(|k| k.to_string()).collect();
    let _ = writeln!(
        s,
        "sim: {name}: {} of {total} seed(s) failed: {}{}",
        failures.len(),
        seeds
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        if seeds.len() > 20 { ", …" } else { "" }
    );
    let _ = writeln!(
        s,
        "sim: first failure — seed {} · strategy {} · step {} · virtual time {}.{:09}s",
        o.seed,
        o.schedule,
        o.step,
        o.now.as_secs(),
        o.now.subsec_nanos()
    );
    let _ = writeln!(s, "sim: class: {}", o.class.unwrap_or("?"));
    if let Some(sh) = shrunk {
        let _ = writeln!(s, "sim: shrunk: {}", sh.line);
    }
    // The story told below: the shrunk run's, when shrinking found one.
    let (first, trace_file) = match shrunk {
        Some(sh) if sh.smaller => (&sh.result, format!("{}.shrunk.trace", o.seed)),
        _ => (first, format!("{}.trace", o.seed)),
    };
    let o = &first.outcome;
    let active: Vec<String> = o
        .buggify
        .iter()
        .filter(|(_, active, _)| *active)
        .map(|(site, _, fired)| format!("{site} (fired {fired})"))
        .collect();
    if !active.is_empty() {
        let _ = writeln!(s, "sim: fault points active: {}", active.join(", "));
    }
    if !first.swarm.is_empty() {
        let dims: Vec<String> = first
            .swarm
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(s, "sim: swarm: {}", dims.join(", "));
    }
    for l in o.message.lines() {
        let _ = writeln!(s, "    {l}");
    }
    let path = trace_dir(opts, name).join(trace_file);
    let tail: Vec<&String> = first.trace.iter().rev().take(20).collect();
    let _ = writeln!(
        s,
        "sim: trace: {} ({} line(s); the last {}:)",
        path.display(),
        first.trace.len() as u64 + first.dropped,
        tail.len()
    );
    for l in tail.into_iter().rev() {
        let _ = writeln!(s, "    {l}");
    }
    if !all_traced && failures.len() > trace::TRACED_FAILURES {
        let _ = writeln!(
            s,
            "sim: traces: written for the first {} of the {} failing seeds; \
             for another, its replay line (printed as it started) with SIM_TRACE=1",
            trace::TRACED_FAILURES,
            failures.len()
        );
    }
    if !missing.is_empty() {
        let _ = writeln!(
            s,
            "sim: not covered by the sweep: {} site(s):",
            missing.len()
        );
        for m in missing.iter().take(20) {
            let _ = writeln!(s, "    {m}");
        }
        if missing.len() > 20 {
            let _ = writeln!(s, "    …");
        }
    }
    if let Some(page) = page {
        let _ = writeln!(
            s,
            "sim: timeline: {} (open it in a browser: lanes per node, messages as arrows)",
            page.display()
        );
    }
    if let Some(page) = shrunk_page {
        let _ = writeln!(s, "sim: timeline of the shrunk run: {}", page.display());
    }
    let _ = writeln!(s, "sim: reproduced when run again: {reproduced}");
    let _ = writeln!(s, "sim: replays in fresh processes: {fresh}");
    let _ = writeln!(s, "sim: tape: {tape}");
    let _ = writeln!(s, "sim: build: {}", super::replay::identity());
    let _ = write!(s, "sim: replay: {}", o.replay);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_lists() {
        assert_eq!(parse_seed_list("SIM_SEEDS", "0..3"), [0, 1, 2]);
        assert_eq!(parse_seed_list("SIM_SEEDS", "5..=6"), [5, 6]);
        assert_eq!(parse_seed_list("SIM_SEEDS", "3, 7,9"), [3, 7, 9]);
        assert_eq!(parse_seed_list("SIM_SEEDS", "1_000"), [1000]);
    }

    #[test]
    #[should_panic(expected = "SIM_SEEDS=\"0..x\" is malformed")]
    fn malformed_seed_lists_name_the_variable_and_the_forms() {
        parse_seed_list("SIM_SEEDS", "0..x");
    }

    #[test]
    #[should_panic(expected = "is an empty range")]
    fn empty_ranges_are_refused() {
        parse_seed_list("SIM_SEEDS", "5..5");
    }

    #[test]
    fn shards() {
        assert_eq!(parse_shard("2/4"), (2, 4));
    }

    #[test]
    #[should_panic(expected = "SIM_SHARD=\"0/4\" is out of range")]
    fn shard_numbers_start_at_one() {
        parse_shard("0/4");
    }

    #[test]
    #[should_panic(expected = "Accepted form: `k/n`")]
    fn shard_needs_a_slash() {
        parse_shard("3");
    }

    #[test]
    #[should_panic(expected = "SIM_CHECK_DETERMINISM=\"maybe\" is malformed")]
    fn booleans_are_strict() {
        parse_bool("SIM_CHECK_DETERMINISM", "maybe");
    }
}
