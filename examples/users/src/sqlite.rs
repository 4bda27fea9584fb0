//! The real implementation: SQLite through rusqlite (bundled). A call
//! takes the connection's lock and runs its statements at once: they are
//! short, and under simulation the file I/O is the node's simulated disk.

use crate::{RepoError, User, UserRepository};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Users in a SQLite database.
pub struct SqliteUsers {
    conn: Mutex<Connection>,
}

fn unavailable(e: rusqlite::Error) -> RepoError {
    RepoError::Unavailable(e.to_string())
}

fn nanos(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get::<_, i64>(0)? as u64,
        email: r.get(1)?,
        name: r.get(2)?,
        version: r.get::<_, i64>(3)? as u64,
        updated_at: SystemTime::UNIX_EPOCH + Duration::from_nanos(r.get::<_, i64>(4)? as u64),
    })
}

impl SqliteUsers {
    /// The database in the file `path` (made if missing).
    pub fn open(path: &Path) -> Result<SqliteUsers, RepoError> {
        SqliteUsers::with(Connection::open(path).map_err(unavailable)?)
    }

    /// A database in memory.
    pub fn open_in_memory() -> Result<SqliteUsers, RepoError> {
        SqliteUsers::with(Connection::open_in_memory().map_err(unavailable)?)
    }

    fn with(conn: Connection) -> Result<SqliteUsers, RepoError> {
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS users (
                id INTEGER PRIMARY KEY,
                email TEXT NOT NULL,
                name TEXT NOT NULL,
                version INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )",
        )
        .map_err(unavailable)?;
        Ok(SqliteUsers {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

const COLUMNS: &str = "id, email, name, version, updated_at";

impl UserRepository for SqliteUsers {
    async fn save(&self, user: User) -> Result<User, RepoError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(unavailable)?;
        let current: u64 = tx
            .query_row(
                "SELECT version FROM users WHERE id = ?1",
                params![user.id as i64],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map_err(unavailable)?
            .map_or(0, |v| v as u64);
        if current != user.version {
            return Err(RepoError::Conflict { current });
        }
        let stored = User {
            version: current + 1,
            updated_at: SystemTime::now(),
            ..user
        };
        tx.execute(
            "INSERT OR REPLACE INTO users (id, email, name, version, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                stored.id as i64,
                stored.email,
                stored.name,
                stored.version as i64,
                nanos(stored.updated_at)
            ],
        )
        .map_err(unavailable)?;
        tx.commit().map_err(unavailable)?;
        Ok(stored)
    }

    async fn find_by_id(&self, id: u64) -> Result<Option<User>, RepoError> {
        self.conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM users WHERE id = ?1"),
                params![id as i64],
                row,
            )
            .optional()
            .map_err(unavailable)
    }

    async fn delete(&self, id: u64) -> Result<bool, RepoError> {
        let n = self
            .conn()
            .execute("DELETE FROM users WHERE id = ?1", params![id as i64])
            .map_err(unavailable)?;
        Ok(n > 0)
    }

    async fn list(&self) -> Result<Vec<User>, RepoError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!("SELECT {COLUMNS} FROM users ORDER BY id"))
            .map_err(unavailable)?;
        let users = stmt
            .query_map([], row)
            .map_err(unavailable)?
            .collect::<Result<Vec<User>, _>>()
            .map_err(unavailable)?;
        Ok(users)
    }
}
