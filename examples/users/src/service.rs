//! The service: signups, renames and a freshness check over any
//! [`UserRepository`], written to survive what the repository may do:
//!
//! - a partial failure (`Unavailable`) is retried, up to [`ATTEMPTS`];
//! - every call has a [`TIMEOUT`]: a hang becomes [`ServiceError::Timeout`];
//! - a save is confirmed by reading it back: a silently dropped write reads
//!   back older (or missing) and is saved again; a stale read-back after a
//!   write that did land shows up as a conflict on the next save, which
//!   proves the write landed;
//! - a rename that read a stale user gets a conflict naming the current
//!   version and rebases on it (the email never changes, so only the name
//!   and the version matter);
//! - [`Accounts::freshness`] compares the repository's timestamp with the
//!   service's own clock: a timestamp in the future is a skewed clock.

use crate::{RepoError, User, UserRepository};
use std::future::Future;
use std::time::{Duration, SystemTime};

/// Attempts per operation.
pub const ATTEMPTS: u32 = 4;
/// Each repository call's bound.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// A user saved within this long is active.
pub const ACTIVE: Duration = Duration::from_secs(300);
/// A timestamp this far in the service's future is a skewed clock.
pub const SKEW_TOLERANCE: Duration = Duration::from_secs(1);

/// What the service answers when it gives up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceError {
    /// The repository stayed unavailable for every attempt.
    Unavailable(String),
    /// A call did not finish within [`TIMEOUT`] (the operation).
    Timeout(&'static str),
    /// Signup: the id is taken.
    Taken,
    /// Rename, freshness: no such user.
    NotFound,
    /// Every attempt's write failed to read back.
    Unconfirmed,
}

/// A finished operation, with what it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Done {
    /// The user as stored.
    pub user: User,
    /// Saves attempted.
    pub attempts: u32,
    /// Partial failures retried.
    pub retried: u32,
    /// Writes that did not read back (dropped, or read stale).
    pub unconfirmed: u32,
    /// Conflicts rebased (a stale read before the save).
    pub conflicts: u32,
}

/// How recently a user was saved, by the service's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Freshness {
    Active,
    Idle,
    /// The repository's timestamp is this far in the future: its clock is
    /// skewed.
    FromTheFuture(Duration),
}

/// The service.
pub struct Accounts<R> {
    repo: R,
}

impl<R: UserRepository> Accounts<R> {
    pub fn new(repo: R) -> Accounts<R> {
        Accounts { repo }
    }

    /// The repository.
    pub fn repo(&self) -> &R {
        &self.repo
    }

    async fn call<T>(
        op: &'static str,
        f: impl Future<Output = Result<T, RepoError>>,
    ) -> Result<Result<T, RepoError>, ServiceError> {
        tokio::time::timeout(TIMEOUT, f)
            .await
            .map_err(|_| ServiceError::Timeout(op))
    }

    /// Whether `saved` reads back (at its version or later).
    async fn confirmed(&self, saved: &User) -> Result<Option<bool>, ServiceError> {
        match Self::call("find_by_id", self.repo.find_by_id(saved.id)).await? {
            Ok(found) => Ok(Some(found.is_some_and(|u| u.version >= saved.version))),
            Err(_) => Ok(None),
        }
    }

    /// Signs a new user up.
    pub async fn signup(&self, id: u64, email: &str, name: &str) -> Result<Done, ServiceError> {
        self.write(User::new(id, email, name), true).await
    }

    /// Renames a user.
    pub async fn rename(&self, id: u64, name: &str) -> Result<Done, ServiceError> {
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            match Self::call("find_by_id", self.repo.find_by_id(id)).await? {
                Ok(Some(user)) => {
                    let user = User {
                        name: name.to_string(),
                        ..user
                    };
                    return self.write(user, false).await;
                }
                Ok(None) => return Err(ServiceError::NotFound),
                Err(e) => last = format!("{e:?}"),
            }
        }
        Err(ServiceError::Unavailable(last))
    }

    /// Saves `user` (a new one: `signup`), retried, rebased, confirmed.
    async fn write(&self, mut user: User, signup: bool) -> Result<Done, ServiceError> {
        let mut done = Done {
            user: user.clone(),
            attempts: 0,
            retried: 0,
            unconfirmed: 0,
            conflicts: 0,
        };
        // The last save that said Ok, not yet confirmed.
        let mut landed: Option<User> = None;
        let mut last = String::new();
        while done.attempts < ATTEMPTS {
            done.attempts += 1;
            match Self::call("save", self.repo.save(user.clone())).await? {
                Ok(stored) => match self.confirmed(&stored).await? {
                    Some(true) => {
                        done.user = stored;
                        return Ok(done);
                    }
                    _ => {
                        // Dropped, or a stale read-back: save again.
                        done.unconfirmed += 1;
                        landed = Some(stored);
                    }
                },
                Err(RepoError::Conflict { current }) => match &landed {
                    // The earlier save did land: its read-back was stale.
                    Some(stored) if current >= stored.version => {
                        done.user = stored.clone();
                        return Ok(done);
                    }
                    _ if signup && current > 0 => return Err(ServiceError::Taken),
                    _ if current == 0 => return Err(ServiceError::NotFound),
                    _ => {
                        // We read a stale version: rebase on the current.
                        done.conflicts += 1;
                        user.version = current;
                    }
                },
                Err(RepoError::Unavailable(e)) => {
                    done.retried += 1;
                    last = e;
                }
            }
        }
        if landed.is_some() {
            return Err(ServiceError::Unconfirmed);
        }
        Err(ServiceError::Unavailable(last))
    }

    /// How recently the user was saved, by the service's clock.
    pub async fn freshness(&self, id: u64) -> Result<Freshness, ServiceError> {
        let user = match Self::call("find_by_id", self.repo.find_by_id(id)).await? {
            Ok(Some(user)) => user,
            Ok(None) => return Err(ServiceError::NotFound),
            Err(e) => return Err(ServiceError::Unavailable(format!("{e:?}"))),
        };
        let now = SystemTime::now();
        match user.updated_at.duration_since(now) {
            Ok(ahead) if ahead > SKEW_TOLERANCE => Ok(Freshness::FromTheFuture(ahead)),
            _ if now.duration_since(user.updated_at).unwrap_or_default() <= ACTIVE => {
                Ok(Freshness::Active)
            }
            _ => Ok(Freshness::Idle),
        }
    }
}
