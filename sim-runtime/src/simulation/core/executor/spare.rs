//! The executor's own containers, kept on this thread from one executor to
//! the next (issue 26: nothing allocated per seed that can be kept). A
//! sweep of small seeds otherwise allocates the task slab, its metadata,
//! the run queue and the timer vectors afresh for every seed, and frees
//! them at its end.
//!
//! Only empty containers are kept: each is emptied (its elements dropped,
//! in the order the fields' own drops would) before it is put here, so no
//! state of a run survives into the next; what is reused is capacity, and
//! memory addresses never reach a decision (ARCHITECTURE.md). A seed's run
//! is therefore the same whatever ran before it on this thread
//! (`sim-runtime/tests/it/reuse.rs` runs seeds in several orders, on one
//! thread and on fresh ones, and compares every fingerprint). Containers
//! larger than [`MAX`] entries are freed rather than kept, so a thread that
//! once ran a huge simulation does not hold its memory.

use super::queue::RunQueue;
use super::slab::{Task, TaskMeta};
use crate::simulation::core::mem::HugeVec;
use crate::simulation::core::timer::Timers;
use std::cell::RefCell;

/// The most entries a kept container may have room for.
const MAX: usize = 4096;

#[derive(Default)]
pub(super) struct Spare {
    pub tasks: HugeVec<Option<Task>>,
    pub meta: Vec<TaskMeta>,
    pub free: Vec<u32>,
    pub run_queue: RunQueue,
    pub timers: Timers,
}

thread_local! {
    static SPARE: RefCell<Option<Spare>> = const { RefCell::new(None) };
}

// Kept by a fresh thread's reset: capacity only, every container empty.
crate::simulation::core::hooks::kept!(
    SPARE_KEPT: Option<Spare>,
    take: || SPARE.try_with(|s| s.borrow_mut().take()).ok().flatten(),
    put: |v: Option<Spare>| {
        let _ = SPARE.try_with(|s| *s.borrow_mut() = v);
    },
);

/// The containers the last executor on this thread left, or new ones.
pub(super) fn take() -> Spare {
    SPARE
        .try_with(|s| s.borrow_mut().take())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Empties an executor's containers, in the order its fields drop (the
/// tasks first), and keeps those that are small enough for the next one.
pub(super) fn keep(
    mut tasks: HugeVec<Option<Task>>,
    mut meta: Vec<TaskMeta>,
    mut free: Vec<u32>,
    run_queue: RunQueue,
    timers: Timers,
) {
    tasks.clear();
    meta.clear();
    free.clear();
    let spare = Spare {
        tasks: if tasks.capacity() <= MAX {
            tasks
        } else {
            HugeVec::new()
        },
        meta: if meta.capacity() <= MAX {
            meta
        } else {
            Vec::new()
        },
        free: if free.capacity() <= MAX {
            free
        } else {
            Vec::new()
        },
        run_queue: run_queue.emptied(MAX).unwrap_or_default(),
        timers: timers.emptied(MAX).unwrap_or_default(),
    };
    // During the thread's teardown the slot may be gone: the containers
    // are then simply freed.
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            *s = Some(spare);
        }
    });
}
