//! Yields ahead, a modifier of the exploring strategies: on a multi-thread
//! runtime (`#[tokio::main]`, `flavor = "multi_thread"`, the harness's
//! nodes), in a run whose seed drew it, a task that calls `yield_now` is
//! runnable again at once, like any woken task, instead of after the tasks
//! runnable when it yielded (Tokio's current-thread order, also a
//! multi-thread one's). On Tokio's multi-thread runtime another worker may
//! be busy, so a task may take many steps while another takes none, and the
//! schedules must be able to produce that.

use super::Schedule;
use crate::simulation::core::config::{steering, Config};
use crate::simulation::core::seed;

/// Whether yields may run ahead in a run of `seed` (`Config::yield_ahead`):
/// `SIM_YIELD_AHEAD`, else half the seeds (drawn independently of the
/// strategy and of early timers); never under a strategy that keeps Tokio's
/// current-thread order exactly (FIFO).
pub(crate) fn yield_ahead_for(seed: u64, schedule: Schedule) -> bool {
    !schedule.keeps_tokio_order()
        && steering()
            .yield_ahead
            .unwrap_or_else(|| seed::decide(seed, "yield.ahead") & 1 == 1)
}

/// Whether a `yield_now` now is a plain wake (it runs ahead) rather than
/// deferred until the tasks runnable now have run: on a multi-thread
/// runtime, in a run that drew yields ahead.
#[inline]
pub(crate) fn runs_ahead(config: &Config, multi_thread: bool) -> bool {
    multi_thread && config.yield_ahead
}
