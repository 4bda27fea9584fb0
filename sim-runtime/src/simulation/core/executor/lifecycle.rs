//! Node lifecycle inside the executor: kill, pause, resume, and the final
//! shutdown that drops every task in its node's context. Drivers hear of
//! each death and restart through their hooks (driver.rs).

use super::reap::{self, Reaping};
use super::slab::TaskKind;
use super::{Death, Exec, Task, WAKE_BUF};
use crate::simulation::core::node::NodeId;
use crate::simulation::core::trace::Kind;
use std::rc::Rc;
use std::time::Duration;

impl Exec {
    /// Kills `node`'s process: every task is dropped inside the node's
    /// context (so `Drop` impls that spawn are attributed to it, and their
    /// spawns are cancelled at once), and the node stays dead until revived.
    /// The kernel survives: sockets close as on process exit (FIN, or RST
    /// with unread data) and the disk keeps its page cache.
    pub(crate) fn kill(self: &Rc<Self>, node: NodeId) {
        self.die(node, false);
    }

    /// Crashes `node`'s machine: as `kill`, but the host goes silent first
    /// (its sockets vanish without FIN or RST) and the disk keeps only what
    /// was durable.
    pub(crate) fn crash(self: &Rc<Self>, node: NodeId) {
        self.die(node, true);
    }

    fn die(self: &Rc<Self>, node: NodeId, crash: bool) {
        let death = if crash { Death::Crash } else { Death::Kill };
        let mut wakes = Vec::new();
        let deferred = {
            let mut core = self.core.borrow_mut();
            // Before the tasks drop: what they hold must not outlive the
            // process in the drivers (a crashed host's sockets must not say
            // goodbye).
            core.each_driver(|d, core| d.node_dying(core, node, death, &mut wakes));
            core.set_paused(node, false);
            let n = core.node_mut(node);
            n.alive = false;
            n.incarnation += 1;
            n.parked.clear();
            let deferred = std::mem::take(&mut n.deferred);
            core.decide(
                Kind::Node,
                u64::from(node.0) << 8 | if crash { 5 } else { 1 },
            );
            deferred
        };
        drop(deferred);
        loop {
            // The node's threads stop first, where they stand: they never run
            // again. Then its tasks drop, each on a stack of its own, in
            // the node's context: a destructor that would wait (for one of
            // those threads, for time) is left there, as the process was.
            let (threads, tasks) = {
                let mut core = self.core.borrow_mut();
                let mut ids: Vec<(bool, u64, u32)> = core
                    .slab
                    .tasks
                    .iter()
                    .enumerate()
                    .filter_map(|(i, t)| t.as_ref().map(|t| (t, i)))
                    .filter(|(t, _)| t.node == node && t.future.is_some())
                    .map(|(t, i)| (t.kind != TaskKind::Thread, t.id, i as u32))
                    .collect();
                ids.sort_unstable();
                let (mut threads, mut tasks) = (Vec::new(), Vec::new());
                for (not_thread, _, slot) in ids {
                    let task = core.remove_task(slot);
                    if not_thread {
                        tasks.push(task);
                    } else {
                        threads.push(task);
                    }
                }
                (threads, tasks)
            };
            if threads.is_empty() && tasks.is_empty() {
                break;
            }
            for t in threads {
                let id = t.as_ref().map(|t| t.id);
                self.with_task(node, id, || drop(t));
            }
            for t in tasks {
                let id = t.as_ref().map(|t| t.id);
                let left = self.with_task(node, id, || reap::requesting(Reaping::Dead, || drop(t)));
                if let (true, Some(id)) = (left, id) {
                    self.core.borrow_mut().left_destructors.push((id, node));
                }
            }
        }
        self.core
            .borrow_mut()
            .each_driver(|d, core| d.node_died(core, node, death, &mut wakes));
        for w in wakes {
            w.wake();
        }
    }

    /// Makes a dead node alive again, as a fresh process on the same host.
    pub(crate) fn revive(&self, node: NodeId) {
        let mut wakes = Vec::new();
        {
            let mut core = self.core.borrow_mut();
            core.node_mut(node).alive = true;
            core.decide(Kind::Node, u64::from(node.0) << 8 | 4);
            core.each_driver(|d, core| d.node_restarted(core, node, &mut wakes));
        }
        for w in wakes {
            w.wake();
        }
    }

    pub(crate) fn pause(&self, node: NodeId) {
        let mut core = self.core.borrow_mut();
        core.set_paused(node, true);
        core.decide(Kind::Node, u64::from(node.0) << 8 | 2);
    }

    pub(crate) fn resume(&self, node: NodeId) {
        let (parked, deferred) = {
            let mut core = self.core.borrow_mut();
            core.decide(Kind::Node, u64::from(node.0) << 8 | 3);
            core.set_paused(node, false);
            let n = core.node_mut(node);
            (
                std::mem::take(&mut n.parked),
                std::mem::take(&mut n.deferred),
            )
        };
        self.wake_afresh(parked);
        for w in deferred.into_iter().flatten() {
            self.wake(w);
        }
    }

    /// Queues again, in the order they were spawned, tasks that were taken
    /// out of the run queue without a poll (a paused node's parked ones,
    /// held ones: blocked.rs): they still count as queued, so they are
    /// marked not queued and woken afresh.
    pub(super) fn wake_afresh(&self, mut tasks: Vec<(u32, u64)>) {
        tasks.sort_unstable_by_key(|&(_, id)| id);
        {
            let mut core = self.core.borrow_mut();
            for &(slot, id) in &tasks {
                if let Some(Some(t)) = core.slab.tasks.get_mut(slot as usize) {
                    if t.id == id {
                        t.queued = false;
                    }
                }
            }
        }
        for (slot, id) in tasks {
            self.push_wake(slot, id);
        }
    }

