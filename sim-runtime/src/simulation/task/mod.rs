//! `tokio::task` under simulation.

pub mod coop;
mod join_set;
mod local;

pub use super::core::task::join::{AbortHandle, JoinError, JoinHandle};
pub use super::core::task::Id;
pub use join_set::JoinSet;
pub use local::{spawn_local, LocalEnterGuard, LocalSet};
pub use tokio::task::{futures, LocalKey};

use crate::simulation::core::executor::{self, expect_current};
use std::future::Future;
use std::io;
use std::panic::Location;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The id of the currently running task. Panics outside a task.
#[track_caller]
pub fn id() -> Id {
    try_id().expect("Can't get a task id when not inside a task")
}

/// The id of the currently running task, or `None` outside a task.
pub fn try_id() -> Option<Id> {
    executor::current().and_then(|e| e.current_task()).map(Id)
}

/// Spawns a new asynchronous task, returning a [`JoinHandle`] for it.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    spawn_named(future, None, Location::caller())
}

/// Spawns on the runtime entered on this thread: on a runtime that has
/// shut down, entered from a thread that may not touch its executor, the
/// task is dropped at once and its handle reports it cancelled, as on
/// Tokio (on its own thread the executor does the same).
#[track_caller]
fn spawn_named<F>(
    future: F,
    name: Option<Arc<str>>,
    location: &'static Location<'static>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match executor::entered_ended() {
        Some(ended) => ended.spawn_cancelled(future, name),
        None => expect_current().spawn(future, name, location, None),
    }
}

/// Runs the provided closure on a blocking thread — in a simulation, as a
/// task of its own on the one simulation thread, so it is scheduled like
/// any other task (and a blocking call inside it still blocks everything).
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match executor::entered_ended() {
        // As Tokio's pool of a runtime that has shut down: the closure is
        // dropped without running and its handle reports it cancelled.
        Some(ended) => ended.spawn_cancelled(async move { f() }, None),
        None => spawn_blocking_task(f, None, Location::caller()),
    }
}

/// Spawns `f` on a `spawn_blocking` worker: a simulated thread of the
/// current node (thread/), as Tokio runs it on a thread of its blocking
/// pool. The handle's task waits for the closure's value (or its panic).
/// Where no thread can be simulated (no executor on this thread), the
/// closure runs as a task of its own on the executor's thread.
fn spawn_blocking_task<F, R>(
    f: F,
    name: Option<std::sync::Arc<str>>,
    location: &'static Location<'static>,
) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let exec = expect_current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: crate::simulation::thread::Job = Box::new(move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(out);
    });
    // Where no thread can be started, the closure runs in the task.
    let inline = std::rc::Rc::new(std::cell::Cell::new(None));
    let mine = inline.clone();
    let handle = exec.spawn(
        async move {
            if let Some(job) = mine.take() {
                run_once(job).await;
            }
            match rx.await {
                Ok(Ok(v)) => v,
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                // The worker's node died with the job unfinished.
                Err(_) => std::future::pending().await,
            }
        },
        name,
        location,
        None,
    );
    // The closure's `task::id()` is its handle's, as on Tokio.
    inline.set(crate::simulation::thread::run_blocking(job, handle.id().0).err());
    handle
}

/// Blocking code as a task: the closure runs on the task's first poll,
/// marked as blocking (not on a worker, for `runtime::worker_index`).
fn run_once<R>(f: impl FnOnce() -> R) -> impl Future<Output = R> {
    let mut f = Some(f);
    std::future::poll_fn(move |_| {
        let f = f.take().expect("polled once");
        let exec = executor::current();
        let before = exec.as_ref().map(|e| e.compat.set_in_blocking(true));
        struct Restore(Option<std::rc::Rc<executor::Exec>>, Option<bool>);
        impl Drop for Restore {
            fn drop(&mut self) {
                if let (Some(e), Some(b)) = (&self.0, self.1) {
                    e.compat.set_in_blocking(b);
                }
            }
        }
        let _restore = Restore(exec, before);
        Poll::Ready(f())
    })
}

