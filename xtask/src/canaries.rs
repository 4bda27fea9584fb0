//! `cargo xtask canaries`: the canary catalog, measured.
//!
//! Sweeps every planted bug of `examples/canaries` (its `tests/sweep.rs`,
//! one `#[sim::test]` per bug) over seeds `0..N` once per strategy —
//! uniform random, PCT 2/3/4, the portfolio, the portfolio without early
//! timers — by setting `SIM_SCHEDULE` / `SIM_EARLY_TIMERS`. From the
//! harness's reports it takes how many seeds failed and the first; it then
//! runs each bug's first portfolio failure again with the replay command
//! the report printed, in a new process, and checks the fingerprint. It
//! writes the table to `docs/canaries.md` (or `--out`) and fails if a bug
//! is not found within its bound, if a failing seed does not replay, or if
//! the timeout canary is found without early timers.
//!
//! The hard canaries (the catalog's entries with a known first failing
//! seed) hide for hundreds to thousands of seeds: this sweep skips them,
//! and `--hard` measures them instead (`canaries/hard.rs`).
//!
//! Why the module is over 1,000 lines: it is two measurements (this sweep,
//! `--hard`) and the shrinking criterion both enforce (`canaries/shrunk.rs`),
//! each a file with its tests; this file is mostly the sweep's parsing of
//! the harness's reports and the text of `docs/canaries.md`.

mod chart;
mod hard;
mod shrunk;

use crate::cmd::{output, sim_cargo, write_file};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask canaries [--seeds N] [--out PATH]
       cargo xtask canaries --hard [--runs K] [--budget N] [--out PATH]
       cargo xtask canaries --chart [--out PATH]

  --seeds N   seeds per strategy, 0..N (default 200)
  --out PATH  where the markdown goes, from the workspace root
              (default docs/canaries.md)
  --hard      the hard canaries instead: seeds to the first failure for
              uniform, PCT 3 and the portfolio, the median of K sweeps
              from disjoint seeds, and what shrinking leaves
  --runs K    independent sweeps per strategy (default 5)
  --budget N  seeds a sweep may take before it counts as a miss
              (default 5000)
  --chart     redraw docs/canaries-hard.svg from the markdown's tables
              (--hard draws it too)
";

/// The runs: a column name and the variables that force its strategy.
/// Only the portfolio's first failures are shrunk (the table's *shrunk*
/// column); the other columns count seeds and need no shrinking.
const RUNS: &[(&str, &[(&str, &str)])] = &[
    (
        "uniform",
        &[("SIM_SCHEDULE", "random"), ("SIM_SHRINK", "off")],
    ),
    ("PCT 2", &[("SIM_SCHEDULE", "pct2"), ("SIM_SHRINK", "off")]),
    ("PCT 3", &[("SIM_SCHEDULE", "pct3"), ("SIM_SHRINK", "off")]),
    ("PCT 4", &[("SIM_SCHEDULE", "pct4"), ("SIM_SHRINK", "off")]),
    ("portfolio", &[]),
    (
        "portfolio, no early timers",
        &[("SIM_EARLY_TIMERS", "off"), ("SIM_SHRINK", "off")],
    ),
    (
        "portfolio, yields deferred",
        &[("SIM_YIELD_AHEAD", "off"), ("SIM_SHRINK", "off")],
    ),
];
const PORTFOLIO: &str = "portfolio";
const NO_EARLY: &str = "portfolio, no early timers";
const NO_YIELD_AHEAD: &str = "portfolio, yields deferred";
/// The canary that must not be found without early timers.
const NEEDS_EARLY_TIMERS: &str = "partial_batch";
/// The canary that must not be found while every yield is deferred
/// (Tokio's current-thread order).
const NEEDS_YIELD_AHEAD: &str = "yield_ahead";

/// A canary as the sweep binary lists it.
struct Canary {
    name: String,
    bound: u64,
    needs: String,
    bug: String,
    /// A hard canary's first failing seed (`None` for the quick ones).
    first: Option<u64>,
}

/// What one sweep of one canary found.
#[derive(Clone, Debug, Default)]
struct Found {
    failed: u64,
    total: u64,
    /// The first failing seed.
    first: Option<u64>,
    class: String,
    strategy: String,
    reproduced: bool,
    fingerprint: Option<String>,
    replay: String,
    /// The report's `sim: shrunk:` line, compacted (`hard::compact`).
    shrunk: Option<String>,
}

