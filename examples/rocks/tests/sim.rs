//! RocksDB, unmodified (C++), on a simulated node's disk: open, put,
//! flush, crash, reopen, read.
//!
//! ```sh
//! cargo xtask rocksdb
//! ```
//!
//! One seed per process: RocksDB's background threads are a process-wide
//! pool (`Env::Default()`), started by the first database of the process,
//! so they are threads of the first run's node; a second run in the same
//! process would hand its flush to threads that ended with the first run.
//! `cargo xtask rocksdb` runs each test and seed in a fresh process.
//!
//! - `open_put_flush_close_reopen_read` passes, and its process exits
//!   cleanly: RocksDB's flush runs on its `rocksdb:high` thread, a
//!   simulated thread, through simulated pthread mutexes and condition
//!   variables, and its static `JoinThreadsOnExit` joins at exit threads
//!   the run ended (answered as cancelled, as Linux answers a join of a
//!   thread that was cancelled).
//! - `open_put_flush_crash_reopen_read` fails, and `cargo xtask rocksdb`
//!   lists it as a known failure: C++ statics are one per OS process, and
//!   the simulation runs every node and incarnation in one. The crash
//!   drops the database on the dead node; its destructor
//!   (`~DBImpl` → `CancelPeriodicTaskScheduler` → `Unregister`) takes the
//!   static `timer_mutex` and then would join RocksDB's timer thread, a
//!   thread of the dead node: it is left there, as the process was, still
//!   holding `timer_mutex`. The reopen then fails ("lock hold by current
//!   process": the process-wide `locked_files` table of `env/fs_posix.cc`
//!   still holds the dead incarnation's `LOCK`), and the failed open's own
//!   cleanup waits for `timer_mutex` forever: "sim: deadlock". A real
//!   crash ends the process and all three statics with it. Passing would
//!   take a copy of those statics per node incarnation (rayon's global pool
//!   gets one, libc/cstate.rs, but a C++ function-local static has no name
//!   to swap), or a process per node.
#![cfg(simulation)]

use rocks::{Rocks, Sync};
use std::path::Path;
use tokio::sync::oneshot;

/// A path no real machine has: if a file call escaped the simulation, it
/// would show up here on the real disk.
const DIR: &str = "/sim-rocks-simulated-only/data";

/// Writes three keys: one flushed to a table, one synced to the WAL, one
/// whose WAL record only reached the OS's buffers.
async fn write_three(db: &Rocks) {
    db.put("flushed", "1", Sync::No).await.expect("put");
    db.flush().await.expect("flush");
    db.put("synced", "2", Sync::Yes).await.expect("synced put");
    db.put("buffered", "3", Sync::No)
        .await
        .expect("buffered put");
}

/// Opens the database again and reads the three keys, in that order.
async fn reopen_and_read() -> Vec<Option<String>> {
    let db = Rocks::open(DIR).await.expect("reopen");
    let mut found = Vec::new();
    for k in ["flushed", "synced", "buffered"] {
        found.push(db.get(k).await.expect("get"));
    }
    found
}

/// A flushed write and a synced write survive a crash; a write whose WAL
/// record only reached the OS's buffers (RocksDB's default) does not (the
/// simulated disk keeps only what was fsynced).
#[sim::test(seeds = 0..1)]
async fn open_put_flush_crash_reopen_read() {
    let node = sim::node("rocks").build();
    let (written_tx, written) = oneshot::channel();
    node.spawn(async move {
        let db = Rocks::open(DIR).await.expect("open");
        write_three(&db).await;
        assert_eq!(db.get("buffered").await.expect("get").as_deref(), Some("3"));
        written_tx.send(()).unwrap();
        // Open until the node dies, as in a running service.
        std::future::pending::<()>().await;
        drop(db);
    });
    written
        .await
        .expect("the node died before its writes were done");
    node.crash();
    node.restart();
    let found = node.spawn(reopen_and_read()).await.unwrap();
    assert_eq!(
        found,
        [Some("1".to_string()), Some("2".to_string()), None],
        "flushed, synced, buffered after a crash"
    );
    assert!(
        !sim::fs::on_real_disk(|| Path::new(DIR).exists()),
        "{DIR} exists on the real disk: a file call escaped the simulation"
    );
}

/// The same without the crash: the database is closed on a live node (its
/// destructor joins RocksDB's periodic-task timer thread, a simulated
/// thread of the node) and reopened; every write is there.
#[sim::test(seeds = 0..1)]
async fn open_put_flush_close_reopen_read() {
    let node = sim::node("rocks").build();
    let found = node
        .spawn(async {
            let db = Rocks::open(DIR).await.expect("open");
            write_three(&db).await;
            drop(db);
            reopen_and_read().await
        })
        .await
        .unwrap();
    assert_eq!(
        found,
        [Some("1".into()), Some("2".into()), Some("3".into())],
        "flushed, synced, buffered after a clean close"
    );
}
