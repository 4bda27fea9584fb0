//! redb: a copy-on-write B-tree in one file (`<dir>/kv.redb`).
//!
//! `Durability::Immediate` commits fsync before returning.
//! `Durability::None` commits are visible to later transactions but stay in
//! redb's own in-process write buffer (`PagedCachedFile::write_barrier`:
//! "they stay in the buffer ... until flushed or evicted"); they reach the
//! file at the next durable commit or when the `Database` is dropped.

use crate::{Durability, Store};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const TABLE: TableDefinition<&str, &str> = TableDefinition::new("kv");

/// The redb file of a store kept in `dir`.
pub fn file(dir: &Path) -> std::path::PathBuf {
    dir.join("kv.redb")
}

/// A redb database.
pub struct Redb {
    db: Database,
}

impl Store for Redb {
    type Error = redb::Error;
    const NAME: &'static str = "redb";

    fn open(dir: &Path) -> Result<Redb, redb::Error> {
        crate::durable_dir(dir)?;
        let db = Database::create(file(dir))?;
        // The file's name, if redb just created it.
        crate::sync_dir(dir)?;
        Ok(Redb { db })
    }

    fn put(&self, key: &str, value: &str, durability: Durability) -> Result<(), redb::Error> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(match durability {
            Durability::Durable => redb::Durability::Immediate,
            Durability::Volatile => redb::Durability::None,
        })?;
        {
            let mut table = txn.open_table(TABLE)?;
            table.insert(key, value)?;
        }
        txn.commit()?;
        Ok(())
    }

    fn get(&self, key: &str) -> Result<Option<String>, redb::Error> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(TABLE) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let value = table.get(key)?.map(|v| v.value().to_owned());
        Ok(value)
    }
}
