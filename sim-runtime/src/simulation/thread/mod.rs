//! Simulated OS threads: every thread started inside a simulation (std's,
//! rayon's, a C library's) is a real OS thread of its node that runs only
//! while it holds the simulation's baton.
//!
//! At any moment exactly one of {the executor's thread, one simulated
//! thread} runs. A simulated thread is a task of its node (`ThreadTask`):
//! when the seed picks that task, its poll hands the baton to the thread and
//! waits; the thread runs user code until it blocks (a futex wait, a sleep,
//! a join), yields or ends, and hands the baton back; the poll returns. So
//! threads are chosen through the same door as tasks (strategies, PCT,
//! tapes, shrinking), paused with their node, and dropped with it.
//!
//! What moves with the baton: the simulation's thread-locals (the entered
//! executor, the seeded stream, descriptor tables, the tape), by
//! [`hooks::Bag`]. What blocks: the futex word operations of
//! `syscall(SYS_futex)` (std's and parking_lot's locks, condition
//! variables, `Once`, `park`), kept here as wait queues per address
//! ([`Threads`]); sleeps, as timers; joins, as a futex wait on the thread's
//! exit word. The C entry points are in libc/thread.rs.
//!
//! When the executor's own thread blocks in a task's code (a std `Mutex` a
//! thread holds), it waits as a current-thread runtime's worker would:
//! threads run, tasks do not (core/executor/blocked.rs).
//!
//! Lifecycle: a thread whose node dies (or whose run ends) is woken once
//! more only to end at once (`gate::exit_thread_now`): none of its code,
//! destructors or thread-locals runs again, so nothing it would have
//! written reaches the disk. Its OS thread is joined for real, so the
//! process's thread count stays flat.

mod altstack;
pub(crate) mod dtors;
pub(crate) mod gate;
mod owner;
mod pool;
mod report;
mod seeded;
pub(crate) mod spin;
pub(crate) mod statics;
mod wait;

use self::owner::join_from_owner;
pub(crate) use self::owner::owner_wait;
pub(crate) use self::pool::{run_blocking, shutting_down, Job};
use self::report::{start_site, started_by, ORPHAN_WORDS};
pub(crate) use self::wait::{futex_wait, futex_wake, sleep, yield_now};
use self::wait::{OUTSIDE_PATIENCE, OUTSIDE_STEP};

use self::gate::Gate;
use crate::simulation::core::executor::reap::{self, Reaping};
use crate::simulation::core::executor::{self, current, with_current, Driver};
use crate::simulation::core::hooks::{self, Bag};
use crate::simulation::core::node::NodeId;
use crate::simulation::core::report::Failure;
use crate::simulation::core::watchdog::RunningThread;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// glibc's `pthread_join`, as the C layer found it: simulated threads are
/// joined for real with it (our own `pthread_join` would simulate the
/// join).
pub(crate) type RealJoin = unsafe fn(libc::pthread_t);

/// What a blocked simulated thread (or the executor's thread) waits for.
struct Waiter {
    /// A futex wake chose it.
    woken: Cell<bool>,
    /// Its thread's node died: a wake passes over it.
    dead: Cell<bool>,
    /// The thread's task, woken with it (none for the executor's thread).
    waker: RefCell<Option<Waker>>,
}

impl Waiter {
    fn new() -> Rc<Waiter> {
        Rc::new(Waiter {
            woken: Cell::new(false),
            dead: Cell::new(false),
            waker: RefCell::new(None),
        })
    }
}

/// A futex wait queue entry.
struct Queued {
    bitset: u32,
    /// The word's value the wait began at.
    expected: u32,
    waiter: Rc<Waiter>,
}

/// What a blocked thread waits for, as the deadlock report says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocked {
    Nothing,
    /// A futex word (a std `Mutex`, `Condvar`, `RwLock`, `Once`, `park`;
    /// parking_lot; crossbeam).
    Futex(usize),
    /// The end of simulated thread `id`.
    Join(u64),
    Sleep,
}

/// What the thread handed the baton back for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not started yet: its first turn runs its start routine.
    Start,
    Running,
    /// Blocked until woken or `timeout` (ns of virtual time from the
    /// hand-off) passes; a yield is a wait that is over at once.
    Waiting {
        timeout: Option<u64>,
        yielded: bool,
    },
    /// Its start routine returned and its thread-locals were destroyed.
    Exited,
}

