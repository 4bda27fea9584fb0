//! The imperative world (seed 003's `SimWorld`): one simulation driven by
//! hand from a plain `#[test]`, for single-node tests without the
//! attribute.
//!
//! ```ignore
//! let mut world = sim::World::new(0xC0FFEE);
//! let worker = world.spawn(worker_loop());
//! world.advance(Duration::from_millis(250)); // timers due by then fire
//! assert_eq!(world.now(), Duration::from_millis(250));
//! let jobs = world.rng().below(4);           // the test's own choices
//! let done = world.block_on(ask(&worker, Completed));
//! ```
//!
//! # What each call does to the clock
//!
//! - [`World::block_on`] runs the simulation until the future completes;
//!   the clock jumps to the next timer whenever nothing is runnable, as in
//!   any simulated `block_on`.
//! - [`World::advance`] runs everything due up to `now + d`, including the
//!   tasks woken by timers due exactly then, and leaves the clock exactly
//!   at `now + d` (to the nanosecond).
//! - [`World::pump`] runs every runnable task (and what they wake) without
//!   moving the clock; timers due at the current instant fire.
//!
//! Between calls nothing runs: the world is inert until driven.

use super::rng::Rng;
use sim_runtime::__private::harness;
use sim_runtime::runtime::{Builder, EnterGuard, Runtime};
use sim_runtime::sim as rt;
use sim_runtime::task::JoinHandle;
use std::future::Future;
use std::panic::{AssertUnwindSafe, Location};
use std::time::Duration;

/// One simulation (its main node, network, disks and virtual clock) driven
/// by hand: `block_on`, `advance`, `pump`, `now`, `rng`, `spawn`.
///
/// Everything it does is a function of its seed: the schedule, the order
/// of timers due at the same instant, and the draws of [`World::rng`].
/// Build it on the thread that uses it (a simulation is one thread), and
/// not inside another simulation.
pub struct World {
    rt: Runtime,
    seed: u64,
    rng: Rng,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("seed", &self.seed)
            .field("now", &self.now())
            .finish_non_exhaustive()
    }
}

impl World {
    /// A fresh simulation of `seed` (the environment's `SIM_SEED` does not
    /// apply: the test names its seed). Time starts at zero.
    pub fn new(seed: u64) -> World {
        super::liveness::reset();
        let rt = Builder::new_current_thread()
            .enable_all()
            .sim_seed(seed)
            .build()
            .expect("sim::World::new: a simulated runtime always builds");
        World {
            rt,
            seed,
            rng: Rng::from_seed(harness::child_seed(seed, "world.rng")),
        }
    }

    /// The world's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Runs the simulation until `future` completes and returns its output;
    /// virtual time jumps to the next timer whenever nothing is runnable.
    ///
    /// # Panics
    /// If `future` can never complete (nothing is runnable, no timer is
    /// pending): the message says so and names every task still alive, by
    /// name, node and spawn location. Also on the simulation's other
    /// failures (a task's unobserved panic, the step or time limit) and if
    /// `future` panics.
    #[track_caller]
    pub fn block_on<F: Future>(&mut self, future: F) -> F::Output {
        let caller = Location::caller();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| self.rt.block_on(future)));
        match result {
            Ok(v) => v,
            Err(payload) => {
                let text = payload
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| payload.downcast_ref::<&'static str>().copied());
                match text {
                    Some(text) if text.starts_with("sim: deadlock:") => panic!(
                        "sim::World::block_on at {caller}: the future can never complete: it \
                         is parked waiting for something that no task and no timer will ever \
                         provide (World seed {}).\n{text}",
                        self.seed
                    ),
                    _ => std::panic::resume_unwind(payload),
                }
            }
        }
    }

    /// Runs everything due in the next `duration` of virtual time: every
    /// timer due up to `now + duration` fires, the tasks it wakes run
    /// (including those woken exactly at the end), and the clock ends at
    /// exactly `now + duration`.
    ///
    /// # Panics
    /// On the simulation's failures (see [`World::block_on`]), e.g. when
    /// `now + duration` passes the virtual-time limit (`SIM_TIME_LIMIT`,
    /// by default a year).
    #[track_caller]
    pub fn advance(&mut self, duration: Duration) {
        let end = self.now() + duration;
        self.rt
            .block_on(async move { harness::sleep_exact(duration).await });
        // The tasks woken at `end` alongside this sleep have not all run
        // yet: `block_on` returns as soon as its own future is done.
        self.pump();
        assert_eq!(
            self.now(),
            end,
            "sim::World::advance: the clock must end exactly at now + duration"
        );
    }

    /// Runs every runnable task, and every task those wake, until none is
    /// runnable, without moving the clock (timers due at the current
    /// instant fire; later ones wait). Returns how many steps (task polls)
    /// ran; 0 means the world was already quiescent.
    ///
    /// # Panics
    /// On the simulation's failures (a task's unobserved panic, the step
    /// limit: a task that keeps itself runnable never lets a pump end).
    #[track_caller]
    pub fn pump(&mut self) -> u64 {
        harness::pump(&self.rt)
    }

    /// Virtual time since the world started.
    pub fn now(&self) -> Duration {
        let _in = self.rt.enter();
        rt::elapsed()
    }

    /// The world's own random stream (ChaCha8 from the seed's
    /// `"world.rng"` child): the test's choices replay with the seed, and
    /// drawing from it never shifts the simulation's own decisions.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Spawns `future` as a task of the main node. It runs when the world is
    /// driven (`block_on`, `advance`, `pump`); await its handle with
    /// [`World::block_on`].
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let _in = self.rt.enter();
        rt::spawn_on(rt::Node::MAIN, future)
    }

    /// Enters the world's context until the guard drops, so `sim::` calls
    /// (`sim::node(..)`, `sim::net::partition(..)`, …) and Tokio calls that
    /// need a runtime work from the test's own code.
    pub fn enter(&self) -> EnterGuard<'_> {
        self.rt.enter()
    }

    /// The simulated runtime itself.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }
}
