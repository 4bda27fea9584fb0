//! Shrinking a failing seed's tape to the smallest run that still fails
//! the same way.
//!
//! The failing seed's rerun records its tape (every draw, tape.rs in
//! sim-runtime). Any other tape is another run of the same test, and
//! replays exactly, so shrinking is a search over tapes: change the tape,
//! run it, and keep the change when the run still fails the same way (the
//! same class, raised at the same `file:line`) and is no bigger. A run's
//! size is, in order: the faults injected (control-API faults and fault
//! point firings), the steps, the virtual time; ties go to the shorter,
//! then the smaller tape, so every kept change makes progress and the
//! search ends.
//!
//! The changes, coarse to fine, repeated while one helps:
//! - **cut the tape short**: draws past the end are zeros, the first
//!   choice of every decision (the first runnable task, the first
//!   `select!` branch, the first of tied timers, the smallest value of a
//!   range);
//! - **zero a chunk** of draws, halving the chunk size down to one draw;
//! - **raise draws to the top**, when the run has faults, a chunk at a time
//!   (halving the chunk size down to one draw), then draw by draw: a zero
//!   draw is the first choice of a pick but *fires* a probability
//!   (`ratio`, a fault point), so the top value is how a drawn fault goes
//!   away, and a chunk takes away many of them in one run;
//! - **delete a chunk** of draws (the later ones move up: another
//!   schedule of the same operations, often a shorter one);
//! - **lower a draw** toward zero by binary search, first draws first: a
//!   test's sizes (how many operations, rounds, pauses), its fault plan's
//!   times and the run's swarm choices are drawn before the schedule, so
//!   the front of the tape is where a smaller workload is; a draw for
//!   which neither zero, a half nor three quarters of it fails the same
//!   way (a seed-like draw) is left after those three runs;
//! - **halve one draw**, for the last draws that still matter.
//!
//! Each pass takes at most half the runs left when it starts, so one with
//! much to try on a long tape (raising each of a thousand draws) cannot
//! starve the passes after it; the draw-by-draw passes resume where they
//! stopped in the next round, and a candidate that was run is never run
//! again (its tape is remembered), so an unfinished pass goes on at no
//! cost.
//!
//! A budget of runs (`SIM_SHRINK=<runs>`, default 1000; `SIM_SHRINK=off`)
//! bounds it, and a time budget (`SIM_SHRINK_TIME`, default 30 s) guards
//! against slow runs; the report says which stopped it. The runs are a
//! function of the tape, so with the run budget the result is the same on
//! every machine; a stop by the time budget is said as such.
//!
//! The search is a function of a tape and a way to try one, and nothing
//! else: the runner's triage (run/shrunk.rs) gives it the seed's replays.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// A run's size, compared in field order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Size {
    pub faults: u64,
    pub steps: u64,
    pub virtual_ns: u64,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} fault(s), {} steps, {}.{:09}s of virtual time",
            self.faults,
            self.steps,
            self.virtual_ns / 1_000_000_000,
            self.virtual_ns % 1_000_000_000
        )
    }
}

/// How far shrinking may go.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    pub runs: u32,
    pub time: Duration,
}

impl Budget {
    /// `SIM_SHRINK` and `SIM_SHRINK_TIME`; `None` when shrinking is off.
    pub(crate) fn from_env() -> Option<Budget> {
        let runs = match std::env::var("SIM_SHRINK").ok().as_deref().map(str::trim) {
            None | Some("" | "on") => 1000,
            Some("off" | "0") => return None,
            Some(v) => v.parse().unwrap_or_else(|_| {
                panic!(
                    "sim: SIM_SHRINK={v:?} is malformed; accepted: off, on, or a number of runs \
                     (e.g. SIM_SHRINK=500)"
                )
            }),
        };
        let time = match std::env::var("SIM_SHRINK_TIME")
            .ok()
            .as_deref()
            .map(str::trim)
        {
            None | Some("") => Duration::from_secs(30),
            Some(v) => v
                .strip_suffix('s')
                .and_then(|n| n.parse().ok())
                .map(Duration::from_secs)
                .unwrap_or_else(|| {
                    panic!("sim: SIM_SHRINK_TIME={v:?} is malformed; expected seconds, e.g. 30s")
                }),
        };
        Some(Budget { runs, time })
    }
}