pub fn main(args: &[String]) -> Result<(), crate::Error> {
    let mut seeds = 200u64;
    let (mut hard, mut runs, mut budget) = (false, 5u64, 5000u64);
    let mut chart = false;
    let mut out = crate::cmd::root().join("docs").join("canaries.md");
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seeds" => {
                seeds = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| crate::Error::Usage("--seeds takes a number ≥ 1".into()))?;
            }
            "--hard" => hard = true,
            "--chart" => chart = true,
            "--runs" | "--budget" => {
                let n = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| crate::Error::Usage(format!("{a} takes a number ≥ 1")))?;
                if a == "--runs" {
                    runs = n;
                } else {
                    budget = n;
                }
            }
            "--out" => {
                // Relative to the workspace root, wherever cargo runs.
                out = crate::cmd::root().join(
                    it.next()
                        .ok_or_else(|| crate::Error::Usage("--out takes a path".into()))?,
                );
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(());
            }
            other => {
                return Err(crate::Error::Usage(format!(
                    "unknown option `{other}`\n{USAGE}"
                )))
            }
        }
    }
    if chart {
        return chart::write(&out).map_err(crate::Error::Failed);
    }
    let result = list().and_then(|catalog| {
        if hard {
            hard::run(&catalog, runs, budget, &out)
        } else {
            run(catalog, seeds, &out)
        }
    });
    result.map_err(crate::Error::Failed)
}

/// A generated section of a markdown file: its heading, then the text
/// between two marker comments, which its command rewrites and the other
/// commands writing the same file keep.
pub struct Section {
    pub start: &'static str,
    pub end: &'static str,
    pub heading: &'static str,
}

impl Section {
    /// `md` with this section's text replaced by `text`, or the section
    /// added at the end under its heading.
    pub fn splice(&self, md: &str, text: &str) -> String {
        let block = format!("{}\n{text}{}\n", self.start, self.end);
        match (md.find(self.start), md.find(self.end)) {
            (Some(a), Some(b)) if a < b => format!(
                "{}{block}{}",
                &md[..a],
                &md[b + self.end.len()..].trim_start_matches('\n')
            ),
            _ => format!("{}\n\n{}\n\n{block}", md.trim_end(), self.heading),
        }
    }

    /// The section in `md`, heading included, if it has one.
    pub fn get<'a>(&self, md: &'a str) -> Option<&'a str> {
        let (a, b) = (md.find(self.start)?, md.find(self.end)?);
        let head = md[..a].rfind(self.heading).unwrap_or(a);
        (head < b).then(|| &md[head..b + self.end.len()])
    }
}

/// The catalog's names, in order.
pub fn names() -> Result<Vec<String>, String> {
    Ok(list()?.into_iter().map(|c| c.name).collect())
}

/// Cargo's arguments for the sweep binary (examples/canaries/tests/sweep.rs).
const SWEEP: &[&str] = &["test", "-p", "canaries", "--test", "sweep"];

/// The catalog, from the sweep binary's `catalog` test.
fn list() -> Result<Vec<Canary>, String> {
    let mut cmd = sim_cargo(&[SWEEP, &["--", "catalog", "--exact", "--nocapture"]].concat());
    let (ok, text) = output(&mut cmd)?;
    let catalog = parse_catalog(&text);
    if !ok || catalog.is_empty() {
        return Err(format!("the sweep binary listed no canaries:\n{text}"));
    }
    Ok(catalog)
}

