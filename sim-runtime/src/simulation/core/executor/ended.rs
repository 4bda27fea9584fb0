//! A runtime whose simulation has ended, as a thread that may not touch its
//! executor sees it.
//!
//! A simulation is one thread's: its executor is an `Rc`, and a runtime's
//! handle refuses to be used anywhere else while the simulation runs
//! (runtime.rs). Once the runtime has shut down no task of it runs again,
//! and Tokio lets any thread still enter its handle and spawn on it: the
//! task is dropped at once and its handle reports it cancelled. A
//! [`Remote`] is what such a thread holds: the executor's [`Shared`] part
//! (an `Arc`), which says whether the simulation has ended and, once it
//! has, gives the ids and the allocation of such tasks without the
//! executor. The thread that entered such a runtime keeps it in its own
//! thread-local (not carried with the simulation's baton: the guard is the
//! thread's), and a live executor entered after it hides it until that
//! guard drops.

use super::{Exec, Header, Shared};
use crate::simulation::core::outside;
use crate::simulation::core::task::join::JoinHandle;
use crate::simulation::core::task::raw;
use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

/// The slot of a task that never entered an executor's slab: no wake or
/// abort request names it (its handle is finished before anyone sees it),
/// and one that did would find no task there.
const NO_SLOT: u32 = u32::MAX - 1;

/// How long a thread that may not touch a runtime waits, for real, for it
/// to end before it is refused: a thread that hands its runtime's handle on
/// and then drops the runtime (Tokio's own tests do) must not race the
/// thread it handed it to.
const END_PATIENCE: Duration = Duration::from_secs(2);
/// How often that wait looks.
const END_STEP: Duration = Duration::from_millis(1);

/// What a simulation leaves behind when it ends, for threads that may not
/// touch its executor.
pub(crate) struct Ended {
    /// The ids of the tasks spawned after the end, from any thread,
    /// continuing the executor's own.
    next_id: AtomicU64,
    name: Option<Box<str>>,
    multi_thread: bool,
    local: bool,
    /// The thread that ended it (the one that built the runtime).
    owner: ThreadId,
}

impl Ended {
    /// A new task id.
    pub(super) fn take_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The runtime's name (`Builder::name`).
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether the runtime was built as a multi-thread one.
    pub(crate) fn multi_thread(&self) -> bool {
        self.multi_thread
    }

    /// Whether the runtime was a `LocalRuntime`.
    pub(crate) fn local(&self) -> bool {
        self.local
    }

    /// The thread that built the runtime.
    pub(crate) fn owner(&self) -> ThreadId {
        self.owner
    }
}

/// What any thread may hold of an executor: whether its simulation has
/// ended, and then what a handle of it still does.
#[derive(Clone)]
pub(crate) struct Remote(Arc<Shared>);

impl Remote {
    /// The runtime's id.
    pub(crate) fn id(&self) -> u64 {
        self.0.exec_id
    }

    /// What the simulation left when it ended; `None` while it runs.
    pub(crate) fn ended(&self) -> Option<&Ended> {
        self.0.ended.get()
    }

    /// [`Remote::ended`], after waiting for real, for a moment, for a
    /// simulation that is still running to end.
    pub(crate) fn wait_ended(&self) -> Option<&Ended> {
        let steps = END_PATIENCE.as_nanos() / END_STEP.as_nanos();
        for _ in 0..steps {
            if self.ended().is_some() {
                break;
            }
            outside::pause(END_STEP);
        }
        self.ended()
    }

    /// Spawns `fut` on the ended runtime, as Tokio does on one that has
    /// shut down: the future is dropped at once, here, without a poll, and
    /// the handle is finished and reports the task cancelled (or the panic
    /// of the future's destructor).
    ///
    /// # Panics
    /// If the simulation has not ended (an invariant of the callers).
    pub(crate) fn spawn_cancelled<F>(&self, fut: F, name: Option<Arc<str>>) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let ended = self
            .ended()
            .expect("spawned through a remote of a running executor");
        let id = ended.take_id();
        let task = raw::new_task(
            Header::new(self.id(), NO_SLOT, id, self.0.clone()),
            fut,
            name,
        );
        let handle = JoinHandle::new(task.handle_ref(), id);
        drop(task);
        handle
    }

    /// Makes this ended runtime the one entered on this thread until the
    /// guard drops. The executor entered on this thread, if any, stays as
    /// it is (it is the simulation's, carried with its baton); what spawns
    /// looks here first ([`entered_ended`]).
    ///
    /// # Panics
    /// If the simulation has not ended.
    pub(crate) fn enter(&self) -> EnteredEnded {
        assert!(
            self.ended().is_some(),
            "entered a remote of a running executor"
        );
        EnteredEnded {
            prev: ENDED.with(|e| e.replace(Some(self.clone()))),
        }
    }
}

thread_local! {
    /// The ended runtime entered on this thread, while it is the innermost
    /// runtime entered here ([`Remote::enter`]; [`Exec::enter`] hides it).
    static ENDED: RefCell<Option<Remote>> = const { RefCell::new(None) };
}

/// The ended runtime entered on this thread, if it is the innermost runtime
/// entered here: spawns go to it rather than to the current executor.
pub(crate) fn entered_ended() -> Option<Remote> {
    ENDED.try_with(|e| e.borrow().clone()).ok().flatten()
}

/// Hides the ended runtime entered on this thread (a live executor is
/// entered); what it returns goes back with [`restore_ended`].
pub(super) fn hide_ended() -> Option<Remote> {
    ENDED.try_with(|e| e.take()).ok().flatten()
}

/// Undoes [`hide_ended`].
pub(super) fn restore_ended(prev: Option<Remote>) {
    let _ = ENDED.try_with(|e| *e.borrow_mut() = prev);
}

/// The guard of [`Remote::enter`].
pub(crate) struct EnteredEnded {
    prev: Option<Remote>,
}

impl Drop for EnteredEnded {
    fn drop(&mut self) {
        restore_ended(self.prev.take());
    }
}

impl Exec {
    /// What any thread may hold of this executor.
    pub(crate) fn remote(&self) -> Remote {
        Remote(self.shared.clone())
    }

    /// Records that the simulation has ended (its runtime shut down): from
    /// now on its handles spawn cancelled tasks, on any thread, with ids
    /// that continue the executor's.
    pub(super) fn mark_ended(&self) {
        let ended = Ended {
            next_id: AtomicU64::new(self.core.borrow().slab.next_id),
            name: self.compat.name().map(Box::from),
            multi_thread: self.compat.multi_thread(),
            local: self.compat.local_runtime(),
            owner: std::thread::current().id(),
        };
        // A second shutdown (none is made) would leave the first record.
        let _ = self.shared.ended.set(ended);
    }
}
