//! PCT, probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010),
//! and early timers: the two strategies that bend the schedule on purpose.
//!
//! PCT: every task has a priority drawn from the seed (a hash of the run's
//! PCT seed and the task id, so no table and no dependence on the order of
//! spawns); the highest-priority runnable task runs. `depth − 1` change
//! points are drawn among the first `horizon` contended steps (steps where
//! more than one task is runnable; the horizon is drawn per seed too). At
//! change point `i` the task about to run drops to priority `i`, below every
//! initial priority. A task picked `SPIN_LIMIT` contended steps in a row is
//! demoted below the others (but above change-point priorities), so a spin
//! loop cannot starve the tasks it waits for.
//!
//! Early timers: with a small probability per step and a bound per run, the
//! clock jumps to the next deadline while tasks are still runnable, as if
//! the running computation took that long; timers still never fire before
//! their deadline.

use super::queue::RunQueue;
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

impl Pct {
    pub(crate) fn new(run_seed: u64, depth: u8) -> Pct {
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

    fn priority(&self, id: u64) -> u64 {
        match self.changed.get(&id) {
            Some(&p) => p,
            None => INITIAL_BASE + seed::splitmix(self.root ^ id) % (u64::MAX / 2 - INITIAL_BASE),
        }
    }

    /// Takes the highest-priority entry out of the run queue.
    pub(crate) fn pick(&mut self, queue: &mut RunQueue) -> Option<(u32, u64)> {
        if queue.len() <= 1 {
            return queue.pop_front();
        }
        self.contended += 1;
        let best = |pct: &Pct, q: &RunQueue| {
            let mut best = 0;
            let mut best_p = 0;
            for (i, &(_, id)) in q.iter().enumerate() {
                let p = pct.priority(id);
                if p > best_p {
                    best_p = p;
                    best = i;
                }
            }
            best
        };
        let mut i = best(self, queue);
        if self.change_points.get(self.next_change) == Some(&self.contended) {
            // A change point: the task about to run drops below all others.
            self.next_change += 1;
            let id = queue[i].1;
            self.changed.insert(id, self.next_change as u64);
            i = best(self, queue);
        }
        let id = queue[i].1;
        if id == self.last {
            self.streak += 1;
            if self.streak >= SPIN_LIMIT {
                self.changed.insert(id, self.next_demoted);
                self.next_demoted -= 1;
                self.streak = 0;
                i = best(self, queue);
            }
        } else {
            self.last = id;
            self.streak = 1;
        }
        queue.remove(i)
    }
}

/// Early timers: whether this step jumps the clock.
pub(crate) struct Early {
    rng: seed::Stream,
    /// The chance per step, 1 in this many (drawn per run).
    odds: u64,
    budget: u32,
    /// The step of the last draw.
    drawn_at: Option<u64>,
}

/// The chances per step a run draws from, 1 in this many: some runs jump
/// often (a timeout fires early in a short computation), some rarely (a
/// long computation still gets far before its timeout fires).
const EARLY_ODDS: [u64; 3] = [8, 32, 128];
/// Jumps per run at most, so progress is never starved.
const EARLY_BUDGET: u32 = 32;

impl Early {
    pub(crate) fn new(run_seed: u64) -> Early {
        let mut rng = seed::stream(run_seed, "early.timers");
        let odds = EARLY_ODDS[(rng.next_u64() % EARLY_ODDS.len() as u64) as usize];
        Early {
            rng,
            odds,
            budget: EARLY_BUDGET,
            drawn_at: None,
        }
    }

    /// Draws whether the clock jumps now (consuming the budget). At most
    /// once per step: after a jump a task runs before the next draw, so
    /// jumps never cascade past the work that was runnable (a run of them
    /// would skip straight to a far deadline with every timer between
    /// firing before any task saw them).
    pub(crate) fn fire(&mut self, step: u64) -> bool {
        if self.budget == 0 || self.drawn_at == Some(step) {
            return false;
        }
        self.drawn_at = Some(step);
        if self.rng.next_u64() % self.odds != 0 {
            return false;
        }
        self.budget -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At most one jump per step: a second draw at the same step never
    /// fires (nor consumes the stream), so a task runs between two jumps.
    #[test]
    fn early_jumps_never_cascade_within_a_step() {
        let mut fired = 0;
        for seed in 0..50 {
            let mut early = Early::new(seed);
            for step in 0..400 {
                if early.fire(step) {
                    fired += 1;
                }
                assert!(
                    !early.fire(step),
                    "seed {seed}: a second jump at step {step}"
                );
            }
            assert!(early.budget <= EARLY_BUDGET);
        }
        assert!(fired > 50, "early timers fire: {fired} jumps in 50 runs");
    }

    /// Runs draw their odds: some jump often, some rarely.
    #[test]
    fn runs_draw_their_odds() {
        let odds: std::collections::BTreeSet<u64> = (0..60).map(|s| Early::new(s).odds).collect();
        assert_eq!(odds.into_iter().collect::<Vec<_>>(), EARLY_ODDS);
    }
}
