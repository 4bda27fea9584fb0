//! Real embedded stores, unmodified, as a service keeps its state in them:
//! [redb](redb_store), [SQLite through rusqlite](sqlite_store) and
//! [lsm-tree](lsm_store) (fjall's single-tree engine) and [fjall](fjall_store)
//! (lsm-tree with a journal and worker threads), plus [`state_file`], a service
//! that keeps its state in a plain file through `std::fs` and carries a
//! planted durability bug.
//!
//! Every store does its file I/O through `std::fs` and libc, below Tokio.
//! The service code here has no `cfg`: on real Tokio it runs on the real
//! disk; in a simulation the `std::fs` interposers route the same calls to
//! the node's simulated disk, with its crash, kill and fault semantics
//! (`tests/`).
//!
//! Each store is the same small key-value service: [`Service`] runs the
//! store's blocking calls in `tokio::task::spawn_blocking`, as a real
//! service does, over the store's own synchronous API ([`Store`]).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod fjall_store;
pub mod lsm_store;
pub mod redb_store;
pub mod sqlite_store;
pub mod state_file;

pub use fjall_store::Fjall;
pub use lsm_store::Lsm;
pub use redb_store::Redb;
pub use sqlite_store::Sqlite;

/// Makes `dir` exist durably: creates it and any missing parent, then
/// fsyncs it and every ancestor, deepest first. A new name (a directory
/// `create_dir_all` just made, a file a store just created) survives a
/// crash only once the directory holding it is fsynced, and no store here
/// does that for the directory it is given: redb never fsyncs a directory,
/// lsm-tree fsyncs its own folder but not the one holding it, and SQLite
/// fsyncs the directory only when it creates a journal. So each store's
/// `open` calls this before opening, and [`sync_dir`] after.
pub fn durable_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
        sync_dir(d)?;
    }
    Ok(())
}

/// Makes the entries of `dir` durable (on Linux: open it, fsync it).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Whether a write is durable when it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// The store's durable commit: fsynced before it returns (redb
    /// `Durability::Immediate`, SQLite `synchronous=FULL`, lsm-tree: the
    /// memtable flushed to a synced table).
    Durable,
    /// The store's commit without fsync (redb `Durability::None`, SQLite
    /// `synchronous=OFF`, lsm-tree: the memtable only).
    Volatile,
}

/// A store's synchronous key-value API, as the store's crate offers it.
pub trait Store: Send + Sync + Sized + 'static {
    /// The store's own error type (kept, so tests can see which of the
    /// store's error paths a disk fault reached).
    type Error: std::error::Error + Send + Sync + 'static;
    /// The store's name in messages.
    const NAME: &'static str;
    /// Opens (creating if needed) the store kept in directory `dir`.
    fn open(dir: &Path) -> Result<Self, Self::Error>;
    /// Writes `key = value` in one commit of the given durability.
    fn put(&self, key: &str, value: &str, durability: Durability) -> Result<(), Self::Error>;
    /// Reads `key`.
    fn get(&self, key: &str) -> Result<Option<String>, Self::Error>;
}

/// The async service over a store: every call runs the store's blocking
/// code in `spawn_blocking`.
pub struct Service<S> {
    store: Arc<S>,
    dir: PathBuf,
}

impl<S> Clone for Service<S> {
    fn clone(&self) -> Self {
        Service {
            store: self.store.clone(),
            dir: self.dir.clone(),
        }
    }
}

impl<S: Store> Service<S> {
    /// Opens the store in `dir` (created if missing).
    pub async fn open(dir: impl Into<PathBuf>) -> Result<Service<S>, S::Error> {
        let dir = dir.into();
        let d = dir.clone();
        let store = tokio::task::spawn_blocking(move || S::open(&d))
            .await
            .expect("the store's open does not panic")?;
        Ok(Service {
            store: Arc::new(store),
            dir,
        })
    }

    /// The directory the store keeps its files in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `key = value`; when this returns `Ok`, the write is committed
    /// with the given durability.
    pub async fn put(
        &self,
        key: &str,
        value: &str,
        durability: Durability,
    ) -> Result<(), S::Error> {
        let store = self.store.clone();
        let (k, v) = (key.to_owned(), value.to_owned());
        tokio::task::spawn_blocking(move || store.put(&k, &v, durability))
            .await
            .expect("the store's put does not panic")
    }

    /// Runs `f` over the store itself (its own API beyond [`Store`]) in
    /// `spawn_blocking`.
    pub async fn call<R, F>(&self, f: F) -> R
    where
        F: FnOnce(&S) -> R + Send + 'static,
        R: Send + 'static,
    {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .expect("the store's call does not panic")
    }

    /// Reads `key`.
    pub async fn get(&self, key: &str) -> Result<Option<String>, S::Error> {
        let store = self.store.clone();
        let k = key.to_owned();
        tokio::task::spawn_blocking(move || store.get(&k))
            .await
            .expect("the store's get does not panic")
    }
}
