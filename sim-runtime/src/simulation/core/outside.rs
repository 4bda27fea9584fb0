//! What lies outside every simulation and may still reach into one: real
//! waits on futex words that a thread outside the run may change, and the
//! threads a thread started outside any simulation before it ran one (a
//! test's producer started before its runtime, sending on a Tokio channel
//! with `blocking_send`). Such a thread wakes a task from outside (the
//! remote queue, header.rs); a run that finds nothing runnable waits for it
//! for real, for a bounded time, before it declares a deadlock (idle.rs).
//! What such a thread does is outside the seed, as any foreign thread's is.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    /// How many threads this thread started outside any simulation are
    /// still running.
    static CHILDREN: Arc<AtomicU32> = Arc::new(AtomicU32::new(0));
    /// Set while the simulator starts a thread of its own (the watchdog, a
    /// seed's thread): those are not counted.
    static OWN: Cell<bool> = const { Cell::new(false) };
    /// In a counted thread: its starter's count, given back when it ends.
    static STARTER: Starter = const { Starter(RefCell::new(None)) };
}

/// A counted thread's hold on its starter's count, released by the
/// thread-local's destructor at the thread's end (whether its routine
/// returned or it called `pthread_exit`).
struct Starter(RefCell<Option<Arc<AtomicU32>>>);

impl Drop for Starter {
    fn drop(&mut self) {
        if let Some(count) = self.0.borrow_mut().take() {
            count.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Runs `f` (which starts one of the simulator's own threads) without
/// counting what it starts.
pub(crate) fn own_thread<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = OWN.try_with(|o| o.set(self.0));
        }
    }
    let _reset = Reset(OWN.try_with(|o| o.replace(true)).unwrap_or(false));
    f()
}

/// A thread is about to be started outside any simulation: counts it for
/// the calling thread, unless the simulator starts it, and returns the
/// count the new thread gives back at its end ([`child_running`]; or
/// [`child_not_started`]).
pub(crate) fn child_starting() -> Option<Arc<AtomicU32>> {
    if OWN.try_with(|o| o.get()).unwrap_or(true) {
        return None;
    }
    let count = CHILDREN.try_with(|c| c.clone()).ok()?;
    count.fetch_add(1, Ordering::AcqRel);
    Some(count)
}

/// The thread [`child_starting`] counted was not started after all.
pub(crate) fn child_not_started(count: Arc<AtomicU32>) {
    count.fetch_sub(1, Ordering::Release);
}

/// Called first thing on the counted thread: it gives `count` back when it
/// ends.
pub(crate) fn child_running(count: Arc<AtomicU32>) {
    let held = count.clone();
    match STARTER.try_with(|s| s.0.replace(Some(held))) {
        Ok(None) => {}
        // Counted twice (cannot happen: one start routine a thread).
        Ok(Some(earlier)) => {
            earlier.fetch_sub(1, Ordering::Release);
        }
        // The thread-local is gone: nothing would give the count back.
        Err(_) => {
            count.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Whether a thread the calling thread started outside any simulation is
/// still running.
pub(crate) fn children_running() -> bool {
    CHILDREN
        .try_with(|c| c.load(Ordering::Acquire) > 0)
        .unwrap_or(false)
}

/// Waits in the kernel while `word` holds `expected`, for at most `limit`
/// (a futex word shared with a thread outside the simulation), as a raw
/// system call: the `futex` and `syscall` symbols are the simulation's.
/// `false` when the whole `limit` passed; `true` when the wait ended before
/// (a wake, a signal, or the word no longer held `expected`).
pub(crate) fn wait_outside(word: &AtomicU32, expected: u32, limit: Duration) -> bool {
    let ts = libc::timespec {
        tv_sec: limit.as_secs() as libc::time_t,
        tv_nsec: limit.subsec_nanos() as libc::c_long,
    };
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let ret: i64;
        // SAFETY: the x86_64 Linux system-call convention (number in rax,
        // arguments in rdi, rsi, rdx, r10; rcx and r11 clobbered). `word` is
        // a live, aligned 32-bit atomic and `ts` a valid relative timeout,
        // both outliving the call; the kernel reads them and writes nothing.
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") libc::SYS_futex => ret,
                in("rdi") word.as_ptr(),
                in("rsi") libc::FUTEX_WAIT,
                in("rdx") expected,
                in("r10") &ts as *const libc::timespec,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret != -(libc::ETIMEDOUT as i64)
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = ts;
        std::thread::yield_now();
        word.load(Ordering::SeqCst) != expected
    }
}

/// Sleeps `d` of real time, whatever the calling thread's simulation.
pub(crate) fn pause(d: Duration) {
    let word = AtomicU32::new(0);
    wait_outside(&word, 0, d);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread started outside any simulation (through the interposed
    /// `pthread_create`) counts for its starter until it ends; one the
    /// simulator starts does not.
    #[test]
    fn a_started_thread_counts_until_it_ends() {
        std::thread::spawn(|| {
            assert!(!children_running());
            let (go, wait) = std::sync::mpsc::channel::<()>();
            let child = std::thread::spawn(move || wait.recv().unwrap());
            assert!(children_running());
            go.send(()).unwrap();
            child.join().unwrap();
            assert!(!children_running());
            let (go, wait) = std::sync::mpsc::channel::<()>();
            let own = own_thread(|| std::thread::spawn(move || wait.recv().unwrap()));
            assert!(!children_running());
            go.send(()).unwrap();
            own.join().unwrap();
        })
        .join()
        .unwrap();
    }
}
