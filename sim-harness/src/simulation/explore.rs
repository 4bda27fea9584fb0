//! Guided exploration (`#[sim::test(explore = 2000)]`, `SIM_EXPLORE=2000`):
//! a budget of runs spent where the runs so far found something new,
//! instead of on independent seeds.
//!
//! Every run is a tape of decisions (sim-runtime's tape.rs), so going back
//! to a moment of an earlier run and deciding differently from there is a
//! tape prefix and a fresh suffix (`TapeMode::Branch`): no `fork`, and the
//! branch replays exactly from its own tape. The explorer:
//!
//! - runs a round of fresh seeds, then rounds of [`ROUND`] runs each;
//! - notes what each run reached ([`Feature`]: a `sometimes!`/`reachable!`
//!   site held on a node, a fault landed on its nodes, a [`crate::state!`]
//!   value, the run's outcome class) and the tape position where it first
//!   happened ([`note`]);
//! - keeps in its corpus every run that reached a feature no run before it
//!   had, or reached one earlier in its tape than any run before (more of
//!   the run left to decide otherwise), with a moment at each such
//!   feature's position;
//! - plans each run of a round as a branch from one of those moments,
//!   chosen with a weight that falls as the moment's feature becomes
//!   common and as the moment is branched from again (its energy), or, one
//!   run in [`FRESH_EVERY`], as a fresh seed. A feature that more than one
//!   run in [`RARE`] reaches gets no branches: with nothing rarer in the
//!   corpus, every run is a fresh seed, as in a sweep.
//!
//! The whole exploration is a function of its seed: a round is planned
//! from the state the rounds before left, its runs are spread over the
//! `SIM_JOBS` threads, and their results are taken in the round's order;
//! so the same command gives the same runs whatever `SIM_JOBS` is. The
//! first failing run (in that order) ends it; its tape is what the triage
//! replays, shrinks and draws, and what the report's replay line names.
//!
//! What a simulated OS thread's code notes counts for its run, as the
//! executor's thread's does (the notes are a run-local value of
//! sim-runtime's, which moves with the baton).

use super::seed::{rerun_difference, run_one, worker, How, Options, SeedResult};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use sim_runtime::__private::harness::{tape_position, with_run_local, TapeMode};
use sim_runtime::__private::TestOutput;
use sim_runtime::sim::Class;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Runs planned at once from one state of the corpus: fixed, so that
/// `SIM_JOBS` changes how fast the rounds go, never what they run.
pub(crate) const ROUND: usize = 8;
/// One run of a round in this many is a fresh seed (after the first round,
/// all fresh).
const FRESH_EVERY: u64 = 5;
/// A feature reached by more than one run in this many is common: no run
/// branches from it (see `Explorer::energy`).
const RARE: u64 = 4;

/// Something a run reached that exploration counts as new the first time
/// any run reaches it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Feature {
    /// A `sometimes!` or `reachable!` site held, on a node.
    Site {
        name: &'static str,
        file: &'static str,
        line: u32,
        node: u32,
    },
    /// A fault of this kind landed on these nodes.
    Fault { kind: &'static str, nodes: Vec<u32> },
    /// A [`crate::state!`] bucket and its value's hash.
    State { name: &'static str, value: u64 },
    /// How the run ended: `pass` or a class name.
    Outcome(&'static str),
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Feature::Site {
                name,
                file,
                line,
                node,
            } => write!(f, "{name:?} ({file}:{line}) on node #{node}"),
            Feature::Fault { kind, nodes } => write!(f, "{kind} on {nodes:?}"),
            Feature::State { name, value } => write!(f, "state {name} = {value:#x}"),
            Feature::Outcome(o) => write!(f, "outcome {o}"),
        }
    }
}

/// This run's features, each at the tape position where it first
/// happened: a value of the run, not of the OS thread, so what a simulated
/// thread's code notes counts (sim-runtime's run-locals).
const FOUND: &str = "sim.explore";

/// Notes that this thread's run reached `feature` (here, if it is the
/// first time in the run).
pub(crate) fn note(feature: Feature) {
    let pos = tape_position();
    with_run_local(FOUND, |m: &mut BTreeMap<Feature, usize>| {
        m.entry(feature).or_insert(pos);
    });
}

