//! A task's future wrapper, its `JoinHandle`, `AbortHandle` and `JoinError`.
//!
//! The wrapper (`TaskCell`) catches the future's panic, stores the outcome
//! in a shared slot and wakes the joiner. Dropping the wrapper before the
//! future finished is cancellation: the joiner gets `JoinError::Cancelled`.
//! That one rule covers `abort`, node kills and runtime shutdown alike.

use super::Id;
use crate::simulation::executor::{self, Header};
use crate::simulation::report;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

type Notify = Arc<dyn Fn(Id) + Send + Sync>;

struct Slot<T> {
    result: Option<Result<T, JoinError>>,
    done: bool,
    waker: Option<Waker>,
    handle_alive: bool,
    notify: Option<Notify>,
}

pub(crate) struct JoinState<T> {
    slot: Mutex<Slot<T>>,
}

impl<T> JoinState<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot<T>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores the outcome. Returns whether a handle was there to see it.
    fn complete(&self, id: Id, result: Result<T, JoinError>) -> bool {
        let mut s = self.lock();
        if s.done {
            return s.handle_alive;
        }
        s.done = true;
        let alive = s.handle_alive;
        if alive {
            s.result = Some(result);
        }
        let waker = s.waker.take();
        let notify = s.notify.take();
        drop(s);
        if let Some(w) = waker {
            w.wake();
        }
        if let Some(n) = notify {
            n(id);
        }
        alive
    }
}

enum Stage<F: Future> {
    Running(F),
    Done,
}

/// Drops the future where it is pinned and leaves `Done` behind, even when
/// its destructor panics (the panic is returned, not propagated, and the
/// future is never dropped twice).
fn finish_in_place<F: Future>(stage: &mut Stage<F>) -> std::thread::Result<()> {
    // SAFETY: `drop_in_place` runs the destructor in place, which pinning
    // allows; whether it returns or unwinds, the old value counts as
    // dropped, so overwriting it with `ptr::write` (which does not drop)
    // never drops it again.
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| unsafe {
        std::ptr::drop_in_place(stage)
    }));
    // SAFETY: see above.
    unsafe { std::ptr::write(stage, Stage::Done) };
    r
}

/// The future the executor polls for a spawned task.
pub(crate) struct TaskCell<F: Future> {
    stage: Stage<F>,
    join: Arc<JoinState<F::Output>>,
    header: Arc<Header>,
    id: Id,
    name: Option<Arc<str>>,
}

impl<F: Future> TaskCell<F> {
    pub(crate) fn new(
        fut: F,
        header: Arc<Header>,
        name: Option<Arc<str>>,
    ) -> (TaskCell<F>, JoinHandle<F::Output>) {
        let join = Arc::new(JoinState {
            slot: Mutex::new(Slot {
                result: None,
                done: false,
                waker: None,
                handle_alive: true,
                notify: None,
            }),
        });
        let id = Id(header.id);
        let cell = TaskCell {
            stage: Stage::Running(fut),
            join: join.clone(),
            header: header.clone(),
            id,
            name,
        };
        (
            cell,
            JoinHandle {
                join,
                header,
                id,
                _p: PhantomData,
            },
        )
    }
}

impl<F: Future> Future for TaskCell<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `stage` is never moved out while `Running`; it is only
        // overwritten in place, which drops the future where it is pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let Stage::Running(fut) = &mut this.stage else {
            return Poll::Ready(());
        };
        // SAFETY: see above; the future stays at this address until dropped.
        let fut = unsafe { Pin::new_unchecked(fut) };
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                let _ = finish_in_place(&mut this.stage);
                this.header.set_finished();
                this.join.complete(this.id, Ok(v));
                Poll::Ready(())
            }
            Err(payload) => {
                // Dropping a future that panicked may panic again; that
                // second panic is swallowed, as Tokio does.
                let _ = finish_in_place(&mut this.stage);
                let text = report::payload_text(&*payload);
                this.header.set_finished();
                let observed = this
                    .join
                    .complete(this.id, Err(JoinError::panic(this.id, payload)));
                if !observed {
                    executor::unhandled_panic(this.id.0, this.name.as_deref(), &text);
                }
                Poll::Ready(())
            }
        }
    }
}

impl<F: Future> Drop for TaskCell<F> {
    fn drop(&mut self) {
        if let Stage::Running(_) = self.stage {
            // Drop the future first (its destructors may spawn or wake), then
            // tell the joiner. A destructor that panics is contained and
            // reported to the joiner as the task's panic, as in Tokio.
            let dropped = finish_in_place(&mut self.stage);
            self.header.set_finished();
            let err = match dropped {
                Ok(()) => JoinError::cancelled(self.id),
                Err(payload) => JoinError::panic(self.id, payload),
            };
            self.join.complete(self.id, Err(err));
        }
    }
}

/// An owned permission to join on a task (await its termination).
///
/// As in Tokio: dropping it detaches the task; awaiting it yields the task's
/// output or a [`JoinError`].
pub struct JoinHandle<T> {
    join: Arc<JoinState<T>>,
    header: Arc<Header>,
    id: Id,
    _p: PhantomData<T>,
}

