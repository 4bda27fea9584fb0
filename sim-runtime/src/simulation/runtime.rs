//! `tokio::runtime` under simulation: every runtime is one seeded
//! simulation on the thread that builds it.
//!
//! `Builder` accepts all of Tokio's settings (so service code compiles
//! unchanged); those that shape real threads (worker counts, thread names,
//! stack sizes, hooks) have no effect, because a simulation runs everything
//! on one thread by design.

use super::core::config::{self, Config};
use super::core::executor::{self, Exec};
use super::task::JoinHandle;
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::Location;
use std::rc::Rc;
use std::thread::ThreadId;
use std::time::Duration;

/// The flavor of a runtime (reported as asked; every flavor is the same
/// single seeded thread in simulation).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
#[non_exhaustive]
pub enum RuntimeFlavor {
    CurrentThread,
    MultiThread,
}

/// Builds a simulation with custom configuration values.
pub struct Builder {
    flavor: RuntimeFlavor,
    seed: Option<u64>,
    start_paused: bool,
    step_limit: Option<Option<u64>>,
    time_limit: Option<Option<Duration>>,
    name: Option<String>,
    enable_time: bool,
    enable_io: bool,
    workers: Option<usize>,
    max_blocking: Option<usize>,
    park_hook: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
}

impl Builder {
    /// A builder for the current-thread flavor.
    pub fn new_current_thread() -> Builder {
        Builder::with_flavor(RuntimeFlavor::CurrentThread)
    }

    /// A builder for the multi-thread flavor (one seeded thread in
    /// simulation).
    pub fn new_multi_thread() -> Builder {
        Builder::with_flavor(RuntimeFlavor::MultiThread)
    }

    fn with_flavor(flavor: RuntimeFlavor) -> Builder {
        Builder {
            flavor,
            seed: None,
            start_paused: false,
            step_limit: None,
            time_limit: None,
            name: None,
            enable_time: false,
            enable_io: false,
            workers: None,
            max_blocking: None,
            park_hook: None,
        }
    }

