//! The planted bug's sweep (`test = false`: it fails by design).
//! `cargo sim test -p tickets --test sweep` shows its report;
//! tests/found.rs runs it and checks what the report says.
#![cfg(sim_graph)]

mod scenario;

#[sim::test(seeds = 0..200)]
async fn unsynced_numbers() {
    scenario::scenario(tickets::Durability::AnswerUnsynced).await
}
