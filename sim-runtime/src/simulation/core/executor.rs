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

mod context;
mod core;
mod current;
mod driver;
mod header;
mod holders;
mod lifecycle;
mod pct;
mod queue;
mod spare;
mod step;
mod wait;

pub(crate) use self::current::{
    current, current_ptr, defer_yield, expect_current, outside_context, select_draw, standard_base,
    unhandled_panic, with_current, with_expected, with_task_id,
};
use self::current::{set_current, STANDARD_BASE};
pub(crate) use self::driver::{Death, Driver};
pub(crate) use self::wait::Wait;

pub(crate) use self::context::progress;
use self::context::Step;

use super::config::{Config, Schedule, UnhandledPanic};
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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Below this many runnable tasks their data fits the core's cache and
/// prefetching the next picks costs more than it saves.
const PREFETCH_MIN_RUNNABLE: usize = 4096;

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

/// How many schedule draws ahead the random pick looks to prefetch.
const PEEK: usize = 10;
/// How many picks ahead the pipeline fetches a pick's slab entry.
const SLAB_AHEAD: usize = PEEK / 2;
/// How many picks ahead the pipeline fetches a pick's task. Three ahead
/// (index 2): one ahead the lines had not arrived when polled (pinned A/B,
/// spawn_yield: 176 ms at one ahead, 137 at two, 123 at three, 132 at four,
/// 167 at five).
const TASK_AHEAD: usize = 2;

/// The ring that holds the peeked draws: a power of two at least `PEEK`.
const PEEK_RING: usize = 16;

/// Yielded tasks are woken at least every this many steps (Tokio's default
/// `event_interval`).
const YIELD_INTERVAL: u64 = 61;

/// The run-queue slot that stands for the future passed to `block_on`.
pub(crate) const MAIN_SLOT: u32 = u32::MAX;

static NEXT_EXEC_ID: AtomicU64 = AtomicU64::new(1);

/// A new runtime id, from the space executors take theirs from (a
/// `LocalSet` has one too, as in Tokio). Ids are names, never decisions.
pub(crate) fn next_runtime_id() -> u64 {
    NEXT_EXEC_ID.fetch_add(1, Ordering::Relaxed)
}

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
#[derive(Default)]
struct Shared {
    /// Wake requests from other threads, each at most once (the queue stays
    /// as long as the number of tasks, however often a thread wakes one).
    remote: Mutex<Vec<(u32, u64)>>,
    has_remote: AtomicBool,
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

struct WakeBuf {
    exec_id: u64,
    buf: Vec<(u32, u64)>,
    /// Set only in a forked copy probing who holds what (holders.rs): each
    /// wake pushed also pushes its backtrace to `traces`.
    capture: bool,
    traces: Vec<String>,
}

impl WakeBuf {
    #[inline]
    fn push(&mut self, wake: (u32, u64)) {
        self.buf.push(wake);
        if self.capture {
            self.trace();
        }
    }

