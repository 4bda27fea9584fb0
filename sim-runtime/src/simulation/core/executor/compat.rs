//! Tokio compatibility: the runtime settings Tokio's `Builder` takes and
//! the state Tokio's API keeps about the runtime, which the simulation
//! needs only to answer as Tokio does (it runs every flavor on one thread,
//! on one virtual clock). Nothing here steers the schedule or draws from
//! the seed.
//!
//! One writer per flag: each is written only through its setter below,
//! whose doc names who calls it; everyone else reads.

use std::cell::{Cell, OnceCell, RefCell};
use std::sync::Arc;

/// `Builder::on_thread_park`'s callback.
pub(crate) type ParkHook = Arc<dyn Fn() + Send + Sync>;

/// Tokio's default `max_blocking_threads`.
pub(crate) const DEFAULT_MAX_BLOCKING: usize = 512;

pub(crate) struct Compat {
    time_frozen: Cell<bool>,
    timers_enabled: Cell<bool>,
    io_enabled: Cell<bool>,
    multi_thread: Cell<bool>,
    one_clock: Cell<bool>,
    local_runtime: Cell<bool>,
    workers: Cell<usize>,
    max_blocking: Cell<usize>,
    name: OnceCell<Box<str>>,
    park_hook: RefCell<Option<ParkHook>>,
    shut_down: Cell<bool>,
    local_depth: Cell<u32>,
    main_on_worker: Cell<bool>,
    /// A simulated thread's `Runtime::block_on` holds the worker
    /// (thread/mod.rs `runtime_block_on`).
    thread_on_worker: Cell<bool>,
    /// The thread that built a current-thread runtime runs it from a wait
    /// outside `block_on` (thread/owner.rs): its tasks are held while no
    /// `block_on` holds the worker.
    owner_driving: Cell<bool>,
    in_blocking: Cell<bool>,
    spawning_blocking: Cell<bool>,
}

impl Default for Compat {
    /// A current-thread runtime with time and I/O enabled, as
    /// `Runtime::new` would build it.
    fn default() -> Compat {
        Compat {
            time_frozen: Cell::new(false),
            timers_enabled: Cell::new(true),
            io_enabled: Cell::new(true),
            multi_thread: Cell::new(false),
            one_clock: Cell::new(false),
            local_runtime: Cell::new(false),
            workers: Cell::new(1),
            max_blocking: Cell::new(DEFAULT_MAX_BLOCKING),
            name: OnceCell::new(),
            park_hook: RefCell::new(None),
            shut_down: Cell::new(false),
            local_depth: Cell::new(0),
            main_on_worker: Cell::new(false),
            thread_on_worker: Cell::new(false),
            owner_driving: Cell::new(false),
            in_blocking: Cell::new(false),
            spawning_blocking: Cell::new(false),
        }
    }
}

impl Compat {
    /// Tokio's "time is frozen" state (`start_paused`, `pause`, `resume`).
    /// The simulated clock is virtual either way; this only keeps Tokio's
    /// panics for `advance` without `pause`, a second `pause`, and so on.
    pub(crate) fn time_frozen(&self) -> bool {
        self.time_frozen.get()
    }

    /// Freezes or thaws time; returns whether it was frozen. Called by a
    /// runtime's build (`start_paused`: runtime.rs, run/seed_run.rs) and by
    /// `time::pause` and `time::resume`.
    pub(crate) fn set_time_frozen(&self, frozen: bool) -> bool {
        self.time_frozen.replace(frozen)
    }

    /// `Builder::enable_time`: without it, creating a timer panics as in
    /// Tokio.
    pub(crate) fn timers_enabled(&self) -> bool {
        self.timers_enabled.get()
    }

    /// Called by `Builder::build` (runtime.rs).
    pub(crate) fn set_timers_enabled(&self, on: bool) {
        self.timers_enabled.set(on);
    }

    /// `Builder::enable_io`: without it, a signal listener panics as in
    /// Tokio (the network stays: Tokio's sockets outside a runtime with I/O
    /// fail differently, per call).
    pub(crate) fn io_enabled(&self) -> bool {
        self.io_enabled.get()
    }

    /// Called by `Builder::build` (runtime.rs).
    pub(crate) fn set_io_enabled(&self, on: bool) {
        self.io_enabled.set(on);
    }

    /// Built as a multi-thread runtime (`block_in_place` is allowed, and
    /// yields may run ahead: schedule/yield_ahead.rs).
    pub(crate) fn multi_thread(&self) -> bool {
        self.multi_thread.get()
    }

    /// Called by a runtime's build (runtime.rs, run/seed_run.rs).
    pub(crate) fn set_multi_thread(&self, on: bool) {
        self.multi_thread.set(on);
    }

    /// A harness run: the test owns the one virtual clock, so `time::pause`
    /// works although the nodes run as on a multi-thread runtime (Tokio
    /// refuses it there because it cannot stop the worker threads' clocks;
    /// here there is only one).
    pub(crate) fn one_clock(&self) -> bool {
        self.one_clock.get()
    }

