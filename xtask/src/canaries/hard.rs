//! `cargo xtask canaries --hard`: seeds-to-find for the hard canaries (the
//! catalog's entries with a known first failing seed).
//!
//! For each hard canary and each strategy (uniform random, PCT 3, the
//! portfolio; and the explorer, `SIM_EXPLORE`) it runs K independent sweeps over disjoint seed ranges
//! (starting at 0, 100000, 200000, …), each in growing chunks
//! (`SIM_SEEDS=a..b`, no fresh-process replays, no shrinking) until the
//! first failure or the budget, and takes the median of the seeds each run
//! needed. It then runs the catalog's first failing seed alone, shrinking
//! on, for the report's `sim: shrunk:` sizes. The table goes between its
//! markers in docs/canaries.md; the command fails if the portfolio's first
//! failure from seed 0 is not the catalog's `first` (CI runs that seed) or
//! not within the canary's bound.

use super::Canary;
use crate::cmd::{output, sim_cargo, write_file};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// The columns: a name and the `SIM_SCHEDULE` that forces the strategy.
const STRATEGIES: &[(&str, Option<&str>)] = &[
    ("uniform", Some("random")),
    ("PCT 3", Some("pct3")),
    ("portfolio", None),
];
const PORTFOLIO: &str = "portfolio";
/// Run k starts at seed `k * STRIDE`.
const STRIDE: u64 = 100_000;
/// The first chunk of seeds a run sweeps; each next one is twice as long.
const FIRST_CHUNK: u64 = 250;

/// The hard canaries' section of docs/canaries.md.
pub const SECTION: super::Section = super::Section {
    start: "<!-- hard: written by cargo xtask canaries --hard -->",
    end: "<!-- hard: end -->",
    heading: "## Harder canaries",
};

/// The chart of the table (and the fuzzer's), drawn by chart.rs.
const CHART: &str = "![Runs to the first failure for each hard canary: uniform, PCT 3, the \
portfolio, the fuzzer and the explorer, log scale](canaries-hard.svg)";

/// How to read the table (the measured figures are above it).
const READING: &str = "
All but one mark how far a run got, and those with faults draw them as the run goes, so
exploration has moments to branch from where something rare has just happened and draws the rest
afresh. `drifted_lease` does not: it draws each client's clock drift and workload at the start and marks
no progress, so every strategy meets the same plan on the same seed, the explorer sees only how
runs end and runs the seeds a sweep from its seed runs, in the same order: its figures are the
portfolio's. (A clock rate that wandered as the run went, marked by how far the slowest clock had
fallen behind, was tried: the portfolio found it sooner and the explorer no faster, since the bug
needs a write in the lease's last milliseconds more than a slow clock.) The other fault-timing
canaries are nemeses that decide at every tick. `torn_log`'s crashes the machine in a given
millisecond with p = 1/50, so most runs crash before the first rollover; the client marks the
records acknowledged (`sim::state!`) and the log its rollovers (`sim::sometimes!`), so the
explorer climbs to a rollover and branches there, where one branch in a few dozen crashes between
the two fsyncs. `stale_term`'s pauses a node with p = 1/8 a tick and resumes it with p = 1/2 at
each later one, marking how many ticks it has held a candidate paused; `healed_retry`'s cuts the
link with p = 1/20 a tick and heals it with p = 1/2 at each later one, marking how many ticks the
cut has held the answer to a deposit the ledger applied; `stale_forward`'s cuts a frontend from
the store and heals the same way, and it notes how many ticks the cut has lasted and the client
how many it has waited and each timeout. In all three the explorer climbs a fault's length one
tick at a time, each rung a branch that keeps it one tick more with p = 1/2, where a seed must
draw all of them at once. `compact_crash`'s nemesis draws the crash as the run goes too, and the
scenario marks the writes so far and the compaction, so the explorer branches from the runs that
wrote the most and from the compaction itself, where one branch in a few dozen crashes inside the
window. `skewed_pair`'s sets one clock at a time and says which are behind, so the explorer
branches from the runs where the holder's or the store's clock fell behind and needs only the
second clock and a write in the gap. `depth3` is the scheduling bug: it needs the updater ten
steps ahead of a reader across its yields, which uniform random produces, rarely, on seeds with
yields ahead, and PCT does not: a task that a change point demotes runs only when no other task
can, so *updater, reader, updater* with both runnable is not among its schedules at any depth.
The portfolio finds it on its uniform half. Its updater marks how many rebuild steps it has run
beside a read that began mid-update (`sim::state!`), so the explorer climbs those steps one
branch at a time, where a seed must draw the whole order at once. Where the schedule does not
matter on top of the faults and clocks (`stale_term`, `drifted_lease`, `compact_crash`), uniform,
PCT 3 and the portfolio fail on the same seeds.

