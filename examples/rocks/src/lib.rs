//! RocksDB (the `rocksdb` crate: RocksDB's C++ code, built from source) as
//! a service keeps its state in it, with no `cfg`: on real Tokio it runs on
//! the real disk; in a simulation its file calls reach the node's
//! simulated disk through the C interposers, its background threads (C++
//! `std::thread`, i.e. `pthread_create`) are simulated threads of the node,
//! and its `std::mutex`/`std::condition_variable` (glibc's pthread mutexes
//! and condition variables) are simulated hand-offs.
//!
//! Every call runs the store's blocking code in `spawn_blocking`, as a real
//! service does. `tests/sim.rs` says what passes today and what does not.

use rocksdb::{Options, WriteOptions, DB};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether a put's write-ahead-log record is fsynced before it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// `WriteOptions::set_sync(true)`: durable when the put returns.
    Yes,
    /// RocksDB's default: the WAL record reaches the OS's buffers only
    /// (survives the process's crash, not a power loss).
    No,
}

/// The database's directory of a store kept in `dir`.
pub fn folder(dir: &Path) -> PathBuf {
    dir.join("rocksdb")
}

/// Makes `dir` exist durably: creates it, then fsyncs it and every
/// ancestor (a new name survives a crash only once its directory is
/// fsynced; RocksDB syncs its own directory, not the ones above it).
pub fn durable_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(d)?.sync_all()?;
    }
    Ok(())
}

/// The async service over one RocksDB database.
#[derive(Clone)]
pub struct Rocks {
    db: Arc<DB>,
}

impl Rocks {
    /// Opens (creating if needed) the database kept in `dir`.
    pub async fn open(dir: impl Into<PathBuf>) -> Result<Rocks, rocksdb::Error> {
        let dir = dir.into();
        let db = tokio::task::spawn_blocking(move || {
            durable_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}"));
            let mut opts = Options::default();
            opts.create_if_missing(true);
            let db = DB::open(&opts, folder(&dir))?;
            // The database folder's name.
            std::fs::File::open(&dir)
                .and_then(|d| d.sync_all())
                .unwrap_or_else(|e| panic!("{dir:?}: {e}"));
            Ok::<_, rocksdb::Error>(db)
        })
        .await
        .expect("RocksDB's open does not panic")?;
        Ok(Rocks { db: Arc::new(db) })
    }

    /// Writes `key = value`.
    pub async fn put(&self, key: &str, value: &str, sync: Sync) -> Result<(), rocksdb::Error> {
        let db = self.db.clone();
        let (k, v) = (key.to_owned(), value.to_owned());
        tokio::task::spawn_blocking(move || {
            let mut w = WriteOptions::default();
            w.set_sync(sync == Sync::Yes);
            db.put_opt(k, v, &w)
        })
        .await
        .expect("RocksDB's put does not panic")
    }

    /// Flushes the memtable to a table file (RocksDB syncs it and records it
    /// in the MANIFEST): what was written before is durable.
    pub async fn flush(&self) -> Result<(), rocksdb::Error> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || db.flush())
            .await
            .expect("RocksDB's flush does not panic")
    }

    /// Reads `key`.
    pub async fn get(&self, key: &str) -> Result<Option<String>, rocksdb::Error> {
        let db = self.db.clone();
        let k = key.to_owned();
        tokio::task::spawn_blocking(move || {
            db.get(k)
                .map(|v| v.map(|v| String::from_utf8_lossy(&v).into_owned()))
        })
        .await
        .expect("RocksDB's get does not panic")
    }
}
