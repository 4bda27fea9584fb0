//! Long sweeps in fresh processes: a sweep of at least as many seeds as
//! `SIM_SEEDS_PER_PROCESS` (default [`DEFAULT`]) runs them that many at a
//! time, each batch in a fresh process of this test binary, so what seeds
//! leave in a process ends with it.
//!
//! Some of what a seed leaves cannot be given back in the process: a
//! simulated thread killed where it stands keeps what its frames and its
//! C library's per-thread caches hold (the frozen-disk rule: nothing of a
//! dead node runs again, its destructors included), and a library may keep
//! statics. In one process a 100,000-seed sweep with crashes grows by
//! kilobytes a seed; in batches, each process starts afresh.
//!
//! The parent runs no seed of the sweep itself. Each child runs its batch
//! as a sweep of its own (`SIM_SEEDS`, the same `SIM_JOBS`) and hands each
//! seed's record to the parent on a line of its stderr (`sim-sweep: ` and
//! the seed's results record: outcome, class, fingerprint, coverage); it
//! skips the triage and the report. The parent folds the records in seed
//! order (the coverage, its plateau, `SIM_RESULTS`), runs its lowest
//! failing seeds again in-process (their traces, the triage and the report
//! need the run itself; a rerun that ends otherwise than the child's run
//! is a nondeterminism failure), and reports as a sweep in one process
//! would. A child that dies mid-batch (a crash of the process) fails the
//! sweep, naming the seed it never finished.

use super::plan::Plan;
use super::sweep::{run_checked, Swept};
use super::triage::TRACED_FAILURES;
use crate::simulation::coverage;
use crate::simulation::results::Record;
use crate::simulation::seed::{Options, SeedResult};
use crate::simulation::timeline::{warn_leftovers, Leftovers};
use sim_runtime::__private::harness::{cargo_prefix, replay_env};
use sim_runtime::__private::TestOutput;
use sim_runtime::sim::Class;
use std::collections::BTreeMap;
use std::future::Future;
use std::process::Command;
use std::sync::Arc;

/// The variable that sets how many seeds a process runs.
pub(super) const VAR: &str = "SIM_SEEDS_PER_PROCESS";
/// Seeds a process runs when `SIM_SEEDS_PER_PROCESS` is not set: enough
/// that starting a process costs nothing beside them, few enough that what
/// they leave stays small (tens of MiB at most, for seeds that kill
/// threads).
pub(super) const DEFAULT: usize = 10_000;
/// Set in a child: it runs a batch of its parent's sweep.
const CHILD_ENV: &str = "SIM_SWEEP_CHILD";
/// What a child prints first on a seed's line for its parent.
const LINE: &str = "sim-sweep: ";

/// Whether this process runs a batch of a parent's sweep.
pub(crate) fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// In a child: hands the parent seed `r`'s record and the tasks its body
/// left running (the parent warns of them once for the whole sweep).
pub(super) fn tell(r: &Record, leftover: &[String]) {
    eprintln!(
        "{LINE}{}",
        serde_json::json!({"seed": r.value(), "leftover": leftover})
    );
}

/// A seed's line from a child, read back: its record and leftover tasks.
fn from_line(line: &str) -> Option<(Record, Vec<String>)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let record = Record::from_value(v.get("seed")?)?;
    let leftover = v
        .get("leftover")?
        .as_array()?
        .iter()
        .map(|t| t.as_str().map(str::to_string))
        .collect::<Option<Vec<_>>>()?;
    Some((record, leftover))
}

/// `SIM_SEEDS_PER_PROCESS`: `None` when every seed runs in this process
/// (`0`, a child's own sweep).
pub(super) fn per_process(value: Option<String>) -> Option<usize> {
    // A replay's one seed, or a batch: run here, where the parent reads
    // this process's own lines.
    if is_child() || super::super::replay::is_child() {
        return None;
    }
    let n = match value {
        None => DEFAULT,
        Some(v) => v.replace('_', "").parse().unwrap_or_else(|_| {
            panic!(
                "sim: {VAR}={v:?} is malformed. Accepted form: a number of seeds, e.g. \
                 {VAR}=10000 (0: every seed in this one process)"
            )
        }),
    };
    (n > 0).then_some(n)
}

