//! A value shared by every run in the process, guarded by a spin lock. A
//! std lock here would itself be a futex wait of the simulation (of the
//! run that asks), and these values are what such waits consult: the
//! process-wide futex words (statics.rs), the threads a run ended, the
//! pool of signal stacks (altstack.rs). Every use holds it for a few
//! instructions of the simulator's own code.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct SpinCell<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is reached only while `busy` is held (`with`), by one
// thread at a time, which may be any thread: hence `T: Send`.
unsafe impl<T: Send> Sync for SpinCell<T> {}

impl<T> SpinCell<T> {
    pub(crate) const fn new(value: T) -> SpinCell<T> {
        SpinCell {
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// `f` on the value, with the spin lock held (released on unwind too).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        while self
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        struct Release<'a>(&'a AtomicBool);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _release = Release(&self.busy);
        // SAFETY: the spin lock is held until `_release` drops.
        f(unsafe { &mut *self.value.get() })
    }
}

#[cfg(test)]
mod tests {
    use super::SpinCell;

    #[test]
    fn threads_taking_turns_lose_no_update() {
        static CELL: SpinCell<u64> = SpinCell::new(0);
        let workers: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..10_000 {
                        CELL.with(|n| *n += 1);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(CELL.with(|n| *n), 40_000);
    }
}
