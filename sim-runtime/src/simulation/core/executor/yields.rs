//! `yield_now`. As in Tokio's current-thread scheduler, the yielding task
//! runs again only after the tasks that are runnable now have had their
//! turn: it waits in a list, woken in the order of yielding once the run
//! queue is empty, and at least every `YIELD_INTERVAL` steps. In a run
//! whose yields run ahead (schedule/yield_ahead.rs) a yield on a
//! multi-thread runtime is a plain wake instead.

use super::*;

/// Yielded tasks are woken at least every this many steps (Tokio's default
/// `event_interval`).
const YIELD_INTERVAL: u64 = 61;

#[derive(Default)]
pub(super) struct Yields {
    /// Tasks that called `yield_now`, woken once the run queue is empty.
    list: RefCell<Vec<WakeRef>>,
    /// The previous batch's buffer, kept for its capacity.
    spare: Cell<Vec<WakeRef>>,
    /// The step at which the yielders were last woken.
    flushed_at: Cell<u64>,
}

/// `yield_now`: defers the wake of `waker` until the tasks runnable now
/// have run, or wakes it at once when yields run ahead (or outside a
/// simulation).
pub(crate) fn defer_yield(waker: &Waker) {
    let deferred = with_current(|exec| {
        let core = exec.core.borrow();
        if schedule::runs_ahead(&core.config, exec.compat.multi_thread()) {
            return false;
        }
        let w = core.wake_ref(waker);
        exec.yields.list.borrow_mut().push(w);
        true
    });
    if deferred != Some(true) {
        waker.wake_by_ref();
    }
}

impl Exec {
    /// Whether tasks wait in the yield list.
    #[inline]
    pub(super) fn has_yielders(&self) -> bool {
        !self.yields.list.borrow().is_empty()
    }

    /// Whether the yielders are due at `step` although tasks are still
    /// runnable: as Tokio wakes deferred tasks at least every 61 polls, a
    /// yielder is not starved by tasks that keep waking each other.
    #[inline]
    pub(super) fn yielders_due(&self, step: u64) -> bool {
        step >= self.yields.flushed_at.get() + YIELD_INTERVAL && self.has_yielders()
    }

    /// Wakes the tasks that called `yield_now`, in the order they yielded.
    pub(super) fn wake_yielded(&self) {
        self.yields.flushed_at.set(self.core.borrow().step);
        let mut yielded = self.yields.list.replace(self.yields.spare.take());
        self.drain_wakes(true);
        self.wake_in_order(&mut yielded);
        self.yields.spare.set(yielded);
    }
}
