//! `sim::fs`: the disk's faults, by node (a [`Node`](crate::Node), its name,
//! or its id): the runtime's `sim_runtime::sim::fs`, re-exported as it is.
//! Each call is one decision in the run's fingerprint, seen by the harness
//! as `sim::net`'s are (liveness.rs).

pub use sim_runtime::sim::fs::*;