/// One simulated thread, shared by its OS thread and its task.
pub(crate) struct Ctl {
    /// The thread's number in its run, from 1, in creation order.
    pub(crate) id: u64,
    /// Its node: its creator's, or the node it named itself after.
    node: Cell<NodeId>,
    to_thread: Gate,
    to_exec: Gate,
    /// The CPU its OS thread may run on: the executor's at its last turn
    /// (`gate::follow`); -1 before its first.
    cpu: Cell<i32>,
    /// The thread must end without running anything more.
    dying: AtomicBool,
    /// 1 once the thread has ended (a simulated futex word: joins wait on it).
    exited: AtomicU32,
    /// The real thread, for the real join.
    pthread: Cell<libc::pthread_t>,
    real_join: RealJoin,
    /// Joined for real already (by `pthread_join`, or when it died).
    reaped: Cell<bool>,
    /// Detached by the program: the run reaps it at its end.
    detached: Cell<bool>,
    /// The process it was started in.
    pid: libc::pid_t,
    /// Its task's id.
    task: Cell<u64>,
    /// The task its code runs as (a `spawn_blocking` job's), if any.
    as_task: Cell<Option<u64>>,
    /// The name it gave itself (`pthread_setname_np`: std's `Builder::name`).
    name: RefCell<Option<String>>,
    /// Return addresses of the stack that started it, innermost first
    /// (resolved only for a report).
    started_by: Vec<usize>,
    /// What it is blocked on, for the deadlock report.
    blocked: Cell<Blocked>,
    /// How deep in `LocalSet`s its own code is (the executor keeps one
    /// count; each thread has its own).
    local_depth: Cell<u32>,
    /// Its `Runtime::block_on` holds the runtime's one worker
    /// ([`runtime_block_on`]).
    on_worker: Cell<bool>,
    /// What the watchdog names if it never hands the baton back.
    watch: std::cell::OnceCell<RunningThread>,
    // Below: read and written only by the baton's holder.
    state: Cell<State>,
    waiter: Rc<Waiter>,
    bag: *const UnsafeCell<Bag>,
    /// Its thread-local destructors (dtors.rs), once it has started: freed
    /// by [`Ctl::kill`] if it is killed, else run and freed at its exit.
    dtors: Cell<*mut dtors::Dtors>,
}

// SAFETY: a `Ctl` is shared by exactly two OS threads, the executor's and
// its simulated thread, and they never run at the same time: every access
// to its non-atomic fields (and to the `Rc`s and the bag it reaches) is made
// by the baton's holder, and the baton changes hands only through `Gate`,
// whose release/acquire pair orders everything written before a hand-off
// before everything read after it. The atomic fields are read without the
// baton only by a dying thread (`dying`).
unsafe impl Send for Ctl {}
// SAFETY: as above.
unsafe impl Sync for Ctl {}

impl Ctl {
    /// The bag of the simulation's carried thread-locals.
    #[allow(clippy::mut_from_ref)]
    fn bag(&self) -> &mut Bag {
        // SAFETY: the bag lives in the run's `Threads`, boxed, for as long
        // as any of its threads can hold the baton (the run joins every
        // thread before it drops it), and only the baton's holder touches
        // it, never re-entrantly (a hand-off does not nest).
        unsafe { &mut *(*self.bag).get() }
    }

    /// Executor's side: runs the thread until it hands the baton back.
    fn resume(&self) {
        if !self.reaped.get() {
            gate::follow(&self.cpu, self.pthread.get());
        }
        self.bag().take_from_thread();
        self.to_thread.open();
        self.to_exec.wait_awake();
        self.bag().give_to_thread();
    }

    /// Thread's side: gives the baton back and waits for the next turn.
    /// Never returns if the thread's node died meanwhile.
    fn hand_back(&self) {
        self.bag().take_from_thread();
        self.to_exec.open();
        self.to_thread.wait();
        if self.dying.load(Ordering::Acquire) {
            drop_exit_mark();
            gate::exit_thread_now();
        }
        self.bag().give_to_thread();
        self.state.set(State::Running);
    }

    /// Ends the thread where it stands (it holds no baton: it waits at its
    /// gate, or has not started), and joins it for real. In a forked copy
    /// of the process (the deadlock report's experiment, which drops tasks)
    /// the OS thread does not exist: nothing is done there.
    fn kill(&self) {
        // SAFETY: getpid has no preconditions.
        if unsafe { libc::getpid() } != self.pid {
            return;
        }
        self.waiter.dead.set(true);
        // Its task's waker: the killed thread's stack keeps the waiter.
        self.waiter.waker.borrow_mut().take();
        let ended = self.state.get() == State::Exited;
        if !ended {
            self.dying.store(true, Ordering::Release);
            self.to_thread.open();
        }
        self.reap();
        if !ended {
            let list = self.dtors.replace(std::ptr::null_mut());
            if !list.is_null() && self.reaped.get() {
                // SAFETY: the thread started (it made the list), was ended
                // where it stood without running its destructors, and has
                // been joined: nothing of it runs again.
                unsafe { dtors::forget(list) };
            }
        }
    }

