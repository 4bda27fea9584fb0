//! PCT, probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010),
//! at depth 2, 3 or 4 (`pct2`, `pct3`, `pct4`).
//!
//! Every task has a priority drawn from the seed (a hash of the run's PCT
//! seed and the task id, so no table and no dependence on the order of
//! spawns); the highest-priority runnable task runs. `depth − 1` change
//! points are drawn among the first `horizon` contended steps (steps where
//! more than one task is runnable; the horizon is drawn per seed too). At
//! change point `i` the task about to run drops to priority `i`, below every
//! initial priority. A task picked `SPIN_LIMIT` contended steps in a row is
//! demoted below the others (but above change-point priorities), so a spin
//! loop cannot starve the tasks it waits for. A bug that needs `depth − 1`
//! ordering constraints is found with probability about
//! `1 / (tasks · horizon^(depth − 1))` per seed, however many steps one task
//! must run ahead of another.

use super::{Runnable, Strategy};
use crate::simulation::core::seed;
use rand_core::RngCore;
use std::collections::BTreeMap;

/// Consecutive contended picks of one task before it is demoted.
const SPIN_LIMIT: u32 = 64;

/// Priorities of tasks at their initial values live in `[2^32, 2^63)`;
/// spin-demoted tasks count down from `2^32`; change-point priorities are
/// `1 ..= depth − 1`.
const INITIAL_BASE: u64 = 1 << 32;

pub(crate) struct Pct {
    root: u64,
    /// Contended steps at which a change point falls, ascending.
    change_points: Vec<u64>,
    next_change: usize,
    contended: u64,
    /// Priorities changed from their initial value (by task id).
    changed: BTreeMap<u64, u64>,
    next_demoted: u64,
    last: u64,
    streak: u32,
}

impl Strategy for Pct {
    /// Depth 2, 3 and 4, in this order (`variant + 2`).
    const NAMES: &'static [&'static str] = &["pct2", "pct3", "pct4"];

    fn new(variant: usize, run_seed: u64) -> Pct {
        let depth = variant as u64 + 2;
        let root = seed::decide(run_seed, "pct");
        let mut rng = seed::stream(run_seed, "pct.change_points");
        // The horizon: 2^6 ..= 2^16 contended steps, drawn per seed.
        let horizon = 1u64 << (6 + rng.next_u64() % 11);
        let mut change_points: Vec<u64> = (1..depth)
            .map(|_| 1 + seed::below(rng.next_u64(), horizon))
            .collect();
        change_points.sort_unstable();
        Pct {
            root,
            change_points,
            next_change: 0,
            contended: 0,
            changed: BTreeMap::new(),
            next_demoted: INITIAL_BASE - 1,
            last: u64::MAX,
            streak: 0,
        }
    }

    /// Takes the highest-priority runnable task.
    fn pick(&mut self, runnable: &mut Runnable<'_>) -> (u32, u64) {
        if runnable.len() <= 1 {
            return runnable.pop_front();
        }
        self.contended += 1;
        let mut i = self.best(runnable);
        if self.change_points.get(self.next_change) == Some(&self.contended) {
            // A change point: the task about to run drops below all others.
            self.next_change += 1;
            let id = runnable.id(i);
            self.changed.insert(id, self.next_change as u64);
            i = self.best(runnable);
        }
        let id = runnable.id(i);
        if id == self.last {
            self.streak += 1;
            if self.streak >= SPIN_LIMIT {
                self.changed.insert(id, self.next_demoted);
                self.next_demoted -= 1;
                self.streak = 0;
                i = self.best(runnable);
            }
        } else {
            self.last = id;
            self.streak = 1;
        }
        runnable.remove(i)
    }
}

impl Pct {
    fn priority(&self, id: u64) -> u64 {
        match self.changed.get(&id) {
            Some(&p) => p,
            None => INITIAL_BASE + seed::splitmix(self.root ^ id) % (u64::MAX / 2 - INITIAL_BASE),
        }
    }

    /// The index of the highest-priority runnable task (the first of
    /// equals).
    fn best(&self, runnable: &Runnable<'_>) -> usize {
        let mut best = 0;
        let mut best_p = 0;
        for (i, id) in runnable.ids().enumerate() {
            let p = self.priority(id);
            if p > best_p {
                best_p = p;
                best = i;
            }
        }
        best
    }
}
