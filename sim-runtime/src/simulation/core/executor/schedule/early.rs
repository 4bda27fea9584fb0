//! Early timers, a modifier of any strategy: with a small probability per
//! step and a bound per run, the clock jumps to the next deadline while
//! tasks are still runnable, as if the running computation took that long;
//! timers still never fire before their deadline.
//!
//! A jump never passes a deadline somebody has not yet seen: not while a
//! timer fired and its owner has not looked (`Timers::unseen`), nor while a
//! task is owed a poll. The clock owes a poll to each task it wakes (so a
//! task that is due never first looks at a clock past a later deadline),
//! and a jump to each task runnable when it happens (so one jump stands for
//! one long computation, and no runnable task is passed over by two: a
//! backup that never started in 1 s of jumps). The executor keeps which
//! tasks are owed (a bit of each slab entry, and one for the main future);
//! this counts them.

use crate::simulation::core::seed;
use crate::simulation::core::timer::Timers;
use rand_core::RngCore;

/// The chances per step a run draws from, 1 in this many: some runs jump
/// often (a timeout fires early in a short computation), some rarely (a
/// long computation still gets far before its timeout fires).
const EARLY_ODDS: [u64; 3] = [8, 32, 128];
/// Jumps per run at most, so progress is never starved.
const EARLY_BUDGET: u32 = 32;

pub(crate) struct Early {
    rng: seed::Stream,
    /// The chance per step, 1 in this many (drawn per run).
    odds: u64,
    budget: u32,
    /// The step of the last draw.
    drawn_at: Option<u64>,
    /// Tasks (the main future included) owed a poll before the clock may
    /// jump early.
    owed: usize,
}

impl Early {
    pub(crate) fn new(run_seed: u64) -> Early {
        let mut rng = seed::stream(run_seed, "early.timers");
        let odds = EARLY_ODDS[(rng.next_u64() % EARLY_ODDS.len() as u64) as usize];
        Early {
            rng,
            odds,
            budget: EARLY_BUDGET,
            drawn_at: None,
            owed: 0,
        }
    }

    /// Whether the clock jumps now, at `step`, to the next deadline of
    /// `timers`, although tasks are runnable: drawn (`fire`), and then only
    /// if the jump passes no deadline somebody has not seen (no timer fired
    /// unseen, no task owed a poll: `timeout(150ms, sleep(600ms))` would
    /// otherwise find both done and return the sleep's `Ok`, an order no
    /// runtime produces), if it stays within the time limit (passing it is
    /// a livelock only when nothing is runnable), and if no scripted action
    /// (`sim::at`) is runnable: it runs at its time, and the jump waits
    /// until it has run (`scripted_runnable` is asked last: it scans the run
    /// queue).
    pub(crate) fn jump(
        &mut self,
        step: u64,
        timers: &mut Timers,
        now: u64,
        time_limit_ns: Option<u64>,
        scripted_runnable: impl FnOnce() -> bool,
    ) -> bool {
        self.fire(step)
            && timers.unseen() == 0
            && self.owed == 0
            && timers
                .next_deadline()
                .is_some_and(|d| d > now && time_limit_ns.is_none_or(|l| d <= l))
            && !scripted_runnable()
    }

    /// Draws whether the clock jumps now (consuming the budget). At most
    /// once per step: after a jump a task runs before the next draw, so
    /// jumps never cascade past the work that was runnable (a run of them
    /// would skip straight to a far deadline with every timer between
    /// firing before any task saw them).
    fn fire(&mut self, step: u64) -> bool {
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

    /// One more task is owed a poll.
    pub(crate) fn owe(&mut self) {
        self.owed += 1;
    }

    /// A task owed a poll was polled, or is gone.
    pub(crate) fn paid(&mut self) {
        self.owed -= 1;
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