    #[cold]
    fn trace(&mut self) {
        self.traces.push(holders::wake_trace());
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Exec>>> = const { RefCell::new(None) };
    /// `CURRENT`'s executor as a plain pointer (null when none), for the hot
    /// paths that only need to look at it ([`with_current`]); always written
    /// together with `CURRENT` by [`set_current`].
    static CURRENT_PTR: Cell<*const Exec> = const { Cell::new(std::ptr::null()) };
    static WAKE_BUF: RefCell<WakeBuf> = const {
        RefCell::new(WakeBuf { exec_id: 0, buf: Vec::new(), capture: false, traces: Vec::new() })
    };
    /// Set whenever a wake is pushed to `WAKE_BUF`: while it is clear, the
    /// buffer is empty.
    static WAKE_PENDING: Cell<bool> = const { Cell::new(false) };
}

/// A slab entry: what picking and waking a task read, in 32 bytes aligned
/// to 32 (half a cache line): with many tasks and a random schedule every
/// step misses the cache on it, so nothing on those paths reads the task's
/// allocation, which only its poll does.
#[repr(align(32))]
struct Task {
    /// The executor's reference to the task (task/raw.rs): header, future,
    /// join slot. `None` while the task is being polled.
    future: Option<OwnedTask>,
    id: u64,
    /// In the run queue (or a paused node's parked list): a wake is not
    /// queued twice. Cleared when the task is picked for a poll.
    queued: bool,
    /// `abort` was asked: the task is dropped at its next turn.
    aborted: bool,
    node: NodeId,
    /// The node's incarnation when the task was spawned: a task outlives
    /// neither a kill nor a restart of its node.
    incarnation: u32,
    /// A `spawn_blocking` closure's task: polled outside real Tokio's
    /// context (core/executor/context.rs).
    blocking: bool,
    /// Owed a poll before the clock may jump early again: woken by the
    /// clock (a timer or a delivery fired), or passed over by an early
    /// jump, and not polled since. Counted in `Core::owed_poll` (kept in
    /// runs with early timers only).
    owed_poll: bool,
    /// The step of its last poll (low bits): a wait noted in that poll is
    /// its current one (core/executor/wait.rs).
    polled_at: u32,
}

// Half a cache line, as the pick's prefetching assumes.
const _: () = assert!(std::mem::size_of::<Option<Task>>() == 32);

/// The cold part of a task, read only by reports and by the early-timer
/// check (same index as `tasks`).
struct TaskMeta {
    name: Option<Arc<str>>,
    location: &'static Location<'static>,
    /// What a poll of it last noted it waits for, stamped with that step.
    wait: Option<(u32, Wait)>,
}

impl Drop for Core {
    /// The containers go to the next executor on this thread (spare.rs),
    /// emptied in the order the fields would drop: the tasks first, then
    /// their metadata, the run queue and the timers (with their wakers).
    fn drop(&mut self) {
        spare::keep(
            std::mem::take(&mut self.tasks),
            std::mem::take(&mut self.meta),
            std::mem::take(&mut self.free),
            std::mem::take(&mut self.run_queue),
            std::mem::take(&mut self.timers),
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

pub(crate) struct Core {
    config: Config,
    tasks: mem::HugeVec<Option<Task>>,
    meta: Vec<TaskMeta>,
    free: Vec<u32>,
    alive: usize,
    run_queue: queue::RunQueue,
    timers: Timers,
    /// Global virtual time, ns since the start of the run.
    now: u64,
    step: u64,
    /// Times the executor went idle and jumped the clock.
    parks: u64,
    sched_rng: seed::Stream,
    /// The schedule stream's next two draws, taken early to prefetch the
    /// tasks they will probably pick; each is consumed exactly when it would
    /// have been drawn, so the schedule is unchanged.
    sched_peek: [u64; PEEK_RING],
    /// How many draws `sched_peek` holds, from index `sched_first` on
    /// (a ring: taking one is an index step, not a shift).
    sched_peeked: usize,
    sched_first: usize,
    /// Above this many runnable tasks the random pick prefetches
    /// (`PREFETCH_MIN_RUNNABLE`; tests turn it off to compare).
    prefetch_min: usize,
    timer_rng: seed::Stream,
    select_rng: seed::Stream,
    nodes: super::node::Nodes,
    /// Whether any node is paused (set only through `set_paused`): the
    /// pick checks a task's node only then, sparing a dependent load.
    any_paused: bool,
    /// PCT's state, when the schedule is PCT.
    pct: Option<pct::Pct>,
    /// Early timers, when the run has them.
    early: Option<pct::Early>,
    /// The drivers (core/executor/driver.rs): everything the run has besides
    /// tasks, clock and nodes.
    drivers: driver::Drivers,
    trace: Trace,
    failure: Option<Failure>,
    next_task_id: u64,
    exec_id: u64,
    /// The `block_on` future's stand-in task: only its header is used (the
    /// main waker), its future never runs.
    main_task: OwnedTask,
    /// The main future is in the run queue.
    main_queued: bool,
    /// Tasks (the main future included) owed a poll before the clock may
    /// jump early: those the clock woke, so a task that is due never first
    /// looks at a clock past a later deadline; and those that were
    /// runnable at the last early jump, so one jump stands for one long
    /// computation and no runnable task is passed over by two (a backup
    /// that never started in 1 s of jumps). Kept only in runs with early
    /// timers.
    owed_poll: usize,
    main_owed: bool,
    /// The data pointer of the waker of the task being polled, with its
    /// slot and id: `wake_ref` of that waker (a task keeping its own waker)
    /// reads neither the header nor the slab.
    polling: (*const (), u32, u64),
    block_ons: u64,
    /// What the main future's last poll noted it waits for, and the step
    /// of that poll (core/executor/wait.rs).
    main_wait: Option<(u32, Wait)>,
    main_polled_at: u32,
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
    in_block_on: Cell<bool>,
    /// Set by a runtime shutdown: timers are gone, as Tokio's are.
    pub(crate) shut_down: Cell<bool>,
    /// Wall clock at virtual time 0, ns since the Unix epoch (seeded).
    pub(crate) wall_base_ns: u64,
    /// The failure that ended the last `block_on`, for the harness.
    pub(crate) last_failure: RefCell<Option<Failure>>,
    /// Tokio's "time is frozen" state (`start_paused`, `pause`, `resume`).
    /// The simulated clock is virtual either way; this only keeps Tokio's
    /// panics for `advance` without `pause`, a second `pause`, and so on.
    pub(crate) time_frozen: Cell<bool>,
    /// `Builder::enable_time`: without it, creating a timer panics as in
    /// Tokio.
    pub(crate) timers_enabled: Cell<bool>,
    /// `Builder::enable_io`: without it, a signal listener panics as in
    /// Tokio (the network stays: Tokio's sockets outside a runtime with I/O
    /// fail differently, per call).
    pub(crate) io_enabled: Cell<bool>,
    /// Tasks that called `yield_now`, woken once the run queue is empty.
    yielded: RefCell<Vec<WakeRef>>,
    /// The previous batch's buffer, kept for its capacity.
    yielded_spare: Cell<Vec<WakeRef>>,
    /// The step at which the yielders were last woken.
    yield_flush_step: Cell<u64>,
    /// `Builder::on_thread_park`, and whether it already ran in this idle
    /// period (it runs once each time the run queue empties).
    pub(crate) park_hook: RefCell<Option<Arc<dyn Fn() + Send + Sync>>>,
    park_hook_ran: Cell<bool>,
    /// How deep the current code is inside a `LocalSet` (its `run_until`, or
    /// one of its tasks); `block_in_place` refuses to run there, as in Tokio.
    pub(crate) local_depth: Cell<u32>,
    /// Built by `build_local`: `spawn_local` works anywhere in it.
    pub(crate) local_runtime: Cell<bool>,
    /// Built as a multi-thread runtime (`block_in_place` is allowed, and
    /// yields may run ahead: `defer_yield`).
    pub(crate) multi_thread: Cell<bool>,
    /// A harness run: the test owns the one virtual clock, so
    /// `time::pause` works although the nodes run as on a multi-thread
    /// runtime (Tokio refuses it there because it cannot stop the worker
    /// threads' clocks; here there is only one).
    pub(crate) one_clock: Cell<bool>,
    /// Whether the `block_on` future runs "on a worker" for
    /// `runtime::worker_index` (a current-thread `Runtime::block_on`), and
    /// whether a `spawn_blocking` closure is running.
    pub(crate) main_on_worker: Cell<bool>,
    pub(crate) in_blocking: Cell<bool>,
    /// Set by `spawn_blocking` for its `spawn`: the task is blocking code.
    pub(crate) spawning_blocking: Cell<bool>,
    /// A poll spent its whole budget inside real Tokio's context since
    /// Tokio last woke what it deferred (core/executor/context.rs).
    unflushed: Cell<bool>,
    /// Real Tokio was flushed since the last poll, before a deadlock.
    deadlock_flushed: Cell<bool>,
    /// `worker_threads` as configured (reported by metrics only).
    pub(crate) workers: Cell<usize>,
    /// Scratch buffer of `advance`: the wakers of the timers that fired.
    fired: Cell<Vec<WakeRef>>,
    /// `Builder::name`, set once at build time.
    pub(crate) name: std::cell::OnceCell<Box<str>>,
    /// What the real-time watchdog sees of this simulation.
    progress: Arc<super::watchdog::Progress>,
}

/// 2026-01-01T00:00:00Z, ns since the Unix epoch: the earliest wall clock a
/// simulation starts at (the seed adds up to a year).
const WALL_EPOCH_NS: u64 = 1_767_225_600 * 1_000_000_000;

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

    pub(crate) fn new(config: Config) -> Rc<Exec> {
        Self::with_trace(config, Trace::new(false, None))
    }

    pub(crate) fn with_trace(config: Config, trace: Trace) -> Rc<Exec> {
        let id = NEXT_EXEC_ID.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new(Shared::default());
        let main_task = raw::new_task(
            Header::new(id, MAIN_SLOT, 0, shared.clone()),
            std::future::pending::<()>(),
            None,
        );
        let root = config.seed;
        let wall_base_ns = WALL_EPOCH_NS
            + seed::below(seed::decide(root, "clock.epoch"), 365 * 86_400) * 1_000_000_000;
        // Before the interposers are on: registering may start the watchdog's
        // OS thread, which simulated code may not do.
        let progress = super::watchdog::register(root);
        // With the interposers in place, `Instant::now()` here reads the
        // virtual clock at 0, so every `Instant` of the run is a fixed
        // function of the seed; without them it is merely a base point.
        let was_active = hooks::active();
        if !was_active {
            hooks::activate(seed::decide(root, "std.random"), wall_base_ns);
        }
        hooks::set_now(0);
        hooks::set_node_clock(0, 0, 0);
        let base_std = std::time::Instant::now();
        if !was_active {
            hooks::deactivate();
        }
        // The last executor's containers on this thread, emptied.
        let spare = spare::take();
        let core = Core {
            tasks: spare.tasks,
            meta: spare.meta,
            free: spare.free,
            alive: 0,
            run_queue: spare.run_queue,
            timers: spare.timers,
            now: 0,
            step: 0,
            parks: 0,
            sched_rng: seed::stream(root, "schedule"),
            sched_peek: [0; PEEK_RING],
            sched_peeked: 0,
            sched_first: 0,
            prefetch_min: PREFETCH_MIN_RUNNABLE,
            timer_rng: seed::stream(root, "timer.ties"),
            select_rng: seed::stream(root, "select"),
            nodes: super::node::Nodes::new(NodeState::new(
                "main".into(),
                Some(super::node::auto_ip(None)),
                false,
            )),
            any_paused: false,
            pct: match config.schedule {
                Schedule::Pct(d) => Some(pct::Pct::new(root, d)),
                _ => None,
            },
            early: config.early_timers.then(|| pct::Early::new(root)),
            drivers: Default::default(),
            trace,
            failure: None,
            next_task_id: 1,
            exec_id: id,
            main_task,
            main_queued: false,
            owed_poll: 0,
            main_owed: false,
            polling: (std::ptr::null(), 0, 0),
            block_ons: 0,
            main_wait: None,
            main_polled_at: 0,
            config,
        };
        Rc::new(Exec {
            id,
            core: RefCell::new(core),
            cur: Cell::new(Cur {
                task: None,
                node: NodeId::MAIN,
            }),
            clock_node: Cell::new(NodeId::MAIN),
            shared,
            base_std,
            standard_base: base_std == *STANDARD_BASE.get_or_init(|| base_std),
            in_block_on: Cell::new(false),
            shut_down: Cell::new(false),
            wall_base_ns,
            last_failure: RefCell::new(None),
            time_frozen: Cell::new(false),
            timers_enabled: Cell::new(true),
            io_enabled: Cell::new(true),
            yielded: RefCell::new(Vec::new()),
            yielded_spare: Cell::new(Vec::new()),
            yield_flush_step: Cell::new(0),
            park_hook: RefCell::new(None),
            park_hook_ran: Cell::new(false),
            local_depth: Cell::new(0),
            local_runtime: Cell::new(false),
            multi_thread: Cell::new(false),
            one_clock: Cell::new(false),
            main_on_worker: Cell::new(false),
            in_blocking: Cell::new(false),
            spawning_blocking: Cell::new(false),
            unflushed: Cell::new(false),
            deadlock_flushed: Cell::new(false),
            workers: Cell::new(1),
            name: std::cell::OnceCell::new(),
            progress,
            fired: Cell::new(Vec::new()),
        })
    }

    /// Makes this executor the current one on this thread until the guard
    /// drops.
    pub(crate) fn enter(self: &Rc<Self>) -> Entered {
        let prev = set_current(Some(self.clone()));
        let prev_wake = WAKE_BUF.with(|b| std::mem::replace(&mut b.borrow_mut().exec_id, self.id));
        Entered {
            exec: self.clone(),
            prev,
            prev_wake,
        }
    }

    /// Whether a `block_on` of this executor is running.
    pub(crate) fn in_block_on(&self) -> bool {
        self.in_block_on.get()
    }

    /// `runtime::worker_index()`: `Some(0)` in a task's poll (the one
    /// worker), and in a current-thread `Runtime::block_on` future; `None`
    /// in a `spawn_blocking` closure, a multi-thread runtime's `block_on`
    /// future, `Handle::block_on`, and outside any poll (as Tokio).
    pub(crate) fn worker_index(&self) -> Option<usize> {
        if self.in_blocking.get() {
            return None;
        }
        match self.cur.get().task {
            Some(_) => Some(0),
            None if self.in_block_on.get() && self.main_on_worker.get() => Some(0),
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
        }
    }

    /// Re-reads the current node's clock settings (after a skew change).
    pub(crate) fn refresh_clock(&self) {
        self.clock_node.set(NodeId(u32::MAX));
        self.sync_clock(self.cur.get().node);
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.core.borrow().now
    }

    // ----- spawning ---------------------------------------------------------

    pub(crate) fn spawn<F>(
        self: &Rc<Self>,
        fut: F,
        name: Option<Arc<str>>,
        location: &'static Location<'static>,
        node: Option<NodeId>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let blocking = self.spawning_blocking.replace(false);
        let node = node.unwrap_or_else(|| self.cur.get().node);
        let mut core = self.core.borrow_mut();
        let id = core.next_task_id;
        core.next_task_id += 1;
        let slot = match core.free.pop() {
            Some(s) => s,
            None => {
                core.tasks.push(None);
                core.meta.push(TaskMeta {
                    name: None,
                    location,
                    wait: None,
                });
                (core.tasks.len() - 1) as u32
            }
        };
        let task = raw::new_task(
            Header::new(self.id, slot, id, self.shared.clone()),
            fut,
            name.clone(),
        );
        let handle = JoinHandle::new(task.handle_ref(), id);
        core.decide(Kind::Spawn, id);
        if !core.node(node).alive {
            // As on a runtime that is shutting down: the task is dropped at
            // once and its handle reports cancellation.
            core.free.push(slot);
            drop(core);
            self.with_task(node, Some(id), || drop(task));
            return handle;
        }
        let incarnation = core.node(node).incarnation;
        core.tasks[slot as usize] = Some(Task {
            future: Some(task),
            id,
            queued: false,
            aborted: false,
            node,
            incarnation,
            blocking,
            owed_poll: false,
            polled_at: 0,
        });
        core.meta[slot as usize] = TaskMeta {
            name,
            location,
            wait: None,
        };
        core.alive += 1;
        drop(core);
        self.push_wake(slot, id);
        handle
    }

    /// Wakes task `id` in `slot` (as its waker would): through the buffer
    /// when this executor is entered, so it is ordered with the other wakes
    /// of the poll.
    fn push_wake(&self, slot: u32, id: u64) {
        let local = WAKE_BUF.with(|b| {
            let mut b = b.borrow_mut();
            if b.exec_id == self.id {
                b.push((slot, id));
                WAKE_PENDING.set(true);
                true
            } else {
                false
            }
        });
        if !local {
            self.core.borrow_mut().take_request(slot, id);
        }
    }

    /// Moves wakes into the run queue. Wakes made during one poll are sorted
    /// by task id first, so the order in which a library happens to call
    /// wakers (e.g. across the shards of a `watch` channel) never leaks into
    /// the schedule; timer wakes keep their seeded order.
    #[inline]
    fn drain_wakes(&self, sort: bool) {
        // Most steps buffer nothing and no foreign thread woke anything: a
        // flag without a destructor is cheaper to read than the buffer's
        // thread-local, and a plain load cheaper than the swap.
        if WAKE_PENDING.get() || self.shared.has_remote.load(Ordering::Acquire) {
            self.drain_wakes_now(sort);
        }
    }

    #[inline(never)]
    fn drain_wakes_now(&self, sort: bool) {
        let remote = self.shared.has_remote.load(Ordering::Acquire)
            && self.shared.has_remote.swap(false, Ordering::AcqRel);
        WAKE_PENDING.set(false);
        WAKE_BUF.with(|b| {
            let mut b = b.borrow_mut();
            if b.buf.is_empty() && !remote {
                return;
            }
            // No user code runs below: holding both borrows is fine.
            let mut core = self.core.borrow_mut();
            if b.buf.len() == 1 {
                // The common case (one task woke itself or one other).
                let (slot, raw) = b.buf[0];
                b.buf.clear();
                core.take_request(slot, raw);
            } else {
                if sort {
                    b.buf.sort_unstable_by_key(|&(_, raw)| raw & !ABORT_BIT);
                }
                for &(slot, raw) in b.buf.iter() {
                    core.take_request(slot, raw);
                }
                b.buf.clear();
            }
            if remote {
                let remote = std::mem::take(
                    &mut *self.shared.remote.lock().unwrap_or_else(|e| e.into_inner()),
                );
                for (slot, raw) in remote {
                    core.decide(Kind::RemoteWake, raw & !ABORT_BIT);
                    core.take_request(slot, raw);
                }
            }
        });
    }

    // ----- the run loop -----------------------------------------------------

    /// Enters the executor to drive it (`block_on`, `pump`): its context is
    /// current, the interposers answer from the seed, the watchdog watches,
    /// and a nested `block_on` is refused. Everything is undone when the
    /// guard drops.
    #[track_caller]
    fn begin_driving(self: &Rc<Self>) -> Driving<'_> {
        if self.in_block_on.get() || current().is_some_and(|c| c.in_block_on.get()) {
            // Tokio's words, which `#[should_panic(expected = ..)]` compares.
            panic!(
                "Cannot start a runtime from within a runtime. This happens because a function \
                 (like `block_on`) attempted to block the current thread while the thread is \
                 being used to drive asynchronous tasks. If you are in an async function, use \
                 `.await` on the future instead of blocking on it."
            );
        }
        let entered = self.enter();
        let n = {
            let mut core = self.core.borrow_mut();
            core.block_ons += 1;
            core.block_ons
        };
        let active = Active::new(self, n);
        self.in_block_on.set(true);
        self.progress.set_running(true);
        Driving {
            _reset: ResetOnDrop(&self.in_block_on),
            _running: Running(&self.progress),
            _active: active,
            _entered: entered,
        }
    }

    /// Runs every runnable task, and the tasks they wake, until none is
    /// runnable, without moving the clock (timers already due at the
    /// current instant fire; later ones wait). Returns how many steps
    /// (polls) ran. Used outside any `block_on`, by the harness's
    /// imperative world (`sim::World::pump`).
    pub(crate) fn pump(self: &Rc<Self>) -> u64 {
        let _driving = self.begin_driving();
        let start = self.core.borrow().step;
        context::drive(
            |stray| {
                self.drain_wakes(true);
                match self.next(WhenIdle::Stop) {
                    Next::Idle => return Step::Done(()),
                    Next::Flush => return Step::Flush,
                    // No main future exists between `block_on`s: a stale wake
                    // of the last one has nothing to poll.
                    Next::Main => self.core.borrow_mut().main_queued = false,
                    Next::Blocking(slot, id) => return Step::Outside(slot, id),
                    Next::Task(slot, id) => self.poll_task_inside(slot, id, stray),
                    Next::Fail(f) => self.fail(f),
                }
                Step::More
            },
            |slot, id| self.poll_task(slot, id),
        );
        let steps = self.core.borrow().step - start;
        steps
    }

    #[track_caller]
    pub(crate) fn block_on<F: Future>(self: &Rc<Self>, fut: F) -> F::Output {
        let _driving = self.begin_driving();
        let mut fut = std::pin::pin!(fut);
        let main_waker = self.core.borrow().main_task.task().waker();
        self.core.borrow_mut().main_queued = false;
        main_waker.wake_by_ref();
        context::drive(
            |stray| {
                self.drain_wakes(true);
                match self.next(WhenIdle::Advance) {
                    Next::Main => {
                        self.cur.set(Cur {
                            task: None,
                            node: NodeId::MAIN,
                        });
                        self.sync_clock(NodeId::MAIN);
                        {
                            let mut core = self.core.borrow_mut();
                            core.step += 1;
                            core.main_polled_at = core.step as u32;
                            core.decide(Kind::Poll, 0);
                            self.progress.polling(core.step, 0, 0);
                        }
                        let mut cx = Context::from_waker(&main_waker);
                        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            fut.as_mut().poll(&mut cx)
                        }));
                        if polled.is_ok() {
                            self.check_stray(stray);
                        }
                        match polled {
                            Ok(Poll::Ready(v)) => {
                                // A forbidden call in the last poll fails
                                // the run too: the body returning does not
                                // make what it did simulated.
                                self.after_poll();
                                let failure = self.core.borrow_mut().failure.take();
                                if let Some(f) = failure {
                                    self.fail(f);
                                }
                                self.drain_wakes(true);
                                self.core.borrow_mut().trace.finish();
                                return Step::Done(v);
                            }
                            Ok(Poll::Pending) => self.after_poll(),
                            Err(payload) => self.main_panicked(payload),
                        }
                        self.after_real_poll();
                    }
                    Next::Blocking(slot, id) => return Step::Outside(slot, id),
                    Next::Task(slot, id) => self.poll_task_inside(slot, id, stray),
                    Next::Fail(f) if f.class == Class::Deadlock => {
                        // Who holds what each task waits for, found by
                        // dropping each in a forked copy (holders.rs); the
                        // main future is dropped in place there, and that
                        // copy never returns to this frame.
                        let mut drop_main = || {
                            // SAFETY: runs only in the forked child, which
                            // exits without returning here: the pinned
                            // future is dropped in place once and its memory
                            // never used again.
                            unsafe { std::ptr::drop_in_place(fut.as_mut().get_unchecked_mut()) }
                        };
                        let holders = self.find_holders(Some(&mut drop_main));
                        let f = self.deadlock(&mut self.core.borrow_mut(), &holders);
                        self.fail(f)
                    }
                    Next::Fail(f) => self.fail(f),
                    Next::Idle => unreachable!("block_on advances the clock when idle"),
                    Next::Flush => return Step::Flush,
                }
                Step::More
            },
            |slot, id| self.poll_task(slot, id),
        )
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

/// The guards of a `block_on` or `pump`, dropped in this order.
struct Driving<'a> {
    _reset: ResetOnDrop<'a>,
    _running: Running<'a>,
    _active: Active,
    _entered: Entered,
}

struct Running<'a>(&'a super::watchdog::Progress);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.set_running(false);
    }
}

