//! `tokio::fs` under simulation: each node's disk is a `sim_fs` model.
//!
//! Not built yet (issue 4). The executor calls the lifecycle hooks below when
//! a node dies or restarts.

use super::node::NodeId;

/// Every node's disk.
#[derive(Default)]
pub(crate) struct Disks {}

impl Disks {
    /// The node's process died: open handles close, the page cache stays.
    pub(crate) fn on_kill(&mut self, _node: NodeId) {}

    /// The node's machine died: only durable state survives (plus, when the
    /// fault plan says so, a torn prefix of unsynced writes drawn from
    /// `rng_seed`).
    pub(crate) fn on_crash(&mut self, _node: NodeId, _rng_seed: u64) {}
}
