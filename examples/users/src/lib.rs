//! Users: a service's own storage trait ([`UserRepository`]), its real
//! implementation on SQLite ([`sqlite::SqliteUsers`]), its in-memory fake
//! built with `sim::fake` ([`fake::FakeUsers`]), and a small service on top
//! ([`service::Accounts`]: signup, rename, freshness) that branches on
//! every failure mode the fake can show: partial failures are retried,
//! silent drops and stale reads are caught by reading back, a conflict
//! from a stale read is rebased, a hang ends in a timeout, a skewed clock
//! is noticed.
//!
//! `tests/modes.rs` shows each mode reach the caller (`#[sim::test]`s);
//! `tests/contract.rs` runs one contract suite against SQLite and the fake,
//! in production (`cargo test`: SQLite in memory) and under simulation
//! (SQLite on the node's simulated disk).

pub mod fake;
pub mod service;
pub mod sqlite;

use std::future::Future;
use std::time::SystemTime;

/// A user as the repository stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: u64,
    pub email: String,
    pub name: String,
    /// The stored version: 0 for a user not saved yet; each save adds one.
    pub version: u64,
    /// When it was last saved, by the repository's clock.
    pub updated_at: SystemTime,
}

impl User {
    /// A user not saved yet (version 0).
    pub fn new(id: u64, email: &str, name: &str) -> User {
        User {
            id,
            email: email.to_string(),
            name: name.to_string(),
            version: 0,
            updated_at: SystemTime::UNIX_EPOCH,
        }
    }
}

/// What a repository call can fail with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepoError {
    /// The stored version is `current`, not the one the save expected
    /// (0: there is no such user).
    Conflict { current: u64 },
    /// The store did not answer (its message).
    Unavailable(String),
}

impl From<sim::fake::Injected> for RepoError {
    fn from(e: sim::fake::Injected) -> RepoError {
        RepoError::Unavailable(e.to_string())
    }
}

/// Where users are kept.
pub trait UserRepository: Send + Sync {
    /// Saves `user` if the stored version is `user.version` (0: no user
    /// with this id), as version `user.version + 1` stamped with the
    /// repository's clock; returns what was stored.
    fn save(&self, user: User) -> impl Future<Output = Result<User, RepoError>> + Send;

    /// The user with this id, if any.
    fn find_by_id(&self, id: u64) -> impl Future<Output = Result<Option<User>, RepoError>> + Send;

    /// Deletes the user; whether there was one.
    fn delete(&self, id: u64) -> impl Future<Output = Result<bool, RepoError>> + Send;

    /// Every user, by id.
    fn list(&self) -> impl Future<Output = Result<Vec<User>, RepoError>> + Send;
}
