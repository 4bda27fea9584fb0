//! redb 5, unmodified, on a simulated node's disk: its `std::fs` and libc
//! calls reach the node's disk through the interposers.
//!
//! ```sh
//! RUSTFLAGS="--cfg simulation" cargo test -p stores --test redb
//! ```
#![cfg(simulation)]

mod common;

use common::{after, has_errno, End, Probe, EIO, ENOSPC};
use stores::{Durability, Redb};

impl Probe for Redb {
    const MAIN_FILE: &'static str = "kv.redb";
    fn is_sync_eio(e: &redb::Error) -> bool {
        matches!(e, redb::Error::Io(io) if io.raw_os_error() == Some(EIO)) || has_errno(e, EIO)
    }
    fn is_no_space(e: &redb::Error) -> bool {
        matches!(e, redb::Error::Io(io) if io.raw_os_error() == Some(ENOSPC))
            || has_errno(e, ENOSPC)
    }
}

#[sim::test(seeds = 0..100)]
async fn durable_commits_survive_a_crash() {
    common::durable_commits_survive_a_crash::<Redb>().await;
}

/// `Durability::None` commits stay in redb's in-process write buffer
/// (`write_barrier`: no file write), so unlike SQLite's they are lost on a
/// kill too: a kill runs no destructor, and the simulator must not let the
/// `Database`'s `Drop` (which commits and fsyncs them) reach the disk while
/// it tears the node's tasks down. A clean close keeps them.
#[sim::test(seeds = 0..100)]
async fn volatile_commits_are_lost_on_a_crash_and_a_kill_kept_on_close() {
    assert_eq!(after::<Redb>(Durability::Volatile, End::Crash).await, None);
    assert_eq!(after::<Redb>(Durability::Volatile, End::Kill).await, None);
    assert_eq!(
        after::<Redb>(Durability::Volatile, End::Close).await,
        Some(common::value(1))
    );
}

#[sim::test(seeds = 0..100)]
async fn durable_commits_survive_a_kill() {
    assert_eq!(
        after::<Redb>(Durability::Durable, End::Kill).await,
        Some(common::value(1))
    );
}

#[sim::test(seeds = 0..100)]
async fn fsync_eio_reaches_redb() {
    common::fsync_eio_reaches_the_store::<Redb>().await;
}

#[sim::test(seeds = 0..100)]
async fn enospc_reaches_redb() {
    common::enospc_reaches_the_store::<Redb>().await;
}

/// After a torn crash redb opens through its repair path (the database was
/// not closed cleanly) with the durable commit, and none of the volatile
/// ones: their pages, even where the write buffer spilled them into the
/// file unsynced, are not reachable from the durable header.
#[sim::test(seeds = 0..100)]
async fn torn_crash_recovers_the_durable_commit() {
    let found = common::after_a_torn_crash::<Redb>().await;
    assert!(
        found[1..].iter().all(Option::is_none),
        "redb: a Durability::None commit survived a crash: {:?}",
        found.iter().map(Option::is_some).collect::<Vec<_>>()
    );
}
