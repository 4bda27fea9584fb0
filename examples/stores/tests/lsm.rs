//! lsm-tree 3 (fjall's engine), unmodified, on a simulated node's disk.
//!
//! ```sh
//! RUSTFLAGS="--cfg simulation" cargo test -p stores --test lsm
//! ```
#![cfg(simulation)]

mod common;

use common::{after, has_errno, End, Probe, EIO, ENOSPC};
use stores::{Durability, Lsm};

impl Probe for Lsm {
    const MAIN_FILE: &'static str = "lsm/current";
    fn is_sync_eio(e: &lsm_tree::Error) -> bool {
        matches!(e, lsm_tree::Error::Io(io) if io.raw_os_error() == Some(EIO)) || has_errno(e, EIO)
    }
    fn is_no_space(e: &lsm_tree::Error) -> bool {
        matches!(e, lsm_tree::Error::Io(io) if io.raw_os_error() == Some(ENOSPC))
            || has_errno(e, ENOSPC)
    }
}

#[sim::test(seeds = 0..100)]
async fn durable_commits_survive_a_crash() {
    common::durable_commits_survive_a_crash::<Lsm>().await;
}

/// lsm-tree has no journal: a write without a flush lives only in the
/// process's memtable, so it is lost on a crash, on a kill and on a clean
/// close alike (lsm-tree does not flush on drop). "Lost on a crash, kept on
/// a kill" is fjall's journal's behaviour (tests/fjall.rs).
#[sim::test(seeds = 0..100)]
async fn unflushed_writes_are_lost_on_a_crash_a_kill_and_a_close() {
    assert_eq!(after::<Lsm>(Durability::Volatile, End::Crash).await, None);
    assert_eq!(after::<Lsm>(Durability::Volatile, End::Kill).await, None);
    assert_eq!(after::<Lsm>(Durability::Volatile, End::Close).await, None);
    assert_eq!(
        after::<Lsm>(Durability::Durable, End::Crash).await,
        Some(common::value(1))
    );
}

#[sim::test(seeds = 0..100)]
async fn fsync_eio_reaches_lsm_tree() {
    common::fsync_eio_reaches_the_store::<Lsm>().await;
}

#[sim::test(seeds = 0..100)]
async fn enospc_reaches_lsm_tree() {
    common::enospc_reaches_the_store::<Lsm>().await;
}

// No torn-write test: every file lsm-tree writes is fsynced (and its
// directory too) before the call that wrote it returns, and a crash lands
// between calls (a store's call runs to its end in one step), so a crash
// finds no unsynced lsm-tree write to tear.