/// What shrinking found.
#[derive(Debug)]
pub(crate) struct Shrunk {
    pub tape: Vec<u8>,
    pub size: Size,
    pub runs: u32,
    /// Why it stopped: `"nothing smaller"`, or the budget that ran out.
    pub stopped: &'static str,
}

/// Shrinks `tape`, whose run has `size`. `attempt` runs a tape and returns
/// its size when it fails the same way.
pub(crate) fn shrink(
    tape: Vec<u8>,
    size: Size,
    budget: Budget,
    mut attempt: impl FnMut(&[u8]) -> Option<Size>,
) -> Shrunk {
    let mut s = Search {
        span: tape.len().div_ceil(DRAW),
        best: tape,
        size,
        runs: 0,
        pass_end: 0,
        unfinished: false,
        tried: BTreeSet::new(),
        resume: Resume::default(),
        budget,
        started: Instant::now(),
        out: None,
    };
    let mut try_tape = |s: &mut Search, candidate: Vec<u8>| -> bool {
        if candidate == s.best || s.tried.contains(&candidate) || !s.open() {
            return false;
        }
        if s.started.elapsed() >= s.budget.time {
            s.out = Some("the time budget (SIM_SHRINK_TIME)");
            return false;
        }
        s.runs += 1;
        match attempt(&candidate) {
            Some(size) if better(size, &candidate, s.size, &s.best) => {
                s.best = candidate;
                s.size = size;
                true
            }
            _ => {
                s.tried.insert(candidate);
                false
            }
        }
    };
    loop {
        let before = s.best.clone();
        s.unfinished = false;
        s.pass(cut, &mut try_tape);
        s.pass(|s, t| chunks(s, t, Change::Zero), &mut try_tape);
        if s.size.faults > 0 {
            s.pass(|s, t| chunks(s, t, Change::Raise), &mut try_tape);
            s.pass(raise, &mut try_tape);
        }
        s.pass(|s, t| chunks(s, t, Change::Delete), &mut try_tape);
        s.pass(lower, &mut try_tape);
        s.pass(halve, &mut try_tape);
        if s.out.is_some() || (s.best == before && !s.unfinished) {
            break;
        }
    }
    Shrunk {
        stopped: s.out.unwrap_or("nothing smaller"),
        tape: s.best,
        size: s.size,
        runs: s.runs,
    }
}

struct Search {
    best: Vec<u8>,
    /// The original tape's length in draws: how far `raise` looks (a cut
    /// tape's missing draws are zeros, which may be faults).
    span: usize,
    size: Size,
    runs: u32,
    /// The run count at which the pass under way yields to the next.
    pass_end: u32,
    /// Whether a pass stopped at its share of the runs this round.
    unfinished: bool,
    /// Candidates run that did not fail the same way (or were not
    /// smaller): never run twice, so a pass resumed in a later round goes
    /// on from where it stopped at no cost.
    tried: BTreeSet<Vec<u8>>,
    resume: Resume,
    budget: Budget,
    started: Instant,
    out: Option<&'static str>,
}

/// Where each draw-by-draw pass stopped at its share of the runs, to go
/// on from there in the next round (`None`: from its start).
#[derive(Default)]
struct Resume {
    raise: Option<usize>,
    lower: Option<usize>,
    halve: Option<usize>,
}

