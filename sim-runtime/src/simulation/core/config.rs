//! Settings of one simulation, and how they are read from the environment.
//!
//! Every variable is validated: a malformed value is a panic that names the
//! variable and the accepted forms, never a silent default.

use std::cell::Cell;
use std::time::Duration;

/// The seed a run uses when nothing else is said: fixed, so that a run
/// without any setting is reproducible.
pub(crate) const DEFAULT_SEED: u64 = 0;

// How the next runnable task is chosen: a registered strategy
// (core/executor/schedule/).
use super::executor::yield_ahead_for;
pub use super::executor::Schedule;

/// What happens when a task whose `JoinHandle` was dropped panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnhandledPanic {
    /// The simulation fails with class `panic` (the default: nobody could
    /// observe that panic, so it is almost always a bug).
    Fail,
    /// As Tokio does by default: the panic is printed and the run goes on.
    Ignore,
}

#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub seed: u64,
    pub schedule: Schedule,
    /// Polls allowed before the run fails with class `step limit`.
    pub step_limit: Option<u64>,
    /// Virtual time allowed before the run fails with class `livelock`.
    pub time_limit: Option<Duration>,
    pub unhandled_panic: UnhandledPanic,
    /// Early timers: the clock may jump to the next deadline while tasks
    /// are still runnable (as if the computation took that long).
    pub early_timers: bool,
    /// On a multi-thread runtime under an exploring schedule: a task that
    /// calls `yield_now` is runnable again at once (a busy peer worker
    /// lets it run ahead), instead of after the tasks runnable when it
    /// yielded (Tokio's current-thread order, also a multi-thread one).
    /// Drawn per seed (`yield_ahead_for`), so both kinds of order are
    /// explored.
    pub yield_ahead: bool,
    /// Fault points may fire (`sim::buggify`).
    pub buggify: bool,
}

impl Config {
    /// Settings from the environment (the process's snapshot of it,
    /// [`steering`]), with `seed` as given.
    pub(crate) fn from_env(seed: u64) -> Config {
        let env = steering();
        let schedule = env.schedule(seed).unwrap_or_else(Schedule::random);
        Config {
            seed,
            schedule,
            step_limit: env.step_limit.unwrap_or(Some(100_000_000)),
            // A century: beyond Tokio's "far future" (30 years), which
            // `sleep(Duration::MAX)` must reach.
            time_limit: env
                .time_limit
                .unwrap_or(Some(Duration::from_secs(100 * 365 * 24 * 3600))),
            unhandled_panic: env.unhandled_panic.unwrap_or(UnhandledPanic::Fail),
            early_timers: env.early_timers.unwrap_or(false),
            yield_ahead: yield_ahead_for(seed, schedule),
            buggify: env.buggify.unwrap_or(false),
        }
    }
}

/// The steering variables (those that change what a seed does, besides
/// the seed), read from the environment and validated once, then kept: a
/// sweep reads them per seed, and `getenv` under std's lock was a tenth of a
/// tiny seed's cost (docs/perf.md). Read again when a test run starts
/// ([`reload_steering`]: `#[sim::test]`, `#[tokio::test]`, `#[tokio::main]`),
/// so a variable set before a run is seen by it; a runtime built by hand
/// sees the values of the last run started, or of its first build.
#[derive(Clone, Debug, Default)]
pub(crate) struct Steering {
    /// `SIM_SCHEDULE`, validated; resolved per seed (`portfolio`).
    schedule: Option<String>,
    pub step_limit: Option<Option<u64>>,
    pub time_limit: Option<Option<Duration>>,
    pub unhandled_panic: Option<UnhandledPanic>,
    pub early_timers: Option<bool>,
    pub yield_ahead: Option<bool>,
    pub buggify: Option<bool>,
    /// ` NAME=value` for each steering variable that is set, in
    /// [`STEERING`] order: what a replay line carries after `SIM_SEED`.
    pub replay_suffix: String,
}