    /// Joins the OS thread for real, once. Unless the program detached it,
    /// its id is remembered as ended ([`join_ended`]): the program may
    /// still join it.
    fn reap(&self) {
        if !self.reaped.replace(true) {
            // SAFETY: the real thread was created joinable by the C layer
            // and is joined only here, once.
            unsafe { (self.real_join)(self.pthread.get()) };
            if !self.detached.get() {
                let id = self.pthread.get() as usize;
                ENDED.with(|s| {
                    if s.len() < ENDED_MAX {
                        s.insert(id);
                    }
                });
            }
        }
    }
}

thread_local! {
    /// The simulated thread this OS thread is (null on any other thread).
    static SELF: Cell<*const Ctl> = const { Cell::new(std::ptr::null()) };
    /// Hands the baton back for the last time when the thread's
    /// thread-locals are destroyed (see `trampoline` for the order).
    static EXIT: RefCell<Option<ExitMark>> = const { RefCell::new(None) };
}

/// The calling OS thread's simulated thread, if it is one and holds the
/// baton.
fn this_thread() -> Option<&'static Ctl> {
    let p = SELF.try_with(Cell::get).unwrap_or(std::ptr::null());
    // SAFETY: `SELF` is set by `trampoline` to its own `Arc`'s target,
    // which `EXIT` keeps alive until after `SELF` is cleared again.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Whether the calling OS thread is a simulated thread (holding the baton,
/// since it runs).
pub(crate) fn on_simulated_thread() -> bool {
    this_thread().is_some()
}

/// `Runtime::block_on` and `Handle::block_on` on a simulated thread: the
/// future is polled on this thread, which parks (a simulated futex wait)
/// until its waker unparks it. Its tasks, timers and sockets are the
/// simulation's, on the thread's node.
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// `Runtime::block_on` on a simulated thread. As in Tokio, the first
/// `block_on` of a current-thread runtime takes its one worker: its future
/// runs "on the worker" (`runtime::worker_index()` is `Some(0)`, and what it
/// spawns goes to the local queue) until it returns, and the runtime's tasks
/// run meanwhile even while its owner waits outside `block_on`
/// (owner.rs). A concurrent one, or one while the runtime's owner is in its
/// own `block_on`, does not.
pub(crate) fn runtime_block_on<F: Future>(exec: &executor::Exec, fut: F) -> F::Output {
    struct Release<'a>(&'a executor::Exec, &'a Ctl);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            self.0.compat.set_thread_on_worker(false);
            self.1.on_worker.set(false);
            self.0.compat.set_in_blocking(true);
            if self.0.compat.owner_driving() {
                self.0.hold_tasks(true);
            }
        }
    }
    let ctl = this_thread().expect("runtime_block_on runs on a simulated thread");
    let owner_holds_it = exec.in_block_on() && exec.compat.main_on_worker();
    let free = !(exec.compat.multi_thread() || exec.compat.thread_on_worker() || owner_holds_it);
    let _release = free.then(|| {
        exec.compat.set_thread_on_worker(true);
        ctl.on_worker.set(true);
        exec.compat.set_in_blocking(false);
        exec.hold_tasks(false);
        Release(exec, ctl)
    });
    block_on(fut)
}

/// The threads of one run: the futex wait queues, every thread started,
/// and the bag the baton carries.
pub(crate) struct Threads {
    queues: BTreeMap<usize, VecDeque<Queued>>,
    /// Every thread not yet joined for real, oldest first.
    all: Vec<Arc<Ctl>>,
    /// Threads started in the run (the next one's number is this + 1).
    started: u64,
    bag: Box<UnsafeCell<Bag>>,
    /// `spawn_blocking`'s pools (pool.rs).
    pool: pool::Pools,
    /// How much longer (real time) a stuck run watches its futex words for
    /// a thread outside it (`Driver::outside`).
    patience: Duration,
    /// A futex word this run woke that a thread of an earlier run was
    /// blocked on when that run ended ([`ORPHAN_WORDS`]).
    woke_orphan: Option<usize>,
    /// Whether other runs of the process move while this one waits on a
    /// process-wide word (statics.rs).
    others: statics::Others,
}

