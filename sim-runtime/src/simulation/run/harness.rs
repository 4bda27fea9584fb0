//! What the harness (`sim-harness`) needs of one seed: run a body in a fresh
//! simulation on the current thread and describe the outcome — class,
//! message, step, virtual time, fingerprint — instead of panicking. Hidden:
//! the shapes here are a contract with `sim-harness`, not a public API.

use super::seed_run::{self, strategy_name, Shape};
use crate::simulation::core::config::{self, Config, Schedule};
use crate::simulation::core::executor::yield_ahead_for;
use crate::simulation::core::report::{self, Class, TestInfo};
use crate::simulation::core::trace::{Decision, Trace};
use crate::simulation::runtime::Runtime;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A run's decision log, to compare a second run against.
#[derive(Clone)]
pub struct Recording(Arc<Vec<Decision>>);

/// How to run one seed.
#[derive(Clone, Default)]
pub struct SeedSettings {
    pub seed: u64,
    /// Overrides `SIM_TIME_LIMIT` when set.
    pub time_limit: Option<Duration>,
    /// Overrides `SIM_STEP_LIMIT` when set.
    pub step_limit: Option<u64>,
    /// Tasks still alive when the body returns fail the run (class leak).
    pub strict: bool,
    /// Keep the decision log (for a determinism check).
    pub record: bool,
    /// Compare each decision with this log.
    pub compare: Option<Recording>,
    /// The strategy (`portfolio`, `random`, `fifo`, `pct2`..`pct4`) when the
    /// test names one; `SIM_SCHEDULE` wins over it; neither: the portfolio.
    pub schedule: Option<String>,
    /// Early timers for this seed when the test says (`SIM_EARLY_TIMERS`
    /// wins); `None`: half the seeds.
    pub early_timers: Option<bool>,
    /// The test's name, package and cargo target (`--test x` / `--lib`),
    /// for the replay command.
    pub test: Option<(String, String, String)>,
    /// Record the run's draws as a tape, or take them from one (tape.rs).
    pub tape: Option<TapeMode>,
}

pub use crate::simulation::core::hooks::SDK_OUTPUT;
pub use crate::simulation::core::seed::Stream;
pub use crate::simulation::core::tape::{Mode as TapeMode, Used as TapeUsed};

/// What the harness keeps per run, by name (its coverage tallies, what
/// exploration noted): a value of the simulation rather than of an OS
/// thread, so it moves with the baton (core/hooks.rs `carried!`) and a
/// simulated thread's `sometimes!` counts for its run.
type RunLocals = std::collections::BTreeMap<&'static str, Box<dyn std::any::Any>>;

thread_local! {
    static RUN_LOCALS: std::cell::RefCell<RunLocals> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
}

crate::simulation::core::hooks::carried!(
    RUN_LOCALS_CARRIED: RunLocals,
    take: || RUN_LOCALS.with(|m| std::mem::take(&mut *m.borrow_mut())),
    put: |v: RunLocals| RUN_LOCALS.with(|m| *m.borrow_mut() = v),
);

/// Runs `f` on the calling thread's run's value named `key` (its
/// `Default` the first time): the executor's thread and every simulated
/// thread of the run see the same one. Outside a run, the thread's own.
/// `f` must not call this again.
pub fn with_run_local<T: Default + 'static, R>(
    key: &'static str,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    RUN_LOCALS.with(|m| {
        let mut m = m.borrow_mut();
        let v = m.entry(key).or_insert_with(|| Box::new(T::default()));
        let v = v
            .downcast_mut::<T>()
            .expect("sim: a run-local value is read with the type it was made with");
        f(v)
    })
}

/// Where the calling thread's run is in its tape: the bytes of draws taken
/// so far (0 with no tape on). A branch from this moment replays that many.
pub fn tape_position() -> usize {
    crate::simulation::core::tape::position()
}

