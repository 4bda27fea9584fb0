//! What `#[tokio::test]`, `#[tokio::main]` and `select!` expand to under
//! simulation. Hidden from docs; the paths are a contract with
//! `sim-runtime-macros`.

use super::seed_run::{self, Shape};
use crate::simulation::core::config::{self, Config};
use crate::simulation::core::executor;
use crate::simulation::core::report::{self, Class, TestInfo};
use crate::simulation::core::trace::{Decision, Trace};
use crate::simulation::runtime::Builder;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

/// Arguments of `#[tokio::test]`.
#[derive(Clone, Copy, Debug)]
pub struct TestOptions {
    pub name: &'static str,
    pub file: &'static str,
    pub package: &'static str,
    pub crate_name: &'static str,
    pub flavor: &'static str,
    pub worker_threads: Option<usize>,
    pub start_paused: bool,
    /// `name = ".."`: the runtime's name (`Handle::name`).
    pub runtime_name: Option<&'static str>,
}

/// Arguments of `#[tokio::main]`.
#[derive(Clone, Copy, Debug)]
pub struct MainOptions {
    pub flavor: &'static str,
    pub worker_threads: Option<usize>,
    pub start_paused: bool,
    pub runtime_name: Option<&'static str>,
}

/// What a test body may return: `()` or `Result<(), E: Debug>`.
pub trait TestOutput {
    fn into_outcome(self) -> Result<(), String>;
    fn success() -> Self;
}

impl TestOutput for () {
    fn into_outcome(self) -> Result<(), String> {
        Ok(())
    }
    fn success() -> Self {}
}

impl<E: Debug> TestOutput for Result<(), E> {
    fn into_outcome(self) -> Result<(), String> {
        self.map_err(|e| format!("the test returned Err({e:?})"))
    }
    fn success() -> Self {
        Ok(())
    }
}

fn test_info(opts: &TestOptions) -> TestInfo {
    // `module_path!()` starts with the crate name, which libtest's test
    // names leave out.
    let name = opts
        .name
        .split_once("::")
        .map(|(_, rest)| rest)
        .unwrap_or(opts.name)
        .to_string();
    let in_tests_dir = opts.file.starts_with("tests/") || opts.file.contains("/tests/");
    let target = if in_tests_dir {
        format!("--test {}", opts.crate_name)
    } else {
        "--lib".into()
    };
    TestInfo {
        name,
        package: opts.package.to_string(),
        target,
    }
}

struct SeedRun {
    outcome: Result<(), String>,
    fingerprint: u64,
    record: Option<Vec<Decision>>,
    divergence: Option<String>,
}

