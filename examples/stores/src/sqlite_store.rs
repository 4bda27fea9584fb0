//! SQLite through rusqlite (the bundled amalgamation): `<dir>/kv.sqlite`.
//!
//! [`Sqlite`] is SQLite's default rollback journal (`journal_mode=DELETE`:
//! `kv.sqlite-journal` made, synced, deleted per commit); [`SqliteWal`] is
//! `journal_mode=WAL` (`kv.sqlite-wal`, and the shared-memory index
//! `kv.sqlite-shm`, which SQLite maps `MAP_SHARED`). A volatile put runs
//! with `synchronous=OFF` (SQLite hands the pages to the OS and never
//! fsyncs). A durable put runs with `synchronous=EXTRA` in DELETE mode and
//! `FULL` in WAL mode: in DELETE mode the commit point is the unlink of the
//! journal, and only `EXTRA` fsyncs the directory after it; under `FULL` a
//! power loss right after the commit can bring the hot journal back and
//! roll the transaction back (SQLite's documentation of `synchronous`;
//! `tests/sqlite.rs` has the simulation find it, through
//! [`SqliteStore::put_with_synchronous`]).

use crate::{Durability, Store};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The database file of a store kept in `dir`.
pub fn file(dir: &Path) -> PathBuf {
    dir.join("kv.sqlite")
}

/// A SQLite database; `WAL` picks the journal mode.
pub struct SqliteStore<const WAL: bool> {
    conn: Mutex<Connection>,
}

/// SQLite in its default rollback-journal mode.
pub type Sqlite = SqliteStore<false>;
/// SQLite in WAL mode.
pub type SqliteWal = SqliteStore<true>;

impl<const WAL: bool> Store for SqliteStore<WAL> {
    type Error = rusqlite::Error;
    const NAME: &'static str = if WAL { "sqlite-wal" } else { "sqlite" };

    fn open(dir: &Path) -> Result<Self, rusqlite::Error> {
        let cant_open = |e: std::io::Error| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("{dir:?}: {e}")),
            )
        };
        crate::durable_dir(dir).map_err(cant_open)?;
        let conn = Connection::open(file(dir))?;
        if WAL {
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
            assert_eq!(mode, "wal", "SQLite refused WAL mode");
        }
        // The table's creation is durable as a durable put is.
        conn.execute_batch(if WAL {
            "PRAGMA synchronous=FULL"
        } else {
            "PRAGMA synchronous=EXTRA"
        })?;
        conn.execute_batch("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)")?;
        // The database file's name, if SQLite just created it.
        crate::sync_dir(dir).map_err(cant_open)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
        })
    }

    fn put(&self, key: &str, value: &str, durability: Durability) -> Result<(), rusqlite::Error> {
        let level = match durability {
            Durability::Durable if WAL => "FULL",
            Durability::Durable => "EXTRA",
            Durability::Volatile => "OFF",
        };
        self.put_with_synchronous(key, value, level)
    }

    fn get(&self, key: &str) -> Result<Option<String>, rusqlite::Error> {
        let conn = self.conn.lock().unwrap();
        conn.query_row("SELECT v FROM kv WHERE k = ?1", params![key], |r| r.get(0))
            .optional()
    }
}

impl<const WAL: bool> SqliteStore<WAL> {
    /// Writes `key = value` in one transaction under `PRAGMA
    /// synchronous=<level>` (`OFF`, `NORMAL`, `FULL`, `EXTRA`).
    pub fn put_with_synchronous(
        &self,
        key: &str,
        value: &str,
        level: &str,
    ) -> Result<(), rusqlite::Error> {
        let conn = self.conn.lock().unwrap();
        conn.execute_batch(&format!("PRAGMA synchronous={level}"))?;
        conn.execute(
            "INSERT INTO kv (k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
            params![key, value],
        )?;
        Ok(())
    }
}