Shrinking. `drifted_lease` draws how many leases each client takes (1 or 2) after all of its
plan's draws, so a zero draw is the smallest workload and a smaller count leaves the rest of the
tape in place, and it checks at every write, so a run ends at its bug (its first failure: 10 s
and 201 steps, where the fixed workload ran 40 s and 564); it keeps its exposing schedule (201 →
198 steps: the late write needs the writes before it at their times). The shrinker gives each
pass half the runs left and lowers draws by binary search from the front of the tape:
`healed_retry` 50 faults → 18 (fault-point firings and cuts taken away; the one cut that holds
the answer stays), `torn_log` 83 → 72 (fault-point firings; the one crash in the window stays).
`stale_term`'s first failing seed is already small (one pause, 35 steps, 0.6 s: nothing smaller
fails), and `depth3` is at its floor (17 → 16 steps: ten updater steps between the reader's two
are most of it).
";

/// What one strategy's runs found for one canary.
struct Runs {
    /// Seeds to the first failure, per run that found one.
    found: Vec<u64>,
    runs: u64,
    budget: u64,
}

impl Runs {
    /// The median of all runs when more than half found it (a missed run
    /// counting as more than the budget).
    fn median(&self) -> Option<u64> {
        let mut f = self.found.clone();
        f.sort_unstable();
        (f.len() as u64 * 2 > self.runs).then(|| f[(self.runs / 2) as usize])
    }

    fn cell(&self) -> String {
        let mut found = self.found.clone();
        found.sort_unstable();
        let k = found.len() as u64;
        if k * 2 > self.runs {
            // The median of all runs, a missed run counting as more than
            // the budget.
            let median = found[(self.runs / 2) as usize];
            format!("{median} ({k} of {})", self.runs)
        } else if k == 0 {
            format!("none in {}", self.budget)
        } else {
            format!("over {} ({k} of {})", self.budget, self.runs)
        }
    }
}

