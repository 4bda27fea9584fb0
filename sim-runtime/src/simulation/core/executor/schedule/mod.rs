//! Schedule strategies: which runnable task runs next.
//!
//! A strategy is a type that implements [`Strategy`], in a file of its own
//! here, registered by one line of the `strategies!` list below. That line
//! makes its names values of `SIM_SCHEDULE` and `schedule = ".."`, and makes
//! the executor dispatch to it: a `match` over the registered strategies,
//! so a step makes no virtual call and the random pick stays inlined.
//!
//! Two modifiers bend whichever strategy runs: early timers (early.rs: now
//! and then the clock jumps to the next deadline while tasks are runnable)
//! and yields ahead (yield_ahead.rs: on a multi-thread runtime a `yield_now`
//! is a plain wake). A run's strategy and modifiers are a function of its
//! seed: the portfolio below, and each modifier's own label of the seed
//! tree.
//!
//! What a strategy may depend on: what it sees when it picks ([`Runnable`]:
//! the runnable tasks in the order they became runnable) and the draws of
//! streams of the seed tree it makes in `new` (`seed::stream`), whose draws
//! go through the tape (tape.rs). A strategy with a generator of its own
//! would be invisible to tapes, shrinking and fuzzing; one that looked at
//! addresses or wall time would not replay.

mod early;
mod fifo;
mod pct;
mod random;
#[cfg(test)]
mod tests;
mod yield_ahead;

pub(crate) use self::early::Early;
pub(crate) use self::yield_ahead::{runs_ahead, yield_ahead_for};

use super::prefetch;
use super::queue::RunQueue;
use super::Task;
use crate::simulation::core::config::Config;
use crate::simulation::core::mem::HugeVec;

/// A schedule strategy: the executor asks it, at each step at which a task
/// is runnable, which one runs.
pub(crate) trait Strategy {
    /// The names it is chosen by (`SIM_SCHEDULE=<name>`), as reports print
    /// them: one per variant (PCT has one per depth).
    const NAMES: &'static [&'static str];

    /// Whether it keeps Tokio's current-thread order exactly: then yields
    /// never run ahead under it (yield_ahead.rs).
    const KEEPS_TOKIO_ORDER: bool = false;

    /// The strategy named `NAMES[variant]`, for a run of `seed`: any
    /// randomness it needs is a stream of the seed tree made here.
    fn new(variant: usize, seed: u64) -> Self;

    /// Takes the task to poll next out of `runnable`, which is never empty.
    fn pick(&mut self, runnable: &mut Runnable<'_>) -> (u32, u64);
}