/// `SIM_SEEDS` for a batch: a range when its seeds follow one another.
fn seeds_var(batch: &[u64]) -> String {
    match (batch.first(), batch.last()) {
        (Some(&a), Some(&b)) if b - a + 1 == batch.len() as u64 => format!("{a}..={b}"),
        _ => batch
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The seeds' records (and leftover tasks) from a child's output, by seed.
fn records(output: &str) -> BTreeMap<u64, (Record, Vec<String>)> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix(LINE))
        .filter_map(from_line)
        .map(|(r, left)| (r.seed(), (r, left)))
        .collect()
}

/// Runs the plan's seeds `per` at a time, each batch in a fresh process;
/// `None` when the binary cannot run this test by its name.
pub(super) fn sweep<F, Fut>(opts: &Options, plan: &Plan, make: &Arc<F>, per: usize) -> Option<Swept>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let name = &plan.name;
    let exe = std::env::current_exe().unwrap_or_else(|e| {
        panic!(
            "sim: {name}: {} seeds run {per} to a process, in fresh processes of this test \
             binary, which cannot be found ({e}); set {VAR}=0 to run them all in this one",
            plan.seeds.len()
        )
    });
    eprintln!(
        "sim: {name}: {} seeds, {per} to a process ({VAR}): each batch runs in a fresh process \
         of this test binary",
        plan.seeds.len()
    );
    let mut cov = coverage::Sweep::new(plan.plateau);
    let mut leftovers: Leftovers = (0, None);
    let mut kept: BTreeMap<u64, Record> = BTreeMap::new();
    let mut failing: Vec<Record> = Vec::new();
    let (mut index, mut batches) = (0, 0);
    'batches: for batch in plan.seeds.chunks(per) {
        if !cov.counts(index) {
            break;
        }
        batches += 1;
        let out = Command::new(&exe)
            .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "1")
            .env("SIM_SEEDS", seeds_var(batch))
            // The batch is the child's whole sweep: the parent sharded it,
            // writes the results and watches the plateau.
            .env_remove("SIM_SEED")
            .env_remove("SIM_SHARD")
            .env_remove("SIM_RESULTS")
            .env_remove("SIM_COVERAGE_PLATEAU")
            .env_remove("SIM_EXPLORE")
            .output()
            .unwrap_or_else(|e| panic!("sim: {name}: the test binary did not start again ({e})"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        // What the child says of its batch (its sweep's line, warnings);
        // not its warning of leftover tasks, which the parent gives once.
        let leftover_warning = format!("sim: warning: {name}: in ");
        for l in stderr
            .lines()
            .filter(|l| l.starts_with("sim: ") && !l.starts_with(&leftover_warning))
        {
            eprintln!("{l}");
        }
        let mut got = records(&stderr);
        if index == 0 && got.is_empty() && out.status.success() {
            // The binary has no test by this name that runs the sweep (a
            // test that calls the runner itself): the seeds run here.
            eprintln!(
                "sim: {name}: this test binary runs no test of that name by itself (a test \
                 that calls the runner), so its {} seeds run in this one process",
                plan.seeds.len()
            );
            return None;
        }
        let unfinished: Vec<u64> = batch
            .iter()
            .copied()
            .filter(|s| !got.contains_key(s))
            .collect();
        if let Some(&first) = unfinished.first() {
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            let listed: Vec<String> = unfinished.iter().take(5).map(u64::to_string).collect();
            panic!(
                "sim: {name}: the process that ran seeds {} ended ({}) with seed(s) {}{} \
                 unfinished: the process crashed (a fault, an abort, the OOM killer) in the \
                 first of them, or in one running beside it (the child's seeds log names \
                 the seed that started and never ended). Run it alone: {} {} test -p {} {} -- \
                 {name} --exact\n  its last lines:\n    {}",
                seeds_var(batch),
                out.status,
                listed.join(", "),
                if unfinished.len() > 5 { ", …" } else { "" },
                replay_env(first),
                cargo_prefix(),
                opts.package,
                plan.target,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n    ")
            );
        }
        for &seed in batch {
            let (r, left) = got.remove(&seed).expect("every seed of the batch ended");
            if !left.is_empty() {
                leftovers.0 += 1;
                leftovers.1.get_or_insert((seed, left));
            }
            let plateau = cov.add(index, r.tallies());
            index += 1;
            if r.class().is_some() {
                failing.push(r);
            } else if plan.results_dir.is_some() {
                kept.insert(seed, r);
            }
            if plateau {
                break 'batches;
            }
        }
    }
    warn_leftovers(name, opts.strict, plan.seeds.len(), leftovers);
    eprintln!("sim: {name}: {}", footprint(index, batches));
    let failures = again(opts, plan, make, &failing);
    for r in failing {
        kept.insert(r.seed(), r);
    }
    Some(super::sweep::conclude(opts, plan, failures, kept, cov))
}

