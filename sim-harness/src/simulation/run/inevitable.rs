//! When did the failure become inevitable? The first failure's rerun marks
//! where each of its steps began in its tape (sim-runtime's tape marks);
//! from [`POINTS`] of those steps, spread over the run, [`BRANCHES`] runs
//! each replay the failing run up to the step and decide afresh from there
//! (explore.rs's branches); then from [`REFINE`] more steps between the two
//! samples around each transition found. The share of them that fail the same way says
//! how settled the failure was at that step: the report gives the step
//! from which it stays likely (at least half) and the one from which it is
//! certain (all), each with the last event before it, and the timeline
//! page marks both. `SIM_INEVITABLE=off` skips it.

use crate::simulation::explore;
use crate::simulation::seed::{How, Options, SeedResult};
use sim_runtime::__private::harness::TapeMode;
use sim_runtime::__private::TestOutput;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;

/// Steps of the run branched from.
const POINTS: usize = 12;
/// Steps branched from next, between the two samples around each of the
/// two transitions (likely, certain).
const REFINE: usize = 6;
/// Branches from each.
const BRANCHES: u32 = 4;

/// One step branched from, and how its branches ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Point {
    pub step: u64,
    pub at_ns: u64,
    pub failed: u32,
    pub of: u32,
    /// The last trace line at or before the step's virtual time.
    pub event: Option<String>,
}

/// The estimate, for the report and the page.
pub(crate) struct Inevitability {
    pub points: Vec<Point>,
    /// The first point from which every later one fails in at least half
    /// of its branches.
    pub likely: Option<usize>,
    /// The first point from which every later one fails in all of them.
    pub certain: Option<usize>,
}

/// Whether `SIM_INEVITABLE` leaves the estimate on (the default).
pub(super) fn wanted() -> bool {
    match std::env::var("SIM_INEVITABLE")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        None | Some("" | "on" | "1") => true,
        Some("off" | "0") => false,
        Some(v) => panic!("sim: SIM_INEVITABLE={v:?} is malformed. Accepted forms: on or off"),
    }
}

/// The steps to branch from: `n` marks spread evenly over `marks`.
pub(crate) fn pick(marks: &[(u64, usize, u64)], n: usize) -> Vec<(u64, usize, u64)> {
    if marks.len() <= n {
        return marks.to_vec();
    }
    (0..n)
        .map(|k| marks[k * (marks.len() - 1) / (n - 1)])
        .collect()
}

/// The first index from which every rate meets `enough`.
pub(crate) fn settled(points: &[Point], enough: impl Fn(&Point) -> bool) -> Option<usize> {
    let mut first = None;
    for (i, p) in points.iter().enumerate().rev() {
        if !enough(p) {
            break;
        }
        first = Some(i);
    }
    first
}

/// Estimates when `again` (a failing rerun with its tape and marks) became
/// inevitable; `None` when it has no tape or too few steps.
pub(super) fn estimate<F, Fut>(
    opts: &Options,
    make: &Arc<F>,
    again: &SeedResult,
    jobs: usize,
) -> Option<Inevitability>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let used = again.outcome.tape.as_ref()?;
    let picked = pick(&used.marks, POINTS);
    if picked.len() < 2 {
        return None;
    }
    let mut points = branch_from(opts, make, again, &picked, jobs);
    // Then closer: between the last step sampled before each transition and
    // the first after it, the steps in between.
    for enough in [likely as fn(&Point) -> bool, certain] {
        let Some(t) = settled(&points, enough).filter(|&t| t > 0) else {
            continue;
        };
        let (from, to) = (points[t - 1].step, points[t].step);
        let between: Vec<_> = used
            .marks
            .iter()
            .copied()
            .filter(|&(step, _, _)| step > from && step < to)
            .collect();
        let more = branch_from(opts, make, again, &pick(&between, REFINE), jobs);
        points.extend(more);
        points.sort_by_key(|p| p.step);
    }
    Some(Inevitability {
        likely: settled(&points, likely),
        certain: settled(&points, certain),
        points,
    })
}

fn likely(p: &Point) -> bool {
    2 * p.failed >= p.of
}

fn certain(p: &Point) -> bool {
    p.failed == p.of
}

/// [`BRANCHES`] runs from each of `marks`, and how they ended.
fn branch_from<F, Fut>(
    opts: &Options,
    make: &Arc<F>,
    again: &SeedResult,
    marks: &[(u64, usize, u64)],
    jobs: usize,
) -> Vec<Point>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let o = &again.outcome;
    let Some(used) = o.tape.as_ref() else {
        return Vec::new();
    };
    let mut runs = Vec::new();
    for &(step, pos, _) in marks {
        for b in 0..BRANCHES {
            let salt = o
                .fingerprint
                .wrapping_add(step << 16 | u64::from(b))
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            runs.push((
                o.seed,
                How {
                    tape: Some(TapeMode::Branch {
                        prefix: used.bytes[..pos.min(used.bytes.len())].to_vec(),
                        salt,
                    }),
                    ..How::default()
                },
            ));
        }
    }
    let results = explore::run_all(opts, runs, jobs, make);
    marks
        .iter()
        .zip(results.chunks(BRANCHES as usize))
        .map(|(&(step, _, at_ns), rs)| Point {
            step,
            at_ns,
            failed: rs
                .iter()
                .filter(|r| r.outcome.class == o.class && r.outcome.site == o.site)
                .count() as u32,
            of: rs.len() as u32,
            event: event_before(&again.trace, at_ns),
        })
        .collect()
}

