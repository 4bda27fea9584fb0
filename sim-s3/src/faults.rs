//! The failure modes, one call each, on a handle the test keeps across the
//! node's crashes and restarts.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;

/// What the store does wrong, set by one call each. Cheap to clone: every
/// clone is the same handle. Give the same handle to every incarnation of
/// the node (`S3::faults`) and keep one in the test.
///
/// Counted modes (`slow_down(n)`, …) apply to the next `n` requests that
/// they fit, then stop by themselves; lasting ones (`hang`, `slow_first_byte`,
/// `list_lag`) hold until changed or [`Faults::heal`]. In production
/// (`cargo test` on loopback) they behave the same, on the real clock.
#[derive(Clone, Debug)]
pub struct Faults {
    state: Arc<Mutex<State>>,
    hung: Arc<watch::Sender<bool>>,
}

#[derive(Debug, Default)]
struct State {
    slow_down: u32,
    internal_error: u32,
    conflict: u32,
    reset_mid_body: u32,
    lose_reply: u32,
    slow_first_byte: Duration,
    list_lag: Duration,
    drawn: bool,
    seen: Seen,
}

/// How often each failure mode was served since the handle was made: a
/// test asserts that the client really met the fault it was set for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// 503 SlowDown answers.
    pub slow_down: u32,
    /// 500 InternalError answers.
    pub internal_error: u32,
    /// 409 ConditionalRequestConflict answers.
    pub conflict: u32,
    /// Responses cut after half their body.
    pub reset_mid_body: u32,
    /// Requests applied whose reply was never sent (the connection closed).
    pub lose_reply: u32,
    /// Requests held by a hang.
    pub hung: u32,
    /// Responses delayed by a slow first byte.
    pub slow_first_byte: u32,
    /// Listings that left out a key written less than the lag ago.
    pub list_lag: u32,
}

/// What one request meets, decided when it arrives.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Plan {
    pub error: Option<Error>,
    pub reset_mid_body: bool,
    pub lose_reply: bool,
    pub first_byte: Duration,
}

/// An error answered instead of doing the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Error {
    SlowDown,
    Internal,
}

/// Which kind of request it is, for the modes that fit only some.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// GET of an object: has a body to cut.
    Read,
    /// Changes the store: its reply can be lost after it applied.
    Write,
    /// Anything else (HEAD, listings, bucket calls).
    Other,
}

impl Default for Faults {
    fn default() -> Self {
        Self::new()
    }
}

impl Faults {
    /// A handle with no fault set.
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
            hung: Arc::new(watch::channel(false).0),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding it leaves plain counters: still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next `n` requests are answered `503 SlowDown` without being done
    /// (S3's throttling: clients back off and retry).
    pub fn slow_down(&self, n: u32) -> &Self {
        self.state().slow_down += n;
        self
    }

    /// The next `n` requests are answered `500 InternalError` without being
    /// done.
    pub fn internal_error(&self, n: u32) -> &Self {
        self.state().internal_error += n;
        self
    }

    /// The next `n` conditional writes (`If-Match`, `If-None-Match`) are
    /// answered `409 ConditionalRequestConflict`, as S3 answers a
    /// conditional write that raced another one; not done.
    pub fn conflict(&self, n: u32) -> &Self {
        self.state().conflict += n;
        self
    }

    /// The next `n` object GETs send their headers and half their body,
    /// then reset the connection.
    pub fn reset_mid_body(&self, n: u32) -> &Self {
        self.state().reset_mid_body += n;
        self
    }

    /// The next `n` writes (PUT, copy, DELETE, multipart calls) are done and
    /// durable, and then the connection closes without a reply: the client
    /// cannot know it happened (a timeout's ambiguity, the cause of doubled
    /// commits on retry).
    pub fn lose_reply(&self, n: u32) -> &Self {
        self.state().lose_reply += n;
        self
    }

    /// From now on every request is held, unanswered, until [`Faults::heal`]
    /// (a black hole: clients time out). Held requests then go on.
    pub fn hang(&self) -> &Self {
        self.hung.send_replace(true);
        self
    }