/// What the sweep's processes held: the largest child's peak resident
/// memory (`getrusage`), and this process's threads and resident memory
/// now (`/proc/self/status`), which no seed touched. `cargo xtask bench
/// --only thread-soak` reads this line.
fn footprint(seeds: usize, batches: usize) -> String {
    // SAFETY: getrusage writes the struct it is given; zeroed is a valid
    // value of it.
    let peak_kib = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) == 0 {
            u.ru_maxrss.max(0) as u64
        } else {
            0
        }
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    format!(
        "{seeds} seeds in {batches} fresh process(es); the largest peaked at {peak_kib} KiB \
         resident; this process: {} thread(s), {} KiB resident",
        field("Threads:"),
        field("VmRSS:")
    )
}

/// The lowest failing seeds, run again in this process for the triage
/// and the report; the others as their children's records say.
fn again<F, Fut>(
    opts: &Options,
    plan: &Plan,
    make: &Arc<F>,
    failing: &[Record],
) -> BTreeMap<u64, SeedResult>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let mut failures = BTreeMap::new();
    for (k, child) in failing.iter().enumerate() {
        let seed = child.seed();
        let mut r = if k < TRACED_FAILURES {
            run_checked(
                opts,
                None,
                seed,
                make,
                plan.check,
                plan.wanted.every_seed(),
                None,
            )
        } else {
            SeedResult::from_record(child)
        };
        let (class, fp) = (r.outcome.class, r.outcome.fingerprint);
        if (class, fp) != (child.class(), child.fingerprint()) {
            r.outcome.message = format!(
                "seed {seed} ended {} (fingerprint {:#018x}) in the fresh process that swept \
                 it and {} ({fp:#018x}) when run again in this one: NOT deterministic across \
                 processes (state outside the seed: a static, a real file, the TSC)\n{}",
                child.class().map_or("pass", Class::name),
                child.fingerprint(),
                class.map_or("pass", Class::name),
                r.outcome.message
            );
            r.outcome.class = Some(Class::Nondeterminism);
        }
        failures.insert(seed, r);
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_a_range_when_its_seeds_follow_each_other() {
        assert_eq!(seeds_var(&[5, 6, 7]), "5..=7");
        assert_eq!(seeds_var(&[9]), "9..=9");
        assert_eq!(seeds_var(&[1, 3, 5]), "1,3,5");
    }

    #[test]
    fn a_childs_lines_are_read_back_and_noise_is_not() {
        let line = r#"{"seed":{"kind":"seed","test":"","shard":"","seed":7,"strategy":"random","outcome":"fail","class":"assertion","message":"m","fingerprint":"0x00000000000000ff","steps":3,"virtual_time_ns":10,"replay":"r","coverage":[{"site":"s","file":"f.rs","line":4,"reached":2,"held":1}]},"leftover":["task 3"]}"#;
        let out = format!("noise\n{LINE}{line}\n{LINE}not json\n");
        let got = records(&out);
        assert_eq!(got.len(), 1);
        let (r, left) = &got[&7];
        assert_eq!(left, &["task 3"]);
        assert_eq!((r.class(), r.fingerprint()), (Some(Class::Assertion), 0xff));
        let t = r.tallies();
        assert_eq!(t[&("s", "f.rs", 4)].held, 1);
        // What a record says survives the trip.
        assert_eq!(
            Record::from_value(&r.value()).map(|b| b.value()),
            Some(r.value())
        );
    }

    #[test]
    fn zero_keeps_every_seed_in_this_process() {
        assert_eq!(per_process(Some("0".into())), None);
        assert_eq!(per_process(Some("2_000".into())), Some(2000));
        assert_eq!(per_process(None), Some(DEFAULT));
    }

    #[test]
    #[should_panic(expected = "SIM_SEEDS_PER_PROCESS=\"x\" is malformed")]
    fn a_malformed_count_is_refused() {
        per_process(Some("x".into()));
    }
}