/// Runs blocking code in place, as Tokio does: on a current-thread runtime
/// this panics; on a multi-thread one (simulated on the same one thread) the
/// closure runs outside the runtime's context, so it may drive another
/// runtime. Everything else waits while it runs, as on a real worker.
#[track_caller]
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    if let Some(exec) = executor::current() {
        if !exec.compat.multi_thread() || exec.compat.local_depth() > 0 {
            panic!("can call blocking only when running on the multi-threaded runtime");
        }
        drop(exec);
        // As Tokio's: the closure runs without a budget (a runtime it
        // drives must not find its caller's spent budget).
        return without_budget(|| executor::outside_context(f));
    }
    f()
}

/// Runs `f` with Tokio's budget unconstrained (restored afterwards).
fn without_budget<R>(f: impl FnOnce() -> R) -> R {
    let mut f = Some(f);
    let mut once = std::pin::pin!(unconstrained(std::future::poll_fn(|_| {
        Poll::Ready(f.take().expect("polled once")())
    })));
    match once
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(r) => r,
        Poll::Pending => unreachable!("the closure's future is ready at once"),
    }
}

/// Yields execution back to the scheduler: the task runs again only after
/// every task that is runnable now has had its turn (Tokio's semantics; the
/// random schedule chooses among those, never the yielder again first).
// Not an `async fn` (Tokio's is): the future is returned directly, one
// state machine fewer per yield; like an `async fn`'s, it does nothing
// until polled.
pub fn yield_now() -> impl Future<Output = ()> + Send + Sync {
    struct YieldNow {
        yielded: bool,
    }
    impl Future for YieldNow {
        type Output = ();
        #[inline]
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.yielded {
                return Poll::Ready(());
            }
            self.yielded = true;
            executor::defer_yield(cx.waker());
            Poll::Pending
        }
    }
    YieldNow { yielded: false }
}

pub use tokio::task::coop::{consume_budget, unconstrained, Unconstrained};

/// Factory which is used to configure the properties of a new task (Tokio's
/// unstable `task::Builder`; here always available).
#[derive(Default, Debug)]
pub struct Builder<'a> {
    name: Option<&'a str>,
}

impl<'a> Builder<'a> {
    /// A builder with no name.
    pub fn new() -> Self {
        Builder { name: None }
    }

    /// Names the task (shown in deadlock reports and traces).
    pub fn name(&self, name: &'a str) -> Self {
        Builder { name: Some(name) }
    }

    fn arc_name(&self) -> Option<Arc<str>> {
        self.name.map(Arc::from)
    }

    /// Spawns a task with this builder's settings.
    #[track_caller]
    pub fn spawn<Fut>(self, future: Fut) -> io::Result<JoinHandle<Fut::Output>>
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        Ok(spawn_named(future, self.arc_name(), Location::caller()))
    }

    /// Spawns a `!Send` task with this builder's settings.
    #[track_caller]
    pub fn spawn_local<Fut>(self, future: Fut) -> io::Result<JoinHandle<Fut::Output>>
    where
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        Ok(local::spawn_local_named(future, self.arc_name()))
    }

    /// Spawns blocking code with this builder's settings.
    #[track_caller]
    pub fn spawn_blocking<Function, Output>(
        self,
        function: Function,
    ) -> io::Result<JoinHandle<Output>>
    where
        Function: FnOnce() -> Output + Send + 'static,
        Output: Send + 'static,
    {
        if executor::entered_ended().is_some() {
            // Tokio's error from the blocking pool of a runtime that has
            // shut down (the closure is dropped without running).
            return Err(io::Error::other("blocking pool shutting down"));
        }
        Ok(spawn_blocking_task(
            function,
            self.arc_name(),
            Location::caller(),
        ))
    }

    /// Spawns on the runtime behind `handle`.
    #[track_caller]
    pub fn spawn_on<Fut>(
        self,
        future: Fut,
        handle: &crate::simulation::runtime::Handle,
    ) -> io::Result<JoinHandle<Fut::Output>>
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        Ok(handle.spawn_named(future, self.arc_name(), Location::caller()))
    }
}