    /// Every response waits `delay` before its first byte (`Duration::ZERO`
    /// ends it).
    pub fn slow_first_byte(&self, delay: Duration) -> &Self {
        self.state().slow_first_byte = delay;
        self
    }

    /// A key written appears in listings only `lag` after its write
    /// (`Duration::ZERO` ends it). GET and HEAD see it at once, as S3's
    /// read-after-write promise says; deletes leave listings at once. S3 has
    /// listed strongly since December 2020: this models the stores and
    /// caches in front of them that do not.
    pub fn list_lag(&self, lag: Duration) -> &Self {
        self.state().list_lag = lag;
        self
    }

    /// Each request draws its faults from the seed (under simulation:
    /// named fault points `s3: …` that the sweep's catalog and coverage
    /// list; in production never).
    pub fn drawn(&self) -> &Self {
        self.state().drawn = true;
        self
    }

    /// Ends every fault: counts go to zero, a hang releases what it held,
    /// delays and lag end, drawing stops.
    pub fn heal(&self) -> &Self {
        {
            let mut s = self.state();
            let seen = s.seen;
            *s = State {
                seen,
                ..State::default()
            };
        }
        self.hung.send_replace(false);
        self
    }

    /// What was served so far.
    pub fn seen(&self) -> Seen {
        self.state().seen
    }

    pub(crate) fn list_lag_now(&self) -> Duration {
        self.state().list_lag
    }

    pub(crate) fn saw_list_lag(&self) {
        tracing::info!(target: "sim_s3", "fault: a listing left out keys written within the list lag");
        self.state().seen.list_lag += 1;
    }

    /// Waits while the store hangs.
    pub(crate) async fn pass_hang(&self) {
        let mut rx = self.hung.subscribe();
        if *rx.borrow_and_update() {
            self.state().seen.hung += 1;
            tracing::info!(target: "sim_s3", "fault: a request held until the heal (Faults::hang)");
            // The sender lives in `self`: it cannot close while we wait.
            let _ = rx.wait_for(|hung| !hung).await;
        }
    }

    /// What a request of this kind meets.
    pub(crate) fn plan(&self, kind: Kind, conditional: bool) -> Plan {
        let mut s = self.state();
        let mut plan = Plan {
            first_byte: s.slow_first_byte,
            ..Plan::default()
        };
        if s.drawn {
            if crate::draw::slow_down() {
                s.slow_down += 1;
            }
            if crate::draw::internal_error() {
                s.internal_error += 1;
            }
            if conditional && crate::draw::conflict() {
                s.conflict += 1;
            }
            if kind == Kind::Read && crate::draw::reset_mid_body() {
                s.reset_mid_body += 1;
            }
            if kind == Kind::Write && crate::draw::lose_reply() {
                s.lose_reply += 1;
            }
            if crate::draw::slow_first_byte() {
                plan.first_byte += Duration::from_millis(200);
            }
        }
        if s.slow_down > 0 {
            s.slow_down -= 1;
            s.seen.slow_down += 1;
            plan.error = Some(Error::SlowDown);
        } else if s.internal_error > 0 {
            s.internal_error -= 1;
            s.seen.internal_error += 1;
            plan.error = Some(Error::Internal);
        } else if kind == Kind::Read && s.reset_mid_body > 0 {
            s.reset_mid_body -= 1;
            s.seen.reset_mid_body += 1;
            plan.reset_mid_body = true;
        } else if kind == Kind::Write && s.lose_reply > 0 {
            s.lose_reply -= 1;
            s.seen.lose_reply += 1;
            plan.lose_reply = true;
        }
        if !plan.first_byte.is_zero() {
            s.seen.slow_first_byte += 1;
        }
        plan
    }

    /// Whether this conditional write meets a 409 (after its plan).
    pub(crate) fn take_conflict(&self) -> bool {
        let mut s = self.state();
        if s.conflict > 0 {
            s.conflict -= 1;
            s.seen.conflict += 1;
            true
        } else {
            false
        }
    }
}
