//! SQLite through rusqlite (the bundled amalgamation): `<dir>/kv.sqlite`.
//!
//! [`Sqlite`] is SQLite's default rollback journal (`journal_mode=DELETE`:
//! `kv.sqlite-journal` made, synced, deleted per commit); [`SqliteWal`] is
//! `journal_mode=WAL` (`kv.sqlite-wal`, and the shared-memory index
//! `kv.sqlite-shm`, which SQLite maps `MAP_SHARED`). A durable put runs
//! with `synchronous=FULL`, a volatile one with `synchronous=OFF` (SQLite
//! hands the pages to the OS and never fsyncs).

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
        std::fs::create_dir_all(dir).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("create_dir_all {dir:?}: {e}")),
            )
        })?;
        let conn = Connection::open(file(dir))?;
        if WAL {
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
            assert_eq!(mode, "wal", "SQLite refused WAL mode");
        }
        conn.execute_batch(
            "PRAGMA synchronous=FULL;
             CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT NOT NULL);",
        )?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
        })
    }

    fn put(&self, key: &str, value: &str, durability: Durability) -> Result<(), rusqlite::Error> {
        let conn = self.conn.lock().unwrap();
        conn.execute_batch(match durability {
            Durability::Durable => "PRAGMA synchronous=FULL",
            Durability::Volatile => "PRAGMA synchronous=OFF",
        })?;
        conn.execute(
            "INSERT INTO kv (k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
            params![key, value],
        )?;
        Ok(())
    }

    fn get(&self, key: &str) -> Result<Option<String>, rusqlite::Error> {
        let conn = self.conn.lock().unwrap();
        conn.query_row("SELECT v FROM kv WHERE k = ?1", params![key], |r| r.get(0))
            .optional()
    }
}
