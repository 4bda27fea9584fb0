//! `tokio::task::coop` under simulation.
//!
//! Tokio gives each task a budget of operations per poll so that a task
//! whose resources are always ready still yields. The simulation does not
//! budget (the real Tokio resources it re-exports, such as channels, read
//! their budget from Tokio's own runtime context, which is unconstrained
//! here), so these functions always allow progress. A busy task is bounded by
//! the step limit instead. Listed as a deliberate difference in
//! ARCHITECTURE.md.

pub use super::{consume_budget, unconstrained, Unconstrained};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Whether the current task has budget left: always, in simulation.
#[inline]
pub fn has_budget_remaining() -> bool {
    true
}

/// Value returned by [`poll_proceed`].
#[derive(Debug)]
#[must_use]
pub struct RestoreOnPending(PhantomData<*mut ()>);

impl RestoreOnPending {
    /// Signals that the task made progress (nothing to restore here).
    pub fn made_progress(&self) {}
}

/// Consumes a unit of budget: always granted in simulation.
#[inline]
pub fn poll_proceed(_cx: &mut Context<'_>) -> Poll<RestoreOnPending> {
    Poll::Ready(RestoreOnPending(PhantomData))
}

/// Future returned by [`cooperative`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Coop<F: Future> {
    fut: F,
}

impl<F: Future> Future for Coop<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of the only field.
        unsafe { self.map_unchecked_mut(|s| &mut s.fut) }.poll(cx)
    }
}

/// Makes a future participate in budgeting (a no-op in simulation).
#[inline]
pub fn cooperative<F: Future>(fut: F) -> Coop<F> {
    Coop { fut }
}