/// How one seed's run ended.
pub struct SeedOutcome {
    pub seed: u64,
    /// `None` if the run passed; else the class of the failure.
    pub class: Option<Class>,
    /// What failed (the panic message, the deadlock's stuck tasks, …).
    pub message: String,
    pub step: u64,
    pub now: Duration,
    pub schedule: String,
    pub fingerprint: u64,
    pub decisions: u64,
    /// The log, when `record` was asked for.
    pub recording: Option<Recording>,
    /// The first decision that differed from `compare`, described.
    pub divergence: Option<String>,
    /// The replay command for this seed.
    pub replay: String,
    /// Fault points reached in the run: name, active, times fired.
    pub buggify: Vec<(String, bool, u64)>,
    /// The tasks still alive when the body returned (node, name, spawn
    /// location), whether or not `strict` made them a leak.
    pub leftover: Vec<String>,
    /// The tape, when the settings asked for one.
    pub tape: Option<TapeUsed>,
    /// Where the failure was raised (`file:line`), for a panic or a failed
    /// assertion: with the class, what makes two failures the same.
    pub site: Option<String>,
}

impl SeedOutcome {
    pub fn passed(&self) -> bool {
        self.class.is_none()
    }
}

/// How many simulated threads' destructor lists are allocated now
/// (thread/dtors.rs): a killed thread's is freed once it is joined.
pub fn live_thread_dtor_lists() -> usize {
    crate::simulation::thread::dtors::live()
}

/// A thread that runs seed after seed with fresh thread-locals
/// (libc/tls.rs); elsewhere than x86_64 Linux with glibc, none: the harness
/// starts an OS thread per seed.
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub use crate::simulation::libc::tls::{
    begin as fresh_thread, on_fresh_thread, reset_fresh_thread, Fresh,
};

#[cfg(not(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")))]
pub struct Fresh;

/// No fresh thread here: the harness starts an OS thread per seed.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")))]
pub fn fresh_thread() -> Option<Fresh> {
    None
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")))]
pub fn on_fresh_thread() -> bool {
    false
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")))]
pub fn reset_fresh_thread() {}

/// `SIM_THREAD_PER_SEED=1`: every seed on a new OS thread, instead of on a
/// worker whose thread-locals are made new after each ([`fresh_worker`]).
/// Anything but 1 or 0 (or unset) is refused, naming the forms.
pub fn thread_per_seed() -> bool {
    match std::env::var("SIM_THREAD_PER_SEED")
        .as_deref()
        .map(str::trim)
    {
        Err(_) | Ok("" | "0" | "off" | "false") => false,
        Ok("1" | "on" | "true") => true,
        Ok(v) => panic!(
            "sim: SIM_THREAD_PER_SEED={v:?} is malformed. Accepted forms: 1 (a new OS thread \
             for every seed) or 0 (the default: a worker whose thread-locals are made new \
             after each seed)"
        ),
    }
}

/// Starts a worker named `name` in `s`: made fresh first, before any code
/// whose thread-locals must be new (unless [`thread_per_seed`]), so that
/// [`in_fresh_run`] runs seed after seed on it instead of on a new thread
/// each.
pub fn fresh_worker<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    name: String,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    let per_seed = thread_per_seed();
    std::thread::Builder::new()
        .name(name)
        .spawn_scoped(s, move || {
            let _fresh = if per_seed { None } else { fresh_thread() };
            f()
        })
        .expect("sim: could not start a worker thread")
}

/// Runs one seed's `body` as if on a new OS thread: on this one, its
/// thread-locals made new before (what ran here between seeds may have
/// used some: a `HashMap` made there would give the run std's hash keys
/// drawn outside it) and after (what the run left is destroyed now, as its
/// thread's end would), if it is a [`fresh_worker`]; else on a new thread
/// named `name`. Either way no thread-local state reaches a run from outside
/// it; a panic comes back as the error.
pub fn in_fresh_run<T: Send>(
    name: &str,
    body: impl FnOnce() -> T + Send,
) -> std::thread::Result<T> {
    if on_fresh_thread() {
        reset_fresh_thread();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        reset_fresh_thread();
        return ran;
    }
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn_scoped(s, body)
            .expect("sim: could not start the thread for a seed")
            .join()
    })
}

