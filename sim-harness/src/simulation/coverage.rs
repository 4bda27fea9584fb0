//! Sometimes-assertions and coverage: every `sometimes!`, `always!`,
//! `reachable!` and `unreachable!` site is registered at link time (the
//! `linkme` crate), so a sweep can report the sites that never held or were
//! never reached — including those no seed came near.

use std::collections::BTreeMap;

/// What a site asserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SiteKind {
    Sometimes,
    Always,
    Reachable,
    Unreachable,
}

/// One site, as registered at link time.
#[derive(Debug)]
pub struct Site {
    pub kind: SiteKind,
    pub name: &'static str,
    pub file: &'static str,
    pub line: u32,
}

/// Every site linked into this binary.
#[linkme::distributed_slice]
pub static SITES: [Site];

/// A site's identity (name, file, line).
pub(crate) type Key = (&'static str, &'static str, u32);

/// How a site fared: reached how often, and how often its condition held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub reached: u64,
    pub held: u64,
}

/// This run's tallies: a value of the run, not of the OS thread, so a site
/// in a simulated thread's code counts (sim-runtime's run-locals).
const SEEN: &str = "sim.coverage";

fn with_seen<R>(f: impl FnOnce(&mut BTreeMap<Key, Tally>) -> R) -> R {
    sim_runtime::__private::harness::with_run_local(SEEN, f)
}

fn key(site: &Site) -> Key {
    (site.name, site.file, site.line)
}

/// Records a site's evaluation; `always!`/`unreachable!` fail the seed.
#[track_caller]
pub fn hit(site: &'static Site, cond: bool) {
    record(site, cond);
    match site.kind {
        SiteKind::Always if !cond => panic!(
            "always!({:?}) did not hold at {}:{}",
            site.name, site.file, site.line
        ),
        SiteKind::Unreachable => panic!(
            "unreachable!({:?}) was reached at {}:{}",
            site.name, site.file, site.line
        ),
        _ => {}
    }
}

/// Records a site's evaluation in the run's tallies, and what it reached
/// for exploration; fails nothing.
pub(crate) fn record(site: &'static Site, cond: bool) {
    with_seen(|s| {
        let t = s.entry(key(site)).or_default();
        t.reached += 1;
        if cond {
            t.held += 1;
        }
    });
    if cond && matches!(site.kind, SiteKind::Sometimes | SiteKind::Reachable) {
        super::explore::note(super::explore::Feature::Site {
            name: site.name,
            file: site.file,
            line: site.line,
            node: sim_runtime::sim::current_node().as_u32(),
        });
    }
}

/// Every site of this binary: those linked in, then those antithesis_sdk
/// named so far (its catalog, sent when its first site is reached), each
/// with whether it must be reached.
pub(crate) fn all_sites() -> Vec<(&'static Site, bool)> {
    SITES
        .iter()
        .map(|s| (s, s.kind == SiteKind::Reachable))
        .chain(super::antithesis::named())
        .collect()
}

/// Sites made at run time: a `sim::fake`'s modes (simulation/fake.rs),
/// reached when armed, held when the fault happened. Only to tell them from
/// linked sites: a sweep reports those its own tallies name.
static DYNAMIC: std::sync::Mutex<std::collections::BTreeSet<Key>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Records a run-time site's evaluation (like a `sometimes!`).
pub(crate) fn hit_dynamic(key: Key, held: bool) {
    DYNAMIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key);
    with_seen(|s| {
        let t = s.entry(key).or_default();
        t.reached += 1;
        if held {
            t.held += 1;
        }
    });
}

/// Takes this thread's tallies (the runner, once a seed is over).
pub(crate) fn take() -> BTreeMap<Key, Tally> {
    with_seen(std::mem::take)
}

/// The sites a sweep's totals leave unsatisfied: `sometimes!` that never
/// held, `reachable!` never reached. Sorted by file and line.
pub(crate) fn missing(totals: &BTreeMap<Key, Tally>) -> Vec<String> {
    let mut out: Vec<&Site> = all_sites()
        .into_iter()
        .filter(|(site, must_hit)| {
            let t = totals.get(&key(site)).copied().unwrap_or_default();
            match site.kind {
                SiteKind::Sometimes => t.held == 0,
                _ => *must_hit && t.reached == 0,
            }
        })
        .map(|(site, _)| site)
        .collect();
    out.sort_by_key(|s| (s.file, s.line));
    out.dedup_by_key(|s| (s.file, s.line, s.name));
    out.iter()
        .map(|s| {
            let what = match s.kind {
                SiteKind::Sometimes => "never held",
                _ => "never reached",
            };
            format!("{:?} at {}:{} ({what})", s.name, s.file, s.line)
        })
        .chain(missing_dynamic(totals))
        .collect()
}

/// The run-time sites the sweep armed and never saw happen.
fn missing_dynamic(totals: &BTreeMap<Key, Tally>) -> Vec<String> {
    let dynamic = DYNAMIC.lock().unwrap_or_else(|e| e.into_inner());
    totals
        .iter()
        .filter(|(k, t)| t.held == 0 && dynamic.contains(k))
        .map(|((name, file, line), _)| format!("{name:?} at {file}:{line} (armed, never happened)"))
        .collect()
}

/// A sweep's coverage. Seeds' tallies are folded in seed order, whatever
/// order the job threads finish them in, so where `SIM_COVERAGE_PLATEAU`
/// stops the sweep depends on the seeds alone, never on `SIM_JOBS`.
pub(crate) struct Sweep {
    /// Everything folded so far.
    pub totals: BTreeMap<Key, Tally>,
    /// Finished seeds (by index) waiting for the ones before them.
    pending: BTreeMap<usize, BTreeMap<Key, Tally>>,
    /// The index of the next seed to fold.
    frontier: usize,
    /// Seeds in a row (in seed order) that added nothing.
    idle: u64,
    plateau: Option<u64>,
    /// Where the plateau ended the sweep: seeds from this index on do not
    /// count (those already running when it was found are discarded).
    pub stop: Option<usize>,
}

impl Sweep {
    pub(crate) fn new(plateau: Option<u64>) -> Sweep {
        Sweep {
            totals: BTreeMap::new(),
            pending: BTreeMap::new(),
            frontier: 0,
            idle: 0,
            plateau,
            stop: None,
        }
    }

    /// Whether the seed at `index` is part of the sweep (not past a
    /// plateau already found).
    pub(crate) fn counts(&self, index: usize) -> bool {
        self.stop.is_none_or(|s| index < s)
    }

    /// Adds the tallies of the seed at `index`; folds every seed whose
    /// predecessors are all in. Returns `true` when this found the plateau.
    pub(crate) fn add(&mut self, index: usize, tallies: BTreeMap<Key, Tally>) -> bool {
        if !self.counts(index) {
            return false;
        }
        self.pending.insert(index, tallies);
        while let Some(tallies) = self.pending.remove(&self.frontier) {
            let mut grew = false;
            for (k, v) in tallies {
                let e = self.totals.entry(k).or_default();
                grew |= (e.reached == 0 && v.reached > 0) || (e.held == 0 && v.held > 0);
                e.reached += v.reached;
                e.held += v.held;
            }
            self.frontier += 1;
            self.idle = if grew { 0 } else { self.idle + 1 };
            if self.plateau.is_some_and(|p| self.idle >= p) {
                self.stop = Some(self.frontier);
                self.pending.clear();
                return true;
            }
        }
        false
    }
}
