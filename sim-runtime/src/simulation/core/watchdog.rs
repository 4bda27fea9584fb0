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

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
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
}

impl Progress {
    #[inline]
    pub(crate) fn polling(&self, step: u64, task: u64, node: u32) {
        self.polls.store(step, Ordering::Relaxed);
        self.task.store(task, Ordering::Relaxed);
        self.node.store(node, Ordering::Relaxed);
    }

    pub(crate) fn set_running(&self, running: bool) {
        self.running.store(running, Ordering::Relaxed);
    }
}

static REGISTRY: Mutex<Vec<Weak<Progress>>> = Mutex::new(Vec::new());
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
            let _ = std::thread::Builder::new()
                .name("sim-watchdog".into())
                .spawn(move || watch(limit));
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
                let task = p.task.load(Ordering::Relaxed);
                let what = if task == 0 {
                    "the main future".to_string()
                } else {
                    format!("task {task}")
                };
                eprintln!(
                    "\nsim: hang (inconclusive): {what} on node #{} has blocked its OS thread for {}s of \
                     real time at step {}, seed {}. A simulated task made a blocking call \
                     (std::thread::sleep, a blocking channel receive, a std::sync lock, real I/O), so \
                     no other task can run and virtual time cannot move. Use the async equivalent. \
                     (SIM_HANG_TIMEOUT sets the limit.)",
                    p.node.load(Ordering::Relaxed),
                    entry.2,
                    polls,
                    p.seed
                );
                std::process::exit(101);
            }
        }
    }
}