/// The environment variables that change what a seed does, besides the
/// seed itself: a replay line must carry the ones that are set, or it
/// replays a different run (`SIM_SCHEDULE=pct3` names another strategy).
pub(crate) const STEERING: [&str; 7] = [
    "SIM_SCHEDULE",
    "SIM_EARLY_TIMERS",
    "SIM_YIELD_AHEAD",
    "SIM_BUGGIFY",
    "SIM_TIME_LIMIT",
    "SIM_STEP_LIMIT",
    "SIM_UNHANDLED_PANIC",
];

impl Steering {
    /// Reads and validates every steering variable (a malformed one is a
    /// panic naming it, as before).
    fn read() -> Steering {
        let schedule = var("SIM_SCHEDULE");
        if let Some(v) = &schedule {
            if Schedule::parse(v, 0).is_none() {
                panic!(
                    "sim: SIM_SCHEDULE={v:?} is not a schedule; accepted: {}",
                    Schedule::accepted()
                )
            }
        }
        let mut replay_suffix = String::new();
        for name in STEERING {
            if let Some(v) = var(name) {
                replay_suffix.push_str(&format!(" {name}={v}"));
            }
        }
        Steering {
            schedule,
            step_limit: env_limit("SIM_STEP_LIMIT"),
            time_limit: env_duration("SIM_TIME_LIMIT"),
            unhandled_panic: env_unhandled_panic(),
            early_timers: env_early_timers(),
            yield_ahead: env_yield_ahead(),
            buggify: env_buggify(),
            replay_suffix,
        }
    }

    /// `SIM_SCHEDULE`, resolved for `seed`.
    pub(crate) fn schedule(&self, seed: u64) -> Option<Schedule> {
        // Validated when read.
        self.schedule
            .as_deref()
            .and_then(|v| Schedule::parse(v, seed))
    }
}

static STEERING_NOW: std::sync::Mutex<Option<std::sync::Arc<Steering>>> =
    std::sync::Mutex::new(None);

/// The process's snapshot of the steering variables (read on first use).
pub(crate) fn steering() -> std::sync::Arc<Steering> {
    let kept = STEERING_NOW
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    kept.unwrap_or_else(reload_steering)
}

/// Reads the steering variables again (a test run starts) and keeps them.
pub(crate) fn reload_steering() -> std::sync::Arc<Steering> {
    // Read outside the lock: a malformed value panics here.
    let now = std::sync::Arc::new(Steering::read());
    *STEERING_NOW.lock().unwrap_or_else(|e| e.into_inner()) = Some(now.clone());
    now
}

fn var(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => None,
        Ok(v) => Some(v.trim().to_string()),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            panic!("sim: {name} is not valid UTF-8; unset it or give an ASCII value")
        }
    }
}

