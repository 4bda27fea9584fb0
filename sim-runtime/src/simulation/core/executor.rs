//! The seeded single-threaded executor.
//!
//! One `Exec` per simulation, living on one OS thread. It owns the tasks (a
//! slab of references to task allocations, task/raw.rs), the run queue, the
//! timer queue, the nodes, the seeded streams and the trace. Nothing here is
//! shared with another thread except the wake path (`Header`), which must be
//! `Send + Sync` because `Waker` is: a wake from a foreign thread lands in a
//! mutex-protected queue and is recorded as a decision, never lost.
//!
//! Re-entrancy rule: the `core` borrow is never held while user code runs
//! (polling a future, dropping one, calling a waker), so a task may spawn,
//! sleep or kill a node from anywhere.
//!
//! Where things are: `build.rs` makes an executor; `drive.rs` is
//! `block_on` and `pump`; `step.rs` one step (pick, poll, advance the
//! clock); `schedule/` the strategies that pick; `idle.rs` what happens
//! when nothing is runnable; `wake.rs` the wake path into the run queue;
//! `slab.rs` the tasks; `yields.rs` `yield_now`'s deferral; `compat.rs`
//! Tokio's runtime settings.

mod blocked;
mod build;
mod compat;
mod context;
mod core;
mod current;
mod drive;
mod driver;
mod ended;
mod header;
mod holders;
mod idle;
mod lifecycle;
mod poll;
mod queue;
pub(crate) mod reap;
mod schedule;
mod slab;
mod spare;
mod step;
mod wait;
mod wake;
mod yields;

pub(crate) use self::build::next_runtime_id;
pub(crate) use self::current::{
    current, current_ptr, expect_current, held_panic, left_executor, outside_context, reenter,
    select_draw, standard_base, unhandled_panic, with_current, with_expected, with_task_id,
};
use self::current::{set_current, STANDARD_BASE};
pub(crate) use self::drive::Entered;
pub(crate) use self::driver::{Death, Driver};
pub(crate) use self::ended::{entered_ended, EnteredEnded, Remote};
pub(crate) use self::schedule::yield_ahead_for;
pub use self::schedule::Schedule;
pub(crate) use self::wait::Wait;
pub(crate) use self::yields::defer_yield;

pub(crate) use self::context::progress;
use self::context::Step;

use self::compat::Compat;
use self::idle::Idle;
use self::schedule::Scheduler;
use self::slab::{Slab, Task, TaskKind};
use self::wake::{WAKE_BUF, WAKE_PENDING};
use self::yields::Yields;
use super::config::{Config, UnhandledPanic};
use super::hooks;
use super::mem;
use super::node::{NodeId, NodeState};
use super::report::{self, Class, Failure};
use super::seed;
use super::task::join::JoinHandle;
use super::task::raw::{self, OwnedTask, TaskVtable};
use super::timer::Timers;
use super::trace::{Kind, Trace};
use rand_core::RngCore;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{AssertUnwindSafe, Location};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Below this many runnable tasks their data fits the core's cache and
/// prefetching the next picks costs more than it saves.
const PREFETCH_MIN_RUNNABLE: usize = 4096;

/// How many held panics a run keeps to name (`Core::held_panics`).
const HELD_PANICS: usize = 8;

#[inline(always)]
fn prefetch<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The `std::time::Instant` that stands for virtual time 0 in a run of
/// `root`. With the interposers in place, `Instant::now()` here reads the
/// virtual clock at 0, so every `Instant` of the run is a fixed function of
/// the seed; without them it is merely a base point.
fn base_instant(root: u64, wall_base_ns: u64) -> std::time::Instant {
    let was_active = hooks::active();
    if !was_active {
        hooks::activate(seed::decide(root, "std.random"), wall_base_ns);
    }
    hooks::set_now(0);
    hooks::set_node_clock(0, 0, 0);
    let base = std::time::Instant::now();
    if !was_active {
        hooks::deactivate();
    }
    base
}

/// The run-queue slot that stands for the future passed to `block_on`.
pub(crate) const MAIN_SLOT: u32 = u32::MAX;