fn run(catalog: Vec<Canary>, seeds: u64, out: &std::path::Path) -> Result<(), String> {
    let started = Instant::now();
    let names: Vec<String> = catalog.iter().map(|c| c.name.clone()).collect();
    // The hard canaries are measured by `--hard`, not swept here.
    let skip: Vec<&str> = catalog
        .iter()
        .filter(|c| c.first.is_some())
        .map(|c| c.name.as_str())
        .collect();
    let catalog: Vec<&Canary> = catalog.iter().filter(|c| c.first.is_none()).collect();
    // column → canary → what it found
    let mut table: BTreeMap<&str, BTreeMap<String, Found>> = BTreeMap::new();
    for &(column, env) in RUNS {
        eprintln!("==> canaries: {column}, seeds 0..{seeds}");
        let text = sweep(seeds, env, &skip)?;
        let mut found = BTreeMap::new();
        for c in &catalog {
            found.insert(c.name.clone(), parse_found(&text, &c.name, seeds)?);
        }
        table.insert(column, found);
    }

    // Each bug's first portfolio failure, replayed in a new process with
    // the command its report printed.
    let mut replays: BTreeMap<String, Result<String, String>> = BTreeMap::new();
    for c in &catalog {
        let f = &table[PORTFOLIO][&c.name];
        if f.first.is_some() {
            eprintln!("==> canaries: replay {}: {}", c.name, f.replay);
            replays.insert(c.name.clone(), replay(f));
        }
    }

    let mut problems = Vec::new();
    for c in &catalog {
        let f = &table[PORTFOLIO][&c.name];
        match f.first {
            None => problems.push(format!(
                "{}: the portfolio did not find it in {seeds} seeds (bound {})",
                c.name, c.bound
            )),
            Some(s) if s >= c.bound => problems.push(format!(
                "{}: the portfolio's first failing seed is {s}, past its bound of {} seeds",
                c.name, c.bound
            )),
            Some(_) => {}
        }
        for (column, found) in &table {
            if found[&c.name].first.is_some() && !found[&c.name].reproduced {
                problems.push(format!(
                    "{} ({column}): the first failing seed did not reproduce in-process",
                    c.name
                ));
            }
        }
        if let Some(Err(e)) = replays.get(&c.name) {
            problems.push(format!("{}: {e}", c.name));
        }
        if c.name == NEEDS_EARLY_TIMERS && table[NO_EARLY][&c.name].first.is_some() {
            problems.push(format!(
                "{}: found without early timers: a timeout fired while work was runnable",
                c.name
            ));
        }
        if c.name == NEEDS_YIELD_AHEAD && table[NO_YIELD_AHEAD][&c.name].first.is_some() {
            problems.push(format!(
                "{}: found with every yield deferred: a yielder ran ahead in current-thread order",
                c.name
            ));
        }
    }

    let mut md = markdown(
        seeds,
        &catalog,
        &table,
        &replays,
        started.elapsed().as_secs(),
    );
    // The hard canaries' section, written by `--hard`, and the fuzzer's,
    // written by `cargo xtask fuzz --measure`, stay.
    let old = std::fs::read_to_string(out).unwrap_or_default();
    for kept in [hard::SECTION.get(&old), crate::fuzz::SECTION.get(&old)]
        .into_iter()
        .flatten()
    {
        md = format!("{}\n\n{kept}\n", md.trim_end());
    }
    write_file(out, &md)?;
    println!("{}", table_only(&md));
    // The shrinking criterion over the whole catalog: the hard canaries'
    // figures are the committed ones (`--hard` measures them).
    let docs = std::fs::read_to_string(crate::cmd::root().join("docs").join("canaries.md"))
        .unwrap_or_default();
    let whole = format!("{md}\n{}", hard::SECTION.get(&docs).unwrap_or_default());
    match shrunk::check(&whole, &names) {
        Ok(summary) => println!("{summary}"),
        Err(e) => problems.push(e),
    }
    println!(
        "wrote {} ({} s)",
        out.display(),
        started.elapsed().as_secs()
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("the catalog failed:\n  {}", problems.join("\n  ")))
    }
}

/// Runs the sweep binary with `env`, without the tests in `skip`; its
/// whole output.
fn sweep(seeds: u64, env: &[(&str, &str)], skip: &[&str]) -> Result<String, String> {
    let mut args = [SWEEP, &["--", "--test-threads=1", "--nocapture"]].concat();
    for name in skip {
        args.extend(["--skip", name]);
    }
    let mut cmd = sim_cargo(&args);
    // Seeds are counted here; when a failure became inevitable is not.
    cmd.env("SIM_SEEDS", format!("0..{seeds}"))
        .env("SIM_INEVITABLE", "off");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (ok, text) = output(&mut cmd)?;
    // The sweep fails by design; a build error is the other way it fails.
    if !ok && !text.contains("test result: FAILED") {
        return Err(format!("the sweep did not run:\n{text}"));
    }
    Ok(text)
}