/// Takes this run's features (the runner, once a run is over).
pub(crate) fn take() -> BTreeMap<Feature, usize> {
    with_run_local(FOUND, std::mem::take)
}

/// `sim::state!(name, value)`: records a small value of the run's state;
/// a value (or combination) no run had before is new to exploration.
#[doc(hidden)]
pub fn state(name: &'static str, value: u64) {
    note(Feature::State { name, value });
}

/// The hash of a state value (FNV-1a of its `Debug` text: stable across
/// runs, builds and platforms, unlike std's hasher).
#[doc(hidden)]
pub fn state_hash(value: &dyn std::fmt::Debug) -> u64 {
    let text = format!("{value:?}");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One run an exploration plans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Planned {
    /// The seed the run is of (a branch keeps its parent's: the seed
    /// picks the strategy, and the prefix replays the parent's draws).
    pub seed: u64,
    /// A branch: the corpus entry, the tape position and the salt of its
    /// fresh draws. `None`: a fresh run of `seed`.
    pub branch: Option<(usize, usize, u64)>,
}

/// A run the corpus keeps: its tape, and its moments (a position where it
/// reached something new, and what).
struct Entry {
    seed: u64,
    tape: Vec<u8>,
    moments: Vec<Moment>,
}

struct Moment {
    pos: usize,
    feature: Feature,
    /// Runs branched from here so far.
    branched: u64,
}

/// The explorer's state between rounds.
pub(crate) struct Explorer {
    rng: ChaCha8Rng,
    /// Runs that reached each feature so far.
    hits: BTreeMap<Feature, u64>,
    /// The earliest tape position any run reached each feature at.
    earliest: BTreeMap<Feature, usize>,
    corpus: Vec<Entry>,
    /// Fresh seeds taken so far.
    fresh: u64,
    /// Runs learnt from so far.
    runs: u64,
    first_seeds: Vec<u64>,
    seed: u64,
}

/// What an exploration leaves.
pub(crate) struct Explored {
    /// The first failing run, and what it was.
    pub failure: Option<(SeedResult, String)>,
    pub ran: usize,
    /// The `sometimes!`/`reachable!` sites no run covered.
    pub missing: Vec<String>,
}

impl Explorer {
    /// A new exploration of seed `seed`; its first fresh runs are of
    /// `first_seeds` (the test's seeds), then of the seeds after them
    /// (`seed + i` for the i-th fresh run): with nothing rare to branch
    /// from, an exploration runs what a sweep from `seed` runs, in order.
    pub(crate) fn new(seed: u64, first_seeds: Vec<u64>) -> Explorer {
        Explorer {
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6578_706c_6f72_6521),
            hits: BTreeMap::new(),
            earliest: BTreeMap::new(),
            corpus: Vec::new(),
            fresh: 0,
            runs: 0,
            first_seeds,
            seed,
        }
    }

    fn next_fresh(&mut self) -> u64 {
        let i = self.fresh;
        self.fresh += 1;
        match self.first_seeds.get(i as usize) {
            Some(&s) => s,
            None => self.seed.wrapping_add(i),
        }
    }

    /// Plans the next round of `n` runs.
    pub(crate) fn plan(&mut self, n: usize) -> Vec<Planned> {
        (0..n).map(|_| self.plan_one()).collect()
    }

    fn plan_one(&mut self) -> Planned {
        let total: u64 = self
            .corpus
            .iter()
            .flat_map(|e| e.moments.iter())
            .map(|m| self.energy(m))
            .sum();
        if total == 0 || self.rng.next_u64() % FRESH_EVERY == 0 {
            return Planned {
                seed: self.next_fresh(),
                branch: None,
            };
        }
        let mut pick = self.rng.next_u64() % total;
        for (i, e) in self.corpus.iter().enumerate() {
            for (j, m) in e.moments.iter().enumerate() {
                let w = self.energy(m);
                if pick < w {
                    let salt = self.rng.next_u64();
                    let (seed, pos) = (e.seed, m.pos);
                    self.corpus[i].moments[j].branched += 1;
                    return Planned {
                        seed,
                        branch: Some((i, pos, salt)),
                    };
                }
                pick -= w;
            }
        }
        unreachable!("the pick is below the total")
    }

    /// A moment's weight: rarer features and moments branched from less
    /// get more of the budget. A feature that more than one run in
    /// [`RARE`] reaches says nothing about where a run is going (a common
    /// outcome, a fault most runs get): its moments get none, and a run
    /// with nowhere rarer to branch from is a fresh seed.
    fn energy(&self, m: &Moment) -> u64 {
        let hits = self.hits.get(&m.feature).copied().unwrap_or(0);
        if hits * RARE > self.runs.max(1) {
            return 0;
        }
        (1u64 << 20) / ((1 + hits) * (1 + m.branched)).max(1) + 1
    }

    /// The tape mode of a planned run.
    fn mode(&self, p: &Planned) -> TapeMode {
        match p.branch {
            None => TapeMode::Record,
            Some((entry, pos, salt)) => TapeMode::Branch {
                prefix: self.corpus[entry].tape[..pos].to_vec(),
                salt,
            },
        }
    }

    /// Takes a run's result: counts the features it reached by its own
    /// draws (past its `prefix`, for a branch), and keeps it in the corpus
    /// if one of them is new, or was reached earlier in the run than any
    /// run before reached it (a moment at each such feature). Returns the
    /// new features.
    pub(crate) fn learn(
        &mut self,
        seed: u64,
        tape: Vec<u8>,
        mut found: BTreeMap<Feature, usize>,
        prefix: usize,
    ) -> Vec<Feature> {
        let mut moments = Vec::new();
        let mut new = Vec::new();
        self.runs += 1;
        for (feature, pos) in std::mem::take(&mut found) {
            let pos = pos.min(tape.len());
            if pos < prefix {
                // Reached in the replayed prefix: the parent's finding, not
                // this run's (else a rare moment branched from often would
                // look common).
                continue;
            }
            let hits = self.hits.entry(feature.clone()).or_insert(0);
            let earliest = self.earliest.entry(feature.clone()).or_insert(usize::MAX);
            if *hits == 0 {
                new.push(feature.clone());
            }
            // New, or reached earlier in the run than any run before: more
            // of the run is left to decide otherwise from there.
            if pos < *earliest {
                *earliest = pos;
                moments.push(Moment {
                    pos,
                    feature,
                    branched: 0,
                });
            }
            *hits += 1;
        }
        if !moments.is_empty() {
            self.corpus.push(Entry {
                seed,
                tape,
                moments,
            });
        }
        new
    }

    pub(crate) fn corpus_len(&self) -> usize {
        self.corpus.len()
    }

    pub(crate) fn features(&self) -> usize {
        self.hits.len()
    }
}

