//! `sim`: the simulation test harness for services written against Tokio
//! (through `sim-runtime`).
//!
//! ```ignore
//! #[sim::test(seeds = 0..500)]
//! async fn replicas_agree() {
//!     let db = sim::node("db").ip("10.0.0.5").start(|| my_service::serve());
//!     sim::net::partition("db", "client");
//!     sim::at(secs(30), move || db.crash());
//!     // Chaos for a minute, then the harness heals everything …
//!     sim::heal_after(secs(60));
//!     // … drive requests, check what the service promised, and that it
//!     // recovers: the bound counts from the heal.
//!     sim::eventually("writes succeed", secs(10), || write_ok()).await;
//! }
//! ```
//!
//! Under `RUSTFLAGS="--cfg simulation"` each seed runs as if on a new OS
//! thread (a worker's thread-locals are made new after each) in its own
//! simulation (nodes, network, disks, virtual time); the seeds
//! come from the attribute, `SIM_SEED` (one), `SIM_SEEDS` (`0..1000`,
//! `3,7,9`), `SIM_SHARD=k/n`, and run `SIM_JOBS` at a time. A failure says
//! its class, seed, step and virtual time, shows the trace's last lines and
//! path (`target/sim/<test>/<seed>.trace`), whether a rerun of the seed
//! reproduced it, and the one command that replays it. Without the cfg, a
//! `#[sim::test]` is an ignored test that says how to run it.
//!
//! What a service promises is checked on what its clients saw:
//!
//! ```ignore
//! use sim::check::{Kv, KvOp, KvRet};
//! let history = sim::History::new();
//! let h = history.clone();
//! sim::Workload::new("kv")          // clients on their own nodes,
//!     .clients(2..=5)               // counts drawn from the swarm
//!     .ops(20..=100)
//!     .op("put", 3, move |mut op| {
//!         let h = h.clone();
//!         async move {
//!             let key = format!("k{}", op.rng().below(4));
//!             let call = h.invoke(op.client(), KvOp::Put(key.clone(), op.id()));
//!             match put(&key, op.id()).await {
//!                 Ok(()) => call.ok(KvRet::Put),
//!                 Err(_) => call.unknown(), // a timeout: it may have happened
//!             }
//!         }
//!     })
//!     .run()
//!     .await;
//! // Fails the run with the 1-minimal operations that cannot be
//! // linearized, drawn as a timeline.
//! history.assert_linearizable(&Kv::new());
//! ```
//!
//! [`History`] records each call with its virtual time and node; a call
//! ends `ok`, `fail` (certainly did not happen) or `unknown` (may have
//! happened; a call dropped by a crash is unknown). [`check`] is the
//! `sim-check` crate: the models (register, key-value map, counter, set,
//! FIFO queue, or any [`check::Model`]) and the linearizability search.
//! [`heal_after`] ends a run's chaos with a heal and makes every
//! [`eventually`] bound count from it; a fault after the heal fails the run.

pub use sim_harness_macros::test;

mod macros;
pub use sim_runtime as runtime;

pub mod fake;
pub use fake::contract;
// What `sim::fake` records and draws: the simulation's hooks, or, in a
// production build, nothing.
#[cfg(simulation)]
use simulation::fake as fake_env;
#[cfg(not(simulation))]
#[path = "fake/inert.rs"]
mod fake_env;

#[cfg(simulation)]
mod simulation;
#[cfg(simulation)]
pub use simulation::*;

#[doc(hidden)]
pub mod __private {
    #[cfg(simulation)]
    pub use crate::simulation::coverage::{hit, Site, SiteKind, SITES};
    #[cfg(simulation)]
    pub use crate::simulation::explore::{state, state_hash};
    #[cfg(simulation)]
    pub use crate::simulation::run::run;
    #[cfg(simulation)]
    pub use crate::simulation::seed::{Options, Seeds};
    #[cfg(simulation)]
    pub use linkme;

    /// A fault point's draw (see `sim::buggify!`).
    #[cfg(simulation)]
    #[inline]
    pub fn buggify(site: &'static str, num: u32, den: u32) -> bool {
        sim_runtime::sim::buggify(site, num, den)
    }

    /// A fault point in production: never.
    #[cfg(not(simulation))]
    #[inline(always)]
    pub const fn buggify(_site: &'static str, _num: u32, _den: u32) -> bool {
        false
    }
}
