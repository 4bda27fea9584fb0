//! fjall: lsm-tree plus a journal and background worker threads, in
//! directory `<dir>/fjall`, one keyspace `kv`.
//!
//! `Database::open` starts fjall's worker threads (`fjall:worker`,
//! `min(available_parallelism, 4)`: one on a simulated node, whose one CPU
//! is what std reports), which flush sealed memtables to tables and
//! compact; on a simulated node they are simulated threads of the node.
//! The keyspace's memtable is small ([`MEMTABLE_BYTES`]) so a few large
//! writes make the workers flush while the service writes.
//!
//! fjall's durability, as its README and `PersistMode` document it: every
//! write goes to the journal and is flushed to the OS's buffers
//! (`PersistMode::Buffer`: it survives the process's crash, not a power
//! loss); `Database::persist(PersistMode::SyncAll)` fsyncs the journal
//! (durable); dropping the database persists with `SyncAll`. A durable put
//! here is the insert then `persist(SyncAll)`; a volatile put, the insert
//! alone.

use crate::{Durability, Store};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use std::path::{Path, PathBuf};

/// The database's directory of a store kept in `dir`.
pub fn folder(dir: &Path) -> PathBuf {
    dir.join("fjall")
}

/// The keyspace's memtable size: past it a write hands the memtable to a
/// worker thread to flush to a table.
pub const MEMTABLE_BYTES: u64 = 32 * 1024;

/// Whether [`Fjall::open_with`] fsyncs `keyspaces/` after fjall made its
/// keyspaces' folders in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKeyspaces {
    /// The service does (what [`Store::open`] does).
    Yes,
    /// fjall alone.
    No,
}

/// A fjall database with its one keyspace.
pub struct Fjall {
    db: Database,
    kv: Keyspace,
}

impl Store for Fjall {
    type Error = fjall::Error;
    const NAME: &'static str = "fjall";

    fn open(dir: &Path) -> Result<Fjall, fjall::Error> {
        Fjall::open_with(dir, SyncKeyspaces::Yes)
    }

    fn put(&self, key: &str, value: &str, durability: Durability) -> Result<(), fjall::Error> {
        self.kv.insert(key, value)?;
        if durability == Durability::Durable {
            self.db.persist(PersistMode::SyncAll)?;
        }
        Ok(())
    }

    fn get(&self, key: &str) -> Result<Option<String>, fjall::Error> {
        Ok(self
            .kv
            .get(key)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }
}

impl Fjall {
    /// Opens the store kept in `dir`; `sync_keyspaces` says whether the
    /// service makes the keyspaces' folders durable after fjall creates
    /// them (`No` is fjall alone: `tests/fjall.rs` shows what a crash then
    /// does).
    pub fn open_with(dir: &Path, sync_keyspaces: SyncKeyspaces) -> Result<Fjall, fjall::Error> {
        crate::durable_dir(dir)?;
        let db = Database::builder(folder(dir)).open()?;
        let kv = db.keyspace("kv", || {
            KeyspaceCreateOptions::default().max_memtable_size(MEMTABLE_BYTES)
        })?;
        if sync_keyspaces == SyncKeyspaces::Yes {
            // The keyspaces' folders' names: fjall fsyncs `keyspaces/`
            // before it creates the meta keyspace's folder in it, and not
            // after it creates a keyspace's (lsm-tree fsyncs the tree's own
            // folder, not the one holding it).
            crate::sync_dir(&folder(dir).join("keyspaces"))?;
        }
        // The database folder's name (fjall fsyncs the folder itself).
        crate::sync_dir(dir)?;
        Ok(Fjall { db, kv })
    }

    /// Seals the keyspace's memtable and waits until a worker thread has
    /// flushed it to a table (fjall's hidden `rotate_memtable_and_wait`,
    /// which its own tests use).
    pub fn flush_and_wait(&self) -> Result<(), fjall::Error> {
        self.kv.rotate_memtable_and_wait()
    }

    /// How many tables the keyspace has on disk.
    pub fn table_count(&self) -> usize {
        self.kv.table_count()
    }
}