    pub fn enable_all(&mut self) -> &mut Self {
        self.enable_time = true;
        self.enable_io = true;
        self
    }
    /// Enables I/O. As in Tokio, a runtime built without it (or
    /// `enable_all`) panics when a signal listener is created.
    pub fn enable_io(&mut self) -> &mut Self {
        self.enable_io = true;
        self
    }
    /// Enables timers. As in Tokio, a runtime built without it (or
    /// `enable_all`) panics when a timer is created; the virtual clock
    /// itself runs either way.
    pub fn enable_time(&mut self) -> &mut Self {
        self.enable_time = true;
        self
    }
    /// Time is always virtual and auto-advancing in simulation.
    pub fn start_paused(&mut self, start_paused: bool) -> &mut Self {
        self.start_paused = start_paused;
        self
    }
    #[track_caller]
    pub fn worker_threads(&mut self, val: usize) -> &mut Self {
        assert!(val > 0, "Worker threads cannot be set to 0");
        self.workers = Some(val);
        self
    }
    #[track_caller]
    pub fn max_blocking_threads(&mut self, val: usize) -> &mut Self {
        assert!(val > 0, "Max blocking threads cannot be set to 0");
        self.max_blocking = Some(val);
        self
    }
    pub fn thread_name(&mut self, _val: impl Into<String>) -> &mut Self {
        self
    }
    pub fn thread_name_fn<F>(&mut self, _f: F) -> &mut Self
    where
        F: Fn() -> String + Send + Sync + 'static,
    {
        self
    }
    pub fn thread_stack_size(&mut self, _val: usize) -> &mut Self {
        self
    }
    pub fn on_thread_start<F>(&mut self, _f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self
    }
    pub fn on_thread_stop<F>(&mut self, _f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self
    }
    /// Called each time the simulation runs out of runnable tasks, before
    /// the clock moves (Tokio calls it before its worker parks).
    pub fn on_thread_park<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.park_hook = Some(std::sync::Arc::new(f));
        self
    }
    pub fn on_thread_unpark<F>(&mut self, _f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self
    }
    pub fn thread_keep_alive(&mut self, _duration: Duration) -> &mut Self {
        self
    }
    #[track_caller]
    pub fn global_queue_interval(&mut self, val: u32) -> &mut Self {
        assert!(val > 0, "global_queue_interval must be greater than 0");
        self
    }
    #[track_caller]
    pub fn event_interval(&mut self, val: u32) -> &mut Self {
        assert!(val > 0, "event_interval must be greater than 0");
        self
    }
    #[track_caller]
    pub fn max_io_events_per_tick(&mut self, capacity: usize) -> &mut Self {
        assert!(capacity > 0, "max_io_events_per_tick must be non-zero");
        self
    }
    #[track_caller]
    pub fn max_io_events_per_busy_tick(&mut self, capacity: usize) -> &mut Self {
        assert!(capacity > 0, "max_io_events_per_busy_tick must be non-zero");
        self
    }
    /// Names the runtime (`Handle::name`).
    #[track_caller]
    pub fn name(&mut self, val: impl Into<String>) -> &mut Self {
        let val = val.into();
        assert!(!val.trim().is_empty(), "runtime name shouldn't be empty");
        self.name = Some(val);
        self
    }

    /// Builds a `LocalRuntime` (every simulation is local to its thread).
    pub fn build_local(&mut self, _options: LocalOptions) -> io::Result<LocalRuntime> {
        let rt = self.build()?;
        rt.handle.exec().compat.set_local_runtime(true);
        Ok(LocalRuntime {
            rt,
            _not_send: std::marker::PhantomData,
        })
    }

    /// Sim-only: use this seed instead of `SIM_SEED` / the default.
    pub fn sim_seed(&mut self, seed: u64) -> &mut Self {
        self.seed = Some(seed);
        self
    }

    /// Sim-only: polls allowed before the run fails with class `step limit`
    /// (`None`: unlimited). Default: `SIM_STEP_LIMIT`, else 100,000,000.
    pub fn sim_step_limit(&mut self, limit: Option<u64>) -> &mut Self {
        self.step_limit = Some(limit);
        self
    }

    /// Sim-only: virtual time allowed before the run fails with class
    /// `livelock` (`None`: unlimited). Default: `SIM_TIME_LIMIT`, else a year.
    pub fn sim_time_limit(&mut self, limit: Option<Duration>) -> &mut Self {
        self.time_limit = Some(limit);
        self
    }

    /// Builds the simulation. Its seed is `SIM_SEED` (or the fixed default)
    /// unless one was set; the seed is printed so the run can be replayed.
    pub fn build(&mut self) -> io::Result<Runtime> {
        // On a simulated thread (a test harness's thread per node, a
        // library's worker), a runtime is the simulation's own: its tasks,
        // timers and sockets are the run's, on the thread's node.
        if super::thread::on_simulated_thread() {
            if let Some(exec) = executor::current() {
                let mut rt = Runtime::from_exec(exec, self.flavor);
                rt.shared = true;
                return Ok(rt);
            }
        }
        let seed = match self.seed {
            Some(seed) => seed,
            // The test runner names its seed; only code that builds its
            // own runtime reads the variables here.
            None if super::core::config::in_test_runner() => {
                config::env_seed().unwrap_or(config::DEFAULT_SEED)
            }
            None => config::own_runtime_seed(),
        };
        if self.seed.is_none() && !super::core::config::in_test_runner() {
            eprintln!(
                "sim: runtime seed {seed} (replay: {})",
                super::core::report::replay_command(seed)
            );
        }
        let mut config = Config::from_env(seed);
        if let Some(l) = self.step_limit {
            config.step_limit = l;
        }
        if let Some(l) = self.time_limit {
            config.time_limit = l;
        }
        let exec = Exec::new(config);
        OWNED.with(|o| {
            let mut o = o.borrow_mut();
            o.retain(|w| w.strong_count() > 0);
            o.push(Rc::downgrade(&exec));
        });
        exec.compat.set_time_frozen(self.start_paused);
        exec.compat.set_timers_enabled(self.enable_time);
        exec.compat.set_io_enabled(self.enable_io);
        let multi = self.flavor == RuntimeFlavor::MultiThread;
        exec.compat.set_multi_thread(multi);
        // Reported by metrics only: every flavor runs on one thread.
        let workers = match (multi, self.workers) {
            (false, _) => 1,
            (true, Some(n)) => n,
            (true, None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        exec.compat.set_workers(workers);
        if let Some(n) = self.max_blocking {
            exec.compat.set_max_blocking(n);
        }
        exec.compat.set_park_hook(self.park_hook.clone());
        if let Some(name) = &self.name {
            exec.compat.set_name(name.clone().into_boxed_str());
        }
        Ok(Runtime::from_exec(exec, self.flavor))
    }
}

thread_local! {
    /// The runtimes built on this thread (a test's own `Runtime`), newest
    /// last: a thread this thread starts outside their `block_on` is a
    /// simulated thread of the newest one still running (thread/).
    static OWNED: std::cell::RefCell<Vec<std::rc::Weak<Exec>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The newest runtime built on this thread that is not shut down, if any.
pub(crate) fn owned_runtime() -> Option<Rc<Exec>> {
    OWNED
        .try_with(|o| {
            o.borrow()
                .iter()
                .rev()
                .filter_map(std::rc::Weak::upgrade)
                .find(|e| !e.compat.shut_down())
        })
        .ok()
        .flatten()
}

impl fmt::Debug for Builder {
    // (the park hook has no Debug)
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("flavor", &self.flavor)
            .finish()
    }
}

/// The simulation, owned. Tokio's `Runtime` is `Send + Sync`; this one may
/// be moved and shared too, but it may only be *used* on the thread that
/// built it (a simulation is one thread), and says so clearly otherwise.
pub struct Runtime {
    handle: Handle,
    /// Built on a simulated thread: the simulation's own executor, which
    /// this runtime neither drives nor shuts down (thread/).
    shared: bool,
    /// Set by `shutdown_timeout`/`shutdown_background`, which Tokio allows
    /// inside an async context (a plain drop there panics).
    shutting_down: bool,
    /// How long the shutdown waits for the `spawn_blocking` jobs a worker
    /// has started, as Tokio's: for ever for a drop (capped, see
    /// `Exec::finish_blocking`), the timeout of `shutdown_timeout`, not at
    /// all for `shutdown_background` or the runtime a seed's harness made
    /// (a seed ends its threads where they stand).
    blocking_wait: Option<Duration>,
}

/// A handle to a simulation: `Send + Sync + Clone`, usable on its thread.
/// Once the runtime has shut down, any thread may enter it and spawn on it,
/// as on Tokio: each task is dropped at once and reported cancelled.
#[derive(Clone)]
pub struct Handle {
    exec: ExecRef,
    flavor: RuntimeFlavor,
}

/// An `Rc<Exec>` that may travel between threads but is only touched on its
/// owner thread, with what any thread may know of the executor (its
/// [`executor::Remote`]).
struct ExecRef {
    /// `None` in a handle made where the `Rc` may not be touched, of a
    /// runtime whose simulation had ended: such a handle only ever acts as
    /// one of an ended runtime.
    exec: Option<std::mem::ManuallyDrop<Rc<Exec>>>,
    owner: ThreadId,
    remote: executor::Remote,
}

// SAFETY: the `Rc` is only cloned, dereferenced or dropped on `owner` or on
// a simulated thread of the same simulation (checked in `clone`, `get`,
// `target` and `drop`), and those never run at the same time (the baton,
// thread/); on any other thread it is leaked instead of dropped, and a
// clone made there holds no `Rc`, so its count is never touched
// concurrently. The `Remote` is an `Arc` of thread-safe state.
unsafe impl Send for ExecRef {}
// SAFETY: as above.
unsafe impl Sync for ExecRef {}

/// What a handle acts on, on the calling thread.
enum Target<'a> {
    /// The executor, which this thread may touch (whether or not its
    /// simulation has ended).
    Here(&'a Rc<Exec>),
    /// A runtime whose simulation has ended, on a thread that may not touch
    /// its executor: as Tokio's handle of a runtime that has shut down, it
    /// may be entered and spawned on (the task is cancelled at once).
    Ended(&'a executor::Remote),
}

impl ExecRef {
    fn new(exec: Rc<Exec>) -> ExecRef {
        ExecRef {
            remote: exec.remote(),
            exec: Some(std::mem::ManuallyDrop::new(exec)),
            owner: std::thread::current().id(),
        }
    }

    /// The `Rc`, if the calling thread may touch it: its owner, or a
    /// simulated thread of the same simulation (which holds its baton).
    fn here(&self) -> Option<&Rc<Exec>> {
        let exec = self.exec.as_deref()?;
        (std::thread::current().id() == self.owner
            || std::ptr::eq(executor::current_ptr(), Rc::as_ptr(exec)))
        .then_some(exec)
    }

    /// What the handle acts on here. On a thread that may not touch the
    /// executor, the runtime must have ended: its owner may be about to end
    /// it (a thread that hands a clone of its runtime's handle on and then
    /// drops the runtime, as Tokio's own tests do), so this waits for that
    /// for a moment before refusing.
    #[track_caller]
    fn target(&self) -> Target<'_> {
        if let Some(exec) = self.here() {
            return Target::Here(exec);
        }
        if self.remote.wait_ended().is_some() {
            return Target::Ended(&self.remote);
        }
        refuse_foreign_thread()
    }

    /// The executor, for what a handle does only where it may touch it.
    #[track_caller]
    fn get(&self) -> &Rc<Exec> {
        match self.here() {
            Some(exec) => exec,
            None if self.remote.ended().is_some() => panic!(
                "sim: a simulated runtime that has shut down was used from a thread other than \
                 the one that built it; there it may only be entered and spawned on (each task \
                 cancelled at once, as on Tokio)."
            ),
            None => refuse_foreign_thread(),
        }
    }
}

/// The panic for a running simulation used from a thread that is none of
/// its own.
#[track_caller]
fn refuse_foreign_thread() -> ! {
    panic!(
        "sim: a simulated runtime was used from a thread other than the one that built it; a \
         simulation runs on exactly one thread. Build the runtime on the thread that uses it."
    )
}

impl Clone for ExecRef {
    #[track_caller]
    fn clone(&self) -> ExecRef {
        let exec = match self.target() {
            Target::Here(exec) => Some(std::mem::ManuallyDrop::new(exec.clone())),
            Target::Ended(_) => None,
        };
        ExecRef {
            exec,
            owner: self.owner,
            remote: self.remote.clone(),
        }
    }
}

impl Drop for ExecRef {
    fn drop(&mut self) {
        if self.here().is_some() {
            if let Some(exec) = self.exec.as_mut() {
                // SAFETY: dropped exactly once, on a thread that may touch it.
                unsafe { std::mem::ManuallyDrop::drop(exec) }
            }
        }
    }
}

impl Runtime {
    fn from_exec(exec: Rc<Exec>, flavor: RuntimeFlavor) -> Runtime {
        Runtime {
            handle: Handle {
                exec: ExecRef::new(exec),
                flavor,
            },
            shutting_down: false,
            shared: false,
            blocking_wait: Some(Duration::MAX),
        }
    }

    /// A runtime around a simulation made elsewhere (the test runner's,
    /// the harness's), reporting `flavor`. Its drop ends the seed: it waits
    /// for no `spawn_blocking` job.
    pub(crate) fn with_exec_flavor(exec: Rc<Exec>, flavor: RuntimeFlavor) -> Runtime {
        let mut rt = Runtime::from_exec(exec, flavor);
        rt.blocking_wait = None;
        rt
    }

    /// A simulation with default settings (`SIM_SEED` or the default seed).
    pub fn new() -> io::Result<Runtime> {
        Builder::new_multi_thread().enable_all().build()
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }

    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, func: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.handle.spawn_blocking(func)
    }

    /// Runs the future to completion on the simulation, driving every task
    /// and the virtual clock.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let exec = self.handle.exec();
        if super::thread::on_simulated_thread() {
            let _entered = exec.enter();
            return super::thread::runtime_block_on(exec, future);
        }
        // A current-thread runtime's block_on future runs on its worker.
        block_on_as(exec, !exec.compat.multi_thread(), future)
    }

    pub fn enter(&self) -> EnterGuard<'_> {
        self.handle.enter()
    }

    /// Drops every task, then waits up to `duration` of virtual time for
    /// the `spawn_blocking` closures already handed to the pool (those
    /// queued behind a busy worker run too, as Tokio's busy worker takes
    /// them), as Tokio waits for its blocking threads; a closure still
    /// running when the time is up is stopped where it stands
    /// (docs/breakage.md).
    pub fn shutdown_timeout(mut self, duration: Duration) {
        self.shutting_down = true;
        self.blocking_wait = Some(duration);
    }

    /// Drops every task and waits for no `spawn_blocking` closure.
    pub fn shutdown_background(mut self) {
        self.shutting_down = true;
        self.blocking_wait = None;
    }

    pub fn metrics(&self) -> RuntimeMetrics {
        self.handle.metrics()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Built on a simulated thread, or dropped on one (the last `Arc` of
        // a test's runtime, moved into its threads): the simulation is not
        // this thread's to shut down; it ends with its executor.
        if self.shared || super::thread::on_simulated_thread() {
            return;
        }
        let in_async = executor::current().is_some_and(|e| e.in_block_on());
        if in_async && !self.shutting_down && !std::thread::panicking() {
            panic!(
                "Cannot drop a runtime in a context where blocking is not allowed. This happens \
                 when a runtime is dropped from within an asynchronous context."
            );
        }
        if std::thread::current().id() == self.handle.exec.owner {
            let exec = self.handle.exec();
            let blocking = self.blocking_wait.map(|wait| {
                let _entered = exec.enter();
                (wait, super::thread::shutting_down())
            });
            exec.shutdown(blocking);
        }
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("flavor", &self.handle.flavor)
            .finish()
    }
}

