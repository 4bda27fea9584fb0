//! `tokio::net` under simulation, bound to the `sim_net` model.
//!
//! Not built yet (issue 3). The executor calls the lifecycle hooks below when
//! a node dies or restarts.

use super::node::NodeId;

/// The simulated network.
#[derive(Default)]
pub(crate) struct Network {}

impl Network {
    /// The node's process died: its sockets close as the kernel closes them.
    pub(crate) fn on_kill(&mut self, _node: NodeId, _now: u64) {}

    /// The node's machine died: its host goes silent.
    pub(crate) fn on_crash(&mut self, _node: NodeId, _now: u64) {}

    /// The node runs again: old connections are stale.
    pub(crate) fn on_revive(&mut self, _node: NodeId, _now: u64) {}
}