impl Driver for Threads {
    fn describe_wait(
        &mut self,
        _core: &crate::simulation::core::executor::Core,
        what: &'static str,
        id: u64,
    ) -> Option<String> {
        if what != "thread" {
            return None;
        }
        let ctl = self.all.iter().find(|c| c.id == id)?;
        let on = match ctl.blocked.get() {
            Blocked::Futex(addr) => format!(
                "a futex word at {addr:#x} (a std Mutex, Condvar, RwLock, Once or park; \
                 parking_lot; crossbeam)"
            ),
            Blocked::Join(other) => format!("the end of thread {other}"),
            Blocked::Sleep => "its sleep".into(),
            Blocked::Nothing => "nothing (it yielded)".into(),
        };
        let name = ctl
            .name
            .borrow()
            .as_ref()
            .map(|n| format!(" '{n}'"))
            .unwrap_or_default();
        let site = start_site(&ctl.started_by)
            .map(|s| format!(", started at {s}"))
            .unwrap_or_default();
        Some(format!(
            "an OS thread (thread {}{name}{site}) blocked on {on}",
            ctl.id
        ))
    }

    /// Nothing in the run can move: a futex word that changed although no
    /// thread of the run woke it was changed by a thread outside the run
    /// (a lock in a static that another seed's thread released): its
    /// waiters are woken (a futex may wake spuriously; each rechecks). If
    /// none changed, the words are watched for real, a little at a time,
    /// for [`OUTSIDE_PATIENCE`] in all.
    fn outside(&mut self, wake: &mut Vec<Waker>) -> bool {
        let mut changed = Vec::new();
        let mut any = None;
        for (&addr, q) in &self.queues {
            let Some(first) = q.iter().find(|e| !e.waiter.dead.get()) else {
                continue;
            };
            // SAFETY: a word a live waiter is blocked on stays valid while it
            // waits (the futex contract).
            let word = unsafe { &*(addr as *const AtomicU32) };
            if word.load(Ordering::SeqCst) != first.expected {
                changed.push(addr);
            } else if any.is_none() {
                any = Some((word, first.expected));
            }
        }
        if !changed.is_empty() {
            self.patience = OUTSIDE_PATIENCE;
            for addr in changed {
                for e in self.queues.remove(&addr).into_iter().flatten() {
                    if !e.waiter.dead.get() {
                        e.waiter.woken.set(true);
                        wake.extend(e.waiter.waker.borrow_mut().take());
                    }
                }
            }
            return true;
        }
        let Some((word, expected)) = any else {
            return false;
        };
        if self.patience.is_zero() {
            return false;
        }
        gate::wait_outside(word, expected, OUTSIDE_STEP);
        if !self.others.moved(word.as_ptr() as usize, OUTSIDE_STEP) {
            self.patience = self.patience.saturating_sub(OUTSIDE_STEP);
        }
        true
    }

    fn deadlock_note(&mut self) -> Option<String> {
        let addr = self.woke_orphan?;
        Some(format!(
            "note: this run woke a futex word ({addr:#x}) that a simulated thread of an earlier \
             run in this process was blocked on when that run ended. Such a thread never runs \
             again: a process-wide thread pool (rayon's global pool, a lazily started worker) \
             belongs to the run that started it. Build the pool inside the run \
             (rayon::ThreadPoolBuilder), or run this seed alone in a fresh process (SIM_SEED=..)."
        ))
    }

    fn create(_core: &crate::simulation::core::executor::Core) -> Self {
        Threads {
            queues: BTreeMap::new(),
            all: Vec::new(),
            started: 0,
            bag: Box::new(UnsafeCell::new(Bag::new())),
            pool: pool::Pools::default(),
            // A tape's replay (shrinking a failure) reruns draws that
            // already led where they lead: a run that went still then was
            // declared deadlocked after this wait, so waiting again on each
            // of a shrink's many runs would only cost time.
            patience: if crate::simulation::core::tape::replaying() {
                Duration::ZERO
            } else {
                OUTSIDE_PATIENCE
            },
            woke_orphan: None,
            others: statics::Others::new(),
        }
    }
}

impl Drop for Threads {
    /// The run is over: every thread still blocked ends without running
    /// anything more, and every OS thread is joined. The words they were
    /// blocked on are remembered ([`ORPHAN_WORDS`]).
    fn drop(&mut self) {
        let orphans: Vec<usize> = self
            .all
            .iter()
            .filter(|c| c.state.get() != State::Exited)
            .filter_map(|c| match c.blocked.get() {
                Blocked::Futex(addr) => Some(addr),
                _ => None,
            })
            .collect();
        if !orphans.is_empty() {
            ORPHAN_WORDS.with(|w| {
                if w.len() < 4096 {
                    w.extend(orphans);
                }
            });
        }
        for ctl in &self.all {
            ctl.kill();
        }
    }
}