/// Runs one seed of a `#[tokio::test]` body as if on a new thread
/// (run/seed_run.rs; `harness::in_fresh_run`: on the test's worker, its
/// thread-locals made new before and after), so no thread-local state
/// (std's HashMap keys, rand's ThreadRng, Tokio's context) leaks between
/// seeds. A panic of the body is the test's own: it comes back as the
/// error.
fn run_seed<F, Fut>(
    opts: &TestOptions,
    seed: u64,
    make: &Arc<F>,
    info: &TestInfo,
    record: bool,
    compare: Option<Arc<Vec<Decision>>>,
) -> std::thread::Result<SeedRun>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future,
    Fut::Output: TestOutput,
{
    let make = make.clone();
    let test = info.clone();
    let multi_thread = opts.flavor == "multi_thread";
    let shape = Shape::Test {
        multi_thread,
        local: opts.flavor == "local",
        // Tokio's default for multi_thread is the number of CPUs.
        workers: match (multi_thread, opts.worker_threads) {
            (false, _) => 1,
            (true, Some(n)) => n,
            (true, None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        start_paused: opts.start_paused,
        name: opts.runtime_name,
    };
    super::harness::in_fresh_run(&info.name, move || {
        config::set_in_test_runner(true);
        report::set_test(Some(test));
        let trace = Trace::new(record, compare);
        let end = seed_run::run(Config::from_env(seed), trace, &shape, false, || make());
        let out = match end.result {
            Ok(out) => out,
            Err(payload) => std::panic::resume_unwind(payload),
        };
        if let Some(payload) = end.teardown_panic {
            std::panic::resume_unwind(payload);
        }
        let outcome = out
            .into_outcome()
            .map_err(|e| format!("{e}\n{}", report::context(&end.at, "the test failed")));
        SeedRun {
            outcome,
            fingerprint: end.fingerprint,
            record: end.record,
            divergence: end.divergence.as_ref().map(seed_run::divergence_text),
        }
    })
}

/// Runs a `#[tokio::test]` body once per seed (`SIM_SEED`, `SIM_SEEDS` or
/// the default), each in a fresh simulation as if on a fresh thread (one
/// worker whose thread-locals are made new around each run).
pub fn run_test<F, Fut>(opts: TestOptions, make: F) -> Fut::Output
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future,
    Fut::Output: TestOutput,
{
    let info = test_info(&opts);
    if std::env::var_os("SIM_TAPE").is_some_and(|v| !v.is_empty()) {
        // Never run from seeds as if the tape had been replayed.
        panic!(
            "sim: SIM_TAPE is set, but {} is a #[tokio::test]: tapes are written and replayed by \
             #[sim::test] sweeps (sim-harness). Unset SIM_TAPE, or replay the tape with the \
             #[sim::test] that wrote it (its report prints the command).",
            info.name
        );
    }
    config::reload_steering();
    let seeds = config::test_seeds();
    let check = config::env_check_determinism();
    let make = Arc::new(make);
    // The seeds go on one worker whose thread-locals are made new around
    // each run, as a new thread's would be (`SIM_THREAD_PER_SEED=1`: a new
    // thread per run instead). A run's reset clears this loop's own
    // thread-locals too, so the report's test is set again before each use.
    std::thread::scope(|s| {
        super::harness::fresh_worker(s, info.name.clone(), || {
            run_seeds(&opts, &info, seeds, check, &make)
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    Fut::Output::success()
}

/// [`run_test`]'s loop over its seeds, on its worker.
fn run_seeds<F, Fut>(
    opts: &TestOptions,
    info: &TestInfo,
    seeds: impl IntoIterator<Item = u64>,
    check: bool,
    make: &Arc<F>,
) where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future,
    Fut::Output: TestOutput,
{
    for seed in seeds {
        report::set_test(Some(info.clone()));
        eprintln!(
            "sim: {} seed {seed} · replay: {}",
            info.name,
            report::replay_command(seed)
        );
        let first = match run_seed(opts, seed, make, info, check, None) {
            Ok(r) => r,
            Err(payload) => std::panic::resume_unwind(payload),
        };
        if let Err(msg) = first.outcome {
            panic!("{msg}");
        }
        if check {
            let log = Arc::new(first.record.unwrap_or_default());
            let second = match run_seed(opts, seed, make, info, false, Some(log)) {
                Ok(r) => r,
                Err(payload) => {
                    eprintln!(
                        "sim: {}: seed {seed} passed once and failed when run again",
                        Class::Nondeterminism.name()
                    );
                    std::panic::resume_unwind(payload)
                }
            };
            report::set_test(Some(info.clone()));
            let mismatch = seed_run::replay_mismatch(
                seed,
                second.divergence.as_deref(),
                (first.fingerprint, second.fingerprint),
            );
            if let Some(text) = mismatch {
                panic!(
                    "sim: {}: {text}\n  replay: {}",
                    Class::Nondeterminism.name(),
                    report::replay_command(seed)
                );
            }
        }
    }
    report::set_test(None);
}

/// Runs a `#[tokio::main]` body in one simulation on the current thread.
pub fn run_main<Fut: Future>(opts: MainOptions, future: Fut) -> Fut::Output {
    report::set_binary();
    config::reload_steering();
    let mut builder = match opts.flavor {
        "current_thread" | "local" => Builder::new_current_thread(),
        _ => Builder::new_multi_thread(),
    };
    if let Some(workers) = opts.worker_threads {
        builder.worker_threads(workers);
    }
    if let Some(name) = opts.runtime_name {
        builder.name(name);
    }
    builder.enable_all().start_paused(opts.start_paused);
    if opts.flavor == "local" {
        return builder
            .build_local(Default::default())
            .expect("Failed building the Runtime")
            .block_on(future);
    }
    builder
        .build()
        .expect("Failed building the Runtime")
        .block_on(future)
}

/// `select!`'s fairness draw, from the seed.
pub fn thread_rng_n(n: u32) -> u32 {
    executor::select_draw(n)
}

pub use tokio as __tokio;

pub use super::harness;

/// Runs `f` on a fresh thread with the libc interposers answering from
/// `seed` (for the interposers' own tests).
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub fn with_intercept_for_test<R: Send>(seed: u64, f: impl FnOnce() -> R + Send) -> R {
    crate::simulation::libc::sys::with_intercept_for_test(seed, f)
}

/// Sets the virtual time the interposers report on this thread (for the
/// interposers' own tests).
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub fn set_now_for_test(now_ns: u64) {
    crate::simulation::core::hooks::set_now(now_ns)
}

/// How many OS threads simulated code on this thread tried to start (for
/// the interposers' own tests).
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub fn thread_spawn_attempts_for_test() -> u32 {
    crate::simulation::core::hooks::thread_spawn_attempts()
}
