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
pub(crate) mod gate;
mod pool;
mod report;

use self::pool::Worker;
pub(crate) use self::pool::{run_blocking, Job};
use self::report::{start_site, started_by, ORPHAN_WORDS};

use self::gate::Gate;
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
    node: NodeId,
    to_thread: Gate,
    to_exec: Gate,
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
    /// Its task's id.
    task: Cell<u64>,
    /// The name it gave itself (`pthread_setname_np`: std's `Builder::name`).
    name: RefCell<Option<String>>,
    /// Return addresses of the stack that started it, innermost first
    /// (resolved only for a report).
    started_by: Vec<usize>,
    /// What it is blocked on, for the deadlock report.
    blocked: Cell<Blocked>,
    /// What the watchdog names if it never hands the baton back.
    watch: std::cell::OnceCell<RunningThread>,
    // Below: read and written only by the baton's holder.
    state: Cell<State>,
    waiter: Rc<Waiter>,
    bag: *const UnsafeCell<Bag>,
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
    /// gate, or has not started), and joins it for real.
    fn kill(&self) {
        self.waiter.dead.set(true);
        // Its task's waker: the killed thread's stack keeps the waiter.
        self.waiter.waker.borrow_mut().take();
        if self.state.get() != State::Exited {
            self.dying.store(true, Ordering::Release);
            self.to_thread.open();
        }
        self.reap();
    }

    /// Joins the OS thread for real, once.
    fn reap(&self) {
        if !self.reaped.replace(true) {
            // SAFETY: the real thread was created joinable by the C layer
            // and is joined only here, once.
            unsafe { (self.real_join)(self.pthread.get()) };
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

/// The threads of one run: the futex wait queues, every thread started,
/// and the bag the baton carries.
pub(crate) struct Threads {
    queues: BTreeMap<usize, VecDeque<Queued>>,
    /// Every thread not yet joined for real, oldest first.
    all: Vec<Arc<Ctl>>,
    /// Threads started in the run (the next one's number is this + 1).
    started: u64,
    bag: Box<UnsafeCell<Bag>>,
    /// `spawn_blocking`'s idle workers: node, its incarnation, the worker.
    idle: Vec<(NodeId, u32, Arc<Worker>)>,
    /// How much longer (real time) a stuck run watches its futex words for
    /// a thread outside it (`Driver::outside`).
    patience: Duration,
    /// A futex word this run woke that a thread of an earlier run was
    /// blocked on when that run ended ([`ORPHAN_WORDS`]).
    woke_orphan: Option<usize>,
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
        self.patience = self.patience.saturating_sub(OUTSIDE_STEP);
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
            idle: Vec::new(),
            patience: OUTSIDE_PATIENCE,
            woke_orphan: None,
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
    with_current(|exec| {
        exec.try_core_mut()
            .map(|mut core| f(core.driver::<Threads>()))
    })
    .flatten()
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
    with_current(|exec| {
        let node = exec.current_node();
        let mut core = exec.core_mut();
        let threads = core.driver::<Threads>();
        threads.all.retain(|c| !c.reaped.get());
        threads.started += 1;
        let ctl = Arc::new(Ctl {
            id: threads.started,
            node,
            to_thread: Gate::new(),
            to_exec: Gate::new(),
            dying: AtomicBool::new(false),
            exited: AtomicU32::new(0),
            pthread: Cell::new(0),
            real_join,
            reaped: Cell::new(false),
            detached: Cell::new(false),
            task: Cell::new(0),
            name: RefCell::new(None),
            started_by: started_by(),
            blocked: Cell::new(Blocked::Nothing),
            watch: std::cell::OnceCell::new(),
            state: Cell::new(State::Start),
            waiter: Waiter::new(),
            bag: &*threads.bag,
        });
        Box::new(Start { ctl, routine, arg })
    })
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
    let exec = current().expect("prepare found an executor");
    exec.core_mut().driver::<Threads>().all.push(ctl.clone());
    let name: Arc<str> = Arc::from(format!("thread {}", ctl.id));
    let task = ThreadTask {
        ctl: ctl.clone(),
        timer: None,
    };
    let handle = exec.spawn_thread_task(task, Some(name), std::panic::Location::caller(), ctl.node);
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
        // Code on a thread is on no worker (`runtime::worker_index`).
        let was_blocking = exec.compat.set_in_blocking(true);
        exec.watch_thread(ctl.watch.get().map_or(std::ptr::null(), |w| w as *const _));
        exec.with_task(ctl.node, None, || ctl.resume());
        exec.watch_thread(std::ptr::null());
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
                        Box::pin(crate::simulation::time::sleep(Duration::from_nanos(ns)));
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

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    Woken,
    TimedOut,
}

/// Blocks the calling thread of the simulation (a simulated thread, or the
/// executor's thread in a task's code) until `waiter` is woken or `timeout`
/// passes. The waiter must be registered where a wake finds it.
///
/// `word` is the futex word and the value it was waited at: if nothing in
/// the simulation can wake the executor's thread, a thread outside it may
/// (a lazily initialised static that another seed's thread is
/// initialising): the wait then watches the word for real, for up to
/// [`OUTSIDE_PATIENCE`], before the run is declared deadlocked.
fn block(
    waiter: &Rc<Waiter>,
    timeout: Option<Duration>,
    word: Option<(*const u32, u32)>,
) -> Result<Woke, Failure> {
    if let Some(ctl) = this_thread() {
        if ctl.blocked.get() == Blocked::Nothing {
            ctl.blocked.set(match word {
                Some((addr, _)) => Blocked::Futex(addr as usize),
                None => Blocked::Sleep,
            });
        }
        ctl.state.set(State::Waiting {
            timeout: timeout.map(|d| d.as_nanos().min(u64::MAX as u128) as u64),
            yielded: false,
        });
        ctl.hand_back();
        ctl.blocked.set(Blocked::Nothing);
        return Ok(if waiter.woken.get() {
            Woke::Woken
        } else {
            Woke::TimedOut
        });
    }
    let exec = executor::expect_current();
    let mut timer = timeout.map(|d| Box::pin(crate::simulation::time::sleep(d)));
    let mut fired = false;
    let mut patience = OUTSIDE_PATIENCE;
    let mut stuck = || {
        let Some((addr, expected)) = word else {
            return false;
        };
        // SAFETY: the futex word stays valid while its waiter waits (the
        // futex contract).
        let atomic = unsafe { &*addr.cast::<AtomicU32>() };
        if atomic.load(Ordering::SeqCst) != expected {
            waiter.woken.set(true);
            return true;
        }
        if patience.is_zero() {
            return false;
        }
        gate::wait_outside(atomic, expected, OUTSIDE_STEP);
        patience = patience.saturating_sub(OUTSIDE_STEP);
        true
    };
    exec.block_executor(&mut stuck, &mut || {
        if waiter.woken.get() {
            return true;
        }
        if let Some(t) = timer.as_mut() {
            fired = t
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_ready();
        }
        fired
    })?;
    Ok(if waiter.woken.get() {
        Woke::Woken
    } else {
        Woke::TimedOut
    })
}

/// How long a run in which nothing can move watches the futex words its
/// threads wait on for a thread outside it (real time), before it is
/// declared deadlocked.
const OUTSIDE_PATIENCE: Duration = Duration::from_secs(2);
const OUTSIDE_STEP: Duration = Duration::from_millis(20);
/// How long the executor's thread, blocking in a task's code, first waits
/// for real for a word that a thread outside the run may release.
const OUTSIDE_FIRST: Duration = Duration::from_micros(300);

/// The waiter of the calling thread of the simulation.
fn own_waiter() -> Rc<Waiter> {
    match this_thread() {
        Some(ctl) => ctl.waiter.clone(),
        None => Waiter::new(),
    }
}

/// `FUTEX_WAIT(_BITSET)` inside a simulation: if `*addr == expected`,
/// blocks until a wake whose bitset meets `bitset`, or `timeout`.
/// `Err(EAGAIN)` when the word differs, `Err(ETIMEDOUT)` on timeout;
/// `None` when the calling thread is not in a simulation's executor.
///
/// # Safety
///
/// `addr` is valid for reading a 32-bit word (the futex contract).
pub(crate) unsafe fn futex_wait(
    addr: *const u32,
    expected: u32,
    bitset: u32,
    timeout: Option<Duration>,
) -> Option<Result<(), i32>> {
    // SAFETY: the caller's contract; a futex word is read atomically.
    let word = unsafe { &*addr.cast::<AtomicU32>() };
    let mut now = word.load(Ordering::SeqCst);
    if now == expected && this_thread().is_none() && timeout != Some(Duration::ZERO) {
        // The executor's thread blocks in a task's code. The word may be a
        // lock in a static that a thread outside the run holds for a
        // moment (another seed's run registering with a global registry):
        // wait for it for real, briefly, before the run decides anything.
        // Held by a thread of the run, it cannot change meanwhile (that
        // thread waits for the baton), so the run's decisions are the same
        // either way.
        with_current(|_| ())?;
        gate::wait_outside(word, expected, OUTSIDE_FIRST);
        now = word.load(Ordering::SeqCst);
        if now != expected {
            // A wake the caller rechecks, as after any futex wait.
            return Some(Ok(()));
        }
    }
    let waiter = own_waiter();
    let registered = with_threads(|t| {
        if now != expected {
            return false;
        }
        waiter.woken.set(false);
        t.queues
            .entry(addr as usize)
            .or_default()
            .push_back(Queued {
                bitset,
                expected,
                waiter: waiter.clone(),
            });
        true
    })?;
    if !registered {
        return Some(Err(libc::EAGAIN));
    }
    if timeout == Some(Duration::ZERO) {
        unqueue(addr as usize, &waiter);
        return Some(Err(libc::ETIMEDOUT));
    }
    match block(&waiter, timeout, Some((addr, expected))) {
        Ok(Woke::Woken) => Some(Ok(())),
        Ok(Woke::TimedOut) => {
            unqueue(addr as usize, &waiter);
            Some(Err(libc::ETIMEDOUT))
        }
        Err(f) => blocked_forever(f),
    }
}

/// Takes `waiter` out of `addr`'s queue (its wait timed out).
fn unqueue(addr: usize, waiter: &Rc<Waiter>) {
    with_threads(|t| {
        if let Some(q) = t.queues.get_mut(&addr) {
            q.retain(|e| !Rc::ptr_eq(&e.waiter, waiter));
            if q.is_empty() {
                t.queues.remove(&addr);
            }
        }
    });
}

/// `FUTEX_WAKE(_BITSET)`: wakes up to `n` waiters on `addr` whose bitset
/// meets `bitset`, oldest first; returns how many. `None` outside a
/// simulation's executor. The caller also wakes the kernel's waiters when
/// fewer than `n` were woken here: the word may be shared with a thread
/// outside the simulation.
pub(crate) fn futex_wake(addr: usize, n: u32, bitset: u32) -> Option<u32> {
    let woken: Vec<Rc<Waiter>> = with_threads(|t| {
        let mut woken = Vec::new();
        if let Some(q) = t.queues.get_mut(&addr) {
            let mut i = 0;
            while i < q.len() && (woken.len() as u32) < n {
                if q[i].waiter.dead.get() {
                    q.remove(i);
                } else if q[i].bitset & bitset != 0 {
                    let e = q.remove(i).expect("in range");
                    e.waiter.woken.set(true);
                    woken.push(e.waiter);
                } else {
                    i += 1;
                }
            }
            if q.is_empty() {
                t.queues.remove(&addr);
            }
        }
        woken
    })?;
    let count = woken.len() as u32;
    if count == 0 && ORPHAN_WORDS.with(|w| w.contains(&addr)) {
        with_threads(|t| t.woke_orphan = Some(addr));
    }
    for w in woken {
        let waker = w.waker.borrow_mut().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
    Some(count)
}

/// `nanosleep` and friends inside a simulation: the calling thread sleeps
/// `d` of virtual time (a simulated thread alone; the executor's thread
/// with every task). `false` outside a simulation's executor.
pub(crate) fn sleep(d: Duration) -> bool {
    if with_current(|_| ()).is_none() {
        return false;
    }
    let waiter = own_waiter();
    waiter.woken.set(false);
    if let Err(f) = block(&waiter, Some(d), None) {
        blocked_forever(f);
    }
    true
}

/// `sched_yield` inside a simulation: a simulated thread lets the seed pick
/// again; the executor's thread lets one simulated thread run (or the clock
/// move). `false` outside a simulation's executor.
pub(crate) fn yield_now() -> bool {
    if let Some(ctl) = this_thread() {
        ctl.state.set(State::Waiting {
            timeout: None,
            yielded: true,
        });
        ctl.hand_back();
        return true;
    }
    let Some(exec) = current() else {
        return false;
    };
    let mut once = false;
    let out = exec.block_executor(&mut || false, &mut || std::mem::replace(&mut once, true));
    if let Err(f) = out {
        blocked_forever(f);
    }
    true
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
    let Some(ctl) = find(pthread) else {
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
    let text = with_current(|exec| exec.render_failure(&f)).unwrap_or_else(|| f.message.clone());
    hooks::leave_thread();
    eprintln!("{text}");
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
