//! `tokio::task::coop` under simulation: real Tokio's.
//!
//! Tokio gives each task poll a budget of operations so that a task whose
//! resources are always ready still yields. The simulation polls every task
//! inside a task of a bare real Tokio runtime, one poll per real poll
//! (core/executor/context.rs), so each simulated poll starts with Tokio's own
//! fresh budget, and these functions, Tokio's sync primitives, its io
//! utilities and the simulated leaf futures (sleeps, join handles,
//! sockets) all spend that one budget, as on Tokio.

pub use tokio::task::coop::{
    consume_budget, cooperative, has_budget_remaining, poll_proceed, unconstrained, Coop,
    RestoreOnPending, Unconstrained,
};
