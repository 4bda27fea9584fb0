use super::{sleep_until, Instant, Sleep};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Creates an interval whose first tick completes immediately.
///
/// # Panics
/// If `period` is zero.
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    assert!(period > Duration::new(0, 0), "`period` must be non-zero.");
    interval_at(Instant::now(), period)
}

/// Creates an interval whose first tick completes at `start`.
///
/// # Panics
/// If `period` is zero.
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(period > Duration::new(0, 0), "`period` must be non-zero.");
    Interval {
        delay: Box::pin(sleep_until(start)),
        period,
        missed_tick_behavior: MissedTickBehavior::default(),
    }
}

/// What an [`Interval`] does when ticks were missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedTickBehavior {
    /// Ticks as fast as possible until caught up.
    #[default]
    Burst,
    /// Ticks `period` after the late tick.
    Delay,
    /// Skips the missed ticks and stays on the original schedule.
    Skip,
}

impl MissedTickBehavior {
    fn next_timeout(&self, timeout: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            Self::Burst => timeout + period,
            Self::Delay => now + period,
            Self::Skip => {
                let behind = (now - timeout).as_nanos();
                let p = period.as_nanos();
                now + period - Duration::from_nanos((behind % p) as u64)
            }
        }
    }
}

/// Interval returned by [`interval`] and [`interval_at`].
#[derive(Debug)]
pub struct Interval {
    delay: Pin<Box<Sleep>>,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

impl Interval {
    /// Completes when the next instant in the interval has been reached.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next instant in the interval to be reached.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if self.delay.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let timeout = self.delay.deadline();
        let now = Instant::now();
        // Tokio treats a tick up to 5ms late as on time.
        let next = if now.saturating_duration_since(timeout) > Duration::from_millis(5) {
            self.missed_tick_behavior
                .next_timeout(timeout, now, self.period)
        } else {
            timeout
                .checked_add(self.period)
                .unwrap_or_else(Instant::far_future)
        };
        self.delay.as_mut().reset(next);
        Poll::Ready(timeout)
    }

    /// Resets the interval to complete one period after now.
    pub fn reset(&mut self) {
        self.delay.as_mut().reset(after_now(self.period));
    }

    /// Resets the interval to complete immediately.
    pub fn reset_immediately(&mut self) {
        self.delay.as_mut().reset(Instant::now());
    }

    /// Resets the interval to complete `after` from now.
    pub fn reset_after(&mut self, after: Duration) {
        self.delay.as_mut().reset(after_now(after));
    }

    /// Resets the interval to complete at `deadline`.
    pub fn reset_at(&mut self, deadline: Instant) {
        self.delay.as_mut().reset(deadline);
    }

    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }

    pub fn period(&self) -> Duration {
        self.period
    }
}

/// `now + d`, saturating at the far future as Tokio does.
fn after_now(d: Duration) -> Instant {
    Instant::now()
        .checked_add(d)
        .unwrap_or_else(Instant::far_future)
}