/// Registers strategies: `Variant(path::Type)`, one line each. Generates
/// the enum the executor dispatches on and the lookup by name.
macro_rules! strategies {
    ($($(#[$attr:meta])* $variant:ident($ty:ty),)*) => {
        /// The state of one run's strategy, one variant per registered one.
        /// Held inline although the random strategy's stream is large: it
        /// is the default and the hot one, and a box would put it a pointer
        /// away on every pick (there is one per run). With a plain tag
        /// (`repr(u8)`), the match on every pick reads one byte rather than
        /// decoding a niche.
        #[allow(clippy::large_enum_variant)]
        #[repr(u8)]
        pub(crate) enum Registered {
            $($(#[$attr])* $variant($ty),)*
        }

        /// Which registered strategy, without its state.
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum Kind {
            $($(#[$attr])* $variant,)*
        }

        impl Kind {
            /// Every registered strategy, in registration order (the order
            /// the accepted names are listed in).
            const ALL: &'static [Kind] = &[$($(#[$attr])* Kind::$variant,)*];

            fn names(self) -> &'static [&'static str] {
                match self {
                    $($(#[$attr])* Kind::$variant => <$ty as Strategy>::NAMES,)*
                }
            }

            fn keeps_tokio_order(self) -> bool {
                match self {
                    $($(#[$attr])* Kind::$variant => <$ty as Strategy>::KEEPS_TOKIO_ORDER,)*
                }
            }

            fn start(self, variant: usize, seed: u64) -> Registered {
                match self {
                    $($(#[$attr])* Kind::$variant => {
                        Registered::$variant(<$ty as Strategy>::new(variant, seed))
                    })*
                }
            }
        }

        impl Registered {
            #[inline(always)]
            fn pick(&mut self, runnable: &mut Runnable<'_>) -> (u32, u64) {
                match self {
                    $($(#[$attr])* Registered::$variant(s) => s.pick(runnable),)*
                }
            }
        }
    };
}

strategies! {
    Random(random::Random),
    Fifo(fifo::Fifo),
    Pct(pct::Pct),
    #[cfg(test)]
    Lifo(tests::Lifo),
}

/// A registered strategy by name: what a run's config holds and reports
/// print (`Schedule::name`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    kind: Kind,
    /// Which of the strategy's `NAMES`.
    variant: u8,
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Schedule {
    /// The strategy's name, as `SIM_SCHEDULE` takes it and reports print it.
    pub fn name(self) -> &'static str {
        self.kind.names()[usize::from(self.variant)]
    }

    /// The registered strategy called `name`.
    pub(crate) fn named(name: &str) -> Option<Schedule> {
        Kind::ALL.iter().find_map(|&kind| {
            let variant = kind.names().iter().position(|n| *n == name)?;
            Some(Schedule {
                kind,
                variant: u8::try_from(variant).expect("a strategy has few names"),
            })
        })
    }

    /// The default of `#[tokio::test]` and `Runtime`: uniformly at random
    /// among the runnable tasks.
    pub(crate) fn random() -> Schedule {
        Schedule::named("random").expect("random is registered")
    }

    /// The portfolio: half the seeds uniform random, the others PCT at
    /// depth 2, 3 and 4 in turn (seed mod 6: 0, 2, 4 → random; 1 → pct2;
    /// 3 → pct3; 5 → pct4), so any six consecutive seeds try every
    /// strategy and a seed alone names its own.
    pub(crate) fn portfolio(seed: u64) -> Schedule {
        let name = match seed % 6 {
            1 => "pct2",
            3 => "pct3",
            5 => "pct4",
            _ => "random",
        };
        Schedule::named(name).expect("the portfolio's strategies are registered")
    }

    /// A registered name, or `portfolio` (resolved for `seed`).
    pub(crate) fn parse(v: &str, seed: u64) -> Option<Schedule> {
        match v {
            "portfolio" => Some(Schedule::portfolio(seed)),
            _ => Schedule::named(v),
        }
    }

    /// The accepted values of `SIM_SCHEDULE` and `schedule = ".."`, for
    /// the panic on an unknown one.
    pub(crate) fn accepted() -> String {
        let mut names = vec!["portfolio"];
        for kind in Kind::ALL {
            names.extend_from_slice(kind.names());
        }
        names.join(", ")
    }

    /// Whether the strategy keeps Tokio's current-thread order exactly
    /// ([`Strategy::KEEPS_TOKIO_ORDER`]).
    pub(crate) fn keeps_tokio_order(self) -> bool {
        self.kind.keeps_tokio_order()
    }
}

/// One run's schedule: its strategy, and early timers when the run has
/// them (yields ahead is a setting of the config, read where a task
/// yields: yield_ahead.rs).
pub(crate) struct Scheduler {
    strategy: Registered,
    /// Early timers, when the run has them (early.rs).
    pub(crate) early: Option<Early>,
}

impl Scheduler {
    /// The schedule of a run of `config`. PCT draws its change points here,
    /// before early timers draw their odds: the order of the tape.
    pub(crate) fn new(config: &Config) -> Scheduler {
        let schedule = config.schedule;
        Scheduler {
            strategy: schedule
                .kind
                .start(usize::from(schedule.variant), config.seed),
            early: config.early_timers.then(|| Early::new(config.seed)),
        }
    }

    /// The strategy's pick among `runnable` (never empty).
    #[inline(always)]
    pub(crate) fn pick(&mut self, runnable: &mut Runnable<'_>) -> (u32, u64) {
        self.strategy.pick(runnable)
    }

    /// One more task is owed a poll before the next early jump (early.rs).
    pub(crate) fn owe(&mut self) {
        self.early_timers().owe();
    }

    /// A task owed a poll was polled, or is gone.
    pub(crate) fn paid(&mut self) {
        self.early_timers().paid();
    }

    fn early_timers(&mut self) -> &mut Early {
        self.early
            .as_mut()
            .expect("a poll is owed only in runs with early timers")
    }
}

/// What a strategy sees when it picks: the runnable tasks, as run-queue
/// entries (slot, task id) in the order they became runnable, with the
/// main future's entry as slot `MAIN_SLOT`, id 0. It takes one out; the
/// others stay runnable. Tasks on a paused node may be among them (the
/// executor parks such a pick and asks again).
pub(crate) struct Runnable<'a> {
    queue: &'a mut RunQueue,
    /// The task slab, only to prefetch what a pick to come will read.
    tasks: &'a HugeVec<Option<Task>>,
    /// Above this many runnable tasks, prefetching pays.
    prefetch_min: usize,
}

impl<'a> Runnable<'a> {
    #[inline(always)]
    pub(crate) fn new(
        queue: &'a mut RunQueue,
        tasks: &'a HugeVec<Option<Task>>,
        prefetch_min: usize,
    ) -> Runnable<'a> {
        Runnable {
            queue,
            tasks,
            prefetch_min,
        }
    }

    /// How many tasks are runnable.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// The task id of entry `i` (0 for the main future).
    #[inline]
    pub(crate) fn id(&self, i: usize) -> u64 {
        self.queue[i].1
    }

    /// The task ids, in order.
    #[inline]
    pub(crate) fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.queue.iter().map(|&(_, id)| id)
    }

    /// Takes the entry that became runnable first.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> (u32, u64) {
        self.queue.pop_front().expect("a task is runnable")
    }

    /// Takes entry `i`; the last entry takes its place (the cheapest
    /// removal, for strategies to which the order means nothing).
    #[inline(always)]
    pub(crate) fn swap_remove(&mut self, i: usize) -> (u32, u64) {
        self.queue
            .swap_remove_back(i)
            .expect("the index is below len")
    }

    /// Takes entry `i`, keeping the order of the others.
    #[inline]
    pub(crate) fn remove(&mut self, i: usize) -> (u32, u64) {
        self.queue.remove(i).expect("the index is below len")
    }

    /// Above this many runnable tasks, prefetching pays (the `prefetch_*`
    /// calls below); below, their data is in the cache already.
    #[inline(always)]
    pub(crate) fn prefetch_min(&self) -> usize {
        self.prefetch_min
    }

    /// Asks the CPU to fetch run-queue entry `i`.
    #[inline(always)]
    pub(crate) fn prefetch_entry(&self, i: usize) {
        if let Some(q) = self.queue.get(i) {
            prefetch(q as *const (u32, u64));
        }
    }

    /// Asks the CPU to fetch the slab entry of run-queue entry `i` (which
    /// must have been fetched some time before).
    #[inline(always)]
    pub(crate) fn prefetch_slab(&self, i: usize) {
        if let Some(entry) = self.slab_entry(i) {
            prefetch(entry as *const Option<Task>);
        }
    }

    /// Asks the CPU to fetch the task of run-queue entry `i` (whose slab
    /// entry must have been fetched some time before): three lines, the
    /// header, the future and, for a small future, the join slot (the
    /// task's last poll completes it: a miss that was 9% of spawn_yield in
    /// perf).
    #[inline(always)]
    pub(crate) fn prefetch_task(&self, i: usize) {
        if let Some(Some(t)) = self.slab_entry(i) {
            if let Some(f) = &t.future {
                let p = f.task().as_ptr();
                prefetch(p);
                prefetch(p.cast::<u8>().wrapping_add(64));
                prefetch(p.cast::<u8>().wrapping_add(128));
            }
        }
    }

    #[inline(always)]
    fn slab_entry(&self, i: usize) -> Option<&'a Option<Task>> {
        let &(slot, _) = self.queue.get(i)?;
        self.tasks.get(slot as usize)
    }
}
