//! The simulated network as a synchronous, deterministic data structure.
//!
//! Not built yet: this crate holds its place in the dependency order
//! (models ← sim-runtime ← sim-harness). Under `--cfg simulation`,
//! `tokio::net` is not provided until it is, so a service that uses it fails
//! to compile in simulation rather than silently reaching real sockets.
