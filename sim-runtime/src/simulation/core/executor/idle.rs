//! When nothing is runnable: before the run may go idle (move the clock,
//! or stop a pump, or declare a deadlock) every source of work that is not
//! in the run queue gets its turn, in this order: wakes from other
//! threads, real Tokio's deferred wakes, the yielders, the park hook
//! (`Builder::on_thread_park`), and real Tokio once more before a deadlock.

use super::*;
use crate::simulation::core::outside;
use std::cell::RefMut;
use std::time::Duration;

#[derive(Default)]
pub(super) struct Idle {
    /// The park hook already ran in this idle period (it runs once each
    /// time the run queue empties).
    park_hook_ran: Cell<bool>,
    /// A poll spent its whole budget inside real Tokio's context since
    /// Tokio last woke what it deferred (core/executor/context.rs).
    unflushed: Cell<bool>,
    /// Real Tokio was flushed since the last poll, before a deadlock.
    deadlock_flushed: Cell<bool>,
    /// Real time already spent waiting for threads started outside the
    /// simulation ([`Idle::wait_for_starter_children`]).
    waited_outside: Cell<Duration>,
}

/// How long in all a run waits for threads its thread started outside any
/// simulation before it declares a deadlock, and how long at a time.
const STARTER_CHILDREN_PATIENCE: Duration = Duration::from_secs(2);
const STARTER_CHILDREN_STEP: Duration = Duration::from_millis(1);

impl Idle {
    /// Nothing in the run can move, but a thread that the executor's thread
    /// started outside any simulation still runs: waits a moment for it
    /// (its wake lands in the remote queue, which the caller looks at
    /// first), and says whether to look again. A tape's replay does not
    /// wait: it reruns draws that already led where they lead.
    fn wait_for_starter_children(&self) -> bool {
        let waited = self.waited_outside.get();
        if waited >= STARTER_CHILDREN_PATIENCE
            || crate::simulation::core::tape::replaying()
            || !outside::children_running()
        {
            return false;
        }
        outside::pause(STARTER_CHILDREN_STEP);
        self.waited_outside.set(waited + STARTER_CHILDREN_STEP);
        true
    }
}

impl Exec {
    /// After a poll inside real Tokio's context: a poll that spent the
    /// whole budget may have left a deferred wake with Tokio (its
    /// operation returned `Pending` and woke the task through Tokio's
    /// scheduler), which must be flushed before the run may go idle.
    #[inline]
    pub(super) fn after_real_poll(&self) {
        if context::refresh_budget() {
            self.idle.unflushed.set(true);
        }
        self.idle.deadlock_flushed.set(false);
    }

    /// A task was picked: the run is not idle, and the park hook runs
    /// again when it next is.
    #[inline]
    pub(super) fn not_idle(&self) {
        self.idle.park_hook_ran.set(false);
    }

    /// The run queue is empty. Returns what `next` returns, or `None` to go
    /// on (something may be runnable now, or the clock moved). Consumes the
    /// core borrow, as user code may run.
    pub(super) fn when_empty<'a>(
        &'a self,
        mut core: RefMut<'a, Core>,
        when_idle: WhenIdle,
    ) -> Option<Next> {
        if self.shared.has_remote.load(Ordering::Acquire) {
            drop(core);
            self.drain_wakes(true);
            return None;
        }
        if self.idle.unflushed.replace(false) {
            // Tokio wakes what it deferred (a task that spent its budget)
            // together with the tasks that yielded: both are runnable
            // again at once.
            if self.has_yielders() {
                drop(core);
                self.wake_yielded();
            }
            return Some(Next::Flush);
        }
        if self.has_yielders() {
            // Every task that was runnable when these yielded has run: the
            // yielders go again, in the order they yielded.
            drop(core);
            self.wake_yielded();
            return None;
        }
        if !self.idle.park_hook_ran.replace(true) {
            if let Some(hook) = self.compat.park_hook() {
                drop(core);
                hook();
                self.drain_wakes(true);
                return None;
            }
        }
        // Nothing is due ever: before a deadlock is declared, what could
        // still move the run gets its chance. (Asked once for the first two
        // chances, which touch no timer unless they return; again after the
        // drivers were asked.)
        let stuck = when_idle == WhenIdle::Advance && core.clock.timers.next_deadline().is_none();
        // Real Tokio wakes what it deferred (a crate built on real Tokio may
        // have yielded through it).
        if stuck && !self.idle.deadlock_flushed.replace(true) {
            return Some(Next::Flush);
        }
        // A thread outside the run may still release what a simulated thread
        // waits for (thread/).
        if stuck {
            let mut wake = Vec::new();
            let mut more = false;
            core.each_driver(|d, _| more |= d.outside(&mut wake));
            if more {
                drop(core);
                for w in wake {
                    w.wake();
                }
                self.drain_wakes(true);
                return None;
            }
        }
        // Before a deadlock is declared, a thread this thread started outside
        // any simulation (a producer a test started before its runtime) may
        // still wake a task: it is waited for, for real, a little at a time,
        // until it wakes one or ends (core/outside.rs).
        if stuck
            && core.clock.timers.next_deadline().is_none()
            && self.idle.wait_for_starter_children()
        {
            drop(core);
            return None;
        }
        // A pump stops here unless timers are due at this very instant
        // (firing them does not move the clock).
        let now = core.clock.now;
        if when_idle == WhenIdle::Stop && core.clock.timers.next_deadline().is_none_or(|d| d > now)
        {
            return Some(Next::Idle);
        }
        self.advance(core).err().map(Next::Fail)
    }
}
