//! Destructors that may have to stop where they stand.
//!
//! When a node dies its threads stop at once and never run again; its
//! tasks are then dropped, and a destructor may wait for one of those
//! threads (fjall's database counts its workers down, RocksDB's joins its
//! background threads). On the real machine the process died before any
//! destructor ran. Here each dropped task's future is dropped on a stack of
//! its own ([`requesting`], [`run`]; the task is still reported cancelled to
//! its joiner): a destructor of a dead node that would wait (a futex wait
//! that blocks, a sleep, a yield, a join) stops there for good
//! ([`abandon`], called from thread/'s waits), and the run goes on with
//! what it had not freed left allocated.
//!
//! At the end of a run the tasks are dropped while their nodes' threads can
//! still run ([`Reaping::Ending`]): a destructor that stops a worker and
//! joins it completes; one that waits for what can never happen is left
//! as above, instead of ending the process with a deadlock report.
//!
//! An abandoned stack is never freed or reused: a frame left on it may be
//! pointed to (a waiter in an intrusive list). It holds the little the
//! destructor had touched.

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

/// Why a destructor runs where it may be left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reaping {
    /// Its node died: it may not wait for anything.
    Dead,
    /// The run is ending: it may wait for its node's threads, not for good.
    Ending,
}

/// Where [`abandon`] suspends to: the yielder of the running stack.
type Suspend = NonNull<Yielder<(), ()>>;

/// Room for deep destructors (a long list dropped recursively); only the
/// pages touched are ever resident.
const STACK: usize = 8 << 20;

thread_local! {
    /// Set while a dying node's (or an ending run's) tasks are dropped: a
    /// task cancelled meanwhile drops its future through [`run`]
    /// (task/raw.rs), and is reported cancelled to its joiner whether its
    /// destructor finished or was left.
    static REQUESTED: Cell<Option<Reaping>> = const { Cell::new(None) };
    /// The destructor running now on a stack of its own, on this thread.
    static REAPER: Cell<Option<(Suspend, Reaping)>> = const { Cell::new(None) };
    /// Destructors left so far on this thread ([`requesting`] compares).
    static LEFT: Cell<u64> = const { Cell::new(0) };
    /// A stack whose last destructor finished, for the next.
    static SPARE: RefCell<Option<DefaultStack>> = const { RefCell::new(None) };
}

// Kept by a fresh thread's reset: a stack whose last destructor finished.
crate::simulation::core::hooks::kept!(
    SPARE_KEPT: Option<DefaultStack>,
    take: || SPARE.try_with(|s| s.borrow_mut().take()).ok().flatten(),
    put: |v: Option<DefaultStack>| {
        let _ = SPARE.try_with(|s| *s.borrow_mut() = v);
    },
);

/// Runs `f` (the drop of a task) with every task future it cancels dropped
/// through [`run`] for `why`. `true` when one of them was left where it
/// would have waited.
pub(crate) fn requesting(why: Reaping, f: impl FnOnce()) -> bool {
    struct Restore(Option<Reaping>);
    impl Drop for Restore {
        fn drop(&mut self) {
            REQUESTED.with(|r| r.set(self.0));
        }
    }
    let before = LEFT.with(Cell::get);
    let _restore = Restore(REQUESTED.with(|r| r.replace(Some(why))));
    f();
    LEFT.with(Cell::get) != before
}

/// Whether a task cancelled now drops its future through [`run`], and why.
/// Never inside such a drop: a task a destructor cancels is dropped where
/// it stands, on the same stack.
pub(crate) fn requested() -> Option<Reaping> {
    if REAPER.with(|r| r.get()).is_some() {
        return None;
    }
    REQUESTED.with(|r| r.get())
}

/// Why the destructor running now may be left, if it runs on a stack of its
/// own.
pub(crate) fn reaping() -> Option<Reaping> {
    REAPER.with(|r| r.get().map(|(_, why)| why))
}

/// Leaves the destructor running now where it stands: control returns to
/// [`run`]'s caller, and this stack never runs again. The caller holds no
/// reference counted object of the run in its own frames (they would never
/// be released).
///
/// # Panics
///
/// When no destructor runs on a stack of its own ([`reaping`] is `None`).
pub(crate) fn abandon() -> ! {
    let (yielder, _) = REAPER
        .with(|r| r.get())
        .expect("abandon() outside a destructor run by reap::run");
    // SAFETY: the yielder lives on the coroutine's stack, which is the one
    // running now (`REAPER` is cleared whenever control leaves it).
    unsafe { yielder.as_ref() }.suspend(());
    unreachable!("an abandoned destructor is never resumed")
}

/// Runs `drop_it` (the drop of a task, in its node's context) on a stack of
/// its own. `true` when it finished; `false` when it was left ([`abandon`]).
/// A panic in it reaches the caller, as a direct drop's would.
pub(crate) fn run(why: Reaping, drop_it: impl FnOnce() + 'static) -> bool {
    if REAPER.with(|r| r.get()).is_some() {
        // A destructor that drops a task of another node that it kills: one
        // stack is enough (leaving it leaves both).
        drop_it();
        return true;
    }
    let stack = SPARE
        .with(|s| s.borrow_mut().take())
        .map_or_else(|| DefaultStack::new(STACK), Ok)
        .expect("a destructor's stack (mmap failed)");
    let mut co = Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
        struct Clear;
        impl Drop for Clear {
            fn drop(&mut self) {
                REAPER.with(|r| r.set(None));
            }
        }
        let _clear = Clear;
        REAPER.with(|r| r.set(Some((NonNull::from(yielder), why))));
        drop_it();
    });
    match co.resume(()) {
        CoroutineResult::Return(()) => {
            SPARE.with(|s| *s.borrow_mut() = Some(co.into_stack()));
            true
        }
        CoroutineResult::Yield(()) => {
            REAPER.with(|r| r.set(None));
            LEFT.with(|l| l.set(l.get() + 1));
            // SAFETY: nothing on the abandoned stack is dropped or used
            // again: its objects are leaked (never freed, so a pointer to
            // one still points to live memory), and the stack with them.
            unsafe { co.force_reset() };
            std::mem::forget(co.into_stack());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn a_finished_destructor_returns_and_its_stack_is_reused() {
        let dropped = Rc::new(Cell::new(0));
        for _ in 0..3 {
            let d = dropped.clone();
            assert!(run(Reaping::Dead, move || d.set(d.get() + 1)));
            assert!(SPARE.with(|s| s.borrow().is_some()));
        }
        assert_eq!(dropped.get(), 3);
        assert_eq!(reaping(), None);
    }

    #[test]
    fn an_abandoned_destructor_stops_where_it_stands() {
        let seen = Rc::new(Cell::new(None));
        let s = seen.clone();
        let finished = run(Reaping::Dead, move || {
            s.set(reaping());
            abandon();
        });
        assert!(!finished);
        assert_eq!(seen.get(), Some(Reaping::Dead));
        assert_eq!(reaping(), None);
        // The next destructor gets a fresh stack and runs.
        assert!(run(Reaping::Ending, || assert_eq!(
            reaping(),
            Some(Reaping::Ending)
        )));
    }

    #[test]
    fn a_panicking_destructor_reaches_the_caller() {
        let out = std::panic::catch_unwind(|| run(Reaping::Ending, || panic!("in drop")));
        assert!(out.is_err());
        assert_eq!(reaping(), None);
    }
}
