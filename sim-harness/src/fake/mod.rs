//! `sim::fake`: a kit for in-memory fakes of a service's own traits (a
//! `UserRepository`, a payment client): the five failure modes callers
//! branch on, each one call on a [`Faults`] handle, or drawn from the seed.
//!
//! A fake is one implementation of the trait, shared by every test: a plain
//! data structure (a `BTreeMap` of [`Versioned`] rows) plus a [`Faults`]
//! handle it consults at each operation. Tests drive it through the trait
//! and inject failures through the handle:
//!
//! | mode | one call | what the fake's caller sees |
//! |---|---|---|
//! | partial failure | [`Faults::fail`]`("save", 2)` | the next 2 `save`s return [`Injected`] (the fake maps it to its error) |
//! | stale read | [`Faults::stale_reads`]`(Staleness::writes(1))` | reads return an older version, at most 1 write (or a duration) old |
//! | silent drop | [`Faults::drop_writes`]`("save", 1)` | the next `save` returns `Ok` and is never applied |
//! | hang | [`Faults::hang`]`("find")` | every `find` waits until [`Faults::heal`] (or the caller's timeout) |
//! | clock skew | [`Faults::skew`]`(Duration::from_secs(600))` | [`Faults::skewed`], the fake's timestamps, runs 10 min ahead |
//!
//! [`Faults::drawn`] makes each operation draw the modes from the seed, as
//! fault points do (`sim::buggify!`): per run each mode of each fake is
//! active or not (a fault point named `fake <name>: <mode>`), and an active
//! mode fires on some operations. [`Faults::heal`] ends every mode and wakes
//! what hangs; so does the harness's heal (`sim::heal_after`).
//!
//! ```ignore
//! // examples/users/src/fake.rs, shortened.
//! use sim::fake::{Faults, Versioned};
//!
//! #[derive(Clone)]
//! pub struct FakeUsers {
//!     pub faults: sim::fake::Faults,
//!     rows: Arc<Mutex<BTreeMap<u64, Versioned<Option<User>>>>>,
//! }
//!
//! impl UserRepository for FakeUsers {
//!     async fn save(&self, mut user: User) -> Result<User, RepoError> {
//!         self.faults.op("save").await?;           // hang, partial failure
//!         user.updated_at = self.faults.skewed(SystemTime::now()); // clock skew
//!         let mut rows = self.rows.lock().unwrap();
//!         let row = rows.entry(user.id).or_insert_with(|| Versioned::new(None));
//!         self.faults.write("save", row, Some(user.clone())); // silent drop
//!         Ok(user)
//!     }
//!     async fn find_by_id(&self, id: u64) -> Result<Option<User>, RepoError> {
//!         self.faults.op("find_by_id").await?;
//!         let rows = self.rows.lock().unwrap();
//!         Ok(rows.get(&id).and_then(|r| self.faults.read("find_by_id", r).clone())) // stale read
//!     }
//! }
//!
//! #[sim::test]
//! async fn a_lost_signup_is_saved_again() {
//!     let users = FakeUsers::new();
//!     users.faults.drop_writes("save", 1);
//!     // The service reads its write back, finds nothing, and saves again.
//!     let done = Accounts::new(users).signup(7, "ada@example.com", "Ada").await.unwrap();
//!     assert_eq!((done.attempts, done.unconfirmed), (2, 1));
//! }
//! ```
//!
//! Under `--cfg simulation` every fault that happens is logged (target
//! `sim`), drawn on the timeline (a mark on the caller's node lane),
//! listed in a failing seed's report (`sim: fake faults: …`), counted by
//! coverage (a site per fake and armed mode: a sweep reports a mode that
//! was armed but never happened), and every draw comes from the seed.
//!
//! In a production build (`cargo test`, no cfg) the same API compiles and
//! the fake works: explicit injections apply (they need no seed: counts,
//! bounds and the heal are deterministic; a stale read picks its version
//! from a stream seeded by the fake's name), [`Faults::drawn`] is inert
//! (there is no seed to draw from) and nothing is recorded. That is what
//! lets one fake serve both the simulation's tests and a contract suite
//! (`sim::contract`) that runs in plain `cargo test` next to the real
//! implementation.

pub mod contract;
pub(crate) mod versioned;

pub use versioned::{Staleness, Versioned};

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::ops::{Add, Sub};
use std::panic::Location;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::fake_env as hooks;

