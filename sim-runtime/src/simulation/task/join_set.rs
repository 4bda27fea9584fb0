//! `JoinSet`: a collection of tasks, joined in the order they finish.

use super::{AbortHandle, Id, JoinError, JoinHandle, LocalSet};
use crate::simulation::runtime::Handle;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct Ready {
    ids: VecDeque<Id>,
    waker: Option<Waker>,
}

/// A collection of tasks spawned on a Tokio runtime.
///
/// Tasks are joined in the order they complete; dropping the set aborts
/// every task still in it.
pub struct JoinSet<T> {
    tasks: BTreeMap<Id, JoinHandle<T>>,
    ready: Arc<Mutex<Ready>>,
}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        JoinSet {
            tasks: BTreeMap::new(),
            ready: Arc::default(),
        }
    }

    /// The number of tasks in the set.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    fn insert(&mut self, handle: JoinHandle<T>) -> AbortHandle {
        let abort = handle.abort_handle();
        let ready = self.ready.clone();
        handle.on_complete(Arc::new(move |id| {
            let mut r = ready.lock().unwrap_or_else(|e| e.into_inner());
            r.ids.push_back(id);
            let w = r.waker.take();
            drop(r);
            if let Some(w) = w {
                w.wake();
            }
        }));
        self.tasks.insert(handle.id(), handle);
        abort
    }

    /// Aborts all tasks in the set (they stay in it until joined).
    pub fn abort_all(&mut self) {
        for h in self.tasks.values() {
            h.abort();
        }
    }

    /// Removes all tasks from the set without aborting them.
    pub fn detach_all(&mut self) {
        self.tasks.clear();
        self.ready
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ids
            .clear();
    }

    /// Polls for the next task to finish.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        self.poll_join_next_with_id(cx)
            .map(|o| o.map(|r| r.map(|(_, v)| v)))
    }

    /// Polls for the next task to finish, with its id.
    pub fn poll_join_next_with_id(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(Id, T), JoinError>>> {
        loop {
            if self.tasks.is_empty() {
                return Poll::Ready(None);
            }
            let (next, old) = {
                let mut r = self.ready.lock().unwrap_or_else(|e| e.into_inner());
                match r.ids.pop_front() {
                    Some(id) => (Some(id), None),
                    None => (None, r.waker.replace(cx.waker().clone())),
                }
            };
            // Dropped outside the lock: a waker's destructor may drive the
            // runtime and complete a task of this set (Tokio's test
            // `replace_parent_waker_drops_outside_lock`).
            drop(old);
            let Some(id) = next else { return Poll::Pending };
            let Some(mut handle) = self.tasks.remove(&id) else {
                continue;
            };
            return match Pin::new(&mut handle).poll(cx) {
                Poll::Ready(Ok(v)) => Poll::Ready(Some(Ok((id, v)))),
                Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
                // A finished task's handle is pending only when the task's
                // budget is spent: as Tokio's, yield and try again.
                Poll::Pending => {
                    self.tasks.insert(id, handle);
                    self.ready
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .ids
                        .push_front(id);
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            };
        }
    }

    /// Waits until one of the tasks finishes and returns its output, or
    /// `None` if the set is empty. Cancel safe.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        std::future::poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// As [`join_next`](Self::join_next), with the task's id.
    pub async fn join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        std::future::poll_fn(|cx| self.poll_join_next_with_id(cx)).await
    }

    /// Returns a finished task's output if there is one, without waiting.
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.try_join_next_with_id().map(|r| r.map(|(_, v)| v))
    }

    /// As [`try_join_next`](Self::try_join_next), with the task's id.
    pub fn try_join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        let mut cx = Context::from_waker(Waker::noop());
        // As Tokio's: a call that cannot yield does not spend the budget.
        let mut poll = std::pin::pin!(crate::task::coop::unconstrained(std::future::poll_fn(
            |cx| Poll::Ready(self.poll_join_next_with_id(cx))
        )));
        match poll.as_mut().poll(&mut cx) {
            Poll::Ready(Poll::Ready(r)) => r,
            Poll::Ready(Poll::Pending) | Poll::Pending => None,
        }
    }

    /// Aborts all tasks and waits for them to finish.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Waits for every task and returns their outputs in completion order.
    /// A task's panic is resumed here, as in Tokio.
    pub async fn join_all(mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len());
        while let Some(r) = self.join_next().await {
            match r {
                Ok(v) => out.push(v),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => panic!("{e}"),
            }
        }
        out
    }
}

impl<T: 'static> JoinSet<T> {
    /// Spawns a task onto the current runtime and adds it to the set.
    #[track_caller]
    pub fn spawn<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        self.insert(super::spawn(task))
    }

    /// Spawns a task onto the runtime behind `handle`.
    #[track_caller]
    pub fn spawn_on<F>(&mut self, task: F, handle: &Handle) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        self.insert(handle.spawn(task))
    }

    /// Spawns a `!Send` task and adds it to the set.
    #[track_caller]
    pub fn spawn_local<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(super::spawn_local(task))
    }

    /// Spawns a `!Send` task on `local_set` and adds it to the set.
    #[track_caller]
    pub fn spawn_local_on<F>(&mut self, task: F, local_set: &LocalSet) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(local_set.spawn_local(task))
    }

    /// Spawns blocking code as a task and adds it to the set.
    #[track_caller]
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        self.insert(super::spawn_blocking(f))
    }

    /// Spawns blocking code on the runtime behind `handle`.
    #[track_caller]
    pub fn spawn_blocking_on<F>(&mut self, f: F, handle: &Handle) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        self.insert(handle.spawn_blocking(f))
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len()).finish()
    }
}

impl<T, F> std::iter::FromIterator<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> Self {
        let mut set = Self::new();
        iter.into_iter().for_each(|task| {
            set.spawn(task);
        });
        set
    }
}

impl<T, F> Extend<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    fn extend<I: IntoIterator<Item = F>>(&mut self, iter: I) {
        iter.into_iter().for_each(|task| {
            self.spawn(task);
        });
    }
}
