//! The harness under `--cfg simulation`.

pub mod fs;
pub mod net;
mod node;
pub(crate) mod run;
mod trace;

pub use node::{node, AsNode, Node, NodeBuilder};
pub use sim_runtime::signal::unix::SignalKind;
pub use sim_runtime::sim::{at, elapsed, fingerprint, fork_seed, seed, step};

/// Runs `action` after `delay` of virtual time from now (the scripted form
/// of any lifecycle or fault call).
#[track_caller]
pub fn after(delay: std::time::Duration, action: impl FnOnce() + 'static) -> sim_runtime::task::JoinHandle<()> {
    at(elapsed() + delay, action)
}
