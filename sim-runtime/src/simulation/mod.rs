//! The simulation: a seeded single-threaded executor with virtual time,
//! nodes, and the Tokio-shaped modules bound to it.
//!
//! Data flow of one step: [`executor::Exec::block_on`] drains the wake buffer
//! into the run queue, lets the schedule pick the next task (or advances the
//! virtual clock to the next timer when nothing is runnable), polls it inside
//! its node's context, and folds the decision into the run's fingerprint.

pub(crate) mod api;
pub(crate) mod buggify;
pub(crate) mod config;
pub mod control;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod cstate;
pub(crate) mod executor;
pub(crate) mod filefd;
pub mod fs;
#[doc(hidden)]
pub mod harness;
pub(crate) mod hooks;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod intercept;
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) mod intercept_fs;
pub(crate) mod intercept_net;
pub mod io;
pub(crate) mod mem;
pub mod net;
pub(crate) mod node;
pub(crate) mod observe;
pub mod private;
pub mod process;
pub(crate) mod record;
pub(crate) mod report;
pub mod runtime;
pub(crate) mod seed;
pub(crate) mod seed_run;
pub mod signal;
pub(crate) mod sockfd;
pub(crate) mod tape;
pub mod task;
pub mod time;
pub(crate) mod timer;
pub(crate) mod trace;
pub(crate) mod unsupported;
pub(crate) mod watchdog;