/// Guard of `Runtime::enter` / `Handle::enter`.
pub struct EnterGuard<'a> {
    // Checked before the context is restored (fields drop in order). The
    // guard type itself has no `Drop` impl, so, as with Tokio's, a runtime
    // may be moved while a guard of it is still in scope.
    _depth: EnterDepth,
    _entered: Entered,
    _p: std::marker::PhantomData<&'a Handle>,
}

/// This guard's place in the thread's stack of entered contexts.
struct EnterDepth(usize);

/// What an `EnterGuard` entered: the executor, or (on a thread that may not
/// touch it) a runtime whose simulation has ended.
enum Entered {
    Here { _guard: executor::Entered },
    Ended { _guard: executor::EnteredEnded },
}

// SAFETY: a guard has no method and no public field, so a shared reference
// to one gives another thread nothing to call or read; only its drop (on
// the owning thread: the guard is not `Send`) touches the executor. Tokio's
// guard is `Sync` too.
unsafe impl Sync for EnterGuard<'_> {}

thread_local! {
    static ENTER_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Drop for EnterDepth {
    fn drop(&mut self) {
        let current = ENTER_DEPTH.with(|d| d.get());
        if current != self.0 && !std::thread::panicking() {
            panic!(
                "`EnterGuard` values dropped out of order. Guards returned by \
                 `tokio::runtime::Handle::enter()` must be dropped in the reverse \
                 order as they were acquired."
            );
        }
        ENTER_DEPTH.with(|d| d.set(self.0 - 1));
    }
}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterGuard").finish()
    }
}