    /// Called by the harness's build (run/seed_run.rs).
    pub(crate) fn set_one_clock(&self, on: bool) {
        self.one_clock.set(on);
    }

    /// Built by `build_local`: `spawn_local` works anywhere in it.
    pub(crate) fn local_runtime(&self) -> bool {
        self.local_runtime.get()
    }

    /// Called by `Builder::build_local` (runtime.rs) and a test's build
    /// (run/seed_run.rs).
    pub(crate) fn set_local_runtime(&self, on: bool) {
        self.local_runtime.set(on);
    }

    /// `worker_threads` as configured (reported by metrics only).
    pub(crate) fn workers(&self) -> usize {
        self.workers.get()
    }

    /// Called by a runtime's build (runtime.rs, run/seed_run.rs).
    pub(crate) fn set_workers(&self, n: usize) {
        self.workers.set(n);
    }

    /// `Builder::max_blocking_threads`: the most `spawn_blocking` threads a
    /// node process starts (thread/pool.rs).
    pub(crate) fn max_blocking(&self) -> usize {
        self.max_blocking.get()
    }

    pub(crate) fn set_max_blocking(&self, n: usize) {
        self.max_blocking.set(n);
    }

    /// `Builder::name`.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.get().map(|n| &**n)
    }

    /// Called once by a runtime's build (runtime.rs, run/seed_run.rs); a
    /// second name is ignored.
    pub(crate) fn set_name(&self, name: Box<str>) {
        let _ = self.name.set(name);
    }

    /// `Builder::on_thread_park` (run once each time the run queue
    /// empties: idle.rs).
    pub(crate) fn park_hook(&self) -> Option<ParkHook> {
        self.park_hook.borrow().clone()
    }

    /// Called by `Builder::build` (runtime.rs).
    pub(crate) fn set_park_hook(&self, hook: Option<ParkHook>) {
        *self.park_hook.borrow_mut() = hook;
    }

    /// Set by a runtime shutdown: timers are gone, as Tokio's are.
    pub(crate) fn shut_down(&self) -> bool {
        self.shut_down.get()
    }

    /// Called by the executor's shutdown (lifecycle.rs).
    pub(crate) fn set_shut_down(&self) {
        self.shut_down.set(true);
    }

    /// How deep the current code is inside a `LocalSet` (its `run_until`,
    /// or one of its tasks); `block_in_place` refuses to run there, as in
    /// Tokio.
    pub(crate) fn local_depth(&self) -> u32 {
        self.local_depth.get()
    }

    /// Called by `LocalSet`'s guard as it enters and leaves (task/local.rs).
    pub(crate) fn set_local_depth(&self, depth: u32) {
        self.local_depth.set(depth);
    }

    /// Whether the `block_on` future runs "on a worker" for
    /// `runtime::worker_index` (a current-thread `Runtime::block_on`).
    pub(crate) fn main_on_worker(&self) -> bool {
        self.main_on_worker.get()
    }

    /// Returns the previous setting. Called around a `Runtime::block_on`
    /// (runtime.rs), which puts the previous one back.
    pub(crate) fn set_main_on_worker(&self, on: bool) -> bool {
        self.main_on_worker.replace(on)
    }

    /// Whether a simulated thread's `Runtime::block_on` holds the worker.
    pub(crate) fn thread_on_worker(&self) -> bool {
        self.thread_on_worker.get()
    }

    /// Returns the previous setting (thread/mod.rs `runtime_block_on`).
    pub(crate) fn set_thread_on_worker(&self, on: bool) -> bool {
        self.thread_on_worker.replace(on)
    }

    /// Whether the thread that built a current-thread runtime runs it from
    /// a wait outside `block_on` (thread/owner.rs).
    pub(crate) fn owner_driving(&self) -> bool {
        self.owner_driving.get()
    }

    /// Returns the previous setting (thread/owner.rs).
    pub(crate) fn set_owner_driving(&self, on: bool) -> bool {
        self.owner_driving.replace(on)
    }

    /// Whether a `spawn_blocking` closure is running.
    pub(crate) fn in_blocking(&self) -> bool {
        self.in_blocking.get()
    }

    /// Returns the previous setting. Called around a `spawn_blocking`
    /// closure (task/mod.rs), which puts the previous one back.
    pub(crate) fn set_in_blocking(&self, on: bool) -> bool {
        self.in_blocking.replace(on)
    }

    /// Marks the next spawn as blocking code (or takes the mark); returns
    /// the previous mark. Called by `spawn_blocking` with `true` for its
    /// spawn (task/mod.rs), and by that spawn with `false` to take it
    /// (slab.rs).
    pub(crate) fn set_spawning_blocking(&self, on: bool) -> bool {
        self.spawning_blocking.replace(on)
    }
}
