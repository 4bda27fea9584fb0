//! The runners: one seed's run from start to read-back (`seed`), what
//! sim-harness needs of it (`harness`), what the `#[tokio::test]` and
//! `#[tokio::main]` macros expand to (`private`), and the timeline's
//! recorder (`record`). The top layer: it may use everything below.

#[doc(hidden)]
pub mod harness;
pub mod private;
pub(crate) mod record;
pub(crate) mod seed_run;
