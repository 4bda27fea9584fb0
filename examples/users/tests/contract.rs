//! One contract suite, two implementations: SQLite and the fake answer
//! every step alike. In production (`cargo test -p users`) SQLite runs in
//! memory; under simulation on the node's simulated disk.

use std::time::Duration;
use users::fake::FakeUsers;
use users::sqlite::SqliteUsers;
use users::{RepoError, User, UserRepository};

/// What a repository promises, step by step. Timestamps are compared by
/// order only: their values are each clock's.
async fn suite<R: UserRepository>(repo: R, steps: sim::contract::Steps) {
    let brief = |u: &User| (u.id, u.name.clone(), u.version);
    let saved = repo.save(User::new(1, "ada@example.com", "Ada")).await;
    steps.step("save a new user", saved.as_ref().map(brief));
    let first = saved.map(|u| u.updated_at).ok();
    steps.step(
        "find it",
        repo.find_by_id(1).await.map(|u| u.map(|u| brief(&u))),
    );
    steps.step(
        "save it again as new",
        repo.save(User::new(1, "ada@example.com", "Ada"))
            .await
            .map(|u| brief(&u)),
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut ada = User::new(1, "ada@example.com", "Ada Lovelace");
    ada.version = 1;
    let renamed = repo.save(ada.clone()).await;
    steps.step("rename at version 1", renamed.as_ref().map(brief));
    steps.step(
        "the rename's timestamp is later",
        renamed.as_ref().ok().map(|u| Some(u.updated_at) > first),
    );
    steps.step(
        "rename at version 1 again",
        repo.save(ada).await.map(|u| brief(&u)),
    );
    steps.step(
        "save another",
        repo.save(User::new(2, "bob@example.com", "Bob"))
            .await
            .map(|u| brief(&u)),
    );
    steps.step(
        "list",
        repo.list()
            .await
            .map(|us| us.iter().map(brief).collect::<Vec<_>>()),
    );
    steps.step("delete the first", repo.delete(1).await);
    steps.step("delete it again", repo.delete(1).await);
    steps.step(
        "find it",
        repo.find_by_id(1).await.map(|u| u.map(|u| brief(&u))),
    );
    steps.step(
        "save it as new again",
        repo.save(User::new(1, "ada@example.com", "Ada"))
            .await
            .map(|u| brief(&u)),
    );
    steps.step(
        "a save of an unknown user at version 3",
        repo.save(User {
            version: 3,
            ..User::new(9, "x@example.com", "X")
        })
        .await
        .map(|u| brief(&u)),
    );
}

/// The real implementation: in memory in production; a file on the node's
/// simulated disk under simulation.
fn sqlite() -> SqliteUsers {
    if cfg!(simulation) {
        std::fs::create_dir_all("/data").unwrap();
        SqliteUsers::open(std::path::Path::new("/data/users.sqlite")).unwrap()
    } else {
        SqliteUsers::open_in_memory().unwrap()
    }
}

#[tokio::test]
async fn sqlite_and_the_fake_keep_one_contract() {
    let agreed = sim::contract::check(
        "users",
        |steps| async move { suite(sqlite(), steps).await },
        |steps| suite(FakeUsers::new(), steps),
    )
    .await;
    assert_eq!(agreed.len(), 13);
    // Both said the conflict the contract promises.
    let conflict = format!("{:?}", Err::<(), _>(RepoError::Conflict { current: 1 }));
    assert_eq!(agreed[2].1, conflict);
}

/// A fake that forgets deletes: the suite catches it, with both answers.
struct ForgetfulDeletes(FakeUsers);

impl UserRepository for ForgetfulDeletes {
    async fn save(&self, user: User) -> Result<User, RepoError> {
        self.0.save(user).await
    }
    async fn find_by_id(&self, id: u64) -> Result<Option<User>, RepoError> {
        self.0.find_by_id(id).await
    }
    async fn delete(&self, id: u64) -> Result<bool, RepoError> {
        Ok(self.0.find_by_id(id).await?.is_some())
    }
    async fn list(&self) -> Result<Vec<User>, RepoError> {
        self.0.list().await
    }
}

#[tokio::test]
#[should_panic(
    expected = "step 10 `delete it again`:\n    real said: Ok(false)\n    fake said: Ok(true)"
)]
async fn a_fake_that_breaks_the_contract_is_caught() {
    sim::contract::check(
        "users",
        |steps| async move { suite(sqlite(), steps).await },
        |steps| suite(ForgetfulDeletes(FakeUsers::new()), steps),
    )
    .await;
}

/// The fake works in a production build too: explicit faults apply.
#[tokio::test]
async fn explicit_faults_apply_in_every_build() {
    let fake = FakeUsers::new();
    fake.faults.fail("save", 1);
    let err = fake.save(User::new(1, "a@example.com", "A")).await;
    assert!(matches!(err, Err(RepoError::Unavailable(_))), "{err:?}");
    fake.faults.drop_writes("save", 1);
    assert!(fake.save(User::new(1, "a@example.com", "A")).await.is_ok());
    assert_eq!(fake.find_by_id(1).await, Ok(None));
    assert!(fake.save(User::new(1, "a@example.com", "A")).await.is_ok());
    assert!(fake.find_by_id(1).await.unwrap().is_some());
    assert_eq!(fake.faults.happened_count(sim::fake::Mode::Fail), 1);
    assert_eq!(fake.faults.happened_count(sim::fake::Mode::DropWrite), 1);
}