thread_local! {
    /// Set by the test runner (run/private.rs) on the threads it runs
    /// simulations on: a runtime built there takes its seed from the runner.
    static IN_TEST_RUNNER: Cell<bool> = const { Cell::new(false) };
    /// Set by the harness for a seed it will draw: the network model keeps
    /// its traffic log for run/record.rs (write-only: no decision reads it).
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

crate::simulation::core::hooks::carried!(
    RUNNER_CARRIED: (bool, bool),
    take: || (IN_TEST_RUNNER.with(Cell::get), RECORDING.with(Cell::get)),
    put: |(t, r): (bool, bool)| {
        IN_TEST_RUNNER.with(|c| c.set(t));
        RECORDING.with(|c| c.set(r));
    },
);

/// Whether this thread's simulations are the test runner's.
pub(crate) fn in_test_runner() -> bool {
    IN_TEST_RUNNER.with(|c| c.get())
}

/// Marks this thread's simulations as the test runner's.
pub(crate) fn set_in_test_runner(on: bool) {
    IN_TEST_RUNNER.with(|c| c.set(on));
}

/// Whether runs on this thread are recorded.
pub(crate) fn recording() -> bool {
    RECORDING.with(|c| c.get())
}

/// Records the runs started on this thread from now on (or stops).
pub(crate) fn set_recording(on: bool) {
    RECORDING.with(|c| c.set(on));
}

/// `SIM_SEED`: one seed (a replay).
pub(crate) fn env_seed() -> Option<u64> {
    let v = var("SIM_SEED")?;
    Some(parse_u64(&v).unwrap_or_else(|| {
        panic!("sim: SIM_SEED={v:?} is not a seed; expected an unsigned integer, e.g. SIM_SEED=137")
    }))
}

/// `SIM_SEEDS`: a list of seeds: `a..b`, `a..=b`, `a,b,c`, or one number.
pub(crate) fn env_seeds() -> Option<Vec<u64>> {
    let v = var("SIM_SEEDS")?;
    Some(parse_seeds(&v).unwrap_or_else(|e| {
        panic!(
            "sim: SIM_SEEDS={v:?} is malformed ({e}); accepted forms: `0..100`, `0..=99`, `3,7,9`, `42`"
        )
    }))
}

/// The seed of a runtime that the code builds itself (`Runtime::new`,
/// `Builder::build`) outside the test runners: `SIM_SEED`, else a
/// `SIM_SEEDS` of one seed, else the fixed default. Such a runtime is one
/// simulation: a `SIM_SEEDS` of several seeds would silently run only one,
/// so it is refused with what to do instead.
pub(crate) fn own_runtime_seed() -> u64 {
    if let Some(seed) = env_seed() {
        return seed;
    }
    match env_seeds() {
        None => DEFAULT_SEED,
        Some(seeds) if seeds.len() == 1 => seeds[0],
        Some(seeds) => panic!(
            "sim: SIM_SEEDS names {} seeds, but this code builds its own runtime \
             (Runtime::new or runtime::Builder, in a plain #[test] or a main), which is one \
             simulation of one seed: running it once would test one seed silently. Let \
             #[tokio::test] or #[sim::test] build the runtime (they run every seed of \
             SIM_SEEDS), or run one seed per process with SIM_SEED, e.g. \
             `for s in $(seq 0 {}); do SIM_SEED=$s cargo sim test -- <test> --exact || break; done`",
            seeds.len(),
            seeds.len().saturating_sub(1),
        ),
    }
}

/// The seeds a `#[tokio::test]` runs: `SIM_SEED` wins (a replay), then
/// `SIM_SEEDS`, then the fixed default.
pub(crate) fn test_seeds() -> Vec<u64> {
    if let Some(s) = env_seed() {
        return vec![s];
    }
    env_seeds().unwrap_or_else(|| vec![DEFAULT_SEED])
}

pub(crate) fn env_check_determinism() -> bool {
    match var("SIM_CHECK_DETERMINISM").as_deref() {
        None | Some("0") | Some("false") | Some("no") => false,
        Some("1") | Some("true") | Some("yes") => true,
        Some(v) => panic!("sim: SIM_CHECK_DETERMINISM={v:?} is malformed; use 1 or 0"),
    }
}

/// `SIM_SCHEDULE`, resolved for `seed` (from the snapshot, [`steering`]).
pub(crate) fn env_schedule(seed: u64) -> Option<Schedule> {
    steering().schedule(seed)
}

/// `SIM_BUGGIFY=on|off` (per seed: [`steering`]).
fn env_buggify() -> Option<bool> {
    let v = var("SIM_BUGGIFY")?;
    Some(match v.as_str() {
        "on" | "1" | "true" => true,
        "off" | "0" | "false" => false,
        _ => panic!("sim: SIM_BUGGIFY={v:?} is malformed; accepted: on, off"),
    })
}

/// `SIM_YIELD_AHEAD=on|off`.
fn env_yield_ahead() -> Option<bool> {
    let v = var("SIM_YIELD_AHEAD")?;
    Some(match v.as_str() {
        "on" | "1" | "true" => true,
        "off" | "0" | "false" => false,
        _ => panic!("sim: SIM_YIELD_AHEAD={v:?} is malformed; accepted: on, off"),
    })
}

/// `SIM_EARLY_TIMERS=on|off` (per seed: [`steering`]).
fn env_early_timers() -> Option<bool> {
    let v = var("SIM_EARLY_TIMERS")?;
    Some(match v.as_str() {
        "on" | "1" | "true" => true,
        "off" | "0" | "false" => false,
        _ => panic!("sim: SIM_EARLY_TIMERS={v:?} is malformed; accepted: on, off"),
    })
}

fn env_unhandled_panic() -> Option<UnhandledPanic> {
    let v = var("SIM_UNHANDLED_PANIC")?;
    Some(match v.as_str() {
        "fail" => UnhandledPanic::Fail,
        "ignore" => UnhandledPanic::Ignore,
        _ => panic!("sim: SIM_UNHANDLED_PANIC={v:?} is malformed; accepted: fail, ignore"),
    })
}

fn env_limit(name: &str) -> Option<Option<u64>> {
    let v = var(name)?;
    if v == "none" {
        return Some(None);
    }
    Some(Some(parse_u64(&v).unwrap_or_else(|| {
        panic!(
            "sim: {name}={v:?} is malformed; expected a number of steps (e.g. 1000000) or `none`"
        )
    })))
}

fn env_duration(name: &str) -> Option<Option<Duration>> {
    let v = var(name)?;
    if v == "none" {
        return Some(None);
    }
    Some(Some(parse_duration(&v).unwrap_or_else(|| {
        panic!("sim: {name}={v:?} is malformed; expected a duration like 500ms, 30s, 10m, 2h, 7d, or `none`")
    })))
}

fn parse_u64(s: &str) -> Option<u64> {
    s.replace('_', "").parse().ok()
}

pub(crate) fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    const MAX: u64 = 10_000_000;
    let range = |a: &str, b: &str, inclusive: bool| -> Result<Vec<u64>, String> {
        let a = parse_u64(a).ok_or_else(|| format!("{a:?} is not a number"))?;
        let b = parse_u64(b).ok_or_else(|| format!("{b:?} is not a number"))?;
        let end = if inclusive {
            b.checked_add(1).ok_or("range too large")?
        } else {
            b
        };
        if end <= a {
            return Err("the range is empty".into());
        }
        if end - a > MAX {
            return Err(format!("more than {MAX} seeds"));
        }
        Ok((a..end).collect())
    };
    if let Some((a, b)) = s.split_once("..=") {
        return range(a.trim(), b.trim(), true);
    }
    if let Some((a, b)) = s.split_once("..") {
        return range(a.trim(), b.trim(), false);
    }
    s.split(',')
        .map(|p| parse_u64(p.trim()).ok_or_else(|| format!("{:?} is not a number", p.trim())))
        .collect()
}

pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let secs = |k: u64| n.checked_mul(k).map(Duration::from_secs);
    match unit {
        "ns" => Some(Duration::from_nanos(n)),
        "us" => Some(Duration::from_micros(n)),
        "ms" => Some(Duration::from_millis(n)),
        "s" | "" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        "d" => secs(86_400),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_forms() {
        assert_eq!(parse_seeds("0..3").unwrap(), vec![0, 1, 2]);
        assert_eq!(parse_seeds("2..=3").unwrap(), vec![2, 3]);
        assert_eq!(parse_seeds("5, 9,13").unwrap(), vec![5, 9, 13]);
        assert_eq!(parse_seeds("42").unwrap(), vec![42]);
        assert!(parse_seeds("3..3").is_err());
        assert!(parse_seeds("a..b").is_err());
        assert!(parse_seeds("1,,2").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("7d"), Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("5 parsecs"), None);
    }
}
