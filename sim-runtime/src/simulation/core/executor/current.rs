//! The executor entered on this thread, leaving its context, and what
//! leaf code asks of the current executor (`select!`'s draw, an unhandled
//! panic).

use super::*;

/// Makes `new` the executor entered on this thread; returns the previous one.
pub(super) fn set_current(new: Option<Rc<Exec>>) -> Option<Rc<Exec>> {
    let ptr = new.as_ref().map_or(std::ptr::null(), Rc::as_ptr);
    CURRENT
        .try_with(|c| {
            let prev = c.replace(new);
            CURRENT_PTR.set(ptr);
            prev
        })
        .ok()
        .flatten()
}

crate::simulation::core::hooks::carried!(
    CURRENT_CARRIED: Option<Rc<Exec>>,
    take: || set_current(None),
    put: |v| {
        set_current(v);
    },
);

/// Runs `f` with the executor entered on this thread, without taking a
/// reference count on it; `None` when there is none. For leaf code that runs
/// no user code (a timer's registration, a yield): `f` must not leave or
/// drop the executor.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Exec) -> R) -> Option<R> {
    let ptr = current_ptr();
    // SAFETY: `CURRENT_PTR` is non-null only while `CURRENT` holds an `Rc`
    // of that executor (both are written by `set_current` only), and `f`
    // does not change `CURRENT` (see above), so the executor outlives `f`.
    (!ptr.is_null()).then(|| f(unsafe { &*ptr }))
}

/// The base instant of the first executor made in this process; every
/// executor's is the same (the virtual monotonic clock at 0) when the
/// clock interposers are in place.
pub(super) static STANDARD_BASE: std::sync::OnceLock<std::time::Instant> =
    std::sync::OnceLock::new();

/// [`STANDARD_BASE`], once an executor has set it.
pub(crate) fn standard_base() -> Option<std::time::Instant> {
    STANDARD_BASE.get().copied()
}

/// The executor entered on this thread, as a raw pointer (null when there
/// is none): [`with_current`] for code whose result is wider than two
/// words (a closure's result returned through memory can stall the
/// caller's read of it). Valid under the same rule: no user code runs, and
/// nothing leaves or drops the executor, while it is used.
#[inline(always)]
pub(crate) fn current_ptr() -> *const Exec {
    CURRENT_PTR.try_with(Cell::get).unwrap_or(std::ptr::null())
}

/// The executor entered on this thread, if any.
pub(crate) fn current() -> Option<Rc<Exec>> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// Tokio's panic when a runtime is needed and there is none.
const NO_RUNTIME: &str = "there is no reactor running, must be called from the context of a \
                          Tokio 1.x runtime (sim: no simulation is running on this thread)";

/// The executor entered on this thread, or Tokio's panic when there is none.
#[track_caller]
pub(crate) fn expect_current() -> Rc<Exec> {
    match current() {
        Some(exec) => exec,
        None => panic!("{NO_RUNTIME}"),
    }
}

/// [`with_current`], or Tokio's panic when there is no executor.
#[track_caller]
#[inline]
pub(crate) fn with_expected<R>(f: impl FnOnce(&Exec) -> R) -> R {
    match with_current(f) {
        Some(r) => r,
        None => panic!("{NO_RUNTIME}"),
    }
}

/// Leaves the executor's context for the duration of `f` (as Tokio's
/// `block_in_place` does on a multi-thread runtime), so `f` may build and
/// drive another runtime. Wakes for this executor made meanwhile go to its
/// remote queue and are drained when it resumes.
pub(crate) fn outside_context<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Rc<Exec>>, u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = LEFT.try_with(|l| l.borrow_mut().pop());
            let prev = self.0.take();
            drop(set_current(prev));
            let id = self.1;
            let _ = WAKE_BUF.try_with(|b| b.borrow_mut().exec_id = id);
        }
    }
    let Some(exec) = set_current(None) else {
        return f();
    };
    // Buffered wakes belong to this executor: move them to its run queue.
    let buffered = WAKE_BUF.with(|b| {
        let mut b = b.borrow_mut();
        b.exec_id = 0;
        std::mem::take(&mut b.buf)
    });
    exec.core.borrow_mut().take_requests(buffered);
    let id = exec.id;
    LEFT.with(|l| l.borrow_mut().push(exec.clone()));
    let _restore = Restore(Some(exec), id);
    f()
}