/// The start of a task's allocation (task/raw.rs), what wakers hold. Waking
/// does not read or write the task's own state: a wake is a (slot, id)
/// request, and whether the task is already queued is decided by the
/// executor, on the task's slab entry, when it takes the request (so
/// scheduling touches the slab, not this).
pub(crate) struct Header {
    /// References: the executor's, the handles', the wakers'.
    pub(crate) refs: AtomicUsize,
    vtable: &'static TaskVtable,
    /// Where the join slot is in the allocation.
    join_offset: usize,
    exec_id: u64,
    slot: u32,
    pub(crate) id: u64,
    finished: AtomicBool,
    shared: Arc<Shared>,
}

/// Marks a wake request that also aborts the task (`JoinHandle::abort`).
const ABORT_BIT: u64 = 1 << 63;

/// What a foreign thread can reach.
struct Shared {
    /// Wake requests from other threads, each at most once (the queue stays
    /// as long as the number of tasks, however often a thread wakes one).
    remote: Mutex<Vec<(u32, u64)>>,
    has_remote: AtomicBool,
    /// The executor's id.
    exec_id: u64,
    /// Set once the simulation has ended (ended.rs).
    ended: std::sync::OnceLock<ended::Ended>,
}

impl Shared {
    fn new(exec_id: u64) -> Shared {
        Shared {
            remote: Mutex::new(Vec::new()),
            has_remote: AtomicBool::new(false),
            exec_id,
            ended: std::sync::OnceLock::new(),
        }
    }
}

/// A waker as the executor keeps it (a `yield_now`, a timer): one of its
/// own tasks' is kept as the task's slot and id, so keeping and waking it
/// touches no reference count and calls through no vtable; any other waker
/// is kept as is.
pub(crate) enum WakeRef {
    Task { slot: u32, id: u64 },
    Other(Waker),
}

