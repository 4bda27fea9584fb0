//! The core: tasks and the executor, schedules, the clock and timers, nodes,
//! the seed tree and its tape, the fingerprint, failure reports and the
//! watchdog. Nothing here imports anything outside `core/`: drivers register
//! with the executor (`executor::Driver`), the api calls in, and the libc
//! interposers read the thread-local cells of [`hooks`].

pub(crate) mod config;
pub(crate) mod executor;
pub(crate) mod hooks;
pub(crate) mod mem;
pub(crate) mod node;
pub(crate) mod outside;
pub(crate) mod report;
pub(crate) mod seed;
pub(crate) mod tape;
pub(crate) mod task;
pub(crate) mod timer;
pub(crate) mod trace;
pub(crate) mod watchdog;