/// The outcome of a run as a feature.
fn outcome(r: &SeedResult) -> Feature {
    Feature::Outcome(r.outcome.class.map_or("pass", Class::name))
}

/// Spends `budget` runs exploring (see the module's docs); stops at the
/// first failing run. With `check` (`check_determinism`,
/// `SIM_CHECK_DETERMINISM`), each run is run again from the tape it wrote
/// and compared with the first decision by decision, as a sweep's seed is.
#[allow(clippy::too_many_arguments)]
pub(crate) fn explore<F, Fut>(
    opts: &Options,
    name: &str,
    seed: u64,
    first_seeds: Vec<u64>,
    jobs: usize,
    budget: u64,
    check: bool,
    make: &Arc<F>,
) -> Explored
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let mut ex = Explorer::new(seed, first_seeds);
    let mut coverage = super::coverage::Sweep::new(None);
    let mut ran = 0usize;
    while (ran as u64) < budget {
        let n = ROUND.min((budget - ran as u64) as usize);
        let planned = if ran == 0 {
            (0..n)
                .map(|_| Planned {
                    seed: ex.next_fresh(),
                    branch: None,
                })
                .collect()
        } else {
            ex.plan(n)
        };
        let runs = planned
            .iter()
            .map(|p| {
                (
                    p.seed,
                    How {
                        tape: Some(ex.mode(p)),
                        record: check,
                        ..How::default()
                    },
                )
            })
            .collect();
        let results = run_all(opts, runs, jobs, make);
        let results = if check {
            checked(opts, results, jobs, make)
        } else {
            results
        };
        for (i, (p, mut r)) in planned.into_iter().zip(results).enumerate() {
            let index = ran + i;
            coverage.add(index, std::mem::take(&mut r.coverage));
            let mut found = std::mem::take(&mut r.features);
            found
                .entry(outcome(&r))
                .or_insert(r.outcome.tape.as_ref().map_or(0, |t| t.bytes.len()));
            let tape = r
                .outcome
                .tape
                .as_ref()
                .map(|t| t.bytes.clone())
                .unwrap_or_default();
            if !r.outcome.passed() {
                let how = match p.branch {
                    None => format!("run {} of {budget}: seed {}", index + 1, p.seed),
                    Some((_, pos, _)) => format!(
                        "run {} of {budget}: a branch of seed {} from byte {pos} of its tape",
                        index + 1,
                        p.seed
                    ),
                };
                eprintln!(
                    "sim: {name}: exploration found a failure at {how} ({} run(s) in the \
                     corpus, {} feature(s) seen)",
                    ex.corpus_len(),
                    ex.features()
                );
                return Explored {
                    failure: Some((r, how)),
                    ran: index + 1,
                    missing: super::coverage::missing(&coverage.totals),
                };
            }
            let prefix = p.branch.map_or(0, |(_, pos, _)| pos);
            ex.learn(p.seed, tape, found, prefix);
        }
        ran += n;
    }
    eprintln!(
        "sim: {name}: exploration of {budget} run(s) (seed {seed}) found no failure: {} run(s) \
         in the corpus, {} feature(s) seen",
        ex.corpus_len(),
        ex.features()
    );
    Explored {
        failure: None,
        ran,
        missing: super::coverage::missing(&coverage.totals),
    }
}