pub use super::record::{set_recording, take_record, HostId, NetEvent, RunRecord, SegmentKind};
pub use crate::simulation::core::report::{cargo_prefix, replay_env};

/// The per-process state of C libraries in this executable that two
/// simulations at once would share (SQLite's generator): simulations take
/// turns when there is any (libc/cstate.rs).
pub fn process_global_state() -> Vec<&'static str> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
    return crate::simulation::libc::cstate::process_global();
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")))]
    Vec::new()
}

/// The strategy of a harness run of `seed`: `SIM_SCHEDULE`, else the
/// test's `schedule`, else the portfolio. Panics with the accepted values
/// on an unknown name.
pub fn strategy_for(seed: u64, test_schedule: Option<&str>) -> Schedule {
    if let Some(s) = config::env_schedule(seed) {
        return s;
    }
    match test_schedule {
        Some(name) => Schedule::parse(name, seed).unwrap_or_else(|| {
            panic!(
                "sim: schedule = {name:?} is not a schedule; accepted: {}",
                Schedule::accepted()
            )
        }),
        None => Schedule::portfolio(seed),
    }
}

/// Whether a harness run of `seed` has early timers: `SIM_EARLY_TIMERS`,
/// else the test's setting, else half the seeds (drawn independently of
/// the strategy).
pub fn early_timers_for(seed: u64, test: Option<bool>) -> bool {
    config::steering()
        .early_timers
        .or(test)
        .unwrap_or_else(|| crate::simulation::core::seed::decide(seed, "early.timers.on") & 1 == 1)
}

/// Whether fault points are on in a harness run of `seed`: `SIM_BUGGIFY`,
/// else three seeds in four.
pub fn buggify_for(seed: u64) -> bool {
    config::steering()
        .buggify
        .unwrap_or_else(|| crate::simulation::core::seed::decide(seed, "buggify.on") % 4 != 0)
}

/// Reads the steering variables (`SIM_SCHEDULE`, `SIM_BUGGIFY`, …) again:
/// a sweep starts. Between two calls every seed uses the values read then
/// (config.rs, `Steering`).
pub fn reload_env() {
    config::reload_steering();
}

/// The name of a strategy, with ` + early timers` and ` + yields ahead`
/// when they are on.
pub fn strategy(seed: u64, test_schedule: Option<&str>, early: Option<bool>) -> String {
    let schedule = strategy_for(seed, test_schedule);
    strategy_name(
        schedule,
        early_timers_for(seed, early),
        yield_ahead_for(seed, schedule),
    )
}