struct ResetOnDrop<'a>(&'a Cell<bool>);

impl Drop for ResetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Interception is on while a `block_on` runs on this thread.
struct Active {
    was_active: bool,
}

impl Active {
    fn new(exec: &Exec, n: u64) -> Active {
        let was_active = hooks::active();
        if !was_active {
            let seed = exec.core.borrow().config.seed;
            hooks::activate(
                seed::decide(seed, &format!("std.random.{n}")),
                exec.wall_base_ns,
            );
        }
        hooks::set_now(exec.now_ns());
        exec.refresh_clock();
        Active { was_active }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        if !self.was_active {
            hooks::deactivate();
        }
    }
}

pub(crate) struct Entered {
    exec: Rc<Exec>,
    prev: Option<Rc<Exec>>,
    prev_wake: u64,
}

impl Drop for Entered {
    fn drop(&mut self) {
        // Wakes buffered for this executor go to its run queue before the
        // buffer is handed back.
        let leftover = WAKE_BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.exec_id = self.prev_wake;
            std::mem::take(&mut b.buf)
        });
        if !leftover.is_empty() {
            if let Ok(mut core) = self.exec.core.try_borrow_mut() {
                core.take_requests(leftover);
            }
        }
        let prev = self.prev.take();
        drop(set_current(prev));
    }
}

#[cfg(test)]
mod tests;