impl WakeRef {
    /// Whether waking `self` and `other` wakes the same task (`Waker::will_wake`).
    pub(crate) fn will_wake(&self, other: &WakeRef) -> bool {
        match (self, other) {
            (WakeRef::Task { slot, id }, WakeRef::Task { slot: s, id: i }) => slot == s && id == i,
            (WakeRef::Other(a), WakeRef::Other(b)) => a.will_wake(b),
            _ => false,
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Exec>>> = const { RefCell::new(None) };
    /// `CURRENT`'s executor as a plain pointer (null when none), for the hot
    /// paths that only need to look at it ([`with_current`]); always written
    /// together with `CURRENT` by [`set_current`].
    static CURRENT_PTR: Cell<*const Exec> = const { Cell::new(std::ptr::null()) };
}

impl Drop for Core {
    /// The containers go to the next executor on this thread (spare.rs),
    /// emptied in the order the fields would drop: the tasks first, then
    /// their metadata, the run queue and the timers (with their wakers).
    fn drop(&mut self) {
        spare::keep(
            std::mem::take(&mut self.slab.tasks),
            std::mem::take(&mut self.slab.meta),
            std::mem::take(&mut self.slab.free),
            std::mem::take(&mut self.run_queue),
            std::mem::take(&mut self.clock.timers),
        );
    }
}

/// The name `sim::at` gives its tasks: a scripted action, which runs at its
/// time (an early-timer jump waits while one is runnable).
pub(crate) const SCRIPTED: &str = "sim::at";

#[derive(Clone, Copy)]
struct Cur {
    task: Option<u64>,
    node: NodeId,
}

/// The virtual clock and what moves it.
struct Clock {
    /// Global virtual time, ns since the start of the run.
    now: u64,
    /// Times the executor went idle and jumped the clock.
    parks: u64,
    /// A spawned task ran since the worker last parked (went idle or left
    /// `block_on`): the worker is unparked.
    busy: bool,
    /// Times the worker unparked to run spawned tasks and parked again.
    cycles: u64,
    timers: Timers,
    /// The seeded order of timers due at the same instant.
    timer_rng: seed::Stream,
}

/// The future passed to `block_on`, as the run queue and the reports see
/// it (the future itself lives in `block_on`'s frame).
struct Main {
    /// Its stand-in task: only its header is used (the main waker), its
    /// future never runs.
    task: OwnedTask,
    /// In the run queue.
    queued: bool,
    /// Owed a poll before the clock may jump early (schedule/early.rs).
    owed: bool,
    /// What its last poll noted it waits for, and the step of that poll
    /// (core/executor/wait.rs).
    wait: Option<(u32, Wait)>,
    polled_at: u32,
}

pub(crate) struct Core {
    config: Config,
    slab: Slab,
    run_queue: queue::RunQueue,
    clock: Clock,
    /// Steps (polls) taken so far.
    step: u64,
    /// The strategy that picks, and early timers (schedule/).
    sched: Scheduler,
    /// Above this many runnable tasks the random pick and a long list of
    /// wakes prefetch (`PREFETCH_MIN_RUNNABLE`; tests turn it off to
    /// compare).
    prefetch_min: usize,
    /// Tokio's current-thread runtime runs its tasks only while a
    /// `block_on` holds its worker: while the thread that built it waits
    /// outside `block_on` with none holding it (thread/owner.rs), its tasks
    /// are held here when picked, and queued again when a `block_on` takes
    /// the worker or the wait ends ([`Exec::hold_tasks`]).
    held: Option<Vec<(u32, u64)>>,
    select_rng: seed::Stream,
    nodes: super::node::Nodes,
    /// Whether any node is paused (set only through `set_paused`): the
    /// pick checks a task's node only then, sparing a dependent load.
    any_paused: bool,
    /// The drivers (core/executor/driver.rs): everything the run has besides
    /// tasks, clock and nodes.
    drivers: driver::Drivers,
    trace: Trace,
    failure: Option<Failure>,
    exec_id: u64,
    main: Main,
    /// The data pointer of the waker of the task being polled, with its
    /// slot and id: `wake_ref` of that waker (a task keeping its own waker)
    /// reads neither the header nor the slab.
    polling: (*const (), u32, u64),
    block_ons: u64,
    /// Destructors of dead nodes' tasks left where they would wait
    /// (reap.rs): which task of which node, for the deadlock report.
    left_destructors: Vec<(u64, NodeId)>,
    /// Tasks that panicked while a `JoinHandle` still held their panic
    /// (at most [`HELD_PANICS`]): named when the run later fails with a
    /// step limit, livelock or deadlock, which such a panic often causes (a
    /// loop waiting for what the task would have done).
    held_panics: Vec<String>,
}

pub(crate) struct Exec {
    pub(crate) id: u64,
    core: RefCell<Core>,
    cur: Cell<Cur>,
    clock_node: Cell<NodeId>,
    shared: Arc<Shared>,
    /// The `std::time::Instant` that stands for virtual time 0 on a node
    /// without clock offset.
    pub(crate) base_std: std::time::Instant,
    /// Whether `base_std` is the process's [`standard_base`] (it is
    /// whenever the clock interposers are in place, so in practice always):
    /// a sleep then keeps its deadline as one number.
    pub(crate) standard_base: bool,
    /// Wall clock at virtual time 0, ns since the Unix epoch (seeded).
    pub(crate) wall_base_ns: u64,
    /// The failure that ended the last `block_on`, for the harness.
    pub(crate) last_failure: RefCell<Option<Failure>>,
    in_block_on: Cell<bool>,
    /// Tokio's runtime settings and the state its API keeps (compat.rs).
    pub(crate) compat: Compat,
    /// Tasks that called `yield_now` (yields.rs).
    yields: Yields,
    /// The next spawn is a simulated thread's task (blocked.rs).
    spawning_thread: Cell<bool>,
    /// What runs before the run may go idle (idle.rs).
    idle: Idle,
    /// Scratch buffer of `advance`: the wakers of the timers that fired.
    fired: Cell<Vec<WakeRef>>,
    /// What the real-time watchdog sees of this simulation.
    progress: Arc<super::watchdog::Progress>,
}

impl Exec {
    /// The core, borrowed. Never held while user code runs (a poll, a
    /// drop, a waker): see the re-entrancy rule above.
    #[inline]
    #[track_caller]
    pub(crate) fn core(&self) -> std::cell::Ref<'_, Core> {
        self.core.borrow()
    }

    /// The core, borrowed mutably (same rule).
    #[inline]
    #[track_caller]
    pub(crate) fn core_mut(&self) -> std::cell::RefMut<'_, Core> {
        self.core.borrow_mut()
    }

