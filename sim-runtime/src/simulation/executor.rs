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
mod lifecycle;
mod pct;
mod queue;

pub(crate) use context::progress;
use context::Step;

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
use rand_chacha::ChaCha8Rng;
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

impl Header {
    fn new(exec_id: u64, slot: u32, id: u64, shared: Arc<Shared>) -> Header {
        Header {
            refs: AtomicUsize::new(0),
            vtable: &raw::UNSET,
            join_offset: 0,
            exec_id,
            slot,
            id,
            finished: AtomicBool::new(false),
            shared,
        }
    }

    /// Set by `raw::new_task`, before the header is shared.
    pub(crate) fn init_raw(
        &mut self,
        vtable: &'static TaskVtable,
        join_offset: usize,
        refs: usize,
    ) {
        self.vtable = vtable;
        self.join_offset = join_offset;
        *self.refs.get_mut() = refs;
    }

    #[inline]
    pub(crate) fn vtable(&self) -> &'static TaskVtable {
        self.vtable
    }

    #[inline]
    pub(crate) fn join_offset(&self) -> usize {
        self.join_offset
    }

    pub(crate) fn schedule(&self) {
        self.request(self.id);
    }

    /// Sends a wake request (`raw`: the id, maybe with `ABORT_BIT`): to this
    /// thread's buffer when the executor is this thread's, else to the
    /// remote queue.
    fn request(&self, raw: u64) {
        let local = WAKE_BUF
            .try_with(|b| match b.try_borrow_mut() {
                Ok(mut b) if b.exec_id == self.exec_id => {
                    b.buf.push((self.slot, raw));
                    WAKE_PENDING.set(true);
                    true
                }
                _ => false,
            })
            .unwrap_or(false);
        if !local {
            let mut remote = self.shared.remote.lock().unwrap_or_else(|e| e.into_inner());
            // Rare (only another thread wakes this way): a scan is cheap.
            if !remote.contains(&(self.slot, raw)) {
                remote.push((self.slot, raw));
            }
            drop(remote);
            self.shared.has_remote.store(true, Ordering::Release);
        }
    }

    pub(crate) fn set_finished(&self) {
        self.finished.store(true, Ordering::Release);
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Asks the executor to drop the task at its next turn (the request
    /// marks the task aborted when the executor takes it, queued or not).
    pub(crate) fn abort(&self) {
        self.request(self.id | ABORT_BIT);
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

struct WakeBuf {
    exec_id: u64,
    buf: Vec<(u32, u64)>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Exec>>> = const { RefCell::new(None) };
    /// `CURRENT`'s executor as a plain pointer (null when none), for the hot
    /// paths that only need to look at it ([`with_current`]); always written
    /// together with `CURRENT` by [`set_current`].
    static CURRENT_PTR: Cell<*const Exec> = const { Cell::new(std::ptr::null()) };
    static WAKE_BUF: RefCell<WakeBuf> = const { RefCell::new(WakeBuf { exec_id: 0, buf: Vec::new() }) };
    /// Set whenever a wake is pushed to `WAKE_BUF`: while it is clear, the
    /// buffer is empty.
    static WAKE_PENDING: Cell<bool> = const { Cell::new(false) };
}

/// Makes `new` the executor entered on this thread; returns the previous one.
fn set_current(new: Option<Rc<Exec>>) -> Option<Rc<Exec>> {
    let ptr = new.as_ref().map_or(std::ptr::null(), Rc::as_ptr);
    CURRENT
        .try_with(|c| {
            let prev = c.replace(new);
            CURRENT_PTR.set(ptr);
            prev
        })
        .ok()
        .flatten()
}

/// Runs `f` with the executor entered on this thread, without taking a
/// reference count on it; `None` when there is none. For leaf code that runs
/// no user code (a timer's registration, a yield): `f` must not leave or
/// drop the executor.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Exec) -> R) -> Option<R> {
    let ptr = current_ptr();
    // SAFETY: `CURRENT_PTR` is non-null only while `CURRENT` holds an `Rc`
    // of that executor (both are written by `set_current` only), and `f`
    // does not change `CURRENT` (see above), so the executor outlives `f`.
    (!ptr.is_null()).then(|| f(unsafe { &*ptr }))
}

/// The base instant of the first executor made in this process; every
/// executor's is the same (the virtual monotonic clock at 0) when the
/// clock interposers are in place.
static STANDARD_BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// [`STANDARD_BASE`], once an executor has set it.
pub(crate) fn standard_base() -> Option<std::time::Instant> {
    STANDARD_BASE.get().copied()
}

/// The executor entered on this thread, as a raw pointer (null when there
/// is none): [`with_current`] for code whose result is wider than two
/// words (a closure's result returned through memory can stall the
/// caller's read of it). Valid under the same rule: no user code runs, and
/// nothing leaves or drops the executor, while it is used.
#[inline(always)]
pub(crate) fn current_ptr() -> *const Exec {
    CURRENT_PTR.try_with(Cell::get).unwrap_or(std::ptr::null())
}

/// The executor entered on this thread, if any.
pub(crate) fn current() -> Option<Rc<Exec>> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// Tokio's panic when a runtime is needed and there is none.
const NO_RUNTIME: &str = "there is no reactor running, must be called from the context of a \
                          Tokio 1.x runtime (sim: no simulation is running on this thread)";

/// The executor entered on this thread, or Tokio's panic when there is none.
#[track_caller]
pub(crate) fn expect_current() -> Rc<Exec> {
    match current() {
        Some(exec) => exec,
        None => panic!("{NO_RUNTIME}"),
    }
}

/// [`with_current`], or Tokio's panic when there is no executor.
#[track_caller]
#[inline]
pub(crate) fn with_expected<R>(f: impl FnOnce(&Exec) -> R) -> R {
    match with_current(f) {
        Some(r) => r,
        None => panic!("{NO_RUNTIME}"),
    }
}

/// Leaves the executor's context for the duration of `f` (as Tokio's
/// `block_in_place` does on a multi-thread runtime), so `f` may build and
/// drive another runtime. Wakes for this executor made meanwhile go to its
/// remote queue and are drained when it resumes.
pub(crate) fn outside_context<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Rc<Exec>>, u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            drop(set_current(prev));
            let id = self.1;
            let _ = WAKE_BUF.try_with(|b| b.borrow_mut().exec_id = id);
        }
    }
    let Some(exec) = set_current(None) else {
        return f();
    };
    // Buffered wakes belong to this executor: move them to its run queue.
    let buffered = WAKE_BUF.with(|b| {
        let mut b = b.borrow_mut();
        b.exec_id = 0;
        std::mem::take(&mut b.buf)
    });
    exec.core.borrow_mut().take_requests(buffered);
    let id = exec.id;
    let _restore = Restore(Some(exec), id);
    f()
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
    /// context (executor/context.rs).
    blocking: bool,
    /// Owed a poll before the clock may jump early again: woken by the
    /// clock (a timer or a delivery fired), or passed over by an early
    /// jump, and not polled since. Counted in `Core::owed_poll` (kept in
    /// runs with early timers only).
    owed_poll: bool,
}