/// Error returned by `Handle::try_current` outside a runtime.
#[derive(Debug)]
pub struct TryCurrentError(());

impl TryCurrentError {
    pub fn is_missing_context(&self) -> bool {
        true
    }
    pub fn is_thread_local_destroyed(&self) -> bool {
        false
    }
}

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "there is no reactor running, must be called from the context of a Tokio 1.x runtime",
        )
    }
}

impl std::error::Error for TryCurrentError {}

impl Handle {
    #[track_caller]
    pub(crate) fn exec(&self) -> &Rc<Exec> {
        self.exec.get()
    }

    /// The handle of the current simulation. Panics outside one.
    #[track_caller]
    pub fn current() -> Handle {
        match Handle::try_current() {
            Ok(h) => h,
            Err(e) => panic!("{e}"),
        }
    }

    pub fn try_current() -> Result<Handle, TryCurrentError> {
        let flavor = |multi_thread| {
            if multi_thread {
                RuntimeFlavor::MultiThread
            } else {
                RuntimeFlavor::CurrentThread
            }
        };
        // An ended runtime entered here (`enter` on a thread that may not
        // touch its executor): a handle of it that holds no `Rc`.
        if let Some(remote) = executor::entered_ended() {
            let ended = remote.ended().expect("only an ended runtime is entered so");
            return Ok(Handle {
                flavor: flavor(ended.multi_thread()),
                exec: ExecRef {
                    exec: None,
                    owner: ended.owner(),
                    remote,
                },
            });
        }
        let exec = executor::current().ok_or(TryCurrentError(()))?;
        Ok(Handle {
            flavor: flavor(exec.compat.multi_thread()),
            exec: ExecRef::new(exec),
        })
    }

