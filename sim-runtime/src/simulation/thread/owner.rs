//! The thread that built a runtime, outside the runtime's `block_on`.
//!
//! Tokio's own tests, and many services' tests, build a `Runtime`, start
//! threads that use it, and then wait on the test's thread: for a thread's
//! end, or on a std channel one of them sends on, while Tokio's threads go
//! on by themselves. Here those threads are the runtime's simulated
//! threads (`exec_for_new_thread`), and they run only while the runtime
//! runs: so such a wait runs the runtime, as its `block_on` would, until
//! the wait is over. It is done only when the runtime has something that
//! would go on by itself under Tokio (simulated threads not ended, or a
//! multi-thread runtime's tasks); any other wait is the kernel's. A
//! current-thread runtime's tasks wait meanwhile, as Tokio's run only inside
//! a `block_on`, unless a thread's `Runtime::block_on` holds its worker.

use super::{with_threads, Ctl, Queued, State, Threads, Waiter};
use crate::simulation::core::executor::Exec;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

/// Runs `exec` until the futex word at `addr` is woken by the simulation
/// (or found changed), or `timeout` of virtual time passes: `Ok(())`,
/// `Err(EAGAIN)` (the word differed at once) or `Err(ETIMEDOUT)`.
fn drive_until(
    exec: &Rc<Exec>,
    addr: *const u32,
    expected: u32,
    bitset: u32,
    timeout: Option<Duration>,
) -> Result<(), i32> {
    // SAFETY: a futex word of the caller's (the futex contract); it stays
    // valid while its waiter waits.
    let word = unsafe { &*addr.cast::<AtomicU32>() };
    if word.load(Ordering::SeqCst) != expected {
        return Err(libc::EAGAIN);
    }
    let waiter = Waiter::new();
    let mut timer = None;
    // As Tokio's current-thread runtime, whose tasks run only inside a
    // `block_on`: its threads run meanwhile, its tasks wait, unless a
    // thread's `Runtime::block_on` holds the worker (mod.rs
    // `runtime_block_on`).
    let current_thread = !exec.compat.multi_thread();
    let was_driving = exec.compat.set_owner_driving(current_thread);
    exec.hold_tasks(current_thread && !exec.compat.thread_on_worker());
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        exec.block_on(std::future::poll_fn(|cx| {
            if waiter.woken.get() || word.load(Ordering::SeqCst) != expected {
                return Poll::Ready(Ok(()));
            }
            if let Some(d) = timeout {
                let t = timer.get_or_insert_with(|| Box::pin(crate::simulation::time::os_sleep(d)));
                if t.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(libc::ETIMEDOUT));
                }
            }
            *waiter.waker.borrow_mut() = Some(cx.waker().clone());
            with_threads(|t| {
                let q = t.queues.entry(addr as usize).or_default();
                if !q.iter().any(|e| Rc::ptr_eq(&e.waiter, &waiter)) {
                    q.push_back(Queued {
                        bitset,
                        expected,
                        waiter: waiter.clone(),
                    });
                }
            });
            Poll::Pending
        }))
    }));
    exec.compat.set_owner_driving(was_driving);
    exec.hold_tasks(false);
    with_threads(|t| {
        if let Some(q) = t.queues.get_mut(&(addr as usize)) {
            q.retain(|e| !Rc::ptr_eq(&e.waiter, &waiter));
        }
    });
    match run {
        Ok(out) => out,
        Err(payload) => {
            // The run failed while this C call drove it: its report is the
            // panic's text, and the call cannot unwind into its C caller.
            let text = crate::simulation::core::report::payload_text(&*payload);
            let line = format!("{text}\n");
            // SAFETY: writes from a valid buffer of its own length to fd 2.
            unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            std::process::exit(101);
        }
    }
}

/// Whether the runtime would go on by itself under Tokio: simulated
/// threads not ended, or a multi-thread runtime.
fn goes_on_by_itself(exec: &Exec) -> bool {
    if exec.compat.multi_thread() {
        return true;
    }
    let mut core = exec.core_mut();
    let threads = core.driver::<Threads>();
    threads.all.iter().any(|c| c.state.get() != State::Exited)
}

/// `FUTEX_WAIT` on the thread that built a runtime, outside its
/// `block_on`: runs the runtime until the wait is over (see the module
/// docs). `None`: a wait for the kernel.
///
/// # Safety
///
/// `addr` is a readable futex word (the futex contract).
pub(crate) unsafe fn owner_wait(
    addr: *const u32,
    expected: u32,
    bitset: u32,
    timeout: Option<Duration>,
) -> Option<Result<(), i32>> {
    // Only the thread that built the runtime (not one that merely entered
    // it, such as a runner's thread starting to drive it, whose own locks
    // must wait for real), and never from inside such a wait.
    let exec = crate::simulation::runtime::owned_runtime()?;
    if exec.in_block_on() || DRIVING.with(|d| d.get()) || !goes_on_by_itself(&exec) {
        return None;
    }
    DRIVING.with(|d| d.set(true));
    let out = drive_until(&exec, addr, expected, bitset, timeout);
    DRIVING.with(|d| d.set(false));
    Some(out)
}

thread_local! {
    /// This thread is driving its runtime from inside a wait.
    static DRIVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `pthread_join` of a simulated thread by the thread that built its
/// runtime, outside the runtime's `block_on`: the runtime runs until the
/// thread ends. `false` if `pthread` is no thread of that runtime.
pub(super) fn join_from_owner(pthread: libc::pthread_t) -> bool {
    let Some(exec) = super::exec_for_new_thread() else {
        return false;
    };
    let ctl: Option<Arc<Ctl>> = {
        let mut core = exec.core_mut();
        let threads = core.driver::<Threads>();
        threads
            .all
            .iter()
            .rev()
            .find(|c| c.pthread.get() == pthread && !c.reaped.get())
            .cloned()
    };
    let Some(ctl) = ctl else {
        return false;
    };
    let word = ctl.exited.as_ptr().cast_const();
    while ctl.exited.load(Ordering::Acquire) == 0 {
        let _ = drive_until(&exec, word, 0, u32::MAX, None);
    }
    ctl.reaped.set(true);
    true
}