/// The cold part of a task, read only by reports and by the early-timer
/// check (same index as `tasks`).
struct TaskMeta {
    name: Option<Arc<str>>,
    location: &'static Location<'static>,
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
    pub(crate) config: Config,
    tasks: mem::HugeVec<Option<Task>>,
    meta: Vec<TaskMeta>,
    free: Vec<u32>,
    alive: usize,
    run_queue: queue::RunQueue,
    pub(crate) timers: Timers,
    /// Global virtual time, ns since the start of the run.
    pub(crate) now: u64,
    pub(crate) step: u64,
    /// Times the executor went idle and jumped the clock.
    pub(crate) parks: u64,
    sched_rng: ChaCha8Rng,
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
    timer_rng: ChaCha8Rng,
    select_rng: ChaCha8Rng,
    pub(crate) nodes: Vec<NodeState>,
    /// Whether any node is paused (set only through `set_paused`): the
    /// pick checks a task's node only then, sparing a dependent load.
    any_paused: bool,
    /// PCT's state, when the schedule is PCT.
    pct: Option<pct::Pct>,
    /// Early timers, when the run has them.
    early: Option<pct::Early>,
    /// Fault points.
    pub(crate) buggify: super::buggify::Buggify,
    /// The simulated network (sockets of every node).
    pub(crate) net: super::net::Network,
    /// Every node's simulated disk.
    pub(crate) fs: super::fs::Disks,
    pub(crate) trace: Trace,
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
}

impl Core {
    /// Whether a scripted action (`sim::at`) is in the run queue. Read
    /// only when an early-timer jump was drawn (a few times per run).
    fn scripted_runnable(&self) -> bool {
        self.run_queue.iter().any(|&(slot, id)| {
            let live = matches!(self.tasks.get(slot as usize), Some(Some(t)) if t.id == id);
            live && self.meta.get(slot as usize).and_then(|m| m.name.as_deref()) == Some(SCRIPTED)
        })
    }

    #[inline]
    pub(crate) fn decide(&mut self, kind: Kind, value: u64) {
        self.trace.decide(self.step, self.now, kind, value);
    }

    /// The next draw of the schedule stream (an early one if peeked).
    #[inline]
    fn sched_draw(&mut self) -> u64 {
        if self.sched_peeked == 0 {
            return self.sched_rng.next_u64();
        }
        let x = self.sched_peek[self.sched_first];
        self.sched_first = (self.sched_first + 1) % PEEK_RING;
        self.sched_peeked -= 1;
        x
    }

    /// Guesses the next random picks (the next draws of the schedule
    /// stream, with the run queue one shorter per pick: the picked task
    /// waits or yields, which defers it) and asks the CPU to fetch, while
    /// this step's task runs, a pipeline of what those picks will read: the
    /// run-queue entry of the pick `PEEK - 1` ahead, the slab entry of the
    /// one `SLAB_AHEAD` ahead (its queue entry fetched some steps ago), and
    /// the task of the one `TASK_AHEAD` ahead. A wrong guess only wastes a
    /// prefetch; the schedule is unchanged (each draw is consumed exactly
    /// when it would have been drawn).
    #[inline]
    fn prefetch_next_picks(&mut self, len: usize) {
        while self.sched_peeked < PEEK {
            self.sched_peek[(self.sched_first + self.sched_peeked) % PEEK_RING] =
                self.sched_rng.next_u64();
            self.sched_peeked += 1;
        }
        let index = |k: usize| {
            let draw = self.sched_peek[(self.sched_first + k) % PEEK_RING];
            seed::below(draw, len.saturating_sub(k) as u64) as usize
        };
        let task_at = |k: usize| {
            let &(slot, _) = self.run_queue.get(index(k))?;
            self.tasks.get(slot as usize)
        };
        if let Some(Some(t)) = task_at(TASK_AHEAD) {
            if let Some(f) = &t.future {
                // Three lines: the header, the future and, for a small
                // future, the join slot (the task's last poll completes
                // it: a miss that was 9% of spawn_yield in perf).
                let p = f.task().as_ptr();
                prefetch(p);
                prefetch(p.cast::<u8>().wrapping_add(64));
                prefetch(p.cast::<u8>().wrapping_add(128));
            }
        }
        if let Some(entry) = task_at(SLAB_AHEAD) {
            prefetch(entry as *const Option<Task>);
        }
        if let Some(q) = self.run_queue.get(index(PEEK - 1)) {
            prefetch(q as *const (u32, u64));
        }
    }