thread_local! {
    /// The executors left by `outside_context` on this thread, innermost
    /// last: a `block_in_place` closure that sleeps or waits still blocks
    /// that simulation's thread.
    static LEFT: RefCell<Vec<Rc<Exec>>> = const { RefCell::new(Vec::new()) };
}

/// The executor `outside_context` left on this thread, if `f` runs inside
/// one.
pub(crate) fn left_executor() -> Option<Rc<Exec>> {
    LEFT.try_with(|l| l.borrow().last().cloned()).ok().flatten()
}

/// Runs `f` with `exec` entered again (inside `outside_context`), for a
/// wait that blocks its thread.
pub(crate) fn reenter<R>(exec: Rc<Exec>, f: impl FnOnce() -> R) -> R {
    struct Leave(Option<Rc<Exec>>);
    impl Drop for Leave {
        fn drop(&mut self) {
            drop(set_current(self.0.take()));
        }
    }
    let _leave = Leave(set_current(Some(exec)));
    f()
}

/// Runs `f` with `task` as the current task id (for dropping a task's
/// output from its `JoinHandle`, as Tokio does).
pub(crate) fn with_task_id<R>(task: u64, f: impl FnOnce() -> R) -> R {
    match current() {
        Some(exec) => {
            let node = exec.current_node();
            exec.with_task(node, Some(task), f)
        }
        None => f(),
    }
}

/// `select!`'s fairness draw: from the seed inside a simulation, from a
/// fixed-seed generator outside one (still deterministic).
pub(crate) fn select_draw(n: u32) -> u32 {
    if n <= 1 {
        return 0;
    }
    if let Some(exec) = current() {
        if let Ok(mut core) = exec.core.try_borrow_mut() {
            return core.select_draw(n);
        }
    }
    thread_local! {
        static FALLBACK: Cell<u64> = const { Cell::new(0x853c_49e6_748f_ea9b) };
    }
    FALLBACK.with(|s| {
        let x = seed::splitmix(s.get());
        s.set(x);
        seed::below(x, u64::from(n)) as u32
    })
}

/// Called by a task that panicked while its `JoinHandle` holds the panic:
/// kept to name if the run then fails waiting (see `Core::held_panics`).
pub(crate) fn held_panic(id: u64, name: Option<&str>, message: &str) {
    if let Some(exec) = current() {
        if let Ok(mut core) = exec.core.try_borrow_mut() {
            if core.held_panics.len() < super::HELD_PANICS {
                let node = exec.current_node();
                let text = format!(
                    "task {id}{} on node '{}' panicked at step {}: {message}",
                    name.map(|n| format!(" '{n}'")).unwrap_or_default(),
                    core.node(node).name,
                    core.step,
                );
                core.held_panics.push(text);
            }
        }
    }
}

/// Called by a task whose panic nobody can observe (its `JoinHandle` is
/// gone).
pub(crate) fn unhandled_panic(id: u64, name: Option<&str>, message: &str) {
    if let Some(exec) = current() {
        if let Ok(mut core) = exec.core.try_borrow_mut() {
            // A panic that follows a refused call is that call's failure.
            let forbidden = super::super::hooks::forbidden();
            for message in forbidden.messages() {
                core.fail(Class::Forbidden, message);
            }
            if core.config.unhandled_panic == UnhandledPanic::Fail {
                let node = exec.current_node();
                let node_name = core.node(node).name.clone();
                core.fail(
                    Class::Panic,
                    format!(
                        "task {id}{} on node '{node_name}' panicked and its JoinHandle was \
                         dropped, so nobody could observe it: {message}\n  (SIM_UNHANDLED_PANIC=ignore \
                         keeps running, as Tokio does by default){}",
                        name.map(|n| format!(" '{n}'")).unwrap_or_default(),
                        report::real_tokio_hint(message)
                            .map(|h| format!("\n{h}"))
                            .unwrap_or_default()
                    ),
                );
            }
        }
    }
}
