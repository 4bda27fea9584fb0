//! The real-time watchdog: the one thing in the simulation that looks at
//! the wall clock, and only to catch a task that blocks its OS thread.
//!
//! A simulated task that makes a blocking call (`std::thread::sleep`, a
//! blocking channel receive, a `std::sync` lock held elsewhere, real I/O)
//! stops the whole simulation: no other task can run and virtual time cannot
//! move, so the run would hang forever. One process-wide watchdog thread
//! checks every running simulation once a second; if one has not finished a
//! poll for `SIM_HANG_TIMEOUT` (default 10 s) of real time, it reports the
//! task and ends the process with a failure. Such a run is inconclusive,
//! never a pass.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;

/// What the watchdog can see of one simulation, written with relaxed stores
/// by the simulation thread at every poll.
pub(crate) struct Progress {
    seed: u64,
    polls: AtomicU64,
    task: AtomicU64,
    node: AtomicU32,
    running: AtomicBool,
    /// The simulated thread holding the baton, if one does (else null).
    thread: AtomicPtr<RunningThread>,
}

/// A simulated thread as a hang report names it (thread/ owns it, for
/// the thread's whole life).
pub(crate) struct RunningThread {
    pub id: u64,
    /// The real thread, to ask for its stack.
    pub pthread: libc::pthread_t,
    /// Return addresses of the stack that started it, innermost first.
    pub started_by: Vec<usize>,
}

impl Progress {
    #[inline]
    pub(crate) fn polling(&self, step: u64, task: u64, node: u32) {
        if step % MOVE_EVERY == 0 {
            MOVES.fetch_add(1, Ordering::Relaxed);
        }
        self.polls.store(step, Ordering::Relaxed);
        self.task.store(task, Ordering::Relaxed);
        self.node.store(node, Ordering::Relaxed);
    }

    pub(crate) fn set_running(&self, running: bool) {
        self.running.store(running, Ordering::Relaxed);
    }

    /// The simulated thread that holds the baton from now on (null: none).
    /// The pointee outlives its time holding the baton.
    pub(crate) fn set_thread(&self, thread: *const RunningThread) {
        self.thread.store(thread.cast_mut(), Ordering::Release);
    }
}

static REGISTRY: Mutex<Vec<Weak<Progress>>> = Mutex::new(Vec::new());

/// Counts, for every simulation in the process together, one per
/// [`MOVE_EVERY`] steps each takes: a run that waits on a word another run
/// may hold sees whether any other run still moves ([`moves`]). Counted
/// every so many steps, so that runs on other threads seldom touch it.
static MOVES: AtomicU64 = AtomicU64::new(0);
const MOVE_EVERY: u64 = 64;

/// See [`MOVES`]: a number that changes while some simulation in the
/// process takes steps.
pub(crate) fn moves() -> u64 {
    MOVES.load(Ordering::Relaxed)
}
static START: Once = Once::new();

fn timeout() -> Option<Duration> {
    match std::env::var("SIM_HANG_TIMEOUT").ok().as_deref().map(str::trim) {
        None | Some("") => Some(Duration::from_secs(10)),
        Some("none") => None,
        Some(v) => Some(super::config::parse_duration(v).unwrap_or_else(|| {
            panic!("sim: SIM_HANG_TIMEOUT={v:?} is malformed; expected a duration like 10s, 2m, or `none`")
        })),
    }
}

/// Registers a simulation with the watchdog (starting it on first use).
/// Must be called while the interposers are off on this thread, since it
/// may start the watchdog's OS thread.
pub(crate) fn register(seed: u64) -> Arc<Progress> {
    let p = Arc::new(Progress {
        seed,
        polls: AtomicU64::new(0),
        task: AtomicU64::new(0),
        node: AtomicU32::new(0),
        running: AtomicBool::new(false),
        thread: AtomicPtr::new(std::ptr::null_mut()),
    });
    // Read until the watchdog runs (it then has its limit): not per seed.
    let limit = if START.is_completed() {
        None
    } else {
        timeout()
    };
    {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.retain(|w| w.strong_count() > 0);
        reg.push(Arc::downgrade(&p));
    }
    if let Some(limit) = limit {
        START.call_once(|| {
            let _ = super::outside::own_thread(|| {
                std::thread::Builder::new()
                    .name("sim-watchdog".into())
                    .spawn(move || watch(limit))
            });
        });
    }
    p
}

fn watch(limit: Duration) {
    // (progress, last polls seen, real seconds without progress)
    let mut seen: Vec<(Weak<Progress>, u64, u64)> = Vec::new();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let live: Vec<Weak<Progress>> = REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).clone();
        seen.retain(|(w, _, _)| w.strong_count() > 0);
        for w in live {
            let Some(p) = w.upgrade() else { continue };
            let polls = p.polls.load(Ordering::Relaxed);
            let idx = match seen.iter().position(|(s, _, _)| Weak::ptr_eq(s, &w)) {
                Some(i) => i,
                None => {
                    seen.push((w.clone(), polls, 0));
                    continue;
                }
            };
            let entry = &mut seen[idx];
            if !p.running.load(Ordering::Relaxed) || entry.1 != polls {
                *entry = (w.clone(), polls, 0);
                continue;
            }
            entry.2 += 1;
            if Duration::from_secs(entry.2) >= limit {
                let thread = p.thread.load(Ordering::Acquire);
                if !thread.is_null() {
                    // SAFETY: the thread holds the baton (it has not
                    // handed it back: that clears the pointer), so its
                    // record, which lives as long as it does, is alive.
                    let thread = unsafe { &*thread };
                    say(&thread_hang(thread, &p, entry.2, polls));
                    std::process::exit(101);
                }
                let task = p.task.load(Ordering::Relaxed);
                let what = if task == 0 {
                    "the main future".to_string()
                } else {
                    format!("task {task}")
                };
                say(&format!(
                    "\nsim: hang (inconclusive): {what} on node #{} has blocked its OS thread for {}s of \
                     real time at step {}, seed {}. A simulated task made a blocking call \
                     (std::thread::sleep, a blocking channel receive, a std::sync lock, real I/O), so \
                     no other task can run and virtual time cannot move. Use the async equivalent. \
                     (SIM_HANG_TIMEOUT sets the limit.)",
                    p.node.load(Ordering::Relaxed),
                    entry.2,
                    polls,
                    p.seed
                ));
                std::process::exit(101);
            }
        }
    }
}