/// Runs `f` with the run's threads (the executor entered on this thread);
/// `None` outside a simulation's executor, or while the executor's own code
/// holds its core (its internal locks then wait for real).
fn with_threads<R>(f: impl FnOnce(&mut Threads) -> R) -> Option<R> {
    if let Some(ptr) = Some(executor::current_ptr()).filter(|p| !p.is_null()) {
        // SAFETY: as `with_current`'s: the entered executor outlives this
        // call, which runs no user code.
        let exec = unsafe { &*ptr };
        return exec
            .try_core_mut()
            .map(|mut core| f(core.driver::<Threads>()));
    }
    // Outside any `block_on`, on the thread that built a runtime: its
    // threads all wait for the baton, so this thread has the runtime to
    // itself (thread/owner.rs).
    let exec = crate::simulation::runtime::owned_runtime()?;
    let mut core = exec.try_core_mut()?;
    Some(f(core.driver::<Threads>()))
}

/// What starts a simulated thread: the start routine and its argument, and
/// the thread's control block.
pub(crate) struct Start {
    ctl: Arc<Ctl>,
    pub(crate) routine: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    pub(crate) arg: *mut libc::c_void,
}

/// Prepares a simulated thread of the current node: the C layer then
/// creates the OS thread with [`trampoline`] and the returned `Start`, and
/// calls [`started`]. `None` outside a simulation's executor.
pub(crate) fn prepare(
    routine: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
    real_join: RealJoin,
) -> Option<Box<Start>> {
    let exec = exec_for_new_thread()?;
    Some({
        let exec = &*exec;
        let node = exec.current_node();
        let mut core = exec.core_mut();
        let threads = core.driver::<Threads>();
        // Reaped threads go, but for those a node's death stopped: a join
        // of one must still find that it never ends (`join`).
        threads.all.retain(|c| {
            !c.reaped.get() || (c.waiter.dead.get() && c.exited.load(Ordering::Acquire) == 0)
        });
        threads.started += 1;
        let ctl = Arc::new(Ctl {
            id: threads.started,
            node: Cell::new(node),
            to_thread: Gate::new(),
            to_exec: Gate::new(),
            // A new OS thread inherits its creator's CPUs: a simulated
            // creator's is known, the executor's thread is never pinned.
            cpu: Cell::new(this_thread().map_or(-1, |c| c.cpu.get())),
            dying: AtomicBool::new(false),
            exited: AtomicU32::new(0),
            pthread: Cell::new(0),
            real_join,
            reaped: Cell::new(false),
            detached: Cell::new(false),
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
            task: Cell::new(0),
            as_task: Cell::new(None),
            name: RefCell::new(None),
            started_by: started_by(),
            blocked: Cell::new(Blocked::Nothing),
            local_depth: Cell::new(0),
            on_worker: Cell::new(false),
            watch: std::cell::OnceCell::new(),
            state: Cell::new(State::Start),
            waiter: Waiter::new(),
            bag: &*threads.bag,
            dtors: Cell::new(std::ptr::null_mut()),
        });
        Box::new(Start { ctl, routine, arg })
    })
}

/// The simulation a thread started now belongs to: the one running on
/// this thread, or else the newest runtime this thread built (a test that
/// starts a thread before its `block_on`: the thread runs in it).
pub(super) fn exec_for_new_thread() -> Option<Rc<executor::Exec>> {
    current().or_else(crate::simulation::runtime::owned_runtime)
}

/// Whether a thread started now, outside any simulation, joins one: this
/// thread built a runtime that is still up.
/// Whether a futex call made now, outside any simulation, is a wait of the
/// thread that built a runtime that is still up (thread/owner.rs): only
/// that thread's, never a thread's that merely entered a runtime (the
/// runner's, whose own locks wait for real while it starts driving).
pub(crate) fn owner_waits() -> bool {
    !hooks::active() && current().is_none() && crate::simulation::runtime::owned_runtime().is_some()
}

pub(crate) fn owner_starts_threads() -> bool {
    !hooks::active() && exec_for_new_thread().is_some()
}

