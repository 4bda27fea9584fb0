//! `spawn_blocking`'s pool: simulated threads of the calling node that run
//! one closure at a time and wait for the next, as Tokio's blocking pool
//! does.
//!
//! Unlike Tokio's, an idle worker is kept until its node stops or the run
//! ends, not retired after 10 s: its keep-alive would be a timer, the
//! deadline the clock jumps to when the seed lets a computation run long
//! (schedule/early.rs), so a DNS lookup would make a TLS handshake on
//! another node take 10 s. Only the thread count differs.

use super::{this_thread, with_threads};
use crate::simulation::core::executor::with_current;
use crate::simulation::core::node::NodeId;
use std::sync::Arc;

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
    let Some((node, incarnation)) = with_current(|e| {
        let node = e.current_node();
        (node, e.core().node(node).incarnation)
    }) else {
        return Err(job);
    };
    let idle = with_threads(|t| {
        t.idle.retain(|(n, i, _)| *n != node || *i == incarnation);
        let at = t.idle.iter().rposition(|(n, _, _)| *n == node)?;
        Some(t.idle.remove(at).2)
    })
    .flatten();
    let worker = match idle {
        Some(w) => w,
        None => {
            let w = Arc::new(Worker::default());
            let mine = w.clone();
            let started = std::thread::Builder::new()
                .name("tokio-runtime-worker".into())
                .spawn(move || work(mine, node, incarnation));
            if started.is_err() {
                return Err(job);
            }
            w
        }
    };
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
        as_task(None);
        with_threads(|t| t.idle.push((node, incarnation, w.clone())));
    }
}

/// Makes the calling worker's code run as task `task` (`task::id()` in a
/// `spawn_blocking` closure is its handle's id), or as no task.
fn as_task(task: Option<u64>) {
    if let Some(ctl) = this_thread() {
        ctl.as_task.set(task);
        with_current(|e| e.run_as_task(task));
    }
}
