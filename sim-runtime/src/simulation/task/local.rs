//! `spawn_local` and `LocalSet`.
//!
//! The simulation has one thread, so every task runs on it; `spawn_local`
//! still follows Tokio's rule (only inside a `LocalSet` or on a
//! `LocalRuntime`) so that code that works here works in production. A
//! `LocalSet` groups tasks: awaiting it waits for all of them, dropping it
//! drops them. Unlike Tokio's, its tasks also run while the set itself is
//! not being driven, and it cannot take tasks before a runtime exists
//! (outside `block_on`, they go to the runtime the thread built).

use super::{AbortHandle, JoinHandle};
use crate::simulation::core::executor::expect_current;
use crate::simulation::runtime::Runtime;
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Marks the code it runs as "inside a LocalSet": its polls and its drop.
struct InLocalSet<F> {
    inner: std::mem::ManuallyDrop<F>,
}

struct Depth(Option<Rc<crate::simulation::core::executor::Exec>>);

impl Depth {
    fn enter() -> Depth {
        let exec = crate::simulation::core::executor::current();
        if let Some(e) = &exec {
            e.compat.set_local_depth(e.compat.local_depth() + 1);
        }
        Depth(exec)
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        if let Some(e) = &self.0 {
            e.compat.set_local_depth(e.compat.local_depth() - 1);
        }
    }
}

impl<F: Future> Future for InLocalSet<F> {
    type Output = F::Output;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _depth = Depth::enter();
        // SAFETY: structural pinning of `inner`, which is never moved; it is
        // only dropped in place in `Drop`.
        unsafe { self.map_unchecked_mut(|s| &mut *s.inner) }.poll(cx)
    }
}

impl<F> Drop for InLocalSet<F> {
    fn drop(&mut self) {
        let _depth = Depth::enter();
        // SAFETY: dropped exactly once, here, in place.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.inner) }
    }
}

fn in_local_set<F>(inner: F) -> InLocalSet<F> {
    InLocalSet {
        inner: std::mem::ManuallyDrop::new(inner),
    }
}

/// Spawns a `!Send` future. As in Tokio, only inside a `LocalSet` (its
/// `run_until`/`block_on`, or one of its tasks) or on a `LocalRuntime`;
/// anywhere else it panics, so code that works here works in production.
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    spawn_local_named(future, None)
}

#[track_caller]
pub(crate) fn spawn_local_named<F>(
    future: F,
    name: Option<std::sync::Arc<str>>,
) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    // A runtime that has shut down, entered from a thread that may not
    // touch its executor: as on Tokio, a `LocalRuntime`'s task may only be
    // spawned on the thread that built it (where it is cancelled at once).
    if let Some(remote) = crate::simulation::core::executor::entered_ended() {
        let ended = remote.ended().expect("only an ended runtime is entered so");
        if !ended.local() {
            panic!(
                "`spawn_local` called from outside of a `task::LocalSet` or `runtime::LocalRuntime`"
            );
        }
        if ended.owner() != std::thread::current().id() {
            panic!(
                "Local tasks can only be spawned on a LocalRuntime from the thread the runtime \
                 was created on"
            );
        }
        return remote.spawn_cancelled(future, name);
    }
    match crate::simulation::core::executor::current() {
        // Inside a LocalSet, the new task belongs to it.
        Some(exec) if exec.compat.local_depth() > 0 => {
            exec.spawn(in_local_set(future), name, Location::caller(), None)
        }
        Some(exec) if exec.compat.local_runtime() => {
            exec.spawn(future, name, Location::caller(), None)
        }
        _ => panic!(
            "`spawn_local` called from outside of a `task::LocalSet` or `runtime::LocalRuntime`"
        ),
    }
}

#[derive(Default)]
struct Group {
    tasks: Vec<AbortHandle>,
    waker: Option<Waker>,
}

/// A set of tasks that run on the current thread.
pub struct LocalSet {
    group: Rc<RefCell<Group>>,
    id: crate::simulation::runtime::Id,
    _not_send: PhantomData<*const ()>,
}

/// Wakes the set when one of its tasks ends, however it ends.
struct Finished(Rc<RefCell<Group>>);

impl Drop for Finished {
    fn drop(&mut self) {
        let w = self
            .0
            .try_borrow_mut()
            .ok()
            .and_then(|mut g| g.waker.take());
        if let Some(w) = w {
            w.wake();
        }
    }
}

impl LocalSet {
    /// An empty set.
    pub fn new() -> LocalSet {
        LocalSet {
            group: Rc::default(),
            id: crate::simulation::runtime::Id::new(
                crate::simulation::core::executor::next_runtime_id(),
            ),
            _not_send: PhantomData,
        }
    }

    /// Spawns a `!Send` task in this set.
    #[track_caller]
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let done = Finished(self.group.clone());
        // Outside `block_on`, on the thread that built a runtime, the task
        // goes to that runtime, and runs once it runs (Tokio keeps it in
        // the set until the set is driven).
        let exec = crate::simulation::core::executor::current()
            .or_else(crate::simulation::runtime::owned_runtime)
            .unwrap_or_else(|| expect_current());
        let handle = exec.spawn(
            in_local_set(async move {
                let _done = done;
                future.await
            }),
            None,
            Location::caller(),
            None,
        );
        let mut g = self.group.borrow_mut();
        g.tasks.retain(|t| !t.is_finished());
        g.tasks.push(handle.abort_handle());
        handle
    }

    /// Runs `future` to completion on `rt`, with this set's tasks alongside.
    #[track_caller]
    pub fn block_on<F: Future>(&self, rt: &Runtime, future: F) -> F::Output {
        rt.block_on(in_local_set(future))
    }

    /// Runs `future` to completion; this set's tasks run alongside it.
    pub async fn run_until<F: Future>(&self, future: F) -> F::Output {
        in_local_set(future).await
    }

    /// Enters the set's context: until the guard drops, `spawn_local`
    /// works here as inside `run_until`.
    pub fn enter(&self) -> LocalEnterGuard {
        LocalEnterGuard {
            _depth: Depth::enter(),
        }
    }

    /// The set's id, unique among runtimes and sets.
    pub fn id(&self) -> crate::simulation::runtime::Id {
        self.id
    }
}

impl Default for LocalSet {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for LocalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSet").finish()
    }
}

impl Future for LocalSet {
    type Output = ();

    /// Ready when every task spawned in the set has finished.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut g = self.group.borrow_mut();
        g.tasks.retain(|t| !t.is_finished());
        if g.tasks.is_empty() {
            Poll::Ready(())
        } else {
            let old = g.waker.replace(cx.waker().clone());
            drop(g);
            drop(old);
            Poll::Pending
        }
    }
}

impl Drop for LocalSet {
    fn drop(&mut self) {
        let tasks = std::mem::take(&mut self.group.borrow_mut().tasks);
        for t in tasks {
            t.abort();
        }
    }
}

/// Context guard for `LocalSet::enter`.
pub struct LocalEnterGuard {
    _depth: Depth,
}

impl fmt::Debug for LocalEnterGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalEnterGuard").finish_non_exhaustive()
    }
}
