//! `spawn_blocking`'s pool: simulated threads of the calling node that run
//! one closure at a time and wait for the next, as Tokio's blocking pool
//! does.
//!
//! As Tokio's, a node process has at most `max_blocking_threads` workers
//! (512 unless the run's runtime was built with another): past that, jobs
//! wait in a queue, in order, for a worker to finish. Unlike Tokio's, an idle worker is kept
//! until its node stops or the run ends, not retired after 10 s: its
//! keep-alive would be a timer, the deadline the clock jumps to when the
//! seed lets a computation run long (schedule/early.rs), so a DNS lookup
//! would make a TLS handshake on another node take 10 s. Only the thread
//! count differs.

use super::{this_thread, with_threads};
use crate::simulation::core::executor::with_current;
use crate::simulation::core::node::NodeId;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// The blocking pools of a run's node incarnations.
#[derive(Default)]
pub(crate) struct Pools {
    /// Idle workers: node, its incarnation, the worker.
    idle: Vec<(NodeId, u32, Arc<Worker>)>,
    /// Workers started per node incarnation.
    started: BTreeMap<(NodeId, u32), usize>,
    /// Jobs waiting for a worker (all started, none idle), in order, with
    /// the id of the task that waits for each.
    queued: BTreeMap<(NodeId, u32), VecDeque<(Job, u64)>>,
    /// The tasks that wait for a job a worker has taken and not finished.
    running: BTreeSet<u64>,
}

/// Where a new job goes.
enum Place {
    Idle(Arc<Worker>),
    New,
    Queued,
}

/// A job of `spawn_blocking`.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// A simulated thread that runs `spawn_blocking` jobs, as Tokio's blocking
/// pool does: one job at a time, then it waits for the next.
#[derive(Default)]
pub(crate) struct Worker {
    /// The next job, with the id of the task that waits for it.
    job: std::sync::Mutex<Option<(Job, u64)>>,
    ready: std::sync::Condvar,
}

/// Runs `job` on a `spawn_blocking` worker of the current node: an idle
/// one, or a new simulated thread. `Err(job)` outside a simulation's
/// executor.
pub(crate) fn run_blocking(job: Job, task: u64) -> Result<(), Job> {
    let Some((node, incarnation, most)) = with_current(|e| {
        let node = e.current_node();
        (
            node,
            e.core().node(node).incarnation,
            e.compat.max_blocking(),
        )
    }) else {
        return Err(job);
    };
    let key = (node, incarnation);
    let mut job = Some(job);
    let place = with_threads(|t| {
        let p = &mut t.pool;
        p.idle.retain(|(n, i, _)| *n != node || *i == incarnation);
        if let Some(at) = p.idle.iter().rposition(|(n, _, _)| *n == node) {
            return Place::Idle(p.idle.remove(at).2);
        }
        let started = p.started.entry(key).or_default();
        if *started < most {
            *started += 1;
            return Place::New;
        }
        let job = job.take().expect("placed once");
        p.queued.entry(key).or_default().push_back((job, task));
        Place::Queued
    })
    .unwrap_or(Place::New);
    let worker = match place {
        Place::Queued => return Ok(()),
        Place::Idle(w) => w,
        Place::New => {
            let w = Arc::new(Worker::default());
            let mine = w.clone();
            let started = std::thread::Builder::new()
                .name("tokio-runtime-worker".into())
                .spawn(move || work(mine, node, incarnation));
            if started.is_err() {
                with_threads(|t| {
                    t.pool.started.entry(key).and_modify(|n| *n -= 1);
                });
                return Err(job.take().expect("not queued"));
            }
            w
        }
    };
    let job = job.take().expect("not queued");
    // Started, as Tokio's: a worker has it, whether or not it has run yet.
    running(task, true);
    *worker.job.lock().unwrap_or_else(|e| e.into_inner()) = Some((job, task));
    worker.ready.notify_one();
    Ok(())
}

/// A `spawn_blocking` worker's life: each job, then idle until the next.
fn work(w: Arc<Worker>, node: NodeId, incarnation: u32) {
    let idle = |idle: bool| {
        if let Some(ctl) = this_thread() {
            with_current(|e| e.core_mut().set_idle_worker(ctl.task.get(), idle));
        }
    };
    loop {
        let job = {
            let mut slot = w.job.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(job) = slot.take() {
                    as_task(Some(job.1));
                    idle(false);
                    break job;
                }
                idle(true);
                slot = w.ready.wait(slot).unwrap_or_else(|e| e.into_inner());
            }
        };
        (job.0)();
        running(job.1, false);
        as_task(None);
        // Then the jobs that waited for a worker, before going idle.
        loop {
            let next = with_threads(|t| {
                let key = (node, incarnation);
                let next = t.pool.queued.get_mut(&key).and_then(VecDeque::pop_front);
                if next.is_none() {
                    t.pool.idle.push((node, incarnation, w.clone()));
                }
                next
            })
            .flatten();
            let Some((job, task)) = next else { break };
            as_task(Some(task));
            running(task, true);
            job();
            running(task, false);
            as_task(None);
        }
    }
}

/// Notes that the job task `task` waits for is a worker's (`true`) or
/// has finished.
fn running(task: u64, started: bool) {
    with_threads(|t| {
        if started {
            t.pool.running.insert(task);
        } else {
            t.pool.running.remove(&task);
        }
    });
}

/// A runtime shuts down (`Runtime::shutdown_timeout` or its drop): the
/// tasks that wait for a job a worker has started, then for those queued
/// behind them, in order, for the shutdown to wait for. As in Tokio's
/// pool, a worker that finishes its job during the shutdown takes the next
/// queued one before it looks at the shutdown (a queued job is there
/// because no worker was idle, so none was left to drop it unrun).
pub(crate) fn shutting_down() -> Vec<u64> {
    with_threads(|t| {
        let p = &t.pool;
        p.running
            .iter()
            .copied()
            .chain(p.queued.values().flatten().map(|(_, task)| *task))
            .collect()
    })
    .unwrap_or_default()
}

/// Makes the calling worker's code run as task `task` (`task::id()` in a
/// `spawn_blocking` closure is its handle's id), or as no task.
fn as_task(task: Option<u64>) {
    if let Some(ctl) = this_thread() {
        ctl.as_task.set(task);
        with_current(|e| e.run_as_task(task));
    }
}
