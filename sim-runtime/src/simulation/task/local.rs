//! `spawn_local` and `LocalSet`.
//!
//! The simulation has one thread, so every task is already "local": a
//! `!Send` future can be spawned from anywhere inside a simulation, not only
//! inside a `LocalSet` (a deliberate relaxation; Tokio panics there). A
//! `LocalSet` groups tasks: awaiting it waits for all of them, dropping it
//! drops them.

use super::{AbortHandle, JoinHandle};
use crate::simulation::executor::expect_current;
use crate::simulation::runtime::Runtime;
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Spawns a `!Send` future on the current simulation.
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    match crate::simulation::executor::current() {
        Some(exec) => exec.spawn(future, None, Location::caller(), None),
        None => panic!(
            "`spawn_local` called from outside of a `task::LocalSet` or `runtime::LocalRuntime` \
             (sim: no simulation is running on this thread)"
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
        let handle = expect_current().spawn(
            async move {
                let _done = done;
                future.await
            },
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
        rt.block_on(future)
    }

    /// Runs `future` to completion; this set's tasks run alongside it.
    pub async fn run_until<F: Future>(&self, future: F) -> F::Output {
        future.await
    }

    /// Enters the set's context (every context is the same in simulation).
    pub fn enter(&self) -> LocalEnterGuard {
        LocalEnterGuard { _p: PhantomData }
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
#[derive(Debug)]
pub struct LocalEnterGuard {
    _p: PhantomData<*const ()>,
}
