//! Tokio, or a deterministic simulation of it.
//!
//! A service depends on this crate under the name `tokio`:
//!
//! ```toml
//! tokio = { package = "sim-runtime", version = "0.1", features = ["full"] }
//! ```
//!
//! - Built normally, this crate **is** Tokio: everything is re-exported from
//!   the real `tokio` crate with the same features, and nothing of the
//!   simulator is compiled.
//! - Built with `RUSTFLAGS="--cfg simulation"`, the same paths are served by a
//!   seeded, single-threaded executor with virtual time. `sync`, `io`,
//!   `join!`, `try_join!`, `pin!` and `task_local!` are still real Tokio's
//!   (they do not depend on the executor), so their types are identical to
//!   the ones other crates see. `select!` is Tokio's own macro with its
//!   fairness draw taken from the seed.
//!
//! ```
//! # #[cfg(simulation)] fn main() {}
//! # #[cfg(not(simulation))] fn main() {
//! let rt = sim_runtime::runtime::Builder::new_current_thread()
//!     .enable_all()
//!     .build()
//!     .unwrap();
//! let answer = rt.block_on(async {
//!     let task = sim_runtime::spawn(async { 40 + 2 });
//!     task.await.unwrap()
//! });
//! assert_eq!(answer, 42);
//! # }
//! ```
//!
//! What the simulation guarantees, and what it does not, is written in the
//! docs of the `sim` module (under `--cfg simulation`) and in ARCHITECTURE.md.

// The one switch of this crate: real Tokio, or the simulation. No other file
// tests `cfg(simulation)`. Under `cargo sim` (`--cfg sim_graph`) the `tokio`
// this crate depends on is already the simulation, built once for the whole
// dependency graph (cargo-sim patches `tokio` with this crate's `simulation`
// module), so this crate is a facade over it, as in production: one
// simulator, whichever name a crate reaches it by.

#[cfg(any(not(simulation), sim_graph))]
pub use tokio::*;

#[cfg(all(simulation, not(sim_graph)))]
mod simulation;

#[cfg(all(simulation, not(sim_graph)))]
pub use simulation::api::*;

// Not a switch: the hyper glue is written against this crate's own paths
// (`crate::spawn`, `crate::time`, `crate::net`), which are real Tokio's or
// the simulation's.
#[cfg(feature = "hyper")]
pub mod hyper;