pub fn run(catalog: &[Canary], runs: u64, budget: u64, out: &Path) -> Result<(), String> {
    let started = Instant::now();
    let hard: Vec<&Canary> = catalog.iter().filter(|c| c.first.is_some()).collect();
    if hard.is_empty() {
        return Err("the catalog lists no hard canary (none has a first failing seed)".into());
    }
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    let mut medians = Vec::new();
    for c in &hard {
        let known = c.first.expect("a hard canary");
        let mut cells = Vec::new();
        let mut portfolio_median = None;
        let mut class = String::new();
        for &(column, schedule) in STRATEGIES {
            let mut r = Runs {
                found: Vec::new(),
                runs,
                budget,
            };
            for k in 0..runs {
                let start = k * STRIDE;
                let first = first_failure(&c.name, schedule, start, budget)?;
                eprintln!(
                    "==> canaries --hard: {} {column} from {start}: {}",
                    c.name,
                    first
                        .as_ref()
                        .map_or_else(|| format!("none in {budget}"), |(s, _)| s.to_string())
                );
                if column == PORTFOLIO && k == 0 {
                    match &first {
                        Some((s, _)) if *s != known => problems.push(format!(
                            "{}: the portfolio's first failing seed is {s}, the catalog says {known}",
                            c.name
                        )),
                        Some((s, _)) if *s >= c.bound => problems.push(format!(
                            "{}: the portfolio's first failing seed {s} is past its bound {}",
                            c.name, c.bound
                        )),
                        None => problems.push(format!(
                            "{}: the portfolio did not find it in seeds 0..{budget}",
                            c.name
                        )),
                        Some(_) => {}
                    }
                }
                if let Some((seed, cls)) = first {
                    r.found.push(seed - start + 1);
                    if class.is_empty() || column == PORTFOLIO {
                        class = cls;
                    }
                }
            }
            if column == PORTFOLIO {
                portfolio_median = r.median();
            }
            cells.push(r.cell());
        }
        // The explorer (explore.rs): runs until its first failure, from
        // exploration seeds 0, STRIDE, ….
        let mut r = Runs {
            found: Vec::new(),
            runs,
            budget,
        };
        for k in 0..runs {
            let start = k * STRIDE;
            let found = explored(&c.name, start, budget)?;
            eprintln!(
                "==> canaries --hard: {} explorer from {start}: {}",
                c.name,
                found.map_or_else(|| format!("none in {budget}"), |n| n.to_string())
            );
            r.found.extend(found);
        }
        medians.push((c.name.clone(), portfolio_median, r.median()));
        cells.push(r.cell());
        let shrunk = shrink(&c.name, known)?;
        eprintln!("==> canaries --hard: {}: shrunk {shrunk}", c.name);
        rows.push(format!(
            "| `{}` | {} | {} | {shrunk} |",
            c.name,
            if class.is_empty() { "—" } else { &class },
            cells.join(" | ")
        ));
    }
    let (catalog_rows, catalog_problems) = catalog_under_exploration(catalog, runs)?;
    problems.extend(catalog_problems);
    let mut section = String::new();
    let _ = writeln!(
        section,
        "Written by `cargo xtask canaries --hard` ({} s on this machine). Bugs of the kind that \
         hide for weeks, each in a small protocol (`examples/canaries/src/<bug>.rs`). A cell is \
         the median number of seeds to the first failure over {runs} independent sweeps (seeds \
         from 0, {STRIDE}, {}, …), and in how many of them it was found within {budget} seeds; \
         *none in N*: no sweep found it. *PCT 3* forces `SIM_SCHEDULE=pct3`, *uniform* \
         `random`; the portfolio is the default. *Explorer*: `SIM_EXPLORE` (runs branched from \
         the moments where earlier runs reached something new), the median number of runs to \
         its first failure from exploration seeds 0, {STRIDE}, …. *Shrunk*: the catalog's first failing seed \
         (CI's), from the report's `sim: shrunk:` line: injected faults, steps, virtual time, \
         before → after. The fuzzer's figures are in its own table below (`cargo xtask fuzz \
         --measure`).\n",
        started.elapsed().as_secs(),
        2 * STRIDE
    );
    let _ = writeln!(
        section,
        "| bug | class | uniform | PCT 3 | portfolio | explorer | shrunk (before → after) |"
    );
    let _ = writeln!(section, "|---|---|---|---|---|---|---|");
    for r in &rows {
        let _ = writeln!(section, "{r}");
    }
    let _ = writeln!(section, "\n{}", goal(&medians));
    let _ = writeln!(section, "\n{CHART}");
    let _ = writeln!(section, "{READING}");
    for c in &hard {
        let _ = writeln!(section, "- `{}`: {}. Needs: {}.", c.name, c.bug, c.needs);
    }
    let _ = writeln!(section, "\n{CATALOG_READING}\n");
    let _ = writeln!(section, "| bug | portfolio | explorer |");
    let _ = writeln!(section, "|---|---|---|");
    for r in &catalog_rows {
        let _ = writeln!(section, "{r}");
    }
    let md = std::fs::read_to_string(out).unwrap_or_default();
    let md = SECTION.splice(&md, &section);
    write_file(out, &md)?;
    super::chart::write(out)?;
    println!("{}", rows.join("\n"));
    // The shrinking criterion over the whole catalog (the quick canaries'
    // figures are those `cargo xtask canaries` wrote).
    let names: Vec<String> = catalog.iter().map(|c| c.name.clone()).collect();
    match super::shrunk::check(&md, &names) {
        Ok(summary) => println!("{summary}"),
        Err(e) => problems.push(e),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the hard canaries failed:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// A hard canary by the bar: its portfolio median is this many
/// seeds or more.
const HARD_BAR: u64 = 2_000;

/// The explorer's goal, from the measured medians (name, portfolio,
/// explorer): at most one fifth of the portfolio's median on each canary
/// at or above [`HARD_BAR`], said for those below it too.
fn goal(medians: &[(String, Option<u64>, Option<u64>)]) -> String {
    let ratio = |p: Option<u64>, e: Option<u64>| match (p, e) {
        (Some(p), Some(e)) if e > 0 => format!("{:.1}×", p as f64 / e as f64),
        _ => "n/a".into(),
    };
    let (hard, easier): (Vec<_>, Vec<_>) = medians
        .iter()
        .partition(|(_, p, _)| p.is_some_and(|p| p >= HARD_BAR));
    let met = hard
        .iter()
        .filter(|(_, p, e)| matches!((p, e), (Some(p), Some(e)) if e * 5 <= *p))
        .count();
    let list = |v: &[&(String, Option<u64>, Option<u64>)]| -> String {
        v.iter()
            .map(|(n, p, e)| format!("`{n}` {}", ratio(*p, *e)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "Goal (issue 37): the explorer's median at most one fifth of the portfolio's on the hard \
         canaries, those the portfolio needs {} seeds or more to find: **{}** on {met} of {} \
         (the portfolio's median over the explorer's: {}). Below that bar: {}.",
        "2,000",
        if met == hard.len() { "met" } else { "not met" },
        hard.len(),
        list(&hard),
        list(&easier)
    )
}

/// How the catalog's table under exploration reads.
const CATALOG_READING: &str = "The explorer on the quick catalog (the canaries above the hard \
ones): the median number of runs to the first failure from 5 starts (seeds 0, 100000, …), the \
portfolio's sweep against `SIM_EXPLORE`'s runs. The goal is *no worse*: the command fails if the \
explorer's median is above the portfolio's. These bugs mark nothing rarer than how a run ends, so \
the explorer's runs are fresh seeds in a sweep's order and its figures are the portfolio's.";

/// The portfolio's and the explorer's medians (runs to the first failure
/// from `runs` starts) on each canary of the quick catalog, as table rows,
/// and a problem for each where the explorer needs more runs.
fn catalog_under_exploration(
    catalog: &[Canary],
    runs: u64,
) -> Result<(Vec<String>, Vec<String>), String> {
    // The quick canaries fail within a few dozen seeds (their bounds).
    const BUDGET: u64 = 2_000;
    let (mut rows, mut problems) = (Vec::new(), Vec::new());
    for c in catalog.iter().filter(|c| c.first.is_none()) {
        let mut portfolio = Runs {
            found: Vec::new(),
            runs,
            budget: BUDGET,
        };
        let mut explorer = Runs {
            found: Vec::new(),
            runs,
            budget: BUDGET,
        };
        for k in 0..runs {
            let start = k * STRIDE;
            let first = first_failure(&c.name, None, start, BUDGET)?;
            portfolio.found.extend(first.map(|(s, _)| s - start + 1));
            explorer.found.extend(explored(&c.name, start, BUDGET)?);
        }
        eprintln!(
            "==> canaries --hard: catalog {}: portfolio {:?}, explorer {:?}",
            c.name, portfolio.found, explorer.found
        );
        match (portfolio.median(), explorer.median()) {
            (Some(p), Some(e)) if e <= p => {}
            (p, e) => problems.push(format!(
                "{}: the explorer's median ({}) is worse than the portfolio's ({})",
                c.name,
                e.map_or_else(|| "not found".into(), |e| e.to_string()),
                p.map_or_else(|| "not found".into(), |p| p.to_string()),
            )),
        }
        rows.push(format!(
            "| `{}` | {} | {} |",
            c.name,
            portfolio.cell(),
            explorer.cell()
        ));
    }
    Ok((rows, problems))
}

/// The first failing seed of `name` from `start` (and its class), sweeping
/// growing chunks up to `budget` seeds.
fn first_failure(
    name: &str,
    schedule: Option<&str>,
    start: u64,
    budget: u64,
) -> Result<Option<(u64, String)>, String> {
    let (mut from, mut chunk) = (start, FIRST_CHUNK);
    while from < start + budget {
        let to = (from + chunk).min(start + budget);
        let mut cmd = sim_cargo(&[
            "test", "-p", "canaries", "--test", "sweep", "--", name, "--exact",
        ]);
        cmd.env("SIM_SEEDS", format!("{from}..{to}"))
            .env("SIM_REPLAYS", "0")
            .env("SIM_SHRINK", "off")
            .env("SIM_INEVITABLE", "off");
        if let Some(s) = schedule {
            cmd.env("SIM_SCHEDULE", s);
        }
        let (ok, text) = output(&mut cmd)?;
        if !ok {
            let report = crate::harness_report::parse(&text, name)
                .ok_or_else(|| format!("the sweep of `{name}` did not run:\n{text}"))??;
            let first = report
                .first
                .ok_or_else(|| format!("no failing seed in the report of `{name}`:\n{text}"))?;
            return Ok(Some((first, report.class)));
        }
        from = to;
        chunk *= 2;
    }
    Ok(None)
}

/// An exploration of `name` (its seed `start`) of up to `budget` runs: the
/// number of the run that failed first, if one did.
fn explored(name: &str, start: u64, budget: u64) -> Result<Option<u64>, String> {
    let mut cmd = sim_cargo(&[
        "test", "-p", "canaries", "--test", "sweep", "--", name, "--exact",
    ]);
    cmd.env("SIM_SEED", start.to_string())
        .env("SIM_EXPLORE", budget.to_string())
        .env("SIM_REPLAYS", "0")
        .env("SIM_SHRINK", "off")
        .env("SIM_INEVITABLE", "off");
    let (ok, text) = output(&mut cmd)?;
    if ok {
        return Ok(None);
    }
    let prefix = format!("sim: {name}: exploration: run ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .map(Some)
        .ok_or_else(|| format!("the exploration of `{name}` did not run:\n{text}"))
}

/// `seed` of `name` alone, shrinking on: its shrunk sizes, `before → after`.
fn shrink(name: &str, seed: u64) -> Result<String, String> {
    let mut cmd = sim_cargo(&[
        "test", "-p", "canaries", "--test", "sweep", "--", name, "--exact",
    ]);
    cmd.env("SIM_SEED", seed.to_string())
        .env("SIM_REPLAYS", "0")
        .env("SIM_INEVITABLE", "off");
    let (_, text) = output(&mut cmd)?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("sim: shrunk: "))
        .ok_or_else(|| format!("`{name}` seed {seed}: no shrunk line:\n{text}"))?;
    Ok(compact(line))
}

/// `25 fault(s), 219 steps, 8.222000000s of virtual time → 25 fault(s),
/// 218 steps, 8.109000000s of virtual time (150 run(s); …)` as
/// `25 faults, 219 steps, 8.222 s → 25, 218, 8.109 s`.
pub(super) fn compact(line: &str) -> String {
    let size = |s: &str| -> Option<(u64, u64, f64)> {
        let mut w = s.split(", ");
        let faults = w.next()?.trim().strip_suffix(" fault(s)")?.parse().ok()?;
        let steps = w.next()?.trim().strip_suffix(" steps")?.parse().ok()?;
        let secs = w
            .next()?
            .trim()
            .strip_suffix("s of virtual time")?
            .parse()
            .ok()?;
        Some((faults, steps, secs))
    };
    let sizes = line.split_once(" → ").and_then(|(before, after)| {
        let after = after.split(" (").next()?;
        Some((size(before)?, size(after)?))
    });
    match sizes {
        Some(((f, s, t), (f2, s2, t2))) => {
            format!("{f} faults, {s} steps, {t:.3} s → {f2}, {s2}, {t2:.3} s")
        }
        None => line.split(" (").next().unwrap_or(line).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compacts_a_shrunk_line() {
        assert_eq!(
            compact(
                "25 fault(s), 219 steps, 8.222000000s of virtual time → 25 fault(s), 218 \
                 steps, 8.109000000s of virtual time (150 run(s); stopped: the run budget)"
            ),
            "25 faults, 219 steps, 8.222 s → 25, 218, 8.109 s"
        );
    }

    #[test]
    fn medians_count_misses_as_over_the_budget() {
        let r = |found: &[u64]| Runs {
            found: found.to_vec(),
            runs: 5,
            budget: 1000,
        };
        assert_eq!(r(&[9, 1, 5, 3, 7]).cell(), "5 (5 of 5)");
        assert_eq!(r(&[9, 1, 5]).cell(), "9 (3 of 5)");
        assert_eq!(r(&[9, 1]).cell(), "over 1000 (2 of 5)");
        assert_eq!(r(&[]).cell(), "none in 1000");
    }

    #[test]
    fn the_goal_counts_the_canaries_at_or_above_the_bar() {
        let m = |n: &str, p: u64, e: u64| (n.to_string(), Some(p), Some(e));
        let text = goal(&[m("a", 4000, 200), m("b", 2000, 500), m("c", 600, 600)]);
        assert!(
            text.contains("**not met** on 1 of 2 (the portfolio's median over the explorer's: `a` 20.0×, `b` 4.0×). Below that bar: `c` 1.0×."),
            "{text}"
        );
        let text = goal(&[m("a", 4000, 200), m("c", 600, 600)]);
        assert!(text.contains("**met** on 1 of 1"), "{text}");
    }

    #[test]
    fn splices_and_keeps_the_section() {
        let md = SECTION.splice("# t\n", "table\n");
        assert!(md.ends_with(&format!(
            "{}\n\n{}\ntable\n{}\n",
            SECTION.heading, SECTION.start, SECTION.end
        )));
        assert_eq!(SECTION.splice(&md, "table\n"), md);
        assert!(SECTION.get(&md).unwrap().starts_with(SECTION.heading));
    }
}
