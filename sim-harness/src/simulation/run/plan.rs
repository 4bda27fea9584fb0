//! What a sweep runs, read once before any seed (a malformed variable
//! fails at once, naming itself and its accepted forms): the seeds (the
//! attribute, `SIM_SEED`, `SIM_SEEDS`, `SIM_SHARD`, `SIM_TAPE`), how many
//! at once (`SIM_JOBS`), whether to explore instead (`SIM_EXPLORE`), and
//! what each seed records (`SIM_TRACE`,
//! `SIM_TIMELINE`, `SIM_EXPORT`, `SIM_CHECK_DETERMINISM`, `SIM_RESULTS`,
//! `SIM_COVERAGE_PLATEAU`), and how many seeds a process runs
//! (`SIM_SEEDS_PER_PROCESS`).

use crate::simulation::results;
use crate::simulation::seed::{cargo_target, test_name, workspace_root, Options, Seeds};
use crate::simulation::tape;
use crate::simulation::timeline::Wanted;
use std::path::PathBuf;

/// A sweep's settings.
pub(super) struct Plan {
    /// The test's name, as `cargo test` filters it.
    pub name: String,
    /// `SIM_TAPE`: one run, from the tape's draws, of the seed it recorded.
    pub tape: Option<tape::Tape>,
    /// The seeds this process runs, in order.
    pub seeds: Vec<u64>,
    /// Each seed twice, compared decision by decision.
    pub check: bool,
    /// `SIM_TRACE`: every seed's trace is written.
    pub always_trace: bool,
    pub wanted: Wanted,
    /// `SIM_RESULTS`, validated and created.
    pub results_dir: Option<PathBuf>,
    pub jobs: usize,
    /// `SIM_COVERAGE_PLATEAU`: stop after this many seeds without new
    /// coverage.
    pub plateau: Option<u64>,
    /// The cargo target, as in the replay command (`--test sim`, `--lib`).
    pub target: String,
    /// `SIM_EXPLORE` or `explore = n`: spend this many runs exploring
    /// (explore.rs) instead of running the seeds.
    pub explore: Option<u64>,
    /// Whether seeds are traced as the sweep runs them. A passing seed's
    /// trace is never read, so only when every seed's trace or page is
    /// asked for; otherwise the first failing ones are run again with the
    /// trace on after the sweep (triage.rs).
    pub traced: bool,
    /// `SIM_SEEDS_PER_PROCESS`: a sweep of as many seeds or more runs them this many
    /// at a time in fresh processes (recycle.rs).
    pub per_process: Option<usize>,
}

impl Plan {
    pub(super) fn new(opts: &Options) -> Plan {
        let name = test_name(opts);
        // The steering variables, read once for the whole sweep.
        sim_runtime::__private::harness::reload_env();
        let tape = tape::from_env(&name);
        let seeds = match &tape {
            Some(t) => vec![t.seed],
            None => seeds(opts),
        };
        let check = opts.check_determinism
            || env("SIM_CHECK_DETERMINISM")
                .is_some_and(|v| parse_bool("SIM_CHECK_DETERMINISM", &v));
        let always_trace = env("SIM_TRACE").is_some_and(|v| parse_bool("SIM_TRACE", &v));
        let wanted = Wanted::from_env();
        // `SIM_EXPLORE` (or the attribute): a guided exploration of that
        // many runs; a tape's replay is one run, never an exploration.
        // `SIM_EXPLORE=0` runs the seeds of a test that explores.
        let explore = match (&tape, env("SIM_EXPLORE")) {
            (Some(_), _) => None,
            (None, Some(v)) => Some(parse_u64(
                "SIM_EXPLORE",
                &v,
                "a number of runs, e.g. SIM_EXPLORE=2000 (0: run the seeds instead)",
            ))
            .filter(|&n| n > 0),
            (None, None) => opts.explore,
        };
        if explore.is_some() {
            refuse_with_exploration(
                env(results::VAR).is_some(),
                always_trace || wanted.every_seed(),
            );
        }
        let results_dir = results::dir(env(results::VAR), &workspace_root(opts));
        let jobs = match explore {
            Some(runs) => jobs().min(runs.min(super::super::explore::ROUND as u64) as usize),
            None => jobs().min(seeds.len().max(1)),
        };
        let shared = sim_runtime::__private::harness::process_global_state();
        let jobs = if jobs > 1 && !shared.is_empty() {
            // Simulations take turns anyway (the runtime's cstate.rs): one
            // job does the same work without threads waiting for theirs.
            let (what, verb) = match shared.split_last() {
                Some((last, rest)) if !rest.is_empty() => {
                    (format!("{} and {last}", rest.join(", ")), "are")
                }
                _ => (shared.join(""), "is"),
            };
            eprintln!(
                "sim: {what} {verb} one per process, so seeds run one at a time (SIM_JOBS={jobs} \
                 not used)"
            );
            1
        } else {
            jobs
        };
        let plateau = env("SIM_COVERAGE_PLATEAU").map(|v| {
            parse_u64(
                "SIM_COVERAGE_PLATEAU",
                &v,
                "a number of seeds ≥ 1, e.g. SIM_COVERAGE_PLATEAU=200",
            )
            .max(1)
        });
        // A tape's replay is one run; an exploration's runs depend on the
        // runs before them.
        let per_process = super::recycle::per_process(env(super::recycle::VAR))
            .filter(|_| tape.is_none() && explore.is_none());
        Plan {
            name,
            tape,
            seeds,
            check,
            always_trace,
            traced: always_trace || wanted.every_seed(),
            wanted,
            results_dir,
            jobs,
            plateau,
            target: cargo_target(opts),
            per_process,
            explore,
        }
    }
}

/// What a sweep of seeds offers that an exploration (one search whose runs
/// depend on each other) does not: refused with what to do instead
/// (`SIM_RESULTS`, `SIM_SHARD`), or said on stderr (every run's trace,
/// page or export: an exploration traces and draws its failing run).
fn refuse_with_exploration(results: bool, every_run_traced: bool) {
    let refused = [
        (
            results,
            "SIM_RESULTS records a sweep's seeds for `cargo xtask merge-results`",
        ),
        (
            shard().is_some(),
            "SIM_SHARD splits a sweep's seeds among machines",
        ),
    ];
    for (set, what) in refused {
        assert!(
            !set,
            "sim: {what}, but this test explores (SIM_EXPLORE or `explore = n`): an exploration \
             is one search whose runs depend on the runs before them, not a set of seeds. Unset \
             it to explore, or set SIM_EXPLORE=0 to sweep the seeds instead."
        );
    }
    if every_run_traced {
        eprintln!(
            "sim: an exploration traces and draws its failing run (the report names its files), \
             not each of its runs: SIM_TRACE, SIM_TIMELINE and SIM_EXPORT apply to every run \
             of a sweep of seeds (SIM_EXPLORE=0)"
        );
    }
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
fn parse_seed_list(var: &str, v: &str) -> Vec<u64> {
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
fn parse_shard(v: &str) -> (usize, usize) {
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
fn seeds(opts: &Options) -> Vec<u64> {
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
pub(super) fn shard() -> Option<(usize, usize)> {
    env("SIM_SHARD").map(|v| parse_shard(&v))
}

/// The seeds of the whole run, before the shard takes its slice.
pub(super) fn planned(opts: &Options) -> Vec<u64> {
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