    /// [`Exec::core`], or `None` when the core is borrowed mutably (code
    /// called from C, where a panic cannot unwind).
    pub(crate) fn try_core(&self) -> Option<std::cell::Ref<'_, Core>> {
        self.core.try_borrow().ok()
    }

    /// [`Exec::core_mut`], or `None` when the core is already borrowed (a
    /// destructor that runs while a hook holds it).
    pub(crate) fn try_core_mut(&self) -> Option<std::cell::RefMut<'_, Core>> {
        self.core.try_borrow_mut().ok()
    }

    /// Whether a `block_on` of this executor is running.
    pub(crate) fn in_block_on(&self) -> bool {
        self.in_block_on.get()
    }

    /// `runtime::worker_index()`: `Some(0)` in a task's poll (the one
    /// worker), and in the current-thread `Runtime::block_on` future that
    /// holds the worker (the owner's, or a simulated thread's); `None`
    /// in a `spawn_blocking` closure, a multi-thread runtime's `block_on`
    /// future, `Handle::block_on`, and outside any poll (as Tokio).
    pub(crate) fn worker_index(&self) -> Option<usize> {
        if self.compat.in_blocking() {
            return None;
        }
        match self.cur.get().task {
            Some(_) => Some(0),
            None if self.in_block_on.get() && self.compat.main_on_worker() => Some(0),
            // A simulated thread's current-thread `Runtime::block_on` holds
            // the worker (thread/mod.rs `runtime_block_on`); any other
            // thread's code runs `in_blocking`.
            None if self.compat.thread_on_worker() => Some(0),
            None => None,
        }
    }

    pub(crate) fn current_task(&self) -> Option<u64> {
        self.cur.get().task
    }

    pub(crate) fn current_node(&self) -> NodeId {
        self.cur.get().node
    }

    /// Runs `f` as task `task` of `node`: a task's future and output are
    /// dropped in its own context, so `task::id()` works in their `Drop`.
    pub(crate) fn with_task<R>(&self, node: NodeId, task: Option<u64>, f: impl FnOnce() -> R) -> R {
        let prev = self.cur.replace(Cur { task, node });
        self.sync_clock(node);
        let out = f();
        self.cur.set(prev);
        self.sync_clock(prev.node);
        out
    }

    fn sync_clock(&self, node: NodeId) {
        if self.clock_node.get() != node {
            self.clock_node.set(node);
            let core = self.core.borrow();
            let n = core.node(node);
            hooks::set_node_clock(n.mono_offset_ns, n.wall_offset_ns, n.drift_ppm);
            for switch in hooks::NODE_SWITCH {
                switch(node.0, n.incarnation);
            }
        }
    }

    /// Re-reads the current node's clock settings (after a skew change).
    pub(crate) fn refresh_clock(&self) {
        self.clock_node.set(NodeId(u32::MAX));
        self.sync_clock(self.cur.get().node);
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.core.borrow().clock.now
    }
}

enum Next {
    Main,
    Task(u32, u64),
    /// A `spawn_blocking` task: polled outside real Tokio's context.
    Blocking(u32, u64),
    Fail(Failure),
    /// Nothing is runnable and `WhenIdle::Stop` was asked for.
    Idle,
    /// Nothing is runnable, but real Tokio may hold deferred wakes
    /// (core/executor/context.rs).
    Flush,
}

/// What `next` does when nothing is runnable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WhenIdle {
    /// Move the clock to the next timer (or report a deadlock): `block_on`.
    Advance,
    /// Return `Next::Idle`: `pump`.
    Stop,
}

#[cfg(test)]
mod tests;