/// The OS thread of a prepared `Start` exists as `pthread`: it becomes a
/// task of its node, runnable now. `detached`: created detached (the run
/// joins it for real when it ends).
pub(crate) fn started(ctl: &Arc<Ctl>, pthread: libc::pthread_t, detached: bool) {
    ctl.pthread.set(pthread);
    let _ = ctl.watch.set(RunningThread {
        id: ctl.id,
        pthread,
        started_by: ctl.started_by.clone(),
    });
    ctl.detached.set(detached);
    let exec = exec_for_new_thread().expect("prepare found an executor");
    exec.core_mut().driver::<Threads>().all.push(ctl.clone());
    let name: Arc<str> = Arc::from(format!("thread {}", ctl.id));
    let task = ThreadTask {
        ctl: ctl.clone(),
        timer: None,
    };
    let handle = exec.spawn_thread_task(
        task,
        Some(name),
        std::panic::Location::caller(),
        ctl.node.get(),
    );
    ctl.task.set(handle.id().0);
}

impl Start {
    pub(crate) fn ctl(&self) -> &Arc<Ctl> {
        &self.ctl
    }
}

/// The OS thread's start routine: waits for its first turn, then runs the
/// program's routine holding the baton.
///
/// # Safety
///
/// `arg` is a `Box<Start>` from [`prepare`], passed once.
pub(crate) unsafe extern "C" fn trampoline(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: by the contract, `arg` is a leaked `Box<Start>`. The box goes
    // at once (a thread killed where it stands never leaves this frame).
    let Start { ctl, routine, arg } = *unsafe { Box::from_raw(arg.cast::<Start>()) };
    SELF.with(|s| s.set(Arc::as_ptr(&ctl)));
    ctl.to_thread.wait();
    if ctl.dying.load(Ordering::Acquire) {
        // Its killer holds the control block too (until this thread has
        // exited), so this is never the last reference.
        drop(ctl);
        gate::exit_thread_now();
    }
    // A signal stack of the pool's, so std maps none (altstack.rs).
    altstack::install();
    // Its destructors on a list of ours, before its first thread-local.
    ctl.dtors.set(dtors::install());
    // Thread-locals are destroyed in the reverse order of their first use.
    // The carried ones are used first (here), then the exit mark, then the
    // program's: so the program's are destroyed first, holding the baton;
    // then the mark gives the baton back for the last time, taking the
    // carried values with it; then the emptied carried cells go.
    ctl.bag().give_to_thread();
    EXIT.with(|e| *e.borrow_mut() = Some(ExitMark(ctl.clone())));
    ctl.state.set(State::Running);
    drop(ctl);
    routine(arg)
}

/// See [`EXIT`].
struct ExitMark(Arc<Ctl>);

/// A thread dying where it stands gives up its exit mark's reference to
/// its control block without running the mark (nothing of the thread runs
/// again): else every killed thread would keep its block, with its
/// creator's stack, for the rest of the process. Its killer holds the
/// block too until this thread has exited, so this is never the last
/// reference.
fn drop_exit_mark() {
    if let Ok(Some(mark)) = EXIT.try_with(|e| e.borrow_mut().take()) {
        let mark = std::mem::ManuallyDrop::new(mark);
        // SAFETY: the mark's one field is read out once, and the mark is
        // never dropped.
        drop(unsafe { std::ptr::read(&mark.0) });
    }
}

impl Drop for ExitMark {
    fn drop(&mut self) {
        altstack::release();
        let ctl = &self.0;
        if ctl.state.get() != State::Running {
            // Never ran (it died before its first turn, and exits only now
            // through a path that skipped `exit_thread_now`): nothing to give.
            return;
        }
        ctl.state.set(State::Exited);
        ctl.exited.store(1, Ordering::Release);
        futex_wake(ctl.exited.as_ptr() as usize, u32::MAX, u32::MAX);
        SELF.with(|s| s.set(std::ptr::null()));
        ctl.bag().take_from_thread();
        // What the thread still does (glibc's key destructors, its real
        // exit) runs outside the simulation.
        hooks::leave_thread();
        ctl.to_exec.open();
    }
}

/// A simulated thread as its node's task.
struct ThreadTask {
    ctl: Arc<Ctl>,
    /// The timeout of the thread's wait, as a timer of the node.
    timer: Option<Pin<Box<crate::simulation::time::Sleep>>>,
}

