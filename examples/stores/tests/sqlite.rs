//! SQLite (rusqlite, bundled), unmodified, on a simulated node's disk, in
//! its default rollback-journal mode and in WAL mode.
//!
//! ```sh
//! RUSTFLAGS="--cfg simulation" cargo test -p stores --test sqlite
//! ```
#![cfg(simulation)]

mod common;

use common::{after, End, Probe};
use rusqlite::ffi;
use stores::sqlite_store::SqliteWal;
use stores::{Durability, Sqlite};

fn sqlite_code(e: &rusqlite::Error) -> Option<(ffi::ErrorCode, i32)> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some((f.code, f.extended_code)),
        _ => None,
    }
}

impl<const WAL: bool> Probe for stores::sqlite_store::SqliteStore<WAL> {
    const MAIN_FILE: &'static str = "kv.sqlite";
    fn is_sync_eio(e: &rusqlite::Error) -> bool {
        sqlite_code(e) == Some((ffi::ErrorCode::SystemIoFailure, ffi::SQLITE_IOERR_FSYNC))
    }
    fn is_no_space(e: &rusqlite::Error) -> bool {
        matches!(sqlite_code(e), Some((ffi::ErrorCode::DiskFull, _)))
    }
}

/// Also run twice per seed with the same decisions (the harness compares
/// the runs' fingerprints): SQLite's process-global PRNG, seeded once per
/// process from `/dev/urandom`, must not make one seed's run differ from
/// the next's.
#[sim::test(seeds = 0..100, check_determinism)]
async fn durable_commits_survive_a_crash() {
    common::durable_commits_survive_a_crash::<Sqlite>().await;
}

#[sim::test(seeds = 0..100, check_determinism)]
async fn wal_durable_commits_survive_a_crash() {
    common::durable_commits_survive_a_crash::<SqliteWal>().await;
}

/// `synchronous=OFF`: SQLite writes the pages to the OS and never fsyncs.
/// A crash keeps only what was synced: the commit is gone. A kill keeps the
/// page cache: the commit is there.
#[sim::test(seeds = 0..100)]
async fn unsynced_commits_are_lost_on_a_crash_kept_on_a_kill() {
    assert_eq!(
        after::<Sqlite>(Durability::Volatile, End::Crash).await,
        None
    );
    assert_eq!(
        after::<Sqlite>(Durability::Volatile, End::Kill).await,
        Some(common::value(1))
    );
}

#[sim::test(seeds = 0..100)]
async fn wal_unsynced_commits_are_lost_on_a_crash_kept_on_a_kill() {
    assert_eq!(
        after::<SqliteWal>(Durability::Volatile, End::Crash).await,
        None
    );
    assert_eq!(
        after::<SqliteWal>(Durability::Volatile, End::Kill).await,
        Some(common::value(1))
    );
}

#[sim::test(seeds = 0..100)]
async fn fsync_eio_reaches_sqlite() {
    common::fsync_eio_reaches_the_store::<Sqlite>().await;
}

#[sim::test(seeds = 0..100)]
async fn enospc_reaches_sqlite() {
    common::enospc_reaches_the_store::<Sqlite>().await;
}

/// WAL mode's recovery path: unsynced commits appended to the WAL, then a
/// crash that keeps a seeded prefix of the WAL's unsynced writes (a frame
/// may be cut in the middle). SQLite's WAL recovery checks each frame's
/// checksum chain and keeps only whole transactions up to the first bad
/// frame: what comes back is the durable commit plus a prefix of the
/// unsynced ones, in commit order, never a later one without an earlier.
#[sim::test(seeds = 0..100)]
async fn wal_torn_crash_recovers_a_prefix_of_the_commits() {
    let found = common::after_a_torn_crash::<SqliteWal>().await;
    let kept = found[1..].iter().take_while(|v| v.is_some()).count();
    assert!(
        found[1 + kept..].iter().all(Option::is_none),
        "SQLite WAL recovery kept a commit after a lost one: {:?}",
        found.iter().map(Option::is_some).collect::<Vec<_>>()
    );
}

/// A real durability gap the simulated disk finds, as SQLite documents it:
/// in rollback-journal mode the commit point is the journal's unlink, and
/// under `synchronous=FULL` (the default of many bindings) SQLite does not
/// fsync the directory after it; a power loss right after the commit
/// brings the journal back, and the next open rolls the transaction back.
/// `synchronous=EXTRA` (what [`Durability::Durable`] uses) syncs it.
#[sim::test(seeds = 0..100)]
async fn full_in_delete_mode_rolls_a_commit_back_after_a_crash() {
    for (level, kept) in [("FULL", false), ("EXTRA", true)] {
        let node = common::store_node_named(&format!("store-{level}"));
        let ((), _open) = common::open_and_keep::<Sqlite, _, _, _>(&node, move |svc| async move {
            svc.call(move |db| db.put_with_synchronous("k", "v", level))
                .await
                .unwrap();
        })
        .await;
        node.crash();
        node.restart();
        let got = common::reopen_and::<Sqlite, _, _, _>(&node, |svc| async move {
            svc.get("k").await.unwrap()
        })
        .await;
        assert_eq!(
            got.is_some(),
            kept,
            "synchronous={level}: the commit was {} after a crash",
            if got.is_some() { "kept" } else { "lost" }
        );
        // A hot journal was found and rolled back (FULL), or none was
        // left (EXTRA): either way no journal remains after the reopen.
        let journal = common::in_dir("kv.sqlite-journal");
        let left = node
            .spawn(async move { tokio::fs::try_exists(&journal).await })
            .await
            .unwrap()
            .unwrap();
        assert!(!left, "synchronous={level}: a journal is left behind");
        common::files_are_simulated::<Sqlite>(&node).await;
    }
}