impl<T> Unpin for JoinHandle<T> {}
impl<T> UnwindSafe for JoinHandle<T> {}
impl<T> RefUnwindSafe for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// Aborts the task. A task that already finished is not affected.
    pub fn abort(&self) {
        if !self.is_finished() {
            self.header.abort();
        }
    }

    /// Whether the task has finished (completed, panicked or cancelled).
    pub fn is_finished(&self) -> bool {
        self.header.is_finished()
    }

    /// A handle that can abort the task without joining it.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            header: self.header.clone(),
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.id
    }

    /// Called by `JoinSet`: run `f(id)` when the task finishes (at once if
    /// it already has).
    pub(crate) fn on_complete(&self, f: Notify) {
        let mut s = self.join.lock();
        if s.done {
            drop(s);
            f(self.id);
        } else {
            s.notify = Some(f);
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // As Tokio's: a poll spends a unit of the task's budget (given back
        // if the task has not finished).
        let coop = std::task::ready!(crate::task::coop::poll_proceed(cx));
        let mut s = self.join.lock();
        if let Some(r) = s.result.take() {
            crate::simulation::executor::progress(coop);
            return Poll::Ready(r);
        }
        if s.done {
            panic!("`JoinHandle` polled after completion");
        }
        let old = match &s.waker {
            Some(w) if w.will_wake(cx.waker()) => None,
            _ => s.waker.replace(cx.waker().clone()),
        };
        drop(s);
        // The replaced waker is dropped outside the lock: its destructor may
        // do anything, including completing this very task.
        drop(old);
        Poll::Pending
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        let mut s = self.join.lock();
        s.handle_alive = false;
        // Tokio drops an unclaimed output when the handle goes; so do we,
        // outside the lock (the output's destructor may do anything).
        let out = s.result.take();
        let waker = s.waker.take();
        drop(s);
        drop(waker);
        if out.is_some() {
            // Dropped in the task's context; a panic in the output's
            // destructor is swallowed, as in Tokio.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                executor::with_task_id(self.id.0, || drop(out));
            }));
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle").field("id", &self.id).finish()
    }
}

/// An owned permission to abort a spawned task, without awaiting its
/// completion.
#[derive(Clone)]
pub struct AbortHandle {
    header: Arc<Header>,
}

impl AbortHandle {
    /// Aborts the task. A task that already finished is not affected.
    pub fn abort(&self) {
        if !self.is_finished() {
            self.header.abort();
        }
    }

    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.header.is_finished()
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        Id(self.header.id)
    }
}

impl UnwindSafe for AbortHandle {}
impl RefUnwindSafe for AbortHandle {}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.id())
            .finish()
    }
}

enum Repr {
    Cancelled,
    Panic(Mutex<Box<dyn Any + Send + 'static>>),
}

/// Task failed to execute to completion.
pub struct JoinError {
    repr: Repr,
    id: Id,
}

impl JoinError {
    pub(crate) fn cancelled(id: Id) -> JoinError {
        JoinError {
            repr: Repr::Cancelled,
            id,
        }
    }

    pub(crate) fn panic(id: Id, payload: Box<dyn Any + Send + 'static>) -> JoinError {
        JoinError {
            repr: Repr::Panic(Mutex::new(payload)),
            id,
        }
    }

    /// Returns true if the error was caused by the task being cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(&self.repr, Repr::Cancelled)
    }

    /// Returns true if the error was caused by the task panicking.
    pub fn is_panic(&self) -> bool {
        matches!(&self.repr, Repr::Panic(_))
    }

    /// Consumes the join error, returning the object with which the task
    /// panicked. Panics if the error was not a panic.
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .expect("`JoinError` reason is not a panic.")
    }

    /// Consumes the join error, returning the panic payload if there is one.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic(p) => Ok(p.into_inner().unwrap_or_else(|e| e.into_inner())),
            _ => Err(self),
        }
    }

    /// The id of the task that failed.
    pub fn id(&self) -> Id {
        self.id
    }

    fn panic_text(&self) -> Option<String> {
        match &self.repr {
            Repr::Panic(p) => {
                let p = p.lock().unwrap_or_else(|e| e.into_inner());
                p.downcast_ref::<&'static str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
            }
            Repr::Cancelled => None,
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "task {} was cancelled", self.id),
            Repr::Panic(_) => match self.panic_text() {
                Some(m) => write!(f, "task {} panicked with message {:?}", self.id, m),
                None => write!(f, "task {} panicked", self.id),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "JoinError::Cancelled({:?})", self.id),
            Repr::Panic(_) => match self.panic_text() {
                Some(m) => write!(f, "JoinError::Panic({:?}, {:?}, ...)", self.id, m),
                None => write!(f, "JoinError::Panic({:?}, ...)", self.id),
            },
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for std::io::Error {
    fn from(src: JoinError) -> std::io::Error {
        std::io::Error::other(match src.repr {
            Repr::Cancelled => "task was cancelled",
            Repr::Panic(_) => "task panicked",
        })
    }
}
