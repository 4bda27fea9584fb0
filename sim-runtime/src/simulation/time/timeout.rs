use super::error::Elapsed;
use super::{sleep_until, Instant, Sleep};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Requires a future to complete before `duration` has elapsed.
#[track_caller]
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    let deadline = Instant::now()
        .checked_add(duration)
        .unwrap_or_else(Instant::far_future);
    Timeout {
        value: future.into_future(),
        delay: sleep_until(deadline),
    }
}

/// Requires a future to complete before `deadline`.
#[track_caller]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    Timeout {
        value: future.into_future(),
        delay: sleep_until(deadline),
    }
}

/// Future returned by [`timeout`] and [`timeout_at`].
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[derive(Debug)]
pub struct Timeout<T> {
    value: T,
    delay: Sleep,
}

impl<T> Timeout<T> {
    pub fn get_ref(&self) -> &T {
        &self.value
    }
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T: Future> Future for Timeout<T> {
    type Output = Result<T::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: both fields are structurally pinned and never moved.
        let this = unsafe { self.get_unchecked_mut() };
        let had_budget_before = crate::task::coop::has_budget_remaining();
        // SAFETY: as above.
        if let Poll::Ready(v) = unsafe { Pin::new_unchecked(&mut this.value) }.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let has_budget_now = crate::task::coop::has_budget_remaining();
        // SAFETY: as above.
        let delay = unsafe { Pin::new_unchecked(&mut this.delay) };
        // As Tokio's: if the future spent the last of the budget, the
        // deadline is still checked (outside the budget), so a timeout
        // fires even around a future that keeps exhausting it.
        let fired = if had_budget_before && !has_budget_now {
            let mut unconstrained = std::pin::pin!(crate::task::coop::unconstrained(delay));
            unconstrained.as_mut().poll(cx)
        } else {
            delay.poll(cx)
        };
        match fired {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}
