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

pub(crate) mod gate;

use self::gate::Gate;
use crate::simulation::core::executor::{self, current, with_current, Driver};
use crate::simulation::core::hooks::{self, Bag};
use crate::simulation::core::node::NodeId;
use crate::simulation::core::report::Failure;
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
    waiter: Rc<Waiter>,
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
        self.to_exec.wait();
        self.bag().give_to_thread();
    }

    /// Thread's side: gives the baton back and waits for the next turn.
    /// Never returns if the thread's node died meanwhile.
    fn hand_back(&self) {
        self.bag().take_from_thread();
        self.to_exec.open();
        self.to_thread.wait();
        if self.dying.load(Ordering::Acquire) {
            gate::exit_thread_now();
        }
        self.bag().give_to_thread();
        self.state.set(State::Running);
    }

    /// Ends the thread where it stands (it holds no baton: it waits at its
    /// gate, or has not started), and joins it for real.
    fn kill(&self) {
        self.waiter.dead.set(true);
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

/// The threads of one run: the futex wait queues, every thread started,
/// and the bag the baton carries.
pub(crate) struct Threads {
    queues: BTreeMap<usize, VecDeque<Queued>>,
    all: Vec<Arc<Ctl>>,
    bag: Box<UnsafeCell<Bag>>,
}

impl Driver for Threads {
    fn create(_core: &crate::simulation::core::executor::Core) -> Self {
        Threads {
            queues: BTreeMap::new(),
            all: Vec::new(),
            bag: Box::new(UnsafeCell::new(Bag::new())),
        }
    }
}

impl Drop for Threads {
    /// The run is over: every thread still blocked ends without running
    /// anything more, and every OS thread is joined.
    fn drop(&mut self) {
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
        let ctl = Arc::new(Ctl {
            id: threads.all.len() as u64 + 1,
            node,
            to_thread: Gate::new(),
            to_exec: Gate::new(),
            dying: AtomicBool::new(false),
            exited: AtomicU32::new(0),
            pthread: Cell::new(0),
            real_join,
            reaped: Cell::new(false),
            detached: Cell::new(false),
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
    ctl.detached.set(detached);
    let exec = current().expect("prepare found an executor");
    exec.core_mut().driver::<Threads>().all.push(ctl.clone());
    let name: Arc<str> = Arc::from(format!("thread {}", ctl.id));
    let task = ThreadTask {
        ctl: ctl.clone(),
        timer: None,
    };
    drop(exec.spawn_thread_task(task, Some(name), std::panic::Location::caller(), ctl.node));
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
    // SAFETY: by the contract, `arg` is a leaked `Box<Start>`.
    let start = unsafe { Box::from_raw(arg.cast::<Start>()) };
    let Start { ctl, routine, arg } = *start;
    SELF.with(|s| s.set(Arc::as_ptr(&ctl)));
    ctl.to_thread.wait();
    if ctl.dying.load(Ordering::Acquire) {
        gate::exit_thread_now();
    }
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

impl Drop for ExitMark {
    fn drop(&mut self) {
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
                    return Poll::Pending;
                }
            }
        }
        self.timer = None;
        *ctl.waiter.waker.borrow_mut() = None;
        let exec = executor::expect_current();
        exec.with_task(ctl.node, None, || ctl.resume());
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
        ctl.state.set(State::Waiting {
            timeout: timeout.map(|d| d.as_nanos().min(u64::MAX as u128) as u64),
            yielded: false,
        });
        ctl.hand_back();
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

/// How long the executor's thread, blocked on a futex word that nothing in
/// the simulation can wake, watches it for a thread outside (real time).
const OUTSIDE_PATIENCE: Duration = Duration::from_secs(5);
const OUTSIDE_STEP: Duration = Duration::from_millis(20);

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
    let now = unsafe { (*addr.cast::<AtomicU32>()).load(Ordering::SeqCst) };
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
fn find(pthread: libc::pthread_t) -> Option<Arc<Ctl>> {
    with_threads(|t| t.all.iter().find(|c| c.pthread.get() == pthread).cloned()).flatten()
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
        // SAFETY: the word is `ctl`'s, alive for the call.
        unsafe { futex_wait(word, 0, u32::MAX, None) };
    }
    // The caller joins it for real (and gets its value).
    ctl.reaped.set(true);
    true
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
