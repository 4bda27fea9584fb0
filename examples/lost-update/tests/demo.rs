//! The main demo's failing test (run by `cargo xtask demo`; excluded from
//! `cargo test` because it fails by design: it is the bug being found).
//!
//! `SIM_SEEDS=0..100 RUSTFLAGS="--cfg simulation" cargo test -p lost-update --test demo`

use lost_update::{check, rush, TicketOffice};
use std::sync::Arc;

#[tokio::test]
async fn ticket_office_never_oversells() {
    let office = Arc::new(TicketOffice::buggy(3));
    let tickets = rush(office, 6).await;
    check(&tickets, 3).unwrap();
}
