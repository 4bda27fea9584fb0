//! The same services on real Tokio and the real disk (a temporary
//! directory): the service logic and the stores' behaviour that the
//! simulation tests rely on, checked against the real thing.
#![cfg(not(simulation))]

use std::path::Path;
use stores::sqlite_store::SqliteWal;
use stores::state_file::{self, Rename};
use stores::{Durability, Fjall, Lsm, Redb, Service, Sqlite, Store};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Durable and volatile commits, read back, closed, reopened: returns
/// whether the volatile commit survived a clean close.
async fn round_trip<S: Store>(dir: &Path) -> bool {
    let svc = Service::<S>::open(dir).await.unwrap();
    for i in 0..5 {
        svc.put(&format!("k{i}"), &format!("v{i}"), Durability::Durable)
            .await
            .unwrap();
    }
    svc.put("k2", "v2'", Durability::Durable).await.unwrap();
    svc.put("volatile", "yes", Durability::Volatile)
        .await
        .unwrap();
    assert_eq!(svc.get("k2").await.unwrap().as_deref(), Some("v2'"));
    assert_eq!(svc.get("volatile").await.unwrap().as_deref(), Some("yes"));
    assert_eq!(svc.get("missing").await.unwrap(), None);
    drop(svc);
    let svc = Service::<S>::open(dir).await.unwrap();
    assert_eq!(svc.get("k0").await.unwrap().as_deref(), Some("v0"));
    assert_eq!(svc.get("k2").await.unwrap().as_deref(), Some("v2'"));
    assert_eq!(svc.get("k4").await.unwrap().as_deref(), Some("v4"));
    svc.get("volatile").await.unwrap().is_some()
}

/// A clean close of redb commits its `Durability::None` commits (its
/// `Drop`): the simulation's "kept on close" relies on it.
#[test]
fn redb_round_trips_and_keeps_volatile_commits_on_close() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(block_on(round_trip::<Redb>(tmp.path())));
    assert!(tmp.path().join("kv.redb").exists());
}

#[test]
fn sqlite_round_trips_and_keeps_unsynced_commits_on_close() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(block_on(round_trip::<Sqlite>(tmp.path())));
    assert!(tmp.path().join("kv.sqlite").exists());
}

#[test]
fn sqlite_wal_round_trips_and_keeps_unsynced_commits_on_close() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(block_on(round_trip::<SqliteWal>(tmp.path())));
    assert!(tmp.path().join("kv.sqlite").exists());
}

/// lsm-tree does not flush its memtable on drop: a write that was never
/// flushed is gone after a clean close too (what the simulation asserts
/// for crash, kill and close).
#[test]
fn lsm_round_trips_and_loses_unflushed_writes_on_close() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(!block_on(round_trip::<Lsm>(tmp.path())));
    assert!(tmp.path().join("lsm").join("current").exists());
}

/// fjall's database persists its journal when dropped (its README): a
/// buffered write is there after a clean close; its worker threads are
/// real threads here.
#[test]
fn fjall_round_trips_and_keeps_buffered_writes_on_close() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(block_on(round_trip::<Fjall>(tmp.path())));
    assert!(tmp.path().join("fjall").join("version").exists());
}

/// Without crashes the buggy and the fixed state file behave the same.
#[test]
fn state_file_round_trips_both_ways() {
    for rename in [Rename::WithoutDirSync, Rename::WithDirSync] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        block_on(async {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            let svc = tokio::spawn(state_file::serve(dir.clone(), rename, rx));
            for i in 1..=5u32 {
                let (ack, ack_rx) = tokio::sync::oneshot::channel();
                tx.send((i.to_string().into_bytes(), ack)).await.unwrap();
                ack_rx.await.unwrap();
            }
            drop(tx);
            svc.await.unwrap().unwrap();
        });
        assert_eq!(
            state_file::load(&dir).unwrap().as_deref(),
            Some(&b"5"[..]),
            "{rename:?}"
        );
        assert!(!dir.join("state.tmp").exists(), "{rename:?}");
    }
}
