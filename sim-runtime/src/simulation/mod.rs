//! The simulation: a seeded single-threaded executor with virtual time,
//! nodes, and the Tokio-shaped modules bound to it.
//!
//! Four layers, each a folder or a set of modules, lowest first; a layer
//! imports only from itself and the layers below it (`cargo xtask tidy`
//! checks it by path):
//!
//! - `core/`: tasks, the executor and its schedules, the clock and timers,
//!   nodes, the seed tree and tape, the fingerprint, reports. It imports
//!   nothing outside itself; drivers register with it ([`core::executor`]'s
//!   `Driver`), the interposers read its thread-local cells ([`core::hooks`]).
//! - the api: Tokio's shapes (`fs`, `net`, `io`, `process`, `runtime`,
//!   `signal`, `task`, `time`), each with its driver where it has one, and
//!   `sim_runtime::sim` (`control`, `observe`, `buggify`).
//! - `libc/`: the C entry points (`clock_gettime`, `getrandom`, sockets,
//!   names, files) that serve std and C libraries from the simulation.
//! - `run/`: the seed runner, what `#[tokio::test]` and sim-harness call.
//!
//! Data flow of one step: [`core::executor::Exec::block_on`] drains the wake
//! buffer into the run queue, lets the schedule pick the next task (or
//! advances the virtual clock to the next timer when nothing is runnable),
//! polls it inside its node's context, and folds the decision into the run's
//! fingerprint.

pub(crate) mod api;
pub(crate) mod core;
pub(crate) mod libc;
pub(crate) mod run;

pub(crate) mod buggify;
pub mod control;
pub mod fs;
pub mod io;
pub mod net;
pub(crate) mod observe;
pub mod process;
pub mod runtime;
pub mod signal;
pub mod task;
pub(crate) mod thread;
pub mod time;
pub(crate) mod unsupported;
