//! Proc macros of sim-harness (`#[sim::test]` arrives with the harness issue).
