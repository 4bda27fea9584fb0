//! What simulated code reaches through libc and std rather than through
//! Tokio, and what the interposers (`simulation::intercept`,
//! `intercept_net`) make of it:
//!
//! - `intercept`: clocks, randomness, thread creation and the CPU count come
//!   from the simulation inside a simulation thread, and are the real ones
//!   everywhere else (x86_64 Linux with glibc, under `--cfg simulation`);
//! - `std_fs`: `std::fs` and libc file calls on a node reach its simulated
//!   disk (one disk with `tokio::fs`, crash and kill, faults, per node);
//! - `host_files`: the host's CA bundle, read-only on every node, the
//!   same for every seed and outside the fingerprint;
//! - `std_bridges`: a directory made through `std::fs` is usable with
//!   `tokio::fs` (both modes), a signal a process sends itself is the
//!   calling node's, and one open file passes between tokio and std.
//!
//! A binary of its own, not a module of `tests/it`: its tests call libc
//! directly, and a regression there reaches the real process (a signal the
//! interposers let through ends it), which must not take the other suites
//! down with it. `intercept::values_are_identical_across_processes` runs
//! this binary again as its child.

#[cfg(all(
    simulation,
    target_os = "linux",
    target_arch = "x86_64",
    target_env = "gnu"
))]
mod host_files;
mod intercept;
mod std_bridges;
#[cfg(all(
    simulation,
    target_os = "linux",
    target_arch = "x86_64",
    target_env = "gnu"
))]
mod std_fs;

/// The message of a caught panic (a failed run's report).
#[cfg_attr(not(simulation), allow(dead_code))]
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