/// Writes `text` and a newline straight to the process's stderr: this
/// thread was started from a test's thread, whose output libtest captures
/// (and a spawned thread inherits the capture), and the process is about
/// to exit, which would throw the captured text away.
fn say(text: &str) {
    let line = format!("{text}\n");
    let mut rest = line.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writes from a valid buffer of `rest.len()` bytes to fd 2.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            break;
        }
        rest = &rest[n as usize..];
    }
}

/// The report of a simulated thread that held the baton too long: it runs
/// without reaching a hand-off point (a futex wait, a sleep, a yield, a
/// join), so nothing else can run. Its stack is taken with a signal.
fn thread_hang(t: &RunningThread, p: &Progress, secs: u64, step: u64) -> String {
    let started = first_site(&t.started_by).unwrap_or_else(|| "an unknown place".into());
    let stack = stack_of(t.pthread)
        .map(|ips| {
            let frames: Vec<String> = ips.iter().filter_map(|&ip| frame(ip)).take(12).collect();
            format!(
                "\n  its stack now (innermost first):\n    {}",
                frames.join("\n    ")
            )
        })
        .unwrap_or_default();
    format!(
        "\nsim: hang (inconclusive): simulated OS thread {} on node #{} (started at {started}) has \
         run for {secs}s of real time without reaching a hand-off point, at step {step}, seed {}: a \
         spin loop on an atomic (or a busy wait) never lets the simulation run anything else. Put \
         std::thread::yield_now() (or a sleep, or a lock's wait) in the loop. (SIM_HANG_TIMEOUT \
         sets the limit.){stack}",
        t.id,
        p.node.load(Ordering::Relaxed),
        p.seed
    )
}

/// `file:line` (and the function) of a return address, if known.
fn frame(ip: usize) -> Option<String> {
    let mut out = None;
    backtrace::resolve(ip as *mut std::ffi::c_void, |s| {
        if out.is_none() {
            let name = s
                .name()
                .map(|n| format!("{n:#}"))
                .unwrap_or_else(|| "?".into());
            let at = match (s.filename(), s.lineno()) {
                (Some(f), Some(l)) => format!(" at {}:{l}", f.display()),
                _ => String::new(),
            };
            out = Some(format!("{name}{at}"));
        }
    });
    out
}

/// The first frame outside std, the simulator and the unwinder.
fn first_site(ips: &[usize]) -> Option<String> {
    ips.iter().find_map(|&ip| {
        let mut site = None;
        backtrace::resolve(ip as *mut std::ffi::c_void, |s| {
            if let (None, Some(f), Some(l)) = (&site, s.filename(), s.lineno()) {
                let f = f.to_string_lossy();
                let ours = [
                    "/rustc/",
                    "/sim-runtime/src/",
                    "/backtrace-",
                    "/library/std/",
                ];
                if !ours.iter().any(|o| f.contains(o)) {
                    site = Some(format!("{f}:{l}"));
                }
            }
        });
        site
    })
}

/// Where the stack taken by [`on_stack_signal`] is written.
static STACK: [AtomicUsize; 48] = [const { AtomicUsize::new(0) }; 48];
static STACK_LEN: AtomicUsize = AtomicUsize::new(0);
static STACK_DONE: AtomicBool = AtomicBool::new(false);

/// The signal handler that records the interrupted thread's stack: only
/// atomic stores, and the unwinder's walk.
extern "C" fn on_stack_signal(_: libc::c_int) {
    let mut n = 0;
    // SAFETY: the unsynchronized walk is unsafe only where the backend
    // needs a lock (Windows); here it is `_Unwind_Backtrace`. The closure
    // stores addresses only.
    unsafe {
        backtrace::trace_unsynchronized(|f| {
            STACK[n].store(f.ip() as usize, Ordering::Relaxed);
            n += 1;
            n < STACK.len()
        });
    }
    STACK_LEN.store(n, Ordering::Relaxed);
    STACK_DONE.store(true, Ordering::Release);
}

/// The stack of real thread `t`, taken by a signal (SIGURG, which nothing
/// else here uses; the process is about to end): `None` if it did not
/// answer within a second.
fn stack_of(t: libc::pthread_t) -> Option<Vec<usize>> {
    // SAFETY: installs a handler that only stores atomics and walks the
    // stack; `t` is a live thread (it holds the baton, spinning).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_stack_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGURG, &sa, std::ptr::null_mut()) != 0 {
            return None;
        }
        if libc::pthread_kill(t, libc::SIGURG) != 0 {
            return None;
        }
    }
    for _ in 0..100 {
        if STACK_DONE.load(Ordering::Acquire) {
            let n = STACK_LEN.load(Ordering::Relaxed);
            return Some(
                STACK[..n]
                    .iter()
                    .map(|a| a.load(Ordering::Relaxed))
                    .collect(),
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}