    #[track_caller]
    pub fn enter(&self) -> EnterGuard<'_> {
        // Before the depth is counted: a refused handle leaves it as it was.
        let entered = match self.exec.target() {
            Target::Here(exec) => Entered::Here {
                _guard: exec.enter(),
            },
            Target::Ended(remote) => Entered::Ended {
                _guard: remote.enter(),
            },
        };
        let depth = ENTER_DEPTH.with(|d| {
            d.set(d.get() + 1);
            d.get()
        });
        EnterGuard {
            _depth: EnterDepth(depth),
            _entered: entered,
            _p: std::marker::PhantomData,
        }
    }

    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawn_named(future, None, Location::caller())
    }

    /// `spawn` with a task name (`task::Builder::spawn_on`). On a runtime
    /// that has shut down the task is dropped at once and its handle
    /// reports it cancelled, as on Tokio (from any thread).
    #[track_caller]
    pub(crate) fn spawn_named<F>(
        &self,
        future: F,
        name: Option<std::sync::Arc<str>>,
        location: &'static Location<'static>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.exec.target() {
            Target::Here(exec) => exec.spawn(future, name, location, None),
            Target::Ended(remote) => remote.spawn_cancelled(future, name),
        }
    }

    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, func: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let _g = self.enter();
        super::task::spawn_blocking(func)
    }

    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        if super::thread::on_simulated_thread() {
            let _entered = self.exec().enter();
            return super::thread::block_on(future);
        }
        // `Handle::block_on` blocks the caller's thread: not a worker.
        block_on_as(self.exec(), false, future)
    }

    pub fn runtime_flavor(&self) -> RuntimeFlavor {
        self.flavor
    }

    /// The runtime's id (unique in the process).
    pub fn id(&self) -> Id {
        let id = match self.exec.target() {
            Target::Here(exec) => exec.id,
            Target::Ended(remote) => remote.id(),
        };
        Id(std::num::NonZeroU64::new(id).expect("executor ids start at 1"))
    }

    /// The runtime's name, if `Builder::name` gave one.
    pub fn name(&self) -> Option<&str> {
        match self.exec.target() {
            Target::Here(exec) => exec.compat.name(),
            Target::Ended(remote) => remote.ended().and_then(|e| e.name()),
        }
    }

    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics {
            handle: self.clone(),
        }
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("flavor", &self.flavor)
            .finish()
    }
}

