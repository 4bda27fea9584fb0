//! `sim::net`: the network's faults and settings, by node (a
//! [`Node`](crate::Node), its name, or its id): the runtime's
//! `sim_runtime::sim::net`, re-exported as it is. Each call is one decision
//! in the run's fingerprint, logged (target `sim`), drawn on the timeline,
//! and refused in the quiet phase of a liveness run when it injects a fault
//! (the harness sees every call through the runtime's observer:
//! liveness.rs). `sim::at(t, move || sim::net::partition("a", "b"))`
//! scripts any of them.

pub use sim_runtime::sim::net::*;