impl Future for ThreadTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let ctl = self.ctl.clone();
        match ctl.state.get() {
            State::Exited => return Poll::Ready(()),
            State::Start | State::Running => {}
            State::Waiting { yielded: true, .. } => {}
            State::Waiting { yielded: false, .. } => {
                let timed_out = !ctl.waiter.woken.get()
                    && self
                        .timer
                        .as_mut()
                        .is_some_and(|t| t.as_mut().poll(cx).is_ready());
                if !ctl.waiter.woken.get() && !timed_out {
                    *ctl.waiter.waker.borrow_mut() = Some(cx.waker().clone());
                    note_blocked(&ctl);
                    return Poll::Pending;
                }
            }
        }
        self.timer = None;
        *ctl.waiter.waker.borrow_mut() = None;
        let exec = executor::expect_current();
        // Code on a thread is on no worker (`runtime::worker_index`), but
        // for a current-thread `Runtime::block_on` holding the worker.
        // Inside the `LocalSet`s it entered itself, not its creator's.
        let was_blocking = exec.compat.set_in_blocking(!ctl.on_worker.get());
        let local_depth = exec.compat.local_depth();
        exec.compat.set_local_depth(ctl.local_depth.get());
        exec.watch_thread(ctl.watch.get().map_or(std::ptr::null(), |w| w as *const _));
        exec.with_task(ctl.node.get(), ctl.as_task.get(), || ctl.resume());
        exec.watch_thread(std::ptr::null());
        ctl.local_depth.set(exec.compat.local_depth());
        exec.compat.set_local_depth(local_depth);
        exec.compat.set_in_blocking(was_blocking);
        match ctl.state.get() {
            State::Exited => {
                if ctl.detached.get() {
                    ctl.reap();
                }
                Poll::Ready(())
            }
            State::Waiting { yielded: true, .. } => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            State::Waiting { timeout, .. } => {
                if let Some(ns) = timeout {
                    let mut timer =
                        Box::pin(crate::simulation::time::os_sleep(Duration::from_nanos(ns)));
                    if timer.as_mut().poll(cx).is_ready() {
                        cx.waker().wake_by_ref();
                    }
                    self.timer = Some(timer);
                }
                *ctl.waiter.waker.borrow_mut() = Some(cx.waker().clone());
                note_blocked(&ctl);
                Poll::Pending
            }
            State::Start | State::Running => {
                unreachable!("a thread hands back only to wait or end")
            }
        }
    }
}

impl Drop for ThreadTask {
    /// The task is dropped before its thread ended: its node died, or the
    /// run is over. The thread ends where it stands.
    fn drop(&mut self) {
        if self.ctl.state.get() != State::Exited {
            self.ctl.kill();
        }
    }
}

/// Notes, for the deadlock report, that the thread's task waits for what
/// its thread is blocked on (the driver describes it).
fn note_blocked(ctl: &Ctl) {
    with_current(|e| e.note_wait(executor::Wait::Driver("thread", ctl.id)));
}

/// Ids of simulated threads a run ended and joined for real that the
/// program has not joined: its own join of one returns at once
/// (`pthread_join`), instead of reaching glibc with an id already joined.
/// Forgotten when glibc gives the id to a new thread. Bounded.
static ENDED: statics::WordSet = spin::SpinCell::new(std::collections::BTreeSet::new());
const ENDED_MAX: usize = 1 << 16;

/// Whether `pthread` is a thread a run ended and the program never joined;
/// it is forgotten (a thread is joined once).
pub(crate) fn join_ended(pthread: libc::pthread_t) -> bool {
    ENDED.with(|s| s.remove(&(pthread as usize)))
}

/// glibc gave `pthread` to a new thread: an earlier thread of that id is
/// no longer the one a join names.
pub(crate) fn forget_ended(pthread: libc::pthread_t) {
    ENDED.with(|s| s.remove(&(pthread as usize)));
}

/// A join of a thread its node's death stopped: it never ends, so the join
/// waits for good (a destructor of that node's stops there: reap.rs; any
/// other caller is blocked until the run is found deadlocked).
fn never_ends(gone: &Ctl) -> ! {
    let word = AtomicU32::new(0);
    loop {
        if let Some(me) = this_thread() {
            me.blocked.set(Blocked::Join(gone.id));
        }
        // SAFETY: a live local word, nobody else's.
        unsafe { futex_wait(word.as_ptr().cast_const(), 0, u32::MAX, None) };
    }
}

/// The thread whose OS thread was `pthread`, stopped where it stood by its
/// node's death before it ended (its OS thread already joined for real),
/// newest first.
fn find_killed(pthread: libc::pthread_t) -> Option<Arc<Ctl>> {
    with_threads(|t| {
        t.all
            .iter()
            .rev()
            .find(|c| {
                c.pthread.get() == pthread
                    && c.waiter.dead.get()
                    && c.exited.load(Ordering::Acquire) == 0
            })
            .cloned()
    })
    .flatten()
}