/// An opaque id of a runtime.
#[derive(Clone, Copy, Debug, Hash, Eq, PartialEq)]
pub struct Id(std::num::NonZeroU64);

impl Id {
    pub(crate) fn new(id: u64) -> Id {
        Id(std::num::NonZeroU64::new(id).expect("runtime ids start at 1"))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `exec.block_on(future)` with its future counted as on a worker (for
/// `worker_index`) or not; the previous setting comes back even on a panic.
#[track_caller]
fn block_on_as<F: Future>(exec: &Rc<Exec>, on_worker: bool, future: F) -> F::Output {
    struct Restore<'a>(&'a Exec, bool);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            self.0.compat.set_main_on_worker(self.1);
        }
    }
    let _restore = Restore(exec, exec.compat.set_main_on_worker(on_worker));
    exec.block_on(future)
}

/// The index of the worker running the current task: 0 inside a task of a
/// simulation (one thread), `None` where Tokio has no worker (outside any
/// runtime, in `spawn_blocking`, in `Handle::block_on` and a multi-thread
/// runtime's `block_on` future).
pub fn worker_index() -> Option<usize> {
    executor::current().and_then(|e| e.worker_index())
}

/// Whether `err` is the error a runtime's I/O reports after shutdown.
pub fn is_rt_shutdown_err(err: &io::Error) -> bool {
    match err.get_ref() {
        Some(inner) => {
            err.kind() == io::ErrorKind::Other
                && inner.source().is_none()
                && inner.to_string() == RUNTIME_SHUTTING_DOWN_ERROR
        }
        None => false,
    }
}