fn parse_catalog(text: &str) -> Vec<Canary> {
    text.lines()
        .filter_map(|l| {
            // With --nocapture the first line follows libtest's
            // `test catalog ... ` on the same line.
            let at = l.find("canary\t")?;
            let mut f = l[at + "canary\t".len()..].split('\t');
            Some(Canary {
                name: f.next()?.to_string(),
                bound: f.next()?.parse().ok()?,
                needs: f.next()?.to_string(),
                bug: f.next()?.to_string(),
                first: f.next().and_then(|v| v.trim().parse().ok()),
            })
        })
        .collect()
}

/// What the sweep of `name` found: nothing if its test passed, else the
/// harness's report for it.
fn parse_found(text: &str, name: &str, seeds: u64) -> Result<Found, String> {
    let Some(report) = crate::harness_report::parse(text, name) else {
        return if text.contains(&format!("test {name} ... ok")) {
            Ok(Found {
                total: seeds,
                ..Found::default()
            })
        } else {
            Err(format!("the sweep has no result for `{name}`:\n{text}"))
        };
    };
    let r = report?;
    if r.replay.is_empty() {
        return Err(format!("the report for `{name}` has no replay line"));
    }
    Ok(Found {
        failed: r.failed,
        total: r.total,
        first: r.first,
        reproduced: r.reproduced.starts_with("yes"),
        fingerprint: fingerprint(&r.reproduced),
        class: r.class,
        strategy: r.strategy,
        replay: r.replay,
        shrunk: shrunk_line(text, name),
    })
}

/// The `sim: shrunk:` line of `name`'s report in a sweep's output,
/// compacted.
fn shrunk_line(text: &str, name: &str) -> Option<String> {
    let head = format!("sim: {name}: ");
    let mut lines = text
        .lines()
        .skip_while(|l| !(l.starts_with(&head) && l.contains(" seed(s) failed")));
    lines.next()?;
    lines
        .take_while(|l| !l.starts_with("sim: replay:"))
        .find_map(|l| l.strip_prefix("sim: shrunk: "))
        .map(hard::compact)
}

