//! A task's join slot, its `JoinHandle`, `AbortHandle` and `JoinError`.
//!
//! The task (task/raw.rs) catches the future's panic, stores the outcome in
//! its join slot and wakes the joiner. The executor letting go of a task
//! whose future has not finished is cancellation: the joiner gets
//! `JoinError::Cancelled`. That one rule covers `abort`, node kills and
//! runtime shutdown alike.

use super::raw::TaskRef;
use super::Id;
use crate::simulation::core::executor;
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
    pub(crate) fn new() -> JoinState<T> {
        JoinState {
            slot: Mutex::new(Slot {
                result: None,
                done: false,
                waker: None,
                handle_alive: true,
                notify: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot<T>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores the outcome. Returns whether a handle was there to see it.
    pub(crate) fn complete(&self, id: Id, result: Result<T, JoinError>) -> bool {
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

pub(crate) enum Stage<F: Future> {
    Running(F),
    Done,
}

/// Drops the future where it is pinned and leaves `Done` behind, even when
/// its destructor panics (the panic is returned, not propagated, and the
/// future is never dropped twice).
pub(crate) fn finish_in_place<F: Future>(stage: &mut Stage<F>) -> std::thread::Result<()> {
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

/// An owned permission to join on a task (await its termination).
///
/// As in Tokio: dropping it detaches the task; awaiting it yields the task's
/// output or a [`JoinError`].
pub struct JoinHandle<T> {
    raw: TaskRef,
    id: Id,
    _p: PhantomData<T>,
}

// Tokio's bounds: `Send` and `Sync` when the output is `Send`.
// SAFETY: the handle reaches the header (thread-safe) and the join slot
// (behind a mutex) only; the future is never reached through it.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: as above; and through `&JoinHandle` the output is never reached
// at all (only `abort`, `is_finished`, `id` and `abort_handle`, which touch
// the header), so sharing a handle shares no `T`.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}
impl<T> UnwindSafe for JoinHandle<T> {}
impl<T> RefUnwindSafe for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// The handle of the task `raw`, whose output type is `T`.
    pub(crate) fn new(raw: TaskRef, id: u64) -> JoinHandle<T> {
        JoinHandle {
            raw,
            id: Id(id),
            _p: PhantomData,
        }
    }

    fn join(&self) -> &JoinState<T> {
        // SAFETY: `new`'s caller made `raw` for a task whose output is `T`.
        unsafe { self.raw.join::<T>() }
    }

    /// Aborts the task. A task that already finished is not affected.
    pub fn abort(&self) {
        if !self.is_finished() {
            self.raw.header().abort();
        }
    }

    /// Whether the task has finished (completed, panicked or cancelled).
    pub fn is_finished(&self) -> bool {
        self.raw.header().is_finished()
    }

    /// A handle that can abort the task without joining it.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            raw: self.raw.clone(),
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.id
    }

    /// Called by `JoinSet`: run `f(id)` when the task finishes (at once if
    /// it already has).
    pub(crate) fn on_complete(&self, f: Notify) {
        let mut s = self.join().lock();
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
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        let mut s = self.join().lock();
        if let Some(r) = s.result.take() {
            crate::simulation::core::executor::progress(coop);
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
        let target = self.id().0;
        crate::simulation::core::executor::with_current(|e| {
            e.note_wait(crate::simulation::core::executor::Wait::Join(target))
        });
        Poll::Pending
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        let mut s = self.join().lock();
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
    raw: TaskRef,
}

impl AbortHandle {
    /// Aborts the task. A task that already finished is not affected.
    pub fn abort(&self) {
        if !self.is_finished() {
            self.raw.header().abort();
        }
    }

    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.raw.header().is_finished()
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        Id(self.raw.header().id)
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