pub(crate) const RUNTIME_SHUTTING_DOWN_ERROR: &str =
    "A Tokio 1.x context was found, but it is being shutdown.";

/// Options of `Builder::build_local`.
#[derive(Default, Debug)]
#[non_exhaustive]
pub struct LocalOptions {
    _p: std::marker::PhantomData<*mut ()>,
}

/// A runtime that may spawn `!Send` futures (every simulation may).
#[derive(Debug)]
pub struct LocalRuntime {
    rt: Runtime,
    _not_send: std::marker::PhantomData<*mut ()>,
}

impl LocalRuntime {
    pub fn new() -> io::Result<LocalRuntime> {
        Builder::new_current_thread()
            .enable_all()
            .build_local(LocalOptions::default())
    }
    pub fn handle(&self) -> &Handle {
        self.rt.handle()
    }
    #[track_caller]
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.rt
            .handle
            .exec()
            .spawn(future, None, Location::caller(), None)
    }
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, func: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.rt.spawn_blocking(func)
    }
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.rt.block_on(future)
    }
    pub fn enter(&self) -> EnterGuard<'_> {
        self.rt.enter()
    }
    pub fn shutdown_timeout(self, duration: Duration) {
        self.rt.shutdown_timeout(duration)
    }
    pub fn shutdown_background(self) {
        self.rt.shutdown_background()
    }
    pub fn metrics(&self) -> RuntimeMetrics {
        self.rt.metrics()
    }
}

impl std::panic::UnwindSafe for Runtime {}
impl std::panic::RefUnwindSafe for Runtime {}
impl std::panic::UnwindSafe for Handle {}
impl std::panic::RefUnwindSafe for Handle {}

/// The stable part of Tokio's runtime metrics, read live from the
/// simulation (on its thread).
#[derive(Clone, Debug)]
pub struct RuntimeMetrics {
    handle: Handle,
}

impl RuntimeMetrics {
    /// The configured `worker_threads` (1 for current_thread); every
    /// flavor runs on one thread in simulation.
    pub fn num_workers(&self) -> usize {
        self.handle.exec().compat.workers()
    }
    pub fn num_alive_tasks(&self) -> usize {
        self.handle.exec().core().alive_async_tasks()
    }
    /// Tasks spawned from off the runtime's worker (another thread, outside
    /// `block_on`, `Handle::block_on`) that have not run yet. Tokio also
    /// counts tasks woken from off the worker; the simulation does not.
    pub fn global_queue_depth(&self) -> usize {
        self.handle.exec().core().injected_tasks()
    }
    /// Busy time is not measured: polls take no virtual time.
    pub fn worker_total_busy_duration(&self, _worker: usize) -> Duration {
        Duration::ZERO
    }
    /// Times the simulation went idle, i.e. the clock jumped to a timer.
    pub fn worker_park_count(&self, _worker: usize) -> u64 {
        self.handle.exec().core().parks()
    }
    /// Parks plus unparks, as Tokio counts them: odd while the worker is
    /// parked, even while it runs. A current-thread runtime's worker is its
    /// `block_on` (parked each time the clock jumps). A multi-thread
    /// runtime's workers park once they start; worker 0 runs every spawned
    /// task (unparked from the first one polled until the run goes idle or
    /// `block_on` returns); the others never unpark; all unpark once to
    /// shut down.
    pub fn worker_park_unpark_count(&self, worker: usize) -> u64 {
        let exec = self.handle.exec();
        let core = exec.core();
        if !exec.compat.multi_thread() {
            return core.parks() * 2;
        }
        let shutdown = u64::from(exec.compat.shut_down());
        match worker {
            0 => {
                let (cycles, busy) = core.worker_cycles();
                1 + 2 * cycles + u64::from(busy) + shutdown
            }
            _ => 1 + shutdown,
        }
    }
}

/// Tokio's panic, at the caller, for an I/O resource (a signal listener, a
/// Unix socket made synchronously) on a runtime built without `enable_io`.
#[track_caller]
pub(crate) fn check_io() {
    if !super::core::executor::expect_current().compat.io_enabled() {
        panic!(
            "A Tokio 1.x context was found, but IO is disabled. Call `enable_io` on the \
             runtime builder to enable IO."
        );
    }
}
