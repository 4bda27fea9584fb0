//! The fake: users in a map, each row with its recent versions, and a
//! `sim::fake::Faults` handle consulted at every operation. One fake for
//! every test; tests inject failures through `faults`, one call each.

use crate::{RepoError, User, UserRepository};
use sim::fake::{Faults, Versioned};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

type Rows = BTreeMap<u64, Versioned<Option<User>>>;

/// Users in memory, with injectable failure modes.
#[derive(Clone)]
pub struct FakeUsers {
    /// The failure modes (`faults.fail("save", 1)`, `faults.drawn()`, …).
    pub faults: Faults,
    rows: Arc<Mutex<Rows>>,
}

impl Default for FakeUsers {
    fn default() -> FakeUsers {
        FakeUsers::new()
    }
}

impl FakeUsers {
    /// An empty fake named `users`, with no fault.
    pub fn new() -> FakeUsers {
        FakeUsers {
            faults: Faults::new("users"),
            rows: Arc::default(),
        }
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, Rows> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl UserRepository for FakeUsers {
    async fn save(&self, user: User) -> Result<User, RepoError> {
        self.faults.op("save").await?;
        let mut rows = self.rows();
        let row = rows.entry(user.id).or_insert_with(|| Versioned::new(None));
        // The version check sees the truth, whatever reads see.
        let current = row.latest().as_ref().map_or(0, |u| u.version);
        if current != user.version {
            return Err(RepoError::Conflict { current });
        }
        let stored = User {
            version: current + 1,
            // The fake's clock, skewed when the test says so.
            updated_at: self.faults.skewed(SystemTime::now()),
            ..user
        };
        self.faults.write("save", row, Some(stored.clone()));
        Ok(stored)
    }

    async fn find_by_id(&self, id: u64) -> Result<Option<User>, RepoError> {
        self.faults.op("find_by_id").await?;
        let rows = self.rows();
        Ok(rows
            .get(&id)
            .and_then(|row| self.faults.read("find_by_id", row).clone()))
    }

    async fn delete(&self, id: u64) -> Result<bool, RepoError> {
        self.faults.op("delete").await?;
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(&id) else {
            return Ok(false);
        };
        let existed = row.latest().is_some();
        if existed {
            self.faults.write("delete", row, None);
        }
        Ok(existed)
    }

    async fn list(&self) -> Result<Vec<User>, RepoError> {
        self.faults.op("list").await?;
        let rows = self.rows();
        Ok(rows
            .values()
            .filter_map(|row| self.faults.read("list", row).clone())
            .collect())
    }
}