/// The determinism check of a round's runs (each recorded): every passing
/// run is run again from the tape it wrote, its decisions compared with the
/// first run's; one that differs fails as `nondeterminism`, naming the
/// first decision that differs. A run keeps its first result (its features,
/// coverage and tape are what the exploration learns from).
fn checked<F, Fut>(
    opts: &Options,
    mut results: Vec<SeedResult>,
    jobs: usize,
    make: &Arc<F>,
) -> Vec<SeedResult>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let again: Vec<(usize, (u64, How))> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.outcome.passed())
        .filter_map(|(i, r)| {
            let tape = r.outcome.tape.as_ref()?.bytes.clone();
            Some((
                i,
                (
                    r.outcome.seed,
                    How {
                        compare: r.outcome.recording.clone(),
                        tape: Some(TapeMode::Replay(tape)),
                        ..How::default()
                    },
                ),
            ))
        })
        .collect();
    let (index, runs): (Vec<usize>, Vec<(u64, How)>) = again.into_iter().unzip();
    for (i, second) in index.into_iter().zip(run_all(opts, runs, jobs, make)) {
        let first = &mut results[i].outcome;
        let again = "when run again from its tape";
        if let Some(text) = rerun_difference(first, &second.outcome, "the run", again) {
            first.class = Some(Class::Nondeterminism);
            first.message = text;
        }
    }
    results
}