    /// Takes wake requests (from the buffer or the remote queue) into the
    /// run queue, in their order.
    fn take_requests(&mut self, requests: impl IntoIterator<Item = (u32, u64)>) {
        for (slot, raw) in requests {
            self.take_request(slot, raw);
        }
    }

    /// Takes one wake request: the task goes to the run queue unless it is
    /// already there (or gone); `ABORT_BIT` marks it aborted first.
    #[inline]
    fn take_request(&mut self, slot: u32, raw: u64) {
        let id = raw & !ABORT_BIT;
        if slot == MAIN_SLOT {
            if !self.main_queued {
                self.main_queued = true;
                self.run_queue.push_back((slot, id));
            }
            return;
        }
        if let Some(Some(t)) = self.tasks.get_mut(slot as usize) {
            if t.id == id {
                t.aborted |= raw & ABORT_BIT != 0;
                if !t.queued {
                    t.queued = true;
                    self.run_queue.push_back((slot, id));
                }
            }
        }
    }

    /// Keeps `waker` as a [`WakeRef`].
    #[inline]
    pub(crate) fn wake_ref(&self, waker: &Waker) -> WakeRef {
        let (data, slot, id) = self.polling;
        let ours = std::ptr::eq(waker.vtable(), &raw::WAKER);
        if ours && std::ptr::eq(waker.data(), data) {
            return WakeRef::Task { slot, id };
        }
        if ours {
            // SAFETY: the vtable is `raw::WAKER`: the data is a live header
            // (the waker holds a reference for this call).
            let h = unsafe { raw::waker_header(waker) };
            if h.exec_id == self.exec_id {
                return WakeRef::Task {
                    slot: h.slot,
                    id: h.id,
                };
            }
        }
        WakeRef::Other(waker.clone())
    }

    /// Asks the CPU to fetch the slab entry of `next`, a wake to come.
    #[inline]
    fn prefetch_wake(&self, next: Option<&WakeRef>) {
        if let Some(&WakeRef::Task { slot, .. }) = next {
            if let Some(entry) = self.tasks.get(slot as usize) {
                prefetch(entry as *const Option<Task>);
            }
        }
    }

    pub(crate) fn select_draw(&mut self, n: u32) -> u32 {
        let v = seed::below(self.select_rng.next_u64(), u64::from(n)) as u32;
        self.decide(Kind::Select, u64::from(v));
        v
    }

    pub(crate) fn fail(&mut self, class: Class, message: String) {
        if self.failure.is_none() {
            self.failure = Some(Failure { class, message });
        }
    }

    pub(crate) fn node(&self, id: NodeId) -> &NodeState {
        &self.nodes[id.index()]
    }

    pub(crate) fn node_mut(&mut self, id: NodeId) -> &mut NodeState {
        &mut self.nodes[id.index()]
    }

    /// Pauses or resumes a node's scheduling (the one writer of `paused`).
    pub(crate) fn set_paused(&mut self, id: NodeId, paused: bool) {
        self.node_mut(id).paused = paused;
        self.any_paused = self.nodes.iter().any(|n| n.paused);
    }

    /// Whether `id` is paused, with no load of the node when none is.
    #[inline]
    fn is_paused(&self, id: NodeId) -> bool {
        self.any_paused && self.node(id).paused
    }

    /// Takes a task out of the slab and frees its slot (the caller drops it
    /// outside the borrow).
    fn remove_task(&mut self, slot: u32) -> Option<Task> {
        let task = self.tasks[slot as usize].take();
        debug_assert!(task.is_some(), "removing a free slot");
        if task.as_ref().is_some_and(|t| t.owed_poll) {
            self.owed_poll -= 1;
        }
        if self.polling.1 == slot {
            self.polling = (std::ptr::null(), 0, 0);
        }
        self.free.push(slot);
        self.alive -= 1;
        // The metadata is only read for live tasks and is overwritten when
        // the slot is reused: it is left alone here (with many tasks its line
        // is not in the cache, and writing it cost 6% of spawn_yield).
        task
    }

    /// Notes that this task must be polled before the next early jump
    /// (`owed_poll`).
    fn owe_poll(&mut self, slot: u32, id: u64) {
        if slot == MAIN_SLOT {
            if !self.main_owed {
                self.main_owed = true;
                self.owed_poll += 1;
            }
            return;
        }
        if let Some(Some(t)) = self.tasks.get_mut(slot as usize) {
            if t.id == id && !t.owed_poll {
                t.owed_poll = true;
                self.owed_poll += 1;
            }
        }
    }