/// `0x…` in a line.
fn fingerprint(line: &str) -> Option<String> {
    let i = line.find("(0x")?;
    let hex: String = line[i + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    Some(hex)
}

/// Runs a replay line as printed (`SIM_SEED=7 SIM_SCHEDULE=pct3
/// RUSTFLAGS=".." cargo test ..`) in a new process; `Ok(fingerprint)` if it
/// failed the same way with the same fingerprint.
fn replay(f: &Found) -> Result<String, String> {
    let (prefix, cargo_args) = f
        .replay
        .split_once(" cargo ")
        .ok_or_else(|| format!("the replay line has no cargo command: {}", f.replay))?;
    let args: Vec<&str> = cargo_args.split_whitespace().collect();
    let mut cmd = sim_cargo(&args);
    for assignment in prefix.split_whitespace() {
        if let Some((k, v)) = assignment.split_once('=') {
            if k.starts_with("SIM_") {
                cmd.env(k, v);
            }
        }
    }
    let (ok, text) = output(&mut cmd)?;
    if ok {
        return Err(format!("the replay passed: {}", f.replay));
    }
    let again = text
        .lines()
        .find_map(|l| l.strip_prefix("sim: reproduced when run again: "))
        .and_then(fingerprint);
    let class = text
        .lines()
        .find_map(|l| l.strip_prefix("sim: class: "))
        .unwrap_or_default();
    match (&again, &f.fingerprint) {
        (Some(a), Some(b)) if a == b && class == f.class => Ok(a.clone()),
        _ => Err(format!(
            "the replay failed differently (class {class:?} vs {:?}, fingerprint {again:?} vs {:?}): {}",
            f.class, f.fingerprint, f.replay
        )),
    }
}

fn cell(f: &Found) -> String {
    match f.first {
        None => format!("none in {}", f.total),
        Some(s) => format!("{}/{} (first: {s})", f.failed, f.total),
    }
}

fn markdown(
    seeds: u64,
    catalog: &[&Canary],
    table: &BTreeMap<&str, BTreeMap<String, Found>>,
    replays: &BTreeMap<String, Result<String, String>>,
    secs: u64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# The canary catalog, measured\n");
    let _ = writeln!(
        s,
        "Written by `cargo xtask canaries` ({secs} s on this machine). Each planted bug of \
         `examples/canaries` is swept over seeds 0..{seeds} once per strategy (its \
         `#[sim::test]` in `tests/sweep.rs`, with `SIM_SCHEDULE` / `SIM_EARLY_TIMERS` / \
         `SIM_YIELD_AHEAD` set). A \
         cell is *failing seeds / seeds (first failing seed)*. *Seeds to first failure* is the \
         portfolio's (the default a user gets); *bound* is the regression guard the command \
         enforces. *Replays*: the first portfolio failure, run again in a new process with the \
         replay command from its report, failed the same way with the same fingerprint. \
         *Shrunk*: the first portfolio failure's tape shrunk (the report's `sim: shrunk:` \
         line): injected faults, steps, virtual time, before → after; *= seed's* when nothing \
         smaller failed the same way.\n"
    );
    let _ = writeln!(
        s,
        "| bug | class | uniform | PCT 2 | PCT 3 | PCT 4 | portfolio | portfolio, no early timers \
         | portfolio, yields deferred | seeds to first failure | bound | replays | shrunk |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in catalog {
        let get = |col: &str| &table[col][&c.name];
        let p = get(PORTFOLIO);
        let first = p.first.map_or_else(|| "—".into(), |f| (f + 1).to_string());
        let replayed = match replays.get(&c.name) {
            Some(Ok(fp)) => format!("yes ({fp})"),
            Some(Err(_)) => "**NO**".into(),
            None => "—".into(),
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            if p.class.is_empty() { "—" } else { &p.class },
            cell(get("uniform")),
            cell(get("PCT 2")),
            cell(get("PCT 3")),
            cell(get("PCT 4")),
            cell(p),
            cell(get(NO_EARLY)),
            cell(get(NO_YIELD_AHEAD)),
            first,
            c.bound,
            replayed,
            match &p.shrunk {
                Some(line) if line.starts_with("nothing smaller") => "= seed's".to_string(),
                Some(line) => line.clone(),
                None => "—".into(),
            }
        );
    }
    let _ = writeln!(s, "\n## The bugs\n");
    for c in catalog {
        let p = &table[PORTFOLIO][&c.name];
        let _ = writeln!(s, "- `{}`: {}. Needs: {}.", c.name, c.bug, c.needs);
        if !p.replay.is_empty() {
            let _ = writeln!(
                s,
                "  First portfolio failure ({}): `{}`",
                p.strategy, p.replay
            );
        }
    }
    s.push_str(GUIDE);
    s
}

/// The table alone (for the terminal).
fn table_only(md: &str) -> String {
    md.lines()
        .filter(|l| l.starts_with('|'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The reading of the table: when to reach for which strategy, and seed
/// 001's figures beside ours.
const GUIDE: &str = "
## Which strategy when

- **The portfolio (the default; no `schedule =`).** Half the seeds uniform, the rest PCT 2, 3,
  4 in turn, early timers on half the seeds independently, yields that may run ahead on half the
  seeds independently, fault points on three seeds in four.
  Every contiguous seed range covers every strategy, so it finds every canary here within its
  bound without knowing what kind of bug to expect. Start here, and sweep more seeds
  (`SIM_SEEDS=0..10000`, sharded with `SIM_SHARD`) before reaching for anything else.
- **Uniform random (`schedule = \"random\"`).** Every runnable task equally likely: tasks stay in
  lock-step, so the bugs that need two tasks to interleave once (`lost_update`, `lock_order`,
  `missed_wakeup`) fail on almost every seed. It cannot find a bug that needs one task to run
  many steps while another waits (`run_ahead`: about 2⁻ⁿ for n steps, none in the sweep).
- **PCT (`schedule = \"pct2\"` … `\"pct4\"`).** Random task priorities with d−1 change points: a
  bug that needs a task to run far ahead is found with a probability that does not shrink with
  the distance (`run_ahead`). Use a forced PCT depth when a run-ahead or ordering bug is
  suspected and the portfolio's share of PCT seeds finds it too rarely; deeper PCT helps bugs
  that need more ordering constraints.
- **Early timers (`early_timers = true`, `SIM_EARLY_TIMERS=on`).** Without them virtual time
  moves only when nothing is runnable, so work always beats a timeout and a timeout that fires
  mid-computation is never explored (`partial_batch`: none without them). Force them on when the
  code has timeouts around computation or cancellation-sensitive state.
- **Yields ahead (`SIM_YIELD_AHEAD=on|off`; half the seeds by default).** On Tokio's
  current-thread runtime a task that calls `yield_now` runs again only after every task runnable
  then; on the multi-thread runtime (what services run) a busy peer worker may let it take many
  steps while another task takes none. A seed with yields ahead lets a yielder be picked again at
  once, so PCT can run one task far ahead across its yields (`yield_ahead`: none with every yield
  deferred); a seed with yields deferred keeps the strict alternation that makes interleaving bugs
  (`lost_update`, `lock_order`, `missed_wakeup`) frequent under PCT too.
- **Fault points (`sim::buggify!`).** A bug behind a rare condition that no schedule can produce
  (an admission policy rejecting an entry, `rejected_fill`) needs its fault point; with
  `SIM_BUGGIFY=off` it is never found. Put fault points where production code has a branch the
  tests never take.
- **Faults and the time limit.** Network and disk faults (`acked_write`, `unsynced_ack`,
  `eof_as_miss`) are found by the scenario's own seeded fault plan under any schedule; a livelock
  (`retry_forever`) is reported when the virtual-time limit (`time_limit = \"60s\"`) is hit.
- **A fuzzer (`cargo xtask fuzz <bug>`).** libFuzzer writes each run's tape: the all-zero input
  (the first runnable task every time) trips most interleaving bugs at once, and coverage leads
  it further, but a bug behind one swarm draw (early timers for `partial_batch`, a fault point
  for `rejected_fill`, a crash window for `unsynced_ack`) costs it thousands of inputs where the
  portfolio needs a handful of seeds, and it found none of the eight hard canaries in 20,000
  inputs but `stale_forward` (the portfolio: 571 to 9,384 seeds; tables below). Their bugs need
  faults and a schedule together; coverage does not grow on the way to them, so the fuzzer has
  nothing to climb, while a seed samples the whole plan at once. Sweep seeds first;
  fuzz when a long sweep finds nothing and the state you fear is reached only through a chain of
  conditions coverage can climb (a protocol state after several specific messages, a parser).
  libFuzzer's own runs are not bit-reproducible (it adapts to execution time); what it finds
  is: a tape that `cargo test` replays exactly.

## Beside seed 001's figures

Seed 001 (the Swift executor with PCT and early timers) reports: a read–yield–write lost update
found within 200 seeds (here: `lost_update`, see its row; uniform fails on nearly every seed);
uniform finds a run-ahead bug with probability 2⁻ⁿ while PCT finds it with at least
1/(n·kᵈ⁻¹) (here: `run_ahead`, uniform none, PCT on a steady share of seeds); and a 1 ms timeout
against ten steps of work fails on 0 of 1,000 seeds without early timers and 252 with (here:
`partial_batch`, the same 1 ms against ten steps: compare its *portfolio* and *no early timers*
columns; early timers are on half the seeds, each run drawing 1 chance in 8, 32 or 128 per step,
at most 32 jumps, as seed 001 does).

## Shrinking

Both commands check, over all twenty canaries (xtask/src/canaries/shrunk.rs), that no shrunk
run is bigger than its seed's (in the shrinker's order: injected faults, then steps, then virtual
time) and that it is *much shorter* (at most half the seed's faults, when it had any, or at most
half its steps) for more than half of the canaries that can be. A canary *at its floor* cannot: its
seed's run already takes at most twice the fewest steps its bug needs (`FLOORS`, each with its
reason: `lock_order`'s main task and two first locks, `run_ahead`'s 16 hand-offs,
`retry_forever`'s retries every 100 ms up to the 60 s limit that reports the livelock), and
the check fails if such a canary's seed ever takes more. Measured: 5 of the 20 are much shorter
(`partial_batch`, `acked_write`, `unsynced_ack`, `healed_retry`, `stale_forward`: 5 of the 9
that can be), 11 are at their floor (`lost_update`, `missed_wakeup`, `lock_order`,
`retry_forever`, `run_ahead`, `eof_as_miss`, `rejected_fill`, `yield_ahead`,
`thread_lost_update`, `depth3`, `stale_term`), and `torn_log`, `drifted_lease`, `compact_crash`
and `skewed_pair` are neither (their one crash, late write or pair of skewed clocks needs
most of the run before it). The figures are in the *shrunk* columns; the hard
canaries' paragraph below says what moved.
";