/// Runs `make()` as the body of a fresh simulation of `settings.seed` on
/// the current thread (run/seed_run.rs). Call it on a fresh thread per seed.
pub fn run_seed<F, Fut>(settings: &SeedSettings, make: F) -> SeedOutcome
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    if let Some((name, package, target)) = &settings.test {
        report::set_test(Some(TestInfo {
            name: name.clone(),
            package: package.clone(),
            target: target.clone(),
        }));
    }
    // From here on every draw goes through the tape, the config's swarm
    // choices included; it is turned off however the run ends.
    struct TapeOn(bool);
    impl Drop for TapeOn {
        fn drop(&mut self) {
            if self.0 && crate::simulation::core::tape::on() {
                crate::simulation::core::tape::stop();
            }
        }
    }
    let mut tape_on = TapeOn(false);
    if let Some(mode) = &settings.tape {
        crate::simulation::core::tape::start(mode.clone());
        tape_on.0 = true;
    }
    let mut config = Config::from_env(settings.seed);
    config.schedule = strategy_for(settings.seed, settings.schedule.as_deref());
    config.early_timers = early_timers_for(settings.seed, settings.early_timers);
    config.yield_ahead = yield_ahead_for(settings.seed, config.schedule);
    config.buggify = buggify_for(settings.seed);
    if settings.time_limit.is_some() {
        config.time_limit = settings.time_limit;
    }
    if settings.step_limit.is_some() {
        config.step_limit = settings.step_limit;
    }
    let trace = Trace::new(
        settings.record,
        settings.compare.as_ref().map(|r| r.0.clone()),
    );
    // The executor prints its own report when it fails; the harness writes
    // one report per failing seed instead (quiet).
    let end = seed_run::run(config, trace, &Shape::Nodes, true, make);
    let tape = tape_on.0.then(crate::simulation::core::tape::stop);
    tape_on.0 = false;
    let leaked = (settings.strict && !end.leftover.is_empty()).then(|| end.leftover.clone());
    let (class, message) = match (&end.result, leaked) {
        (Ok(()), None) => (None, String::new()),
        (Ok(()), Some(tasks)) => (
            Some(Class::Leak),
            format!(
                "the test body returned with {} task(s) still alive:\n    {}",
                tasks.len(),
                tasks.join("\n    ")
            ),
        ),
        (Err(payload), _) => match &end.failure {
            Some(f) => (Some(f.class), f.message.clone()),
            None => (
                Some(Class::Assertion),
                strip_context(&report::payload_text(&**payload)),
            ),
        },
    };
    let (class, message) = match (class, &end.teardown_panic) {
        (None, Some(p)) => (
            Some(Class::Panic),
            format!(
                "a task panicked while the simulation shut down: {}",
                report::payload_text(&**p)
            ),
        ),
        (c, _) => (c, message),
    };
    let outcome = SeedOutcome {
        seed: settings.seed,
        class,
        message,
        step: end.at.step,
        now: Duration::from_nanos(end.at.now),
        schedule: end.strategy,
        fingerprint: end.fingerprint,
        decisions: end.decisions,
        recording: end.record.map(|r| Recording(Arc::new(r))),
        divergence: end.divergence.as_ref().map(seed_run::divergence_text),
        replay: report::replay_command(settings.seed),
        buggify: end.buggify,
        leftover: end.leftover,
        tape,
        site: end.site,
    };
    report::set_test(None);
    outcome
}

/// Whether `second`, a rerun of `first`'s seed compared with its
/// recording, replayed it; the nondeterminism report when not
/// (run/seed_run.rs: the one check both runners make).
pub fn replay_mismatch(first: &SeedOutcome, second: &SeedOutcome) -> Option<String> {
    seed_run::replay_mismatch(
        second.seed,
        second.divergence.as_deref(),
        (first.fingerprint, second.fingerprint),
    )
}

/// Runs every runnable task of `rt`'s simulation until none is, without
/// moving the virtual clock (timers due at the current instant fire), from
/// outside any `block_on`; returns how many steps ran. A failure (step
/// limit, a task's unobserved panic) panics with its report, as `block_on`
/// does. For `sim::World::pump`.
#[track_caller]
pub fn pump(rt: &Runtime) -> u64 {
    rt.handle().exec().pump()
}

/// A sleep of exactly `duration` (no rounding up to the millisecond, as
/// `tokio::time::advance` sleeps), whether or not time is frozen. For
/// `sim::World::advance`.
#[track_caller]
pub fn sleep_exact(duration: Duration) -> crate::simulation::time::Sleep {
    crate::simulation::time::Sleep::exact(duration)
}

/// A child of `root` in the seed tree: `H(root, label)`, the same function
/// `sim::fork_seed` applies to the run's seed. For generators that draw
/// from a seed outside a running simulation.
pub fn child_seed(root: u64, label: &str) -> u64 {
    crate::simulation::core::seed::child(root, label)
}

/// The panic text without the context lines the executor appends (the
/// harness reports step, time and replay itself).
fn strip_context(text: &str) -> String {
    text.lines()
        .filter(|l| {
            !l.starts_with("sim: assertion (the test body panicked)")
                && !l.starts_with("sim: replay with:")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