    /// Drops every remaining task (runtime shutdown), each in its node's
    /// context, and marks the simulation ended. `blocking`: as Tokio's
    /// `shutdown_timeout`, how long to wait for the `spawn_blocking` jobs
    /// already started (their waiting tasks' ids) once the other tasks are
    /// dropped; the clock moves while they run ([`Exec::finish_blocking`]).
    pub(crate) fn shutdown(self: &Rc<Self>, blocking: Option<(Duration, Vec<u64>)>) {
        self.compat.set_shut_down();
        let _entered = self.enter();
        // The destructors run inside the simulation, as the tasks did: their
        // waits and wakes are the run's.
        let _active = self.activate();
        // Tasks first, while their nodes' threads can still run: a
        // destructor that tells a worker thread to stop and joins it
        // completes (its wait runs threads, as a blocked executor's does).
        // One that waits for what can never happen is left where it stands
        // (reap.rs). Every thread is runnable again first: the run queue
        // may have been left as the last `block_on` found it; a thread that
        // has nothing to do finds its wait unfinished and waits on.
        {
            let mut core = self.core.borrow_mut();
            let core = &mut *core;
            for (slot, t) in core.slab.tasks.iter_mut().enumerate() {
                if let Some(t) = t.as_mut().filter(|t| t.kind == TaskKind::Thread) {
                    let entry = (slot as u32, t.id);
                    if !core.run_queue.iter().any(|&e| e == entry) {
                        t.queued = true;
                        core.run_queue.push_back(entry);
                    }
                }
            }
        }
        let keep = blocking.as_ref().map_or(&[][..], |(_, ids)| &ids[..]);
        self.drop_async_tasks(keep);
        if let Some((wait, ids)) = blocking.filter(|(_, ids)| !ids.is_empty()) {
            self.finish_blocking(wait, &ids);
            self.drop_async_tasks(&[]);
        }
        // Then the threads, each ending where it stands, and whatever their
        // ends left behind.
        loop {
            let victims = self.take_tasks(|_| true);
            {
                let mut core = self.core.borrow_mut();
                for n in core.nodes.iter_mut() {
                    n.alive = false;
                }
            }
            if victims.is_empty() {
                break;
            }
            for (node, t) in victims {
                let id = t.as_ref().map(|t| t.id);
                self.with_task(node, id, || drop(t));
            }
        }
        WAKE_BUF.with(|b| b.borrow_mut().buf.clear());
        // No task of the simulation runs again: its handles may now spawn
        // (cancelled at once) from any thread (ended.rs).
        self.mark_ended();
    }

    /// Drops every task that is not a thread's, nor one of `keep`, each in
    /// its node's context, until none is left (a destructor may spawn).
    fn drop_async_tasks(self: &Rc<Self>, keep: &[u64]) {
        loop {
            let victims = self.take_tasks(|t| t.kind != TaskKind::Thread && !keep.contains(&t.id));
            if victims.is_empty() {
                break;
            }
            for (node, t) in victims {
                let id = t.as_ref().map(|t| t.id);
                self.with_task(node, id, || {
                    reap::requesting(Reaping::Ending, || drop(t));
                });
            }
        }
    }

    /// Runs the simulation, the clock moving to each next timer, until the
    /// tasks `ids` (those waiting for `spawn_blocking` jobs a worker had
    /// started) have ended or `wait` of virtual time has passed, as Tokio's
    /// shutdown waits for its blocking threads. Stops early when nothing
    /// could end them: no task runnable and no timer due by then. A wait
    /// without bound (a runtime dropped) stops after [`BLOCKING_WAIT_CAP`],
    /// saying so, where Tokio's would wait for ever.
    fn finish_blocking(self: &Rc<Self>, wait: Duration, ids: &[u64]) {
        if self.in_block_on.get() {
            // Shut down inside an async context: nothing here may drive it.
            return;
        }
        let start = self.core.borrow().clock.now;
        let capped = wait > BLOCKING_WAIT_CAP;
        let wait = wait.min(BLOCKING_WAIT_CAP);
        let deadline = start.saturating_add(wait.as_nanos() as u64);
        loop {
            self.pump();
            let mut core = self.core.borrow_mut();
            if ids.iter().all(|&id| !core.is_alive(id)) {
                return;
            }
            if core
                .clock
                .timers
                .next_deadline()
                .is_none_or(|d| d > deadline)
            {
                if capped && core.clock.timers.next_deadline().is_some() {
                    eprintln!(
                        "sim: a runtime was dropped while spawn_blocking work it had started \
                         still ran after {} s of virtual time; Tokio's drop would wait for it \
                         for ever, the simulation stops it where it stands",
                        BLOCKING_WAIT_CAP.as_secs()
                    );
                }
                return;
            }
            if self.advance(core).is_err() {
                return;
            }
        }
    }

    /// Takes every task not being polled that `which` selects out of the
    /// slab, in slot order, with its node.
    fn take_tasks(&self, which: impl Fn(&Task) -> bool) -> Vec<(NodeId, Option<Task>)> {
        let mut core = self.core.borrow_mut();
        let mut v = Vec::new();
        for i in 0..core.slab.tasks.len() {
            if core.slab.tasks[i]
                .as_ref()
                .is_some_and(|t| t.future.is_some() && which(t))
            {
                let t = core.remove_task(i as u32);
                v.push((t.as_ref().map(|t| t.node).unwrap_or(NodeId::MAIN), t));
            }
        }
        v
    }
}

/// The longest a dropped runtime waits, in virtual time, for the
/// `spawn_blocking` work it had started ([`Exec::finish_blocking`]).
const BLOCKING_WAIT_CAP: Duration = Duration::from_secs(600);
