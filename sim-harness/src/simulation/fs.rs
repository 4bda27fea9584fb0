//! `sim::fs`: the disk's faults, by node (a [`Node`](crate::Node), its name,
//! or its id). Each is one call, recorded in the run's fingerprint.

use crate::AsNode;
use sim_runtime::sim::fs as rt;
use std::path::Path;
use std::time::Duration;

pub use rt::{Eio, Faults, IoOp};

/// EIO on `op` for paths under `path` (or the whole disk).
#[track_caller]
pub fn fail_io(node: impl AsNode, op: IoOp, path: Option<&Path>) {
    super::liveness::fault(&format!("a disk fault ({op:?} fails)"));
    tracing::info!(target: "sim", ?op, ?path, "disk: fail io");
    rt::fail_io(node.node_id(), op, path);
}

/// Ends the EIO faults of `op`.
#[track_caller]
pub fn heal_io(node: impl AsNode, op: IoOp) {
    rt::heal_io(node.node_id(), op);
}

/// The disk's capacity (ENOSPC beyond it); `None` is unbounded.
#[track_caller]
pub fn set_capacity(node: impl AsNode, capacity_bytes: Option<u64>) {
    if capacity_bytes.is_some() {
        super::liveness::fault("a disk capacity");
    }
    rt::set_capacity(node.node_id(), capacity_bytes);
}

/// Latency of every disk operation.
#[track_caller]
pub fn set_latency(node: impl AsNode, latency: Duration) {
    rt::set_latency(node.node_id(), latency);
}

/// The next `count` syncs fail.
#[track_caller]
pub fn fail_syncs(node: impl AsNode, count: u32) {
    if count > 0 {
        super::liveness::fault("failing syncs");
    }
    tracing::info!(target: "sim", count, "disk: fail syncs");
    rt::fail_syncs(node.node_id(), count);
}

/// A crash keeps a seeded, torn prefix of unsynced writes.
#[track_caller]
pub fn set_torn_writes(node: impl AsNode, on: bool) {
    if on {
        super::liveness::fault("torn writes");
    }
    rt::set_torn_writes(node.node_id(), on);
}

/// Clears every disk fault of the node.
#[track_caller]
pub fn clear_faults(node: impl AsNode) {
    rt::clear_faults(node.node_id());
}

/// The whole fault plan of a node.
#[track_caller]
pub fn set_faults(node: impl AsNode, faults: Faults) {
    if faults != Faults::default() {
        super::liveness::fault("a disk fault plan");
    }
    rt::set_faults(node.node_id(), faults);
}