/// Runs `runs` (each a seed and how to run it), `jobs` at a time; the
/// results in the runs' order, whatever the jobs.
pub(crate) fn run_all<F, Fut>(
    opts: &Options,
    runs: Vec<(u64, How)>,
    jobs: usize,
    make: &Arc<F>,
) -> Vec<SeedResult>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let next = AtomicUsize::new(0);
    let n = runs.len();
    let runs: Vec<Mutex<Option<(u64, How)>>> =
        runs.into_iter().map(|r| Mutex::new(Some(r))).collect();
    let out: Vec<Mutex<Option<SeedResult>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            worker(s, opts, || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = runs.get(i) else {
                    break;
                };
                let (seed, how) = slot
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .expect("each run is taken once");
                let r = run_one(opts, seed, make, how);
                *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    out.into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every run ran")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(line: u32) -> Feature {
        Feature::Site {
            name: "x",
            file: "f.rs",
            line,
            node: 0,
        }
    }

    /// The same exploration seed and the same results plan the same runs.
    #[test]
    fn planning_is_a_function_of_the_seed_and_the_results() {
        let plans = |seed: u64| {
            let mut ex = Explorer::new(seed, vec![3, 4]);
            let mut all = Vec::new();
            for round in 0..5u32 {
                let p = ex.plan(ROUND);
                for (k, planned) in p.iter().enumerate() {
                    let found = BTreeMap::from([(site(round * 10 + k as u32 % 3), 4usize)]);
                    ex.learn(planned.seed, vec![1; 16], found, 0);
                }
                all.extend(p);
            }
            all
        };
        assert_eq!(plans(7), plans(7));
        assert_ne!(plans(7), plans(8));
        let p = plans(7);
        assert_eq!(
            (p[0].seed, p[0].branch),
            (3, None),
            "the test's seeds first"
        );
        assert!(p.iter().any(|p| p.branch.is_some()), "it branches");
    }

    /// Only a run that reached a new feature joins the corpus, with a moment
    /// at the new feature's position; a rarer feature's moment weighs more.
    #[test]
    fn the_corpus_keeps_what_is_new_and_rare_moments_weigh_more() {
        let mut ex = Explorer::new(1, vec![]);
        let new = ex.learn(
            1,
            vec![0; 10],
            BTreeMap::from([(site(1), 2), (site(2), 7)]),
            0,
        );
        assert_eq!(new, vec![site(1), site(2)]);
        assert_eq!(ex.corpus_len(), 1);
        assert!(ex
            .learn(2, vec![0; 10], BTreeMap::from([(site(1), 3)]), 0)
            .is_empty());
        assert_eq!(ex.corpus_len(), 1, "nothing new: not kept");
        for seed in 3..13 {
            ex.learn(seed, vec![0; 10], BTreeMap::from([(site(3), 5)]), 0);
        }
        let moments = &ex.corpus[0].moments;
        assert_eq!(moments[0].pos, 2);
        assert!(
            ex.energy(&moments[1]) > ex.energy(&moments[0]),
            "site 2 is rarer"
        );
        assert!(ex.energy(&moments[0]) > 0);
        let common = &ex.corpus[1].moments[0];
        assert_eq!(common.feature, site(3));
        assert_eq!(ex.energy(common), 0, "reached by most runs: no branches");
    }

    /// A branch's features reached in its replayed prefix are its parent's:
    /// they are not counted again.
    #[test]
    fn a_branch_counts_only_what_it_reached_past_its_prefix() {
        let mut ex = Explorer::new(2, vec![]);
        ex.learn(1, vec![0; 10], BTreeMap::from([(site(1), 3)]), 0);
        let new = ex.learn(
            1,
            vec![0; 10],
            BTreeMap::from([(site(1), 3), (site(2), 6)]),
            5,
        );
        assert_eq!(new, vec![site(2)]);
        assert_eq!(ex.hits[&site(1)], 1, "inherited, not counted");
        assert_eq!(ex.hits[&site(2)], 1);
    }

    /// With nothing rare in the corpus, every run is a fresh seed.
    #[test]
    fn nothing_rare_means_fresh_seeds() {
        let mut ex = Explorer::new(5, vec![]);
        for seed in 0..20 {
            ex.learn(seed, vec![0; 10], BTreeMap::from([(site(1), 1)]), 0);
        }
        assert!(ex.plan(ROUND * 4).iter().all(|p| p.branch.is_none()));
    }

    /// With nothing to branch from, an exploration is the sweep from its
    /// seed: the test's seeds, then the ones after them, in order (so it is
    /// never worse than seeds where a scenario marks no progress).
    #[test]
    fn fresh_runs_are_the_sweeps_seeds_in_order() {
        let mut ex = Explorer::new(100, vec![100, 101, 102]);
        let mut seeds = Vec::new();
        for _ in 0..4 {
            let round = ex.plan(ROUND);
            for p in &round {
                assert!(p.branch.is_none());
                ex.learn(p.seed, vec![0; 4], BTreeMap::from([(site(1), 1)]), 0);
            }
            seeds.extend(round.iter().map(|p| p.seed));
        }
        assert_eq!(seeds, (100..100 + 4 * ROUND as u64).collect::<Vec<_>>());
    }
}
