//! `tokio::runtime` under simulation: every runtime is one seeded
//! simulation on the thread that builds it.
//!
//! `Builder` accepts all of Tokio's settings (so service code compiles
//! unchanged); those that shape real threads (worker counts, thread names,
//! stack sizes, hooks) have no effect, because a simulation runs everything
//! on one thread by design.

use super::config::{self, Config};
use super::executor::{self, Exec};
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
        }
    }

    pub fn enable_all(&mut self) -> &mut Self {
        self
    }
    pub fn enable_io(&mut self) -> &mut Self {
        self
    }
    pub fn enable_time(&mut self) -> &mut Self {
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
        self
    }
    #[track_caller]
    pub fn max_blocking_threads(&mut self, val: usize) -> &mut Self {
        assert!(val > 0, "Max blocking threads cannot be set to 0");
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
    pub fn on_thread_park<F>(&mut self, _f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
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
    pub fn global_queue_interval(&mut self, _val: u32) -> &mut Self {
        self
    }
    pub fn event_interval(&mut self, _val: u32) -> &mut Self {
        self
    }
    pub fn max_io_events_per_tick(&mut self, _capacity: usize) -> &mut Self {
        self
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
        let seed = self
            .seed
            .or_else(config::env_seed)
            .unwrap_or(config::DEFAULT_SEED);
        if self.seed.is_none() && !super::private::in_test_runner() {
            eprintln!(
                "sim: runtime seed {seed} (replay: {})",
                super::report::replay_command(seed)
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
        exec.time_frozen.set(self.start_paused);
        Ok(Runtime::from_exec(exec, self.flavor))
    }
}

impl fmt::Debug for Builder {
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
}

/// A handle to a simulation: `Send + Sync + Clone`, usable on its thread.
#[derive(Clone)]
pub struct Handle {
    exec: ExecRef,
    flavor: RuntimeFlavor,
}

/// An `Rc<Exec>` that may travel between threads but is only touched on its
/// owner thread.
#[derive(Clone)]
struct ExecRef {
    exec: std::mem::ManuallyDrop<Rc<Exec>>,
    owner: ThreadId,
}

// SAFETY: the `Rc` is only cloned, dereferenced or dropped on `owner`
// (checked in `get` and `drop`); on any other thread it is leaked instead of
// dropped, so its count is never touched concurrently.
unsafe impl Send for ExecRef {}
// SAFETY: as above.
unsafe impl Sync for ExecRef {}

impl ExecRef {
    #[track_caller]
    fn get(&self) -> &Rc<Exec> {
        if std::thread::current().id() != self.owner {
            panic!(
                "sim: a simulated runtime was used from a thread other than the one that built \
                 it; a simulation runs on exactly one thread. Build the runtime on the thread \
                 that uses it."
            );
        }
        &self.exec
    }
}

impl Drop for ExecRef {
    fn drop(&mut self) {
        if std::thread::current().id() == self.owner {
            // SAFETY: dropped exactly once, on the owner thread.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.exec) }
        }
    }
}

impl Runtime {
    fn from_exec(exec: Rc<Exec>, flavor: RuntimeFlavor) -> Runtime {
        Runtime {
            handle: Handle {
                exec: ExecRef {
                    exec: std::mem::ManuallyDrop::new(exec),
                    owner: std::thread::current().id(),
                },
                flavor,
            },
        }
    }

    pub(crate) fn with_exec(exec: Rc<Exec>) -> Runtime {
        Runtime::from_exec(exec, RuntimeFlavor::CurrentThread)
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
        self.handle.exec().block_on(future)
    }

    pub fn enter(&self) -> EnterGuard<'_> {
        self.handle.enter()
    }

    /// Drops every task now (there are no threads to wait for).
    pub fn shutdown_timeout(self, _duration: Duration) {}

    pub fn shutdown_background(self) {}

    pub fn metrics(&self) -> RuntimeMetrics {
        self.handle.metrics()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if std::thread::current().id() == self.handle.exec.owner {
            self.handle.exec().shutdown();
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
    _entered: executor::Entered,
    _p: std::marker::PhantomData<&'a Handle>,
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
        Handle::try_current().unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn try_current() -> Result<Handle, TryCurrentError> {
        let exec = executor::current().ok_or(TryCurrentError(()))?;
        Ok(Handle {
            exec: ExecRef {
                exec: std::mem::ManuallyDrop::new(exec),
                owner: std::thread::current().id(),
            },
            flavor: RuntimeFlavor::CurrentThread,
        })
    }

    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard {
            _entered: self.exec().enter(),
            _p: std::marker::PhantomData,
        }
    }

    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.exec().spawn(future, None, Location::caller(), None)
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
        self.exec().block_on(future)
    }

    pub fn runtime_flavor(&self) -> RuntimeFlavor {
        self.flavor
    }

    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics {
            alive: self.exec().core.borrow().alive_tasks(),
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

/// The stable part of Tokio's runtime metrics.
#[derive(Clone, Debug)]
pub struct RuntimeMetrics {
    alive: usize,
}

impl RuntimeMetrics {
    /// Always 1: a simulation runs on one thread.
    pub fn num_workers(&self) -> usize {
        1
    }
    pub fn num_alive_tasks(&self) -> usize {
        self.alive
    }
    pub fn global_queue_depth(&self) -> usize {
        0
    }
}
