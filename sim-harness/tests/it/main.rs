//! sim-harness's integration tests that can share one process: node
//! addresses, fault plans and rollouts, fidelity regressions, histories,
//! the liveness phase, the harness end to end, std sockets, workloads and
//! `sim::World`.
//!
//! The others are binaries of their own, each for a reason:
//!
//! - `classes.rs`: the README shows one of its reports as the example
//!   (its trace target and replay line name this binary), and its hang
//!   case runs the binary again as a child, by test name, since a hang ends
//!   the process that has it;
//! - `coverage.rs` and `coverage_all.rs` check the catalog of
//!   sometimes-assertion sites, which is the binary's (gathered at link
//!   time): another file's sites would change what they check;
//! - `shards.rs` runs itself again as child processes, one per shard (as
//!   on separate machines), and its results name the binary's catalog of
//!   sites;
//! - `timeline.rs` sets `SIM_TIMELINE` and `SIM_EXPORT`, which the runner
//!   reads for the whole process;
//! - `sweep_output.rs` runs itself again as child processes (one aborts)
//!   and reads the log their sweeps leave, which another sweep of the same
//!   test in the binary would overwrite;
//! - `antithesis.rs` and `antithesis_coverage.rs` link antithesis_sdk,
//!   whose catalog of sites is the binary's (as `coverage.rs`'s is) and
//!   whose per-site trackers make the binary's simulations take turns.

#[cfg(simulation)]
#[path = "../common/mod.rs"]
mod common;

mod addresses;
mod disk;
mod faults;
mod fidelity;
mod history;
mod liveness;
mod smoke;
#[cfg(simulation)]
mod soak;
mod std_sockets;
mod workload;
mod world;