impl Search {
    /// Runs one pass with at most half the runs left (at least one), so
    /// that a pass with much to try on a long tape (raising each of a
    /// thousand draws) cannot starve the ones after it; the passes repeat
    /// while one helps, so an unfinished pass resumes in the next round.
    fn pass(&mut self, pass: impl FnOnce(&mut Search, &mut Try<'_>), try_tape: &mut Try<'_>) {
        let left = self.budget.runs.saturating_sub(self.runs);
        self.pass_end = self.runs + left.div_ceil(2);
        pass(self, try_tape);
    }

    /// Whether the pass under way may run another candidate; notes why
    /// not.
    fn open(&mut self) -> bool {
        if self.out.is_some() {
            return false;
        }
        if self.runs >= self.budget.runs {
            self.out = Some("the run budget (SIM_SHRINK)");
            return false;
        }
        if self.runs >= self.pass_end {
            self.unfinished = true;
            return false;
        }
        true
    }
}

/// Smaller run, else shorter tape, else a tape whose draws are smaller,
/// compared draw by draw as numbers.
fn better(size: Size, tape: &[u8], best_size: Size, best: &[u8]) -> bool {
    (size, tape.len(), draws(tape)) < (best_size, best.len(), draws(best))
}

/// A tape as its 8-byte draws' values (the last one zero-padded).
fn draws(tape: &[u8]) -> Vec<u64> {
    tape.chunks(DRAW)
        .map(|c| {
            let mut b = [0u8; DRAW];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// A draw is 8 bytes for most decisions: chunks are counted in draws.
const DRAW: usize = 8;

type Try<'a> = dyn FnMut(&mut Search, Vec<u8>) -> bool + 'a;

/// Cuts the tape short: to nothing, then a binary search for the
/// shortest prefix that still fails the same way.
fn cut(s: &mut Search, try_tape: &mut Try<'_>) {
    if try_tape(s, Vec::new()) {
        return;
    }
    let (mut lo, mut hi) = (0, s.best.len());
    while hi - lo > DRAW && s.open() {
        let mid = (lo + (hi - lo) / 2) / DRAW * DRAW;
        let mid = mid.max(lo + 1);
        if try_tape(s, s.best[..mid].to_vec()) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
}

#[derive(Clone, Copy)]
enum Change {
    Zero,
    Delete,
    Raise,
}

/// Zeroes, deletes or raises to the top chunks of draws, from half the
/// tape down to one draw, last chunks first (later draws matter less to
/// what came before).
fn chunks(s: &mut Search, try_tape: &mut Try<'_>, change: Change) {
    // Raising reaches past the tape's end (zeros there fire as the run's
    // own draws did), up to the length the run drew.
    let len = |s: &Search| match change {
        Change::Raise => (s.span * DRAW).max(s.best.len()),
        Change::Zero | Change::Delete => s.best.len(),
    };
    let mut size = (len(s) / 2).next_multiple_of(DRAW).max(DRAW);
    loop {
        let mut end = len(s);
        while end > 0 && s.open() {
            let start = end.saturating_sub(size);
            let mut candidate = s.best.clone();
            if candidate.len() < end {
                candidate.resize(end, 0);
            }
            match change {
                Change::Zero => {
                    if candidate[start..end].iter().all(|&b| b == 0) {
                        end = start;
                        continue;
                    }
                    candidate[start..end].fill(0);
                }
                Change::Delete => {
                    candidate.drain(start..end);
                }
                Change::Raise => {
                    if candidate[start..end].iter().all(|&b| b == 0xff) {
                        end = start;
                        continue;
                    }
                    candidate[start..end].fill(0xff);
                }
            }
            try_tape(s, candidate);
            end = start.min(len(s));
        }
        if size == DRAW || !s.open() {
            break;
        }
        size = (size / 2).next_multiple_of(DRAW).max(DRAW);
    }
}

/// Probes of one draw's binary search: its value to within 1/2^12.
const LOWER_PROBES: u32 = 12;
/// Probes after which a draw none of whose lower values failed the same
/// way is left: zero, a half, three quarters.
const LOWER_GIVE_UP: u32 = 3;

/// Lowers each draw, first first, to the smallest value (to within
/// `LOWER_PROBES` halvings) that still fails the same way: zero, else a
/// binary search between zero and the draw. Draws that take a range with
/// `below(n)` (a count, a time) keep failing up to some threshold and
/// stop below it, which the search finds; a draw that seeds a stream
/// fails the same way almost only at its own value, and is left after
/// `LOWER_GIVE_UP` probes. At most half the runs left go to this pass.
fn lower(s: &mut Search, try_tape: &mut Try<'_>) {
    let mut at = s.resume.lower.take().unwrap_or(0);
    while (at + 1) * DRAW <= s.best.len() {
        if !s.open() {
            s.resume.lower = Some(at);
            return;
        }
        lower_one(s, try_tape, at);
        if s.out.is_none() && s.runs >= s.pass_end {
            // Stopped mid-search: this draw again next time (the probes
            // already run are remembered, and cost nothing).
            s.resume.lower = Some(at);
            return;
        }
        at += 1;
    }
}

/// `lower` for draw `at`.
fn lower_one(s: &mut Search, try_tape: &mut Try<'_>, at: usize) {
    let range = at * DRAW..(at + 1) * DRAW;
    let with = |best: &[u8], v: u64| {
        let mut candidate = best.to_vec();
        candidate[range.clone()].copy_from_slice(&v.to_le_bytes());
        candidate
    };
    let v = u64::from_le_bytes(s.best[range.clone()].try_into().expect("a draw is 8 bytes"));
    if v == 0 || try_tape(s, with(&s.best, 0)) {
        return;
    }
    // `hi` fails the same way; `lo` is the largest value known not to.
    let (mut lo, mut hi, mut probes, mut kept) = (0u64, v, 1u32, false);
    while hi - lo > 1 && probes < LOWER_PROBES && s.open() {
        if !kept && probes >= LOWER_GIVE_UP {
            return;
        }
        let mid = lo + (hi - lo) / 2;
        probes += 1;
        if try_tape(s, with(&s.best, mid)) {
            hi = mid;
            kept = true;
        } else {
            lo = mid;
        }
    }
}

/// Raises each draw to the largest value, last first, kept only when the
/// run gets smaller: a zero draw is the first choice of a pick, but it
/// *fires* a probability (`Rng::ratio`: `below(d) < n`; a fault point:
/// `draw % den < num`), so a fault drawn that way goes away at the top.
fn raise(s: &mut Search, try_tape: &mut Try<'_>) {
    let top = s.span.max(s.best.len().div_ceil(DRAW));
    let mut at = s.resume.raise.take().map_or(top, |at| at.min(top));
    while at > 0 {
        if !s.open() {
            s.resume.raise = Some(at);
            return;
        }
        at -= 1;
        let range = at * DRAW..(at + 1) * DRAW;
        if s.best
            .get(range.clone())
            .is_some_and(|b| b.iter().all(|&x| x == 0xff))
        {
            continue;
        }
        let mut candidate = s.best.clone();
        if candidate.len() < range.end {
            candidate.resize(range.end, 0);
        }
        candidate[range].fill(0xff);
        try_tape(s, candidate);
    }
}

/// Halves each remaining non-zero draw once, last first.
fn halve(s: &mut Search, try_tape: &mut Try<'_>) {
    let top = s.best.len() / DRAW;
    let mut at = s.resume.halve.take().map_or(top, |at| at.min(top));
    while at > 0 {
        if !s.open() {
            s.resume.halve = Some(at);
            return;
        }
        at -= 1;
        let range = at * DRAW..(at + 1) * DRAW;
        let Some(bytes) = s.best.get(range.clone()) else {
            continue;
        };
        let v = u64::from_le_bytes(bytes.try_into().expect("a draw is 8 bytes"));
        if v == 0 {
            continue;
        }
        let mut candidate = s.best.clone();
        candidate[range].copy_from_slice(&(v / 2).to_le_bytes());
        try_tape(s, candidate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(runs: u32) -> Budget {
        Budget {
            runs,
            time: Duration::from_secs(60),
        }
    }

    /// A model of a run: it fails when draw 3 is odd and some draw after
    /// it is at least 1000; its steps are the tape's non-zero draws.
    fn model(tape: &[u8]) -> Option<Size> {
        let draws = draws(tape);
        let odd = draws.get(3).is_some_and(|d| d % 2 == 1);
        let big = draws.iter().skip(4).any(|&d| d >= 1000);
        (odd && big).then(|| Size {
            faults: 0,
            steps: draws.iter().filter(|&&d| d != 0).count() as u64,
            virtual_ns: 0,
        })
    }

    fn tape(draws: &[u64]) -> Vec<u8> {
        draws.iter().flat_map(|d| d.to_le_bytes()).collect()
    }

    #[test]
    fn a_tape_shrinks_to_what_the_failure_needs() {
        let original = tape(&[5, 9, 77, 13, 4, 8, 123_456, 2, 99, 3]);
        let size = model(&original).unwrap();
        let shrunk = shrink(original.clone(), size, budget(1000), model);
        assert_eq!(shrunk.stopped, "nothing smaller");
        assert!(model(&shrunk.tape).is_some(), "it still fails");
        assert_eq!(
            shrunk.size.steps, 2,
            "only draw 3 and one big draw are left"
        );
        assert_eq!(shrunk.tape.len(), 5 * 8, "the big draw moved up to draw 4");
        let big = u64::from_le_bytes(shrunk.tape[32..40].try_into().unwrap());
        assert!(
            (1000..2000).contains(&big),
            "halved while it stays big enough: {big}"
        );
        assert!(
            shrunk.tape[..24].iter().all(|&b| b == 0),
            "{:?}",
            shrunk.tape
        );
    }

    /// A model with drawn faults: draw i fires a fault when it is below
    /// half the range (as `ratio(1, 2)` does); the run fails when draw 0
    /// fires. Zeroing cannot take the other faults away; raising can.
    fn faulty(tape: &[u8]) -> Option<Size> {
        let draws = draws(tape);
        let fires = |d: u64| d < u64::MAX / 2;
        let faults = (0..6)
            .filter(|&i| fires(draws.get(i).copied().unwrap_or(0)))
            .count();
        fires(draws.first().copied().unwrap_or(0)).then_some(Size {
            faults: faults as u64,
            steps: 10,
            virtual_ns: 0,
        })
    }

    #[test]
    fn a_drawn_fault_goes_away_at_the_top() {
        let original = tape(&[1, 2, 3, 4, 5, 6]);
        let size = faulty(&original).unwrap();
        assert_eq!(size.faults, 6);
        let shrunk = shrink(original, size, budget(1000), faulty);
        assert_eq!(
            shrunk.size.faults, 1,
            "only the fault the failure needs: {shrunk:?}"
        );
    }

    /// A test that draws how many operations it makes (`below(10)` of
    /// draw 0: its steps) and seeds a stream with draw 1 (any other value
    /// is another run): it fails when it makes at least 3 operations.
    fn counted(tape: &[u8]) -> Option<Size> {
        let draws = draws(tape);
        let ops = draws.first().map_or(0, |&d| below(d, 10));
        (ops >= 3 && draws.get(1) == Some(&0x5eed_5eed_5eed_5eed)).then_some(Size {
            faults: 0,
            steps: ops,
            virtual_ns: 0,
        })
    }

    fn below(x: u64, n: u64) -> u64 {
        ((u128::from(x) * u128::from(n)) >> 64) as u64
    }

    #[test]
    fn a_drawn_count_is_lowered_to_the_fewest_operations_that_fail() {
        let original = tape(&[u64::MAX / 10 * 9, 0x5eed_5eed_5eed_5eed]);
        let size = counted(&original).unwrap();
        assert_eq!(size.steps, 8);
        let shrunk = shrink(original, size, budget(1000), counted);
        // Halving alone stops at 4 operations (half of 4 is too few); the
        // binary search finds 3.
        assert_eq!(shrunk.size.steps, 3, "{shrunk:?}");
        assert_eq!(shrunk.stopped, "nothing smaller");
    }

    /// A run with one fault no change takes away, 300 draws that must stay
    /// exactly 1, and a drawn count (draw 0, `below(100)`: its steps) that
    /// must be at least 50.
    fn crowded(tape: &[u8]) -> Option<Size> {
        let draws = draws(tape);
        let ops = draws.first().map_or(0, |&d| below(d, 100));
        let kept = draws.len() == 301 && draws[1..].iter().all(|&d| d == 1);
        (ops >= 50 && kept).then_some(Size {
            faults: 1,
            steps: ops,
            virtual_ns: 0,
        })
    }

    #[test]
    fn a_pass_with_much_to_try_leaves_runs_for_the_others() {
        let mut draws = vec![u64::MAX / 100 * 99];
        draws.extend([1; 300]);
        let original = tape(&draws);
        let size = crowded(&original).unwrap();
        assert_eq!(size.steps, 98);
        // Zeroing and deleting chunks of 300 draws, and raising each one,
        // would take well over 400 runs, all in vain; with each pass held
        // to half the runs left, the binary search on draw 0 gets its turn.
        let shrunk = shrink(original, size, budget(400), crowded);
        assert_eq!(shrunk.size.steps, 50, "{:?}", shrunk.size);
        assert_eq!(shrunk.runs, 400);
    }

    /// A run that takes 201 draws (past the tape's end, zeros): draws 1 to
    /// 200 each inject a fault unless above half their range, and it fails
    /// only with draw 0 as it is.
    fn many_faults(tape: &[u8]) -> Option<Size> {
        let draws = draws(tape);
        let draw = |i: usize| draws.get(i).copied().unwrap_or(0);
        let faults = (1..=200).filter(|&i| draw(i) < u64::MAX / 2).count() as u64;
        (draw(0) == 0x5eed_5eed_5eed_5eed).then_some(Size {
            faults,
            steps: 201,
            virtual_ns: 0,
        })
    }

    #[test]
    fn raising_chunks_takes_away_many_faults_in_a_few_runs() {
        let mut draws = vec![0x5eed_5eed_5eed_5eed];
        draws.extend([0; 200]);
        let original = tape(&draws);
        let size = many_faults(&original).unwrap();
        assert_eq!(size.faults, 200);
        // Raising the 200 draws one by one would take 200 runs; a chunk at
        // a time, a few dozen.
        let shrunk = shrink(original, size, budget(60), many_faults);
        assert_eq!(shrunk.size.faults, 0, "{:?}", shrunk.size);
    }

    #[test]
    fn the_budget_stops_it_and_says_so() {
        let original = tape(&[5, 9, 77, 13, 4, 8, 123_456, 2, 99, 3]);
        let size = model(&original).unwrap();
        let shrunk = shrink(original, size, budget(3), model);
        assert_eq!(shrunk.runs, 3);
        assert_eq!(shrunk.stopped, "the run budget (SIM_SHRINK)");
        assert!(shrunk.size <= size);
    }

    #[test]
    fn a_tape_that_cannot_shrink_is_kept() {
        let original = tape(&[0, 0, 0, 1, 1000]);
        let size = model(&original).unwrap();
        let shrunk = shrink(original.clone(), size, budget(1000), model);
        assert_eq!(shrunk.tape, original);
        assert_eq!(shrunk.size, size);
    }
}
