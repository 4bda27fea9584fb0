//! `tokio::time` under simulation: virtual time.
//!
//! The clock only moves when nothing is runnable: it then jumps to the
//! earliest timer. A timer's deadline is rounded up to the next millisecond
//! of virtual time (Tokio's granularity), so a sleep lasts at least its
//! duration; timers due at the same instant fire in an order drawn from the
//! seed. Each node reads its own clock (offset and drift), and deadlines are
//! converted to global time when a timer is registered.

mod instant;
mod interval;
mod sleep;
mod timeout;

pub use instant::Instant;
pub use interval::{interval, interval_at, Interval, MissedTickBehavior};
pub(crate) use sleep::os_sleep;
pub use sleep::{sleep, sleep_until, Sleep};
pub use timeout::{timeout, timeout_at, Timeout};

pub use std::time::Duration;

/// Errors of `tokio::time`.
pub mod error {
    use std::fmt;

    /// Returned by `timeout` and `timeout_at` when the deadline passed.
    #[derive(Debug, PartialEq, Eq)]
    pub struct Elapsed(pub(crate) ());

    impl fmt::Display for Elapsed {
        fn fmt(&self, fmt: &mut fmt::Formatter<'_>) -> fmt::Result {
            "deadline has elapsed".fmt(fmt)
        }
    }

    impl std::error::Error for Elapsed {}

    impl From<Elapsed> for std::io::Error {
        fn from(_err: Elapsed) -> std::io::Error {
            std::io::ErrorKind::TimedOut.into()
        }
    }

    /// Timer errors (never produced by the simulation's timer, which cannot
    /// shut down or run out of capacity; kept for API parity).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Error(());

    impl Error {
        pub fn shutdown() -> Error {
            Error(())
        }
        pub fn is_shutdown(&self) -> bool {
            true
        }
        pub fn at_capacity() -> Error {
            Error(())
        }
        pub fn is_at_capacity(&self) -> bool {
            false
        }
        pub fn invalid() -> Error {
            Error(())
        }
        pub fn is_invalid(&self) -> bool {
            false
        }
    }

    impl fmt::Display for Error {
        fn fmt(&self, fmt: &mut fmt::Formatter<'_>) -> fmt::Result {
            "timer is shutdown".fmt(fmt)
        }
    }

    impl std::error::Error for Error {}
}

fn frozen_exec(what: &str) -> std::rc::Rc<crate::simulation::core::executor::Exec> {
    crate::simulation::core::executor::current()
        .unwrap_or_else(|| panic!("time cannot be {what} from outside the Tokio runtime"))
}

/// Pauses time, as Tokio's test-util does. The simulated clock is virtual
/// and auto-advancing whether or not time is "paused"; the call only keeps
/// Tokio's rules.
///
/// # Panics
/// If time is already frozen, outside a runtime, or on a multi-thread
/// runtime (as in Tokio); a harness test (`#[sim::test]`), whose nodes run
/// as on a multi-thread runtime, may pause: it owns the one clock.
#[track_caller]
pub fn pause() {
    let exec = frozen_exec("frozen");
    assert!(
        !exec.compat.multi_thread() || exec.compat.one_clock(),
        "`time::pause()` requires the `current_thread` Tokio runtime. This is the default Runtime used by `#[tokio::test]."
    );
    assert!(!exec.compat.set_time_frozen(true), "time is already frozen");
}

/// Resumes time.
///
/// # Panics
/// If time is not frozen, or outside a runtime (as in Tokio).
#[track_caller]
pub fn resume() {
    let exec = frozen_exec("resumed");
    assert!(exec.compat.set_time_frozen(false), "time is not frozen");
}

/// Advances time by `duration`: the calling task sleeps exactly that long
/// (no millisecond rounding) and every timer due meanwhile fires.
///
/// # Panics
/// If time is not frozen (as in Tokio).
pub async fn advance(duration: Duration) {
    let frozen = frozen_exec("frozen").compat.time_frozen();
    assert!(frozen, "time is not frozen");
    sleep::Sleep::exact(duration).await
}