/// The failure modes a fake can show its callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// An operation returns an error ([`Injected`]).
    Fail,
    /// A read returns an older version, within a bound.
    StaleRead,
    /// A write is accepted (`Ok`) and never applied.
    DropWrite,
    /// An operation does not complete until the heal.
    Hang,
    /// The fake's clock ([`Faults::skewed`]) is offset.
    Skew,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 5] = [
        Mode::Fail,
        Mode::StaleRead,
        Mode::DropWrite,
        Mode::Hang,
        Mode::Skew,
    ];

    /// Its name: `partial failure`, `stale read`, `silent drop`, `hang`,
    /// `clock skew`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fail => "partial failure",
            Mode::StaleRead => "stale read",
            Mode::DropWrite => "silent drop",
            Mode::Hang => "hang",
            Mode::Skew => "clock skew",
        }
    }

    /// Its mark on the timeline: `fake: <name>`.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Fail => "fake: partial failure",
            Mode::StaleRead => "fake: stale read",
            Mode::DropWrite => "fake: silent drop",
            Mode::Hang => "fake: hang",
            Mode::Skew => "fake: clock skew",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of an operation failed by [`Faults::fail`] (or drawn): the
/// fake maps it into its trait's error, as the real implementation maps
/// its driver's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    /// The fake's name.
    pub fake: String,
    /// The operation that failed.
    pub op: String,
}

impl std::fmt::Display for Injected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}: injected failure (sim::fake)", self.fake, self.op)
    }
}

impl std::error::Error for Injected {}

/// Any operation, in [`Faults::fail`], [`Faults::drop_writes`] and
/// [`Faults::hang`].
pub const ANY: &str = "*";

/// Drawn modes' rates per operation (when the mode is active in the run).
const DRAWN_FAIL: (u32, u32) = (1, 8);
const DRAWN_DROP: (u32, u32) = (1, 8);
const DRAWN_STALE: (u32, u32) = (1, 4);
const DRAWN_HANG: (u32, u32) = (1, 32);
/// A drawn stale read is at most this many writes behind.
const DRAWN_STALE_WRITES: usize = 3;
/// A drawn hang lasts up to this long (virtual time), unless healed.
const DRAWN_HANG_MAX_MS: u64 = 30_000;
/// A drawn skew is up to this far ahead or behind.
const DRAWN_SKEW_MAX_MS: u64 = 600_000;

#[derive(Default)]
pub(crate) struct State {
    /// Operation (or [`ANY`]) → failures left.
    fail: BTreeMap<String, u32>,
    /// Operation (or [`ANY`]) → writes left to drop.
    drop: BTreeMap<String, u32>,
    stale: Option<Staleness>,
    /// Hung operations (or [`ANY`]).
    hang: BTreeSet<String>,
    /// Offset of the fake's clock: (magnitude, ahead).
    skew: Option<(Duration, bool)>,
    drawn: bool,
    /// Bumped by each heal: a hung operation waits for it to change.
    heals: u64,
    wakers: Vec<Waker>,
    /// How often each mode happened (explicit or drawn).
    happened: BTreeMap<Mode, u64>,
    rng: Option<hooks::Draws>,
}