/// The last trace line at or before `at_ns` (lines begin with the virtual
/// time in seconds).
fn event_before(trace: &[String], at_ns: u64) -> Option<String> {
    trace
        .iter()
        .take_while(|l| {
            l.split_whitespace()
                .next()
                .and_then(|t| t.strip_suffix('s'))
                .and_then(|t| t.parse::<f64>().ok())
                .is_none_or(|secs| (secs * 1e9).round() as u64 <= at_ns)
        })
        .last()
        .map(|l| l.trim().to_string())
}

impl Inevitability {
    /// The report's lines.
    pub(crate) fn lines(&self) -> String {
        let mut s = String::new();
        let at = |i: usize| {
            let p = &self.points[i];
            let event = p
                .event
                .as_ref()
                .map(|e| format!("; the last event before: {e}"))
                .unwrap_or_default();
            format!(
                "step {} at {}.{:09}s ({} of {} branches from there failed the same way{event})",
                p.step,
                p.at_ns / 1_000_000_000,
                p.at_ns % 1_000_000_000,
                p.failed,
                p.of
            )
        };
        match (self.likely, self.certain) {
            (Some(l), Some(c)) => {
                let _ = writeln!(s, "sim: the failure became likely at {}", at(l));
                let _ = writeln!(s, "sim: and certain from {}", at(c));
            }
            (Some(l), None) => {
                let _ = writeln!(s, "sim: the failure became likely at {}", at(l));
                let _ = writeln!(
                    s,
                    "sim: and was never certain: a branch from even the last step sampled passed"
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "sim: the failure was never likely before its end: most branches from every \
                     step sampled passed (it needs the run's last decisions)"
                );
            }
        }
        let table: Vec<String> = self
            .points
            .iter()
            .map(|p| format!("{}:{}/{}", p.step, p.failed, p.of))
            .collect();
        let _ = write!(
            s,
            "sim: branches failing the same way, by step: {}",
            table.join(" ")
        );
        s
    }

    /// The page's markers: `(virtual ns, step, label)`.
    pub(crate) fn markers(&self) -> Vec<(u64, u64, String)> {
        let mut out = Vec::new();
        if let Some(l) = self.likely {
            let p = &self.points[l];
            out.push((p.at_ns, p.step, format!("likely ({}/{})", p.failed, p.of)));
        }
        if let Some(c) = self.certain {
            let p = &self.points[c];
            out.push((p.at_ns, p.step, "certain".to_string()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(failed: u32) -> Point {
        Point {
            step: 0,
            at_ns: 0,
            failed,
            of: 4,
            event: None,
        }
    }

    /// Likely and certain are where the rate stays at or above a half, and
    /// at all, to the end: a high rate followed by a low one does not count.
    #[test]
    fn settled_is_where_the_rate_stays_up_to_the_end() {
        let pts: Vec<Point> = [0, 4, 1, 2, 3, 4, 4].into_iter().map(point).collect();
        assert_eq!(settled(&pts, |p| 2 * p.failed >= p.of), Some(3));
        assert_eq!(settled(&pts, |p| p.failed == p.of), Some(5));
        let none: Vec<Point> = [4, 4, 0].into_iter().map(point).collect();
        assert_eq!(settled(&none, |p| p.failed == p.of), None);
    }

    #[test]
    fn the_points_spread_over_the_marks() {
        let marks: Vec<(u64, usize, u64)> = (0..100).map(|i| (i, i as usize, i)).collect();
        let p = pick(&marks, POINTS);
        assert_eq!(p.len(), POINTS);
        assert_eq!(p[0].0, 0);
        assert_eq!(p[POINTS - 1].0, 99);
        assert_eq!(pick(&marks[..5], POINTS).len(), 5);
    }

    #[test]
    fn the_event_is_the_last_line_at_or_before_the_step() {
        let trace = vec![
            "   0.000000000s main INFO a".to_string(),
            "   0.002000000s main INFO b".to_string(),
            "   0.005000000s main INFO c".to_string(),
        ];
        assert_eq!(
            event_before(&trace, 3_000_000).as_deref(),
            Some("0.002000000s main INFO b")
        );
        assert_eq!(event_before(&[], 1), None);
    }
}
