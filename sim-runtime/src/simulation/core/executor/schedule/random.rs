//! Uniformly at random among the runnable tasks: the default of
//! `#[tokio::test]` and `Runtime`, and half the portfolio's seeds.
//!
//! With many runnable tasks every pick misses the cache on what it reads
//! (the run-queue entry, the task's slab entry, the task). The pick looks
//! `PEEK` draws ahead of the schedule stream to guess the next picks and
//! asks the CPU to fetch a pipeline of what they will read while this
//! step's task runs. A wrong guess only wastes a prefetch: each draw is
//! consumed exactly when it would have been drawn, so the schedule is the
//! same with or without the pipeline (executor/tests.rs checks it).

use super::{Runnable, Strategy};
use crate::simulation::core::seed;
use rand_core::RngCore;

/// How many schedule draws ahead the pick looks to prefetch.
const PEEK: usize = 10;
/// How many picks ahead the pipeline fetches a pick's slab entry.
const SLAB_AHEAD: usize = PEEK / 2;
/// How many picks ahead the pipeline fetches a pick's task. Three ahead
/// (index 2): one ahead the lines had not arrived when polled (pinned A/B,
/// spawn_yield: 176 ms at one ahead, 137 at two, 123 at three, 132 at four,
/// 167 at five).
const TASK_AHEAD: usize = 2;

/// The ring that holds the peeked draws: a power of two at least `PEEK`.
const PEEK_RING: usize = 16;

pub(crate) struct Random {
    rng: seed::Stream,
    /// The schedule stream's next draws, taken early to prefetch the tasks
    /// they will probably pick; each is consumed exactly when it would have
    /// been drawn, so the schedule is unchanged.
    peek: [u64; PEEK_RING],
    /// How many draws `peek` holds, from index `first` on (a ring: taking
    /// one is an index step, not a shift).
    peeked: usize,
    first: usize,
}

impl Strategy for Random {
    const NAMES: &'static [&'static str] = &["random"];

    fn new(_variant: usize, seed: u64) -> Random {
        Random {
            rng: seed::stream(seed, "schedule"),
            peek: [0; PEEK_RING],
            peeked: 0,
            first: 0,
        }
    }

    #[inline(always)]
    fn pick(&mut self, runnable: &mut Runnable<'_>) -> (u32, u64) {
        let len = runnable.len();
        let i = if len == 1 {
            0
        } else {
            seed::below(self.draw(), len as u64)
        };
        let picked = runnable.swap_remove(i as usize);
        if len > runnable.prefetch_min() {
            self.prefetch_next_picks(runnable);
        }
        picked
    }
}

impl Random {
    /// The next draw of the schedule stream (an early one if peeked).
    #[inline]
    fn draw(&mut self) -> u64 {
        if self.peeked == 0 {
            return self.rng.next_u64();
        }
        let x = self.peek[self.first];
        self.first = (self.first + 1) % PEEK_RING;
        self.peeked -= 1;
        x
    }

    /// Guesses the next picks (the next draws of the schedule stream, with
    /// the run queue one shorter per pick: the picked task waits or yields,
    /// which defers it) and asks the CPU to fetch, while this step's task
    /// runs, a pipeline of what those picks will read: the run-queue entry
    /// of the pick `PEEK - 1` ahead, the slab entry of the one `SLAB_AHEAD`
    /// ahead (its queue entry fetched some steps ago), and the task of the
    /// one `TASK_AHEAD` ahead.
    #[inline]
    fn prefetch_next_picks(&mut self, runnable: &Runnable<'_>) {
        while self.peeked < PEEK {
            self.peek[(self.first + self.peeked) % PEEK_RING] = self.rng.next_u64();
            self.peeked += 1;
        }
        let len = runnable.len();
        let index = |k: usize| {
            let draw = self.peek[(self.first + k) % PEEK_RING];
            seed::below(draw, len.saturating_sub(k) as u64) as usize
        };
        runnable.prefetch_task(index(TASK_AHEAD));
        runnable.prefetch_slab(index(SLAB_AHEAD));
        runnable.prefetch_entry(index(PEEK - 1));
    }
}