pub(crate) struct Inner {
    name: String,
    /// Where the fake's handle was made: its coverage sites' location.
    at: &'static Location<'static>,
    state: Mutex<State>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Heals every mode and wakes what hangs (also the harness's heal).
    pub(crate) fn heal(&self) {
        let wakers = {
            let mut s = self.lock();
            s.fail.clear();
            s.drop.clear();
            s.stale = None;
            s.hang.clear();
            s.skew = None;
            s.drawn = false;
            s.heals += 1;
            std::mem::take(&mut s.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// The failure modes of one fake: a cheap [`Clone`] handle, named (the name
/// labels its faults in traces, the timeline, the report and coverage).
/// See the [module docs](self).
#[derive(Clone)]
pub struct Faults(Arc<Inner>);

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("name", &self.0.name)
            .finish()
    }
}

impl Faults {
    /// A fake's handle, with no fault.
    #[track_caller]
    pub fn new(name: &str) -> Faults {
        let inner = Arc::new(Inner {
            name: name.to_string(),
            at: Location::caller(),
            state: Mutex::new(State::default()),
        });
        hooks::register(&inner);
        Faults(inner)
    }

    /// The fake's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    #[track_caller]
    fn arm(&self, mode: Mode) {
        hooks::armed(&self.0.name, self.0.at, mode);
    }

    /// Records that `mode` happened to `op` (`detail`: what it did).
    fn happened(&self, s: &mut State, mode: Mode, op: &str, drawn: bool, detail: &str) {
        *s.happened.entry(mode).or_default() += 1;
        hooks::happened(&self.0.name, self.0.at, mode, op, drawn, detail);
    }

    /// Whether drawn `mode` fires now (a fault point of the run).
    fn draw(&self, s: &State, mode: Mode, (num, den): (u32, u32)) -> bool {
        s.drawn && hooks::draw(&self.0.name, mode, num, den)
    }

    fn rng<'a>(&self, s: &'a mut State) -> &'a mut hooks::Draws {
        s.rng.get_or_insert_with(|| hooks::draws(&self.0.name))
    }

    /// Partial failure: the next `times` calls of `op` ([`ANY`]: of any
    /// operation) fail with [`Injected`]. `u32::MAX`: until the heal.
    #[track_caller]
    pub fn fail(&self, op: &str, times: u32) {
        self.arm(Mode::Fail);
        self.0.lock().fail.insert(op.to_string(), times);
    }

    /// Silent drop: the next `times` writes of `op` ([`ANY`]: any) are
    /// accepted and never applied ([`Faults::write`] returns `false`).
    #[track_caller]
    pub fn drop_writes(&self, op: &str, times: u32) {
        self.arm(Mode::DropWrite);
        self.0.lock().drop.insert(op.to_string(), times);
    }

    /// Stale reads: until the heal, every read ([`Faults::read`]) of a row
    /// with an older version within `bound` returns one of those, picked by
    /// the seed.
    #[track_caller]
    pub fn stale_reads(&self, bound: Staleness) {
        self.arm(Mode::StaleRead);
        self.0.lock().stale = Some(bound);
    }

    /// Hang: until the heal, every call of `op` ([`ANY`]: of any operation)
    /// waits in [`Faults::op`]: it completes after [`Faults::heal`], or
    /// never, if the caller times out first.
    #[track_caller]
    pub fn hang(&self, op: &str) {
        self.arm(Mode::Hang);
        self.0.lock().hang.insert(op.to_string());
    }

    /// Clock skew: [`Faults::skewed`] runs `by` ahead of the clock.
    #[track_caller]
    pub fn skew(&self, by: Duration) {
        self.set_skew(by, true, false);
    }

    /// Clock skew: [`Faults::skewed`] runs `by` behind the clock.
    #[track_caller]
    pub fn skew_behind(&self, by: Duration) {
        self.set_skew(by, false, false);
    }

    #[track_caller]
    fn set_skew(&self, by: Duration, ahead: bool, drawn: bool) {
        self.arm(Mode::Skew);
        let mut s = self.0.lock();
        s.skew = Some((by, ahead));
        let detail = format!("{}{by:?}", if ahead { "+" } else { "-" });
        self.happened(&mut s, Mode::Skew, "now", drawn, &detail);
    }

    /// Ends every mode (explicit and drawn) and wakes every hung operation.
    pub fn heal(&self) {
        self.0.heal();
    }

    /// From now on, until the heal, operations draw the failure modes from
    /// the seed (fault points named `fake <name>: <mode>`; a skew is drawn
    /// now). Inert in a production build.
    #[track_caller]
    pub fn drawn(&self) {
        for mode in Mode::ALL {
            self.arm(mode);
        }
        let skew = {
            let mut s = self.0.lock();
            s.drawn = true;
            if self.draw(&s, Mode::Skew, (1, 1)) {
                let r = self.rng(&mut s);
                let ms = 1 + r.below(DRAWN_SKEW_MAX_MS);
                Some((Duration::from_millis(ms), r.below(2) == 0))
            } else {
                None
            }
        };
        if let Some((by, ahead)) = skew {
            self.set_skew(by, ahead, true);
        }
    }

    /// How often `mode` happened so far (an operation failed, a read was
    /// stale, a write dropped, an operation hung, the clock was skewed).
    pub fn happened_count(&self, mode: Mode) -> u64 {
        self.0.lock().happened.get(&mode).copied().unwrap_or(0)
    }

    /// Call at the start of each operation `op`: waits while `op` hangs,
    /// then fails it if a partial failure is due.
    pub async fn op(&self, op: &str) -> Result<(), Injected> {
        let hang = {
            let mut s = self.0.lock();
            let explicit = s.hang.contains(op) || s.hang.contains(ANY);
            let drawn = !explicit && self.draw(&s, Mode::Hang, DRAWN_HANG);
            if explicit || drawn {
                let limit = drawn
                    .then(|| Duration::from_millis(1 + self.rng(&mut s).below(DRAWN_HANG_MAX_MS)));
                let detail = limit.map_or("until healed".to_string(), |d| format!("for {d:?}"));
                self.happened(&mut s, Mode::Hang, op, drawn, &detail);
                Some((s.heals, limit))
            } else {
                None
            }
        };
        if let Some((heals, limit)) = hang {
            Hung::new(self.0.clone(), heals, limit).await;
        }
        let mut s = self.0.lock();
        let explicit = take_one(&mut s.fail, op);
        if explicit || self.draw(&s, Mode::Fail, DRAWN_FAIL) {
            self.happened(&mut s, Mode::Fail, op, !explicit, "error");
            return Err(Injected {
                fake: self.0.name.clone(),
                op: op.to_string(),
            });
        }
        Ok(())
    }

    /// Whether write `op` is applied (`true`), or silently dropped
    /// (`false`: the fake returns success and changes nothing).
    pub fn applies(&self, op: &str) -> bool {
        let mut s = self.0.lock();
        let explicit = take_one(&mut s.drop, op);
        if explicit || self.draw(&s, Mode::DropWrite, DRAWN_DROP) {
            self.happened(&mut s, Mode::DropWrite, op, !explicit, "dropped");
            return false;
        }
        true
    }

    /// Write `op`: sets `row` to `value` unless the write is silently
    /// dropped. Returns whether it was applied.
    pub fn write<T>(&self, op: &str, row: &mut Versioned<T>, value: T) -> bool {
        let applied = self.applies(op);
        if applied {
            row.set(value);
        }
        applied
    }

    /// Read `op` of `row`: its latest version, or, under stale reads, an
    /// older one within the bound, picked by the seed.
    pub fn read<'a, T>(&self, op: &str, row: &'a Versioned<T>) -> &'a T {
        let mut s = self.0.lock();
        let (bound, drawn) = match s.stale {
            Some(b) => (b, false),
            None if s.drawn => (Staleness::writes(DRAWN_STALE_WRITES), true),
            None => return row.latest(),
        };
        let stale = row.stale_candidates(bound);
        if stale == 0 || (drawn && !self.draw(&s, Mode::StaleRead, DRAWN_STALE)) {
            return row.latest();
        }
        let back = 1 + self.rng(&mut s).below(stale as u64) as usize;
        let detail = format!("{back} write(s) behind");
        self.happened(&mut s, Mode::StaleRead, op, drawn, &detail);
        row.back(back)
    }

    /// The fake's clock: `now`, the fake's reading of its clock
    /// (`SystemTime::now()`: virtual under simulation), offset by the
    /// skew. The kit reads no clock itself (the harness never reads wall
    /// time); the fake reads its own, as the real implementation does.
    pub fn skewed<T>(&self, now: T) -> T
    where
        T: Add<Duration, Output = T> + Sub<Duration, Output = T>,
    {
        match self.0.lock().skew {
            Some((by, true)) => now + by,
            Some((by, false)) => now - by,
            None => now,
        }
    }
}

/// Takes one from `op`'s (or [`ANY`]'s) count; whether there was one.
fn take_one(counts: &mut BTreeMap<String, u32>, op: &str) -> bool {
    for key in [op, ANY] {
        if let Some(n) = counts.get_mut(key) {
            if *n > 0 {
                if *n != u32::MAX {
                    *n -= 1;
                }
                return true;
            }
        }
    }
    false
}

/// A hung operation: ready after the next heal, or after `limit` (a drawn
/// hang) of virtual time.
struct Hung {
    inner: Arc<Inner>,
    heals: u64,
    timer: Option<hooks::Timer>,
}

impl Hung {
    fn new(inner: Arc<Inner>, heals: u64, limit: Option<Duration>) -> Hung {
        Hung {
            inner,
            heals,
            timer: limit.map(hooks::Timer::after),
        }
    }
}

impl Future for Hung {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.timer.as_mut().is_some_and(|t| t.elapsed(cx)) {
            return Poll::Ready(());
        }
        let mut s = this.inner.lock();
        if s.heals != this.heals {
            return Poll::Ready(());
        }
        if !s.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            s.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