/// The simulated thread whose OS thread is `pthread`, in the current run.
/// Joined threads are passed over: glibc reuses a joined thread's stack,
/// and with it its `pthread_t`, for the next thread it starts.
fn find(pthread: libc::pthread_t) -> Option<Arc<Ctl>> {
    with_threads(|t| {
        t.all
            .iter()
            .rev()
            .find(|c| c.pthread.get() == pthread && !c.reaped.get())
            .cloned()
    })
    .flatten()
}

/// `pthread_join` of a simulated thread: waits (simulated) for it to end,
/// then joins it for real. `false` if `pthread` is not a simulated thread
/// of this run (the real join follows).
pub(crate) fn join(pthread: libc::pthread_t) -> bool {
    if current().is_none() {
        return join_from_owner(pthread);
    }
    let Some(ctl) = find(pthread) else {
        if let Some(gone) = find_killed(pthread) {
            never_ends(&gone);
        }
        return false;
    };
    let word = ctl.exited.as_ptr().cast_const();
    while ctl.exited.load(Ordering::Acquire) == 0 {
        if let Some(me) = this_thread() {
            me.blocked.set(Blocked::Join(ctl.id));
        }
        // SAFETY: the word is `ctl`'s, alive for the call.
        unsafe { futex_wait(word, 0, u32::MAX, None) };
    }
    // The caller joins it for real (and gets its value).
    ctl.reaped.set(true);
    true
}

/// A simulated thread named itself (`pthread_setname_np` on itself, as
/// std's `Builder::name` does): its task takes the name, for reports.
pub(crate) fn set_name(pthread: libc::pthread_t, name: &str) {
    let Some(ctl) = find(pthread) else {
        return;
    };
    *ctl.name.borrow_mut() = Some(name.to_string());
    let task_name: Arc<str> = Arc::from(format!("thread {} '{name}'", ctl.id));
    with_current(|e| e.core_mut().set_task_name(ctl.task.get(), task_name));
    // A thread of the main node that names itself after a node (a test
    // harness's thread per cluster node, `Builder::name("n1")`) becomes a
    // thread of that node: its runtime's tasks, sockets and disk are the
    // node's, and the node's faults reach it.
    let on_itself = this_thread().is_some_and(|me| std::ptr::eq(me, &*ctl));
    if on_itself && ctl.node.get() == NodeId::MAIN {
        with_current(|e| {
            let node = node_named(&e.core(), name)?;
            e.core_mut().set_task_node(ctl.task.get(), node);
            ctl.node.set(node);
            e.move_current_node(node);
            Some(())
        });
    }
}

/// The node called `name`: std gives `pthread_setname_np` at most 15
/// bytes, so a longer node name matches its first 15 when no other does.
fn node_named(core: &executor::Core, name: &str) -> Option<NodeId> {
    if let Some(node) = core.nodes().named(name) {
        return Some(node);
    }
    if name.len() < 15 {
        return None;
    }
    let mut found = core
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.name.starts_with(name));
    let first = found.next()?;
    found.next().is_none().then_some(NodeId(first.0 as u32))
}

/// Whether `pthread` is a simulated thread of this run; if so, it is
/// marked detached (the run joins it for real when it ends).
pub(crate) fn detach(pthread: libc::pthread_t) -> bool {
    match find(pthread) {
        Some(ctl) => {
            ctl.detached.set(true);
            if ctl.state.get() == State::Exited {
                ctl.reap();
            }
            true
        }
        None => false,
    }
}

/// The executor's thread is blocked in user code and nothing can release
/// it: the run cannot go on, and the blocked call cannot return an error
/// its caller would understand (std's locks retry). The failure is printed
/// and the process ends, as the watchdog ends a hung one.
fn blocked_forever(f: Failure) -> ! {
    if reap::reaping().is_some() {
        // A destructor run at the end of the run (or of its node) waits
        // for what can never happen: it is left where it stands.
        drop(f);
        reap::abandon();
    }
    let text = with_current(|exec| exec.render_failure(&f)).unwrap_or_else(|| f.message.clone());
    hooks::leave_thread();
    // Straight to stderr: libtest's capture would be thrown away by the
    // exit.
    let line = format!("{text}\n");
    // SAFETY: writes from a valid buffer of its own length to fd 2.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    std::process::exit(101);
}

/// How many waiters of this run wait on `addr`'s futex queue now (threads
/// of dead nodes aside); `None` outside a simulation's executor. For
/// libc/pthread.rs: a reader--writer lock that prefers writers lets no new
/// reader in while a writer waits.
pub(crate) fn futex_waiters(addr: usize) -> Option<usize> {
    with_threads(|t| {
        t.queues
            .get(&addr)
            .map_or(0, |q| q.iter().filter(|e| !e.waiter.dead.get()).count())
    })
}
