//! `sim`: the simulation test harness (`#[sim::test]`, nodes, lifecycle, faults,
//! replay and reports).
//!
//! Not built yet beyond its place in the dependency order: the runtime it
//! drives lives in `sim-runtime` (see its `sim` module under
//! `--cfg simulation`). The harness issue fills this crate.

#[doc(hidden)]
pub use sim_harness_macros as __macros;
pub use sim_runtime as runtime;
