use crate::simulation::core::executor;
use crate::simulation::core::hooks;
use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A measurement of the node's monotonically nondecreasing virtual clock.
///
/// Same shape as Tokio's: a wrapper around `std::time::Instant`, so
/// `from_std`/`into_std` convert freely and compare correctly with
/// `std::time::Instant::now()` inside the simulation.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    std: std::time::Instant,
}

impl Instant {
    /// The current instant on this node's clock (outside a simulation: the
    /// real clock).
    pub fn now() -> Instant {
        executor::with_current(|exec| Instant {
            std: exec.base_std + Duration::from_nanos(Instant::local_now_ns(exec)),
        })
        .unwrap_or_else(|| Instant {
            std: std::time::Instant::now(),
        })
    }

    /// The current node's clock as ns past `exec.base_std` (what `now()`
    /// adds to the base).
    #[inline]
    pub(crate) fn local_now_ns(exec: &executor::Exec) -> u64 {
        let core = exec.core();
        let n = core.node(exec.current_node());
        if n.mono_offset_ns == 0 && n.drift_ppm == 0 {
            return core.now();
        }
        let local =
            hooks::local_elapsed_ns(core.now(), n.drift_ppm) as i128 + n.mono_offset_ns as i128;
        local.max(0) as u64
    }

    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant { std }
    }

    pub fn into_std(self) -> std::time::Instant {
        self.std
    }

    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.std.checked_duration_since(earlier.std)
    }

    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_add(duration).map(Instant::from_std)
    }

    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_sub(duration).map(Instant::from_std)
    }

    /// Far enough in the future to stand for "never" (Tokio uses ~30 years).
    pub(crate) fn far_future() -> Instant {
        Instant::now() + Duration::from_secs(86_400 * 365 * 30)
    }

    /// This instant as ns past `exec.base_std` (0 for an earlier one).
    pub(crate) fn since_base_ns(self, exec: &executor::Exec) -> i128 {
        self.std.saturating_duration_since(exec.base_std).as_nanos() as i128
    }

    /// The instant `since_base` ns past the executor's base, read on node
    /// `n`'s clock, as global virtual time (ns since the run started);
    /// instants in the past map to "now or earlier", which the caller treats
    /// as already due.
    #[inline]
    pub(crate) fn global_ns(n: &crate::simulation::core::node::NodeState, since_base: i128) -> u64 {
        let local = since_base - n.mono_offset_ns as i128;
        if local <= 0 {
            return 0;
        }
        let global = if n.drift_ppm == 0 {
            local
        } else {
            // Invert local = global * (1 + ppm/1e6), rounding up so a timer
            // never fires before its local deadline.
            let den = 1_000_000i128 + n.drift_ppm as i128;
            (local * 1_000_000 + den - 1) / den
        };
        global.clamp(0, u64::MAX as i128) as u64
    }
}

impl From<std::time::Instant> for Instant {
    fn from(time: std::time::Instant) -> Instant {
        Instant::from_std(time)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(value: Instant) -> std::time::Instant {
        value.into_std()
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, other: Duration) -> Instant {
        Instant::from_std(self.std + other)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.std.saturating_duration_since(rhs.std)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant::from_std(std::time::Instant::sub(self.std, rhs))
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, fmt: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.std.fmt(fmt)
    }
}
