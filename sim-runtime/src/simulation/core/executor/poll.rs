//! Polling: a task's poll in its node's context, the checks that follow
//! every poll, and failing the run.

use super::*;

impl Exec {
    /// Polls a task inside real Tokio's context, then the checks that
    /// follow such a poll.
    pub(super) fn poll_task_inside(&self, slot: u32, id: u64, stray: &context::Stray) {
        self.poll_task(slot, id);
        self.after_real_poll();
        self.check_stray(stray);
    }

    /// Fails the run at once if a poll spawned a task on real Tokio's
    /// runtime (Tokio may still poll that task once before the run ends).
    #[inline]
    pub(super) fn check_stray(&self, stray: &context::Stray) {
        if stray.spawned() {
            let failure = {
                let mut core = self.core.borrow_mut();
                core.fail(
                    Class::Forbidden,
                    format!("{}. {}", context::STRAY_REAL_TASK, report::REAL_TOKIO_HINT),
                );
                core.failure.take().expect("just recorded")
            };
            self.fail(failure)
        }
    }

    #[inline]
    pub(super) fn after_poll(&self) {
        if hooks::forbidden_any() {
            self.forbidden_attempt(hooks::forbidden());
        }
    }

    #[inline(never)]
    pub(super) fn forbidden_attempt(&self, forbidden: hooks::Forbidden) {
        let mut core = self.core.borrow_mut();
        for message in forbidden.messages() {
            core.fail(Class::Forbidden, message);
        }
    }

    /// Polls task `id` in `slot` (picked), in its node's context; drops it
    /// when it finishes, or was aborted, or its node died meanwhile.
    pub(super) fn poll_task(&self, slot: u32, id: u64) {
        let (mut fut, node, incarnation) = {
            let mut core = self.core.borrow_mut();
            let step = core.step + 1;
            let task = core.slab.tasks[slot as usize]
                .as_mut()
                .expect("picked task exists");
            if task.aborted {
                let fut = task.future.take();
                let node = task.node;
                let task = core.remove_task(slot);
                drop(core);
                self.with_task(node, Some(id), || {
                    drop(fut);
                    drop(task);
                });
                return;
            }
            let fut = task.future.take().expect("task is not being polled");
            // Wakes from now on queue it again.
            task.queued = false;
            task.polled_at = step as u32;
            let seen = std::mem::take(&mut task.owed_poll);
            let ptr = fut.task().as_ptr();
            let node = task.node;
            let incarnation = task.incarnation;
            if seen {
                core.sched.paid();
            }
            if !core.slab.injected.is_empty() {
                core.slab.injected.retain(|&i| i != id);
            }
            core.step += 1;
            core.decide(Kind::Poll, id);
            core.polling = (ptr.cast(), slot, id);
            self.progress.polling(core.step, id, node.0);
            if crate::simulation::core::tape::on() {
                crate::simulation::core::tape::mark(core.step, core.clock.now);
            }
            (fut, node, incarnation)
        };
        // `fut`, the executor's reference, keeps the task alive for the
        // whole poll; the waker is borrowed from it.
        let waker = fut.borrowed_waker();
        self.cur.set(Cur {
            task: Some(id),
            node,
        });
        self.sync_clock(node);
        let ready = fut.poll(&mut Context::from_waker(&waker)).is_ready();
        self.cur.set(Cur { task: None, node });
        let mut core = self.core.borrow_mut();
        core.polling = (std::ptr::null(), 0, 0);
        let killed = core.node(node).incarnation != incarnation;
        if ready || killed {
            let task = core.remove_task(slot);
            drop(core);
            self.with_task(node, Some(id), || {
                drop(fut);
                drop(task);
            });
        } else {
            core.slab.tasks[slot as usize]
                .as_mut()
                .expect("task still present")
                .future = Some(fut);
            drop(core);
        }
        self.after_poll();
    }

    pub(super) fn main_panicked(&self, payload: Box<dyn std::any::Any + Send>) -> ! {
        // A panic that follows a refused call (an `unwrap` of its error) is
        // that call's failure, not an assertion of the test's.
        let forbidden = hooks::forbidden();
        if forbidden.any() {
            self.forbidden_attempt(forbidden);
            let failure = self.core.borrow_mut().failure.take();
            if let Some(mut f) = failure {
                f.message = format!(
                    "{}\n  (the test body then panicked: {})",
                    f.message,
                    report::payload_text(&*payload)
                );
                self.fail(f);
            }
        }
        let context = {
            let core = self.core.borrow();
            report::context(&core.snapshot(), "assertion (the test body panicked)")
        };
        let context = match report::real_tokio_hint(&report::payload_text(&*payload)) {
            Some(hint) => format!("{hint}\n{context}"),
            None => context,
        };
        if !report::quiet() {
            eprintln!("{context}");
        }
        std::panic::resume_unwind(report::augment_payload(payload, &context))
    }

    pub(super) fn fail(&self, mut f: Failure) -> ! {
        let text = {
            let core = self.core.borrow();
            let waiting = matches!(
                f.class,
                Class::StepLimit | Class::Livelock | Class::Deadlock
            );
            if waiting && !core.held_panics.is_empty() {
                // What the run waited for may be what a panicked task
                // would have done: its panic sits in a JoinHandle no one
                // awaited.
                f.message.push_str(
                    "\n  earlier, a task panicked and its JoinHandle, still held, was never \
                     awaited (its panic is in there, unseen):",
                );
                for p in &core.held_panics {
                    f.message.push_str(&format!("\n    {p}"));
                }
            }
            report::render(&core.snapshot(), &f)
        };
        *self.last_failure.borrow_mut() = Some(f);
        panic!("{text}");
    }
}