    pub(crate) fn alive_tasks(&self) -> usize {
        self.alive
    }

    /// Every live task, in id order, as the deadlock report lists them.
    pub(crate) fn describe_tasks(&self) -> Vec<String> {
        let mut tasks: Vec<(&Task, &TaskMeta)> = self
            .tasks
            .iter()
            .zip(&self.meta)
            .filter_map(|(t, m)| Some((t.as_ref()?, m)))
            .collect();
        tasks.sort_by_key(|(t, _)| t.id);
        tasks
            .iter()
            .map(|(t, m)| {
                let node = self.node(t.node);
                format!(
                    "task {} {} on node '{}'{} spawned at {}",
                    t.id,
                    m.name
                        .as_deref()
                        .map(|n| format!("'{n}'"))
                        .unwrap_or_else(|| "(unnamed)".into()),
                    node.name,
                    if node.paused { " (paused)" } else { "" },
                    m.location
                )
            })
            .collect()
    }
}

pub(crate) struct Exec {
    pub(crate) id: u64,
    pub(crate) core: RefCell<Core>,
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
    pub(crate) harness: Cell<bool>,
    /// Whether the `block_on` future runs "on a worker" for
    /// `runtime::worker_index` (a current-thread `Runtime::block_on`), and
    /// whether a `spawn_blocking` closure is running.
    pub(crate) main_on_worker: Cell<bool>,
    pub(crate) in_blocking: Cell<bool>,
    /// Set by `spawn_blocking` for its `spawn`: the task is blocking code.
    pub(crate) spawning_blocking: Cell<bool>,
    /// A poll spent its whole budget inside real Tokio's context since
    /// Tokio last woke what it deferred (executor/context.rs).
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
            + seed::below(seed::child(root, "clock.epoch"), 365 * 86_400) * 1_000_000_000;
        // Before the interposers are on: registering may start the watchdog's
        // OS thread, which simulated code may not do.
        let progress = super::watchdog::register(root);
        // With the interposers in place, `Instant::now()` here reads the
        // virtual clock at 0, so every `Instant` of the run is a fixed
        // function of the seed; without them it is merely a base point.
        let was_active = hooks::active();
        if !was_active {
            hooks::activate(seed::child(root, "std.random"), wall_base_ns);
        }
        hooks::set_now(0);
        hooks::set_node_clock(0, 0, 0);
        let base_std = std::time::Instant::now();
        if !was_active {
            hooks::deactivate();
        }
        let core = Core {
            tasks: mem::HugeVec::new(),
            meta: Vec::new(),
            free: Vec::new(),
            alive: 0,
            run_queue: queue::RunQueue::default(),
            timers: Timers::default(),
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
            nodes: vec![NodeState::new(
                "main".into(),
                Some(super::node::auto_ip(&[])),
                false,
            )],
            any_paused: false,
            pct: match config.schedule {
                Schedule::Pct(d) => Some(pct::Pct::new(root, d)),
                _ => None,
            },
            early: config.early_timers.then(|| pct::Early::new(root)),
            buggify: super::buggify::Buggify::new(root, config.buggify),
            net: Default::default(),
            fs: Default::default(),
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
            harness: Cell::new(false),
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
        });
        core.meta[slot as usize] = TaskMeta { name, location };
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
                b.buf.push((slot, id));
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
                    Next::Fail(f) => self.fail(f),
                    Next::Idle => unreachable!("block_on advances the clock when idle"),
                    Next::Flush => return Step::Flush,
                }
                Step::More
            },
            |slot, id| self.poll_task(slot, id),
        )
    }

    /// Polls a task inside real Tokio's context, then the checks that
    /// follow such a poll.
    fn poll_task_inside(&self, slot: u32, id: u64, stray: &context::Stray) {
        self.poll_task(slot, id);
        self.after_real_poll();
        self.check_stray(stray);
    }

    /// After a poll inside real Tokio's context: a poll that spent the
    /// whole budget may have left a deferred wake with Tokio (its
    /// operation returned `Pending` and woke the task through Tokio's
    /// scheduler), which must be flushed before the run may go idle.
    #[inline]
    fn after_real_poll(&self) {
        if context::refresh_budget() {
            self.unflushed.set(true);
        }
        self.deadlock_flushed.set(false);
    }

    /// Fails the run at once if a poll spawned a task on real Tokio's
    /// runtime (Tokio may still poll that task once before the run ends).
    #[inline]
    fn check_stray(&self, stray: &context::Stray) {
        if stray.spawned() {
            let failure = {
                let mut core = self.core.borrow_mut();
                core.fail(
                    Class::Forbidden,
                    format!("{}. {}", context::STRAY_REAL_TASK, report::REAL_TOKIO_HINT),
                );
                core.failure.take().expect("just recorded")
            };
            self.fail(failure)
        }
    }

    /// Wakes the tasks that called `yield_now`, in the order they yielded.
    fn wake_yielded(&self) {
        self.yield_flush_step.set(self.core.borrow().step);
        let mut yielded = self.yielded.replace(self.yielded_spare.take());
        self.drain_wakes(true);
        self.wake_in_order(&mut yielded);
        self.yielded_spare.set(yielded);
    }

    /// Wakes `wakers` in their order and empties the list, as calling each
    /// and then `drain_wakes(false)` would, but its own tasks go straight to
    /// the run queue (with their slab entries and headers fetched ahead when
    /// the list is long). Expects no wake buffered.
    fn wake_in_order(&self, wakers: &mut Vec<WakeRef>) {
        let n = wakers.len();
        let prefetching = n > self.core.borrow().prefetch_min;
        let mut i = 0;
        while i < n {
            {
                let mut core = self.core.borrow_mut();
                while i < n {
                    let WakeRef::Task { slot, id } = wakers[i] else {
                        break;
                    };
                    if prefetching {
                        core.prefetch_wake(wakers.get(i + 8));
                    }
                    core.take_request(slot, id);
                    i += 1;
                }
            }
            if i < n {
                // Another waker: it runs user code, outside the borrow, and
                // what it wakes queues before the wakes after it.
                if let WakeRef::Other(w) = &wakers[i] {
                    w.wake_by_ref();
                }
                self.drain_wakes(false);
                i += 1;
            }
        }
        wakers.clear();
    }

    /// Wakes what `w` stands for, as its waker would: a task that has
    /// finished or was dropped since is not woken.
    pub(crate) fn wake(&self, w: WakeRef) {
        match w {
            WakeRef::Task { slot, id } => self.push_wake(slot, id),
            WakeRef::Other(w) => w.wake(),
        }
    }

    #[inline]
    fn after_poll(&self) {
        let forbidden = hooks::forbidden();
        if forbidden.sockets > 0 || forbidden.threads > 0 {
            self.forbidden_attempt(forbidden);
        }
    }

    #[inline(never)]
    fn forbidden_attempt(&self, forbidden: hooks::Forbidden) {
        if forbidden.sockets > 0 {
            self.core.borrow_mut().fail(
                Class::Forbidden,
                "a simulated task tried to open or use a real OS socket (std::net's own I/O, \
                 or a crate with its own networking); real sockets reach the host's network, \
                 outside the simulation's control. A socket made with socket(2) or std may be \
                 handed to tokio::net (TcpSocket::from_std_stream, TcpListener::from_std, \
                 UdpSocket::from_std); otherwise use tokio::net, which is simulated (see \
                 docs/breakage.md)."
                    .into(),
            );
        }
        if forbidden.threads > 0 {
            self.core.borrow_mut().fail(
                Class::Forbidden,
                "a simulated task tried to start an OS thread (std::thread::spawn, or a crate \
                 that spawns one); threads run outside the simulation's control. Use \
                 tokio::spawn or tokio::task::spawn_blocking instead."
                    .into(),
            );
        }
    }

    fn next(&self, when_idle: WhenIdle) -> Next {
        let mut core = self.core.borrow_mut();
        loop {
            // Checked before taken: `take` on every step copied the
            // (absent) failure out and wrote it back.
            if core.failure.is_some() {
                return Next::Fail(core.failure.take().expect("checked"));
            }
            if let Some(limit) = core.config.step_limit {
                if core.step >= limit {
                    return Next::Fail(Failure {
                        class: Class::StepLimit,
                        message: format!(
                            "the run took {limit} steps without finishing (a busy loop that never \
                             yields to the clock?). Raise it with SIM_STEP_LIMIT=<n> or \
                             SIM_STEP_LIMIT=none."
                        ),
                    });
                }
            }
            // As Tokio wakes deferred tasks at least every 61 polls, a
            // yielder is not starved by tasks that keep waking each other.
            if core.step >= self.yield_flush_step.get() + YIELD_INTERVAL
                && !self.yielded.borrow().is_empty()
            {
                drop(core);
                self.wake_yielded();
                core = self.core.borrow_mut();
                continue;
            }
            if core.run_queue.is_empty() {
                if self.shared.has_remote.load(Ordering::Acquire) {
                    drop(core);
                    self.drain_wakes(true);
                    core = self.core.borrow_mut();
                    continue;
                }
                if self.unflushed.replace(false) {
                    // Tokio wakes what it deferred (a task that spent its
                    // budget) together with the tasks that yielded: both
                    // are runnable again at once.
                    if !self.yielded.borrow().is_empty() {
                        drop(core);
                        self.wake_yielded();
                    }
                    return Next::Flush;
                }
                if !self.yielded.borrow().is_empty() {
                    // Every task that was runnable when these yielded has
                    // run: the yielders go again, in the order they yielded.
                    drop(core);
                    self.wake_yielded();
                    core = self.core.borrow_mut();
                    continue;
                }
                if !self.park_hook_ran.replace(true) {
                    let hook = self.park_hook.borrow().clone();
                    if let Some(hook) = hook {
                        drop(core);
                        hook();
                        self.drain_wakes(true);
                        core = self.core.borrow_mut();
                        continue;
                    }
                }
                // Before a deadlock is declared, real Tokio wakes what it
                // deferred (a crate built on real Tokio may have yielded
                // through it).
                if when_idle == WhenIdle::Advance
                    && core.timers.next_deadline().is_none()
                    && !self.deadlock_flushed.replace(true)
                {
                    return Next::Flush;
                }
                // A pump stops here unless timers are due at this very
                // instant (firing them does not move the clock).
                let now = core.now;
                if when_idle == WhenIdle::Stop
                    && core.timers.next_deadline().is_none_or(|d| d > now)
                {
                    return Next::Idle;
                }
                match self.advance(core) {
                    Ok(c) => {
                        core = c;
                        continue;
                    }
                    Err(f) => return Next::Fail(f),
                }
            }
            // Early timers: now and then, the clock jumps to the next
            // deadline although tasks are runnable (never past a timer).
            let step = core.step;
            if when_idle == WhenIdle::Advance && core.early.as_mut().is_some_and(|e| e.fire(step)) {
                let now = core.now;
                // A scripted action due now (`sim::at`) runs at its time:
                // the jump waits until it has run. Never past the time
                // limit: that is a livelock only when nothing is runnable.
                // Never past a deadline whose timer fired but whose owner
                // has not yet looked: `timeout(150ms, sleep(600ms))` would
                // find both done and return the sleep's `Ok`, an order no
                // runtime produces. And never twice over a task that stayed
                // runnable: the tasks runnable now are owed a poll first.
                let limit = core.config.time_limit.map(|l| l.as_nanos() as u64);
                if core.timers.unseen() == 0
                    && core.owed_poll == 0
                    && core
                        .timers
                        .next_deadline()
                        .is_some_and(|d| d > now && limit.is_none_or(|l| d <= l))
                    && !core.scripted_runnable()
                {
                    let runnable: Vec<(u32, u64)> = core.run_queue.iter().copied().collect();
                    for (slot, id) in runnable {
                        core.owe_poll(slot, id);
                    }
                    match self.advance(core) {
                        Ok(c) => {
                            core = c;
                            continue;
                        }
                        Err(f) => return Next::Fail(f),
                    }
                }
            }
            let len = core.run_queue.len();
            let (slot, id) = match core.config.schedule {
                Schedule::Fifo => core.run_queue.pop_front(),
                Schedule::Pct(_) => {
                    let Core { pct, run_queue, .. } = &mut *core;
                    pct.as_mut().expect("PCT state").pick(run_queue)
                }
                Schedule::Random => {
                    let i = if len == 1 {
                        0
                    } else {
                        seed::below(core.sched_draw(), len as u64)
                    };
                    let picked = core.run_queue.swap_remove_back(i as usize);
                    if len > core.prefetch_min {
                        let left = core.run_queue.len();
                        core.prefetch_next_picks(left);
                    }
                    picked
                }
            }
            .expect("run queue is not empty");
            if slot == MAIN_SLOT {
                core.main_queued = false;
                if core.main_owed {
                    core.main_owed = false;
                    core.owed_poll -= 1;
                }
                self.park_hook_ran.set(false);
                return Next::Main;
            }
            let (node, blocking) = match core.tasks.get(slot as usize).and_then(|t| t.as_ref()) {
                Some(t) if t.id == id && t.future.is_some() => (t.node, t.blocking),
                _ => continue, // finished or dropped since it was woken
            };
            if core.is_paused(node) {
                core.node_mut(node).parked.push((slot, id));
                continue;
            }
            self.park_hook_ran.set(false);
            if blocking {
                return Next::Blocking(slot, id);
            }
            return Next::Task(slot, id);
        }
    }

    /// Nothing is runnable: move the clock to the next timer and fire every
    /// timer due then. Consumes and returns the core borrow so that wakers
    /// run with the core released.
    fn advance<'a>(
        &'a self,
        mut core: std::cell::RefMut<'a, Core>,
    ) -> Result<std::cell::RefMut<'a, Core>, Failure> {
        let Some(deadline) = core.timers.next_deadline() else {
            return Err(self.deadlock(&core));
        };
        if let Some(limit) = core.config.time_limit {
            if deadline > limit.as_nanos() as u64 {
                return Err(Failure {
                    class: Class::Livelock,
                    message: format!(
                        "virtual time would pass the limit of {} (next timer at {}) and the main \
                         future is still not finished. Raise it with SIM_TIME_LIMIT=<duration> \
                         or SIM_TIME_LIMIT=none.",
                        report::fmt_ns(limit.as_nanos() as u64),
                        report::fmt_ns(deadline)
                    ),
                });
            }
        }
        debug_assert!(deadline >= core.now, "timers never fire in the past");
        if deadline > core.now {
            core.now = deadline;
            core.parks += 1;
            hooks::set_now(deadline);
            core.decide(Kind::Advance, deadline);
        }
        let now = core.now;
        if WAKE_PENDING.get() {
            drop(core);
            self.drain_wakes(true);
            core = self.core.borrow_mut();
        }
        // The fired timers' wakers, in firing order: the executor's own
        // tasks go straight to the run queue, until the first other waker
        // (which runs user code, outside the borrow); from there on they
        // are kept and woken in order.
        let mut wakers = self.fired.take();
        debug_assert!(wakers.is_empty());
        loop {
            let Core {
                timers, timer_rng, ..
            } = &mut *core;
            let Some(fired) = timers.pop_due(now, timer_rng) else {
                break;
            };
            if core.is_paused(fired.node) {
                core.node_mut(fired.node).deferred.push(fired.waker);
                continue;
            }
            core.decide(Kind::Fire, fired.seq);
            if let (Some(WakeRef::Task { slot, id }), Some(_)) = (&fired.waker, &core.early) {
                let (slot, id) = (*slot, *id);
                core.owe_poll(slot, id & !ABORT_BIT);
            }
            match fired.waker {
                Some(WakeRef::Task { slot, id }) if wakers.is_empty() => {
                    core.take_request(slot, id)
                }
                Some(w) => wakers.push(w),
                None => {}
            }
        }
        drop(core);
        if !wakers.is_empty() {
            self.wake_in_order(&mut wakers);
        }
        self.fired.set(wakers);
        Ok(self.core.borrow_mut())
    }

    fn deadlock(&self, core: &Core) -> Failure {
        let tasks = core.describe_tasks();
        let paused: Vec<&str> = core
            .nodes
            .iter()
            .filter(|n| n.paused)
            .map(|n| n.name.as_str())
            .collect();
        let mut message = String::from(
            "nothing is runnable, no timer is pending, and the main future is not finished",
        );
        if !paused.is_empty() {
            message.push_str(&format!(" (paused nodes hold work: {})", paused.join(", ")));
        }
        message.push_str(".\n  live tasks:");
        if tasks.is_empty() {
            message.push_str(" none besides the main future");
        }
        for t in tasks {
            message.push_str("\n    ");
            message.push_str(&t);
        }
        Failure {
            class: Class::Deadlock,
            message,
        }
    }

    fn poll_task(&self, slot: u32, id: u64) {
        let (mut fut, node, incarnation) = {
            let mut core = self.core.borrow_mut();
            let task = core.tasks[slot as usize]
                .as_mut()
                .expect("picked task exists");
            if task.aborted {
                let fut = task.future.take();
                let node = task.node;
                let task = core.remove_task(slot);
                drop(core);
                self.with_task(node, Some(id), || {
                    drop(fut);
                    drop(task);
                });
                return;
            }
            let fut = task.future.take().expect("task is not being polled");
            // Wakes from now on queue it again.
            task.queued = false;
            let seen = std::mem::take(&mut task.owed_poll);
            let ptr = fut.task().as_ptr();
            let node = task.node;
            let incarnation = task.incarnation;
            if seen {
                core.owed_poll -= 1;
            }
            core.step += 1;
            core.decide(Kind::Poll, id);
            core.polling = (ptr.cast(), slot, id);
            self.progress.polling(core.step, id, node.0);
            (fut, node, incarnation)
        };
        // `fut`, the executor's reference, keeps the task alive for the
        // whole poll; the waker is borrowed from it.
        let waker = fut.borrowed_waker();
        self.cur.set(Cur {
            task: Some(id),
            node,
        });
        self.sync_clock(node);
        let ready = fut.poll(&mut Context::from_waker(&waker)).is_ready();
        self.cur.set(Cur { task: None, node });
        let mut core = self.core.borrow_mut();
        core.polling = (std::ptr::null(), 0, 0);
        let killed = core.node(node).incarnation != incarnation;
        if ready || killed {
            let task = core.remove_task(slot);
            drop(core);
            self.with_task(node, Some(id), || {
                drop(fut);
                drop(task);
            });
        } else {
            core.tasks[slot as usize]
                .as_mut()
                .expect("task still present")
                .future = Some(fut);
            drop(core);
        }
        self.after_poll();
    }

    fn main_panicked(&self, payload: Box<dyn std::any::Any + Send>) -> ! {
        let context = {
            let core = self.core.borrow();
            report::context(&core, "assertion (the test body panicked)")
        };
        let context = match report::real_tokio_hint(&report::payload_text(&*payload)) {
            Some(hint) => format!("{hint}\n{context}"),
            None => context,
        };
        if !super::harness::quiet() {
            eprintln!("{context}");
        }
        std::panic::resume_unwind(report::augment_payload(payload, &context))
    }

    fn fail(&self, f: Failure) -> ! {
        let text = {
            let core = self.core.borrow();
            report::render(&core, &f)
        };
        *self.last_failure.borrow_mut() = Some(f);
        panic!("{text}");
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
    /// (executor/context.rs).
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
                seed::child(seed, &format!("std.random.{n}")),
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

/// `yield_now`. As in Tokio's current-thread scheduler, the yielding task
/// runs again only after the tasks that are runnable now have had their
/// turn; except on a multi-thread runtime (`#[tokio::main]`, `flavor =
/// "multi_thread"`, the harness's nodes) in a run whose seed drew
/// `yield_ahead` (half the seeds of the exploring schedules, never FIFO):
/// there the yielder is runnable again at once, like any woken task. On
/// Tokio's multi-thread runtime another worker may be busy, so a task may
/// take many steps while another takes none, and the schedules must be
/// able to produce that. Outside a simulation the waker is woken at once.
pub(crate) fn defer_yield(waker: &Waker) {
    let deferred = with_current(|exec| {
        let core = exec.core.borrow();
        if exec.multi_thread.get() && core.config.yield_ahead {
            return false;
        }
        let w = core.wake_ref(waker);
        exec.yielded.borrow_mut().push(w);
        true
    });
    if deferred != Some(true) {
        waker.wake_by_ref();
    }
}

/// Runs `f` with `task` as the current task id (for dropping a task's
/// output from its `JoinHandle`, as Tokio does).
pub(crate) fn with_task_id<R>(task: u64, f: impl FnOnce() -> R) -> R {
    match current() {
        Some(exec) => {
            let node = exec.current_node();
            exec.with_task(node, Some(task), f)
        }
        None => f(),
    }
}

/// `select!`'s fairness draw: from the seed inside a simulation, from a
/// fixed-seed generator outside one (still deterministic).
pub(crate) fn select_draw(n: u32) -> u32 {
    if n <= 1 {
        return 0;
    }
    if let Some(exec) = current() {
        if let Ok(mut core) = exec.core.try_borrow_mut() {
            return core.select_draw(n);
        }
    }
    thread_local! {
        static FALLBACK: Cell<u64> = const { Cell::new(0x853c_49e6_748f_ea9b) };
    }
    FALLBACK.with(|s| {
        let x = seed::splitmix(s.get());
        s.set(x);
        seed::below(x, u64::from(n)) as u32
    })
}

/// Called by a task whose panic nobody can observe (its `JoinHandle` is
/// gone).
pub(crate) fn unhandled_panic(id: u64, name: Option<&str>, message: &str) {
    if let Some(exec) = current() {
        if let Ok(mut core) = exec.core.try_borrow_mut() {
            if core.config.unhandled_panic == UnhandledPanic::Fail {
                let node = exec.current_node();
                let node_name = core.node(node).name.clone();
                core.fail(
                    Class::Panic,
                    format!(
                        "task {id}{} on node '{node_name}' panicked and its JoinHandle was \
                         dropped, so nobody could observe it: {message}\n  (SIM_UNHANDLED_PANIC=ignore \
                         keeps running, as Tokio does by default){}",
                        name.map(|n| format!(" '{n}'")).unwrap_or_default(),
                        report::real_tokio_hint(message)
                            .map(|h| format!("\n{h}"))
                            .unwrap_or_default()
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order in which `n` tasks that each yield `rounds` times are
    /// polled, with the prefetch pipeline on or off.
    fn poll_order(n: usize, rounds: usize, prefetch: bool) -> (Vec<u32>, u64) {
        let exec = Exec::new(Config::from_env(7));
        if !prefetch {
            exec.core.borrow_mut().prefetch_min = usize::MAX;
        }
        let order = Rc::new(RefCell::new(Vec::new()));
        let fingerprint = {
            let _entered = exec.enter();
            for i in 0..n as u32 {
                let order = order.clone();
                exec.spawn(
                    async move {
                        for _ in 0..rounds {
                            order.borrow_mut().push(i);
                            crate::simulation::task::yield_now().await;
                        }
                    },
                    None,
                    Location::caller(),
                    None,
                );
            }
            exec.block_on(async {
                while exec.core.borrow().alive_tasks() > 0 {
                    crate::simulation::task::yield_now().await;
                }
            });
            exec.core.borrow().trace.fingerprint()
        };
        let order = order.borrow().clone();
        (order, fingerprint)
    }

    #[test]
    fn prefetching_never_changes_the_schedule() {
        // Enough runnable tasks for the pipeline (and the yield list's
        // prefetch) to run, for several rounds.
        let n = PREFETCH_MIN_RUNNABLE + 500;
        let with = poll_order(n, 3, true);
        let without = poll_order(n, 3, false);
        assert_eq!(with.0.len(), 3 * n);
        assert!(
            with.0 == without.0,
            "the poll order differs with prefetching"
        );
        assert_eq!(with.1, without.1, "fingerprints differ");
        // And the order is a random one, not the spawn order.
        assert!(with.0[..n].windows(2).any(|w| w[0] > w[1]));
    }

    /// Enough tasks that the slab and the run queue move to huge-page
    /// mappings of their own (`mem::HugeVec` past `mem::HUGE_MIN`): every
    /// task still runs each round, and a second run in the same process
    /// (reusing the mappings the first let go of) runs the same schedule.
    #[test]
    fn many_tasks_run_on_the_huge_page_slab() {
        let n = 40_000;
        assert!(n * std::mem::size_of::<Option<Task>>() > mem::HUGE_MIN);
        let first = poll_order(n, 2, true);
        let mut seen = first.0.clone();
        seen.sort_unstable();
        let expected: Vec<u32> = (0..n as u32).flat_map(|i| [i, i]).collect();
        assert_eq!(seen, expected);
        let second = poll_order(n, 2, true);
        assert!(first.0 == second.0, "the same seed ran another schedule");
        assert_eq!(first.1, second.1);
    }

    /// A socket's wake-up timers are freed once they fired and the socket
    /// waits again, and, being unwatched, never hold back an early jump: a
    /// long run of deliveries keeps neither slots nor unseen timers.
    #[test]
    fn delivery_timers_do_not_pile_up() {
        use crate::simulation::net::UdpSocket;
        let exec = Exec::new(Config::from_env(7));
        let _entered = exec.enter();
        exec.block_on(async {
            let a = UdpSocket::bind("127.0.0.1:1").await.unwrap();
            let b = UdpSocket::bind("127.0.0.1:2").await.unwrap();
            let mut buf = [0u8; 8];
            for i in 0..2_000u32 {
                a.send_to(&i.to_le_bytes(), "127.0.0.1:2").await.unwrap();
                let (n, _) = b.recv_from(&mut buf).await.unwrap();
                assert_eq!(n, 4);
            }
        });
        let slots = exec.core.borrow().timers.slots();
        assert!(slots < 16, "2,000 deliveries left {slots} timer slots");
        assert_eq!(exec.core.borrow().timers.unseen(), 0);
    }
}
