//! A task in one allocation, as Tokio lays them out: the header (what a
//! waker holds), the future, and the join slot (what the `JoinHandle`
//! reads), with one reference count between the executor, the handles and
//! the wakers.
//!
//! Three allocations per task (header, join state, boxed future) spread a
//! simulation of many tasks over more memory than the last-level cache holds;
//! one keeps a task's hot part (header and future) in one or two cache lines.
//!
//! ```text
//! #[repr(C)] TaskAlloc<F> { header: Header, stage: Stage<F>, join: JoinState<F::Output>, name }
//! ```
//!
//! `Header` is first, so a pointer to the allocation is a pointer to its
//! header; the header holds the allocation's vtable (poll, cancel, free) and
//! the offset of the join slot, so code that knows only the output type (the
//! `JoinHandle<T>`) or nothing (the executor, a waker) reaches its part.
//!
//! Who touches what:
//! - the header's atomics: anyone holding a reference (a waker may be on
//!   another thread);
//! - the stage (the future): the executor only, on the simulation's thread,
//!   one poll at a time (the executor takes its [`OwnedTask`] out of the slab
//!   while polling, so nothing else reaches it);
//! - the join slot: behind its mutex.

use super::join::{finish_in_place, JoinError, JoinState, Stage};
use super::Id;
use crate::simulation::core::executor::{self, reap, Header};
use crate::simulation::core::mem;
use crate::simulation::core::report;
use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::future::Future;
use std::mem::{offset_of, ManuallyDrop};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// What the header knows of its allocation's type.
pub(crate) struct TaskVtable {
    /// Polls the future (the executor, its [`OwnedTask`] in hand).
    poll: unsafe fn(NonNull<Header>, &mut Context<'_>) -> Poll<()>,
    /// Drops the future in place if it has not finished, and tells the
    /// joiner (cancelled, or the panic of the future's destructor).
    cancel: unsafe fn(NonNull<Header>),
    /// Frees the allocation (the last reference is gone).
    free: unsafe fn(NonNull<Header>),
}

#[repr(C)]
struct TaskAlloc<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
    join: JoinState<F::Output>,
    name: Option<Arc<str>>,
}

impl<F: Future> TaskAlloc<F> {
    const VTABLE: TaskVtable = TaskVtable {
        poll: Self::poll,
        cancel: Self::cancel,
        free: Self::free,
    };

    /// # Safety
    /// `ptr` is the header of a live `TaskAlloc<F>`.
    unsafe fn from_header<'a>(ptr: NonNull<Header>) -> &'a TaskAlloc<F> {
        // SAFETY: the header is the first field of the `#[repr(C)]`
        // allocation, so the two pointers are the same.
        unsafe { ptr.cast::<TaskAlloc<F>>().as_ref() }
    }

    /// # Safety
    /// As `TaskVtable::poll`: only the executor, one poll at a time.
    unsafe fn poll(ptr: NonNull<Header>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: see the module's comment: the executor alone reaches the
        // stage, and never re-entrantly.
        let this = unsafe { Self::from_header(ptr) };
        // SAFETY: the same rule: no other reference to the stage exists
        // while the executor polls.
        let stage = unsafe { &mut *this.stage.get() };
        let Stage::Running(fut) = stage else {
            return Poll::Ready(());
        };
        // SAFETY: the future is never moved out while running; it is only
        // dropped in place (`finish_in_place`), as pinning allows.
        let fut = unsafe { Pin::new_unchecked(fut) };
        let id = Id(this.header.id);
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                let _ = finish_in_place(stage);
                this.header.set_finished();
                this.join.complete(id, Ok(v));
                Poll::Ready(())
            }
            Err(payload) => {
                // Dropping a future that panicked may panic again; that
                // second panic is swallowed, as Tokio does.
                let _ = finish_in_place(stage);
                let text = report::payload_text(&*payload);
                this.header.set_finished();
                let observed = this.join.complete(id, Err(JoinError::panic(id, payload)));
                if observed {
                    executor::held_panic(id.0, this.name.as_deref(), &text);
                } else {
                    executor::unhandled_panic(id.0, this.name.as_deref(), &text);
                }
                Poll::Ready(())
            }
        }
    }

    /// # Safety
    /// As `TaskVtable::cancel`: the executor, not while polling.
    unsafe fn cancel(ptr: NonNull<Header>) {
        // SAFETY: as in `poll`.
        let this = unsafe { Self::from_header(ptr) };
        // SAFETY: as in `poll`: the executor alone reaches the stage.
        let stage = unsafe { &mut *this.stage.get() };
        if let Stage::Running(_) = stage {
            // Drop the future first (its destructors may spawn or wake), then
            // tell the joiner. A destructor that panics is contained and
            // reported to the joiner as the task's panic, as in Tokio.
            let dropped = match reap::requested() {
                None => finish_in_place(stage),
                Some(why) => {
                    let at = stage as *mut Stage<F> as usize;
                    match reap_stage(why, drop_stage::<F>, at) {
                        Some(dropped) => dropped,
                        None => {
                            // The future's destructor was left where it
                            // would have waited (a dead node's): its memory
                            // stays as it is, since something may still
                            // point into it, so the allocation is never
                            // freed (this reference is never given back).
                            this.header.refs.fetch_add(1, Ordering::Relaxed);
                            Ok(())
                        }
                    }
                }
            };
            this.header.set_finished();
            let id = Id(this.header.id);
            let err = match dropped {
                Ok(()) => JoinError::cancelled(id),
                Err(payload) => JoinError::panic(id, payload),
            };
            this.join.complete(id, Err(err));
        }
    }

    /// # Safety
    /// The last reference to a `TaskAlloc<F>` made by [`new_task`].
    unsafe fn free(ptr: NonNull<Header>) {
        let ptr = ptr.cast::<TaskAlloc<F>>();
        // SAFETY: made by `new_task` from `mem::alloc` with this layout and
        // initialised there; nobody refers to it any more.
        unsafe {
            std::ptr::drop_in_place(ptr.as_ptr());
            mem::dealloc(ptr.cast(), Layout::new::<TaskAlloc<F>>());
        }
    }
}

/// Drops the `Stage<F>` at address `at` in place ([`finish_in_place`]).
///
/// # Safety
///
/// `at` is a live `Stage<F>` that the caller lets go of (the executor's,
/// not while polling).
unsafe fn drop_stage<F: Future>(at: usize) -> std::thread::Result<()> {
    // SAFETY: the caller's contract.
    finish_in_place(unsafe { &mut *(at as *mut Stage<F>) })
}

/// Runs `drop_at(at)` (a task's future dropped on cancellation) on a stack
/// of its own (reap.rs): its result, or `None` when the destructor was left
/// where it would have waited. Not generic, so the stack's closure is
/// `'static` whatever the future borrows.
fn reap_stage(
    why: reap::Reaping,
    drop_at: unsafe fn(usize) -> std::thread::Result<()>,
    at: usize,
) -> Option<std::thread::Result<()>> {
    let out = std::rc::Rc::new(std::cell::RefCell::new(None));
    let o = out.clone();
    let finished = reap::run(why, move || {
        // SAFETY: `cancel`'s stage, which it lets go of (`drop_stage`).
        *o.borrow_mut() = Some(unsafe { drop_at(at) });
    });
    if finished {
        out.borrow_mut().take()
    } else {
        None
    }
}

/// The vtable of a header not yet in an allocation (never called: a header
/// is shared only once `new_task` set its own).
pub(crate) static UNSET: TaskVtable = TaskVtable {
    poll: unset_poll,
    cancel: unset,
    free: unset,
};

// SAFETY: no contract: it only panics (a header whose vtable is still unset
// was used before its allocation was made).
unsafe fn unset_poll(_: NonNull<Header>, _: &mut Context<'_>) -> Poll<()> {
    unreachable!("a task header used before its allocation")
}

// SAFETY: as `unset_poll`.
unsafe fn unset(_: NonNull<Header>) {
    unreachable!("a task header used before its allocation")
}

/// Allocates a task. `header` is filled in except its vtable, join offset and
/// reference count, set here (one reference: the returned [`OwnedTask`]).
pub(crate) fn new_task<F: Future>(mut header: Header, fut: F, name: Option<Arc<str>>) -> OwnedTask {
    header.init_raw(&TaskAlloc::<F>::VTABLE, offset_of!(TaskAlloc<F>, join), 1);
    // From the executor's pool (on huge pages), not a `Box`: see `mem`.
    let ptr = mem::alloc(Layout::new::<TaskAlloc<F>>()).cast::<TaskAlloc<F>>();
    // SAFETY: a fresh block with the layout of a `TaskAlloc<F>`.
    unsafe {
        ptr.as_ptr().write(TaskAlloc {
            header,
            stage: UnsafeCell::new(Stage::Running(fut)),
            join: JoinState::new(),
            name,
        })
    };
    let ptr = ptr.cast::<Header>();
    OwnedTask(TaskRef(ptr))
}

/// A counted reference to a task's allocation.
pub(crate) struct TaskRef(NonNull<Header>);

// SAFETY: a `TaskRef` reaches the header (atomics, and an `Arc` of what is
// shared with other threads), which is `Send + Sync`; the stage and the join
// slot are reached only through the types that guard them (`OwnedTask` on
// the simulation's thread, `JoinHandle<T>` with its own bounds). The last
// reference may free the allocation on another thread: by then the future is
// dropped (the executor cancels or finishes it before letting go), and an
// output is only kept while a `JoinHandle` (which takes it when dropped)
// holds a reference.
unsafe impl Send for TaskRef {}
// SAFETY: see `Send`.
unsafe impl Sync for TaskRef {}

impl TaskRef {
    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: a reference keeps the allocation alive.
        unsafe { self.0.as_ref() }
    }

    #[inline]
    pub(crate) fn as_ptr(&self) -> *const Header {
        self.0.as_ptr()
    }

    /// The join slot, for code that knows the output type.
    ///
    /// # Safety
    /// `T` is the task's output type.
    pub(crate) unsafe fn join<T>(&self) -> &JoinState<T> {
        let offset = self.header().join_offset();
        // SAFETY: the header records where `join: JoinState<T>` is.
        unsafe {
            &*self
                .0
                .as_ptr()
                .cast::<u8>()
                .add(offset)
                .cast::<JoinState<T>>()
        }
    }

    /// A waker for the task (a new reference).
    pub(crate) fn waker(&self) -> Waker {
        let r = self.clone();
        let ptr = r.0.as_ptr() as *const ();
        std::mem::forget(r);
        // SAFETY: `ptr` carries the reference just taken; `WAKER` releases it.
        unsafe { Waker::from_raw(RawWaker::new(ptr, &WAKER)) }
    }
}

impl Clone for TaskRef {
    #[inline]
    fn clone(&self) -> TaskRef {
        self.header().refs.fetch_add(1, Ordering::Relaxed);
        TaskRef(self.0)
    }
}

impl Drop for TaskRef {
    #[inline]
    fn drop(&mut self) {
        if self.header().refs.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            let free = self.header().vtable().free;
            // SAFETY: that was the last reference.
            unsafe { free(self.0) };
        }
    }
}

/// The executor's reference: the only one that polls the future, and whose
/// release drops an unfinished future (in place) first: a task the executor
/// lets go of is cancelled.
pub(crate) struct OwnedTask(TaskRef);

impl OwnedTask {
    #[inline]
    pub(crate) fn task(&self) -> &TaskRef {
        &self.0
    }

    /// A `JoinHandle<T>`'s reference; `T` must be the output type.
    pub(crate) fn handle_ref(&self) -> TaskRef {
        self.0.clone()
    }

    /// Polls the future with `cx`.
    #[inline]
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let poll = self.0.header().vtable().poll;
        // SAFETY: the executor's own reference, exclusive (`&mut`), polls.
        unsafe { poll(self.0 .0, cx) }
    }

    /// A waker borrowed for one poll: no reference is taken (the caller
    /// keeps `self` for as long as it uses it).
    #[inline]
    pub(crate) fn borrowed_waker(&self) -> ManuallyDrop<Waker> {
        // SAFETY: `ManuallyDrop` never releases the reference it did not
        // take; `self` keeps the allocation alive meanwhile.
        ManuallyDrop::new(unsafe {
            Waker::from_raw(RawWaker::new(self.0.as_ptr() as *const (), &WAKER))
        })
    }
}

impl Drop for OwnedTask {
    fn drop(&mut self) {
        let cancel = self.0.header().vtable().cancel;
        // SAFETY: the executor's reference, not polling (it is being dropped).
        unsafe { cancel(self.0 .0) };
    }
}

/// The one waker vtable of every simulated task: its data is the task's
/// header, holding a reference.
pub(crate) static WAKER: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

/// The header of a waker made with [`WAKER`].
///
/// # Safety
/// `waker.vtable()` is `&WAKER`.
#[inline]
pub(crate) unsafe fn waker_header(waker: &Waker) -> &Header {
    // SAFETY: such a waker's data is a live header (it holds a reference).
    unsafe { &*waker.data().cast::<Header>() }
}

/// # Safety
/// As `RawWakerVTable`'s: `data` is the header of a live task on which
/// the calling waker holds a reference.
unsafe fn waker_clone(data: *const ()) -> RawWaker {
    // SAFETY: `data` is a header with a reference (the waker being cloned).
    unsafe { &*data.cast::<Header>() }
        .refs
        .fetch_add(1, Ordering::Relaxed);
    RawWaker::new(data, &WAKER)
}

/// # Safety
/// As `waker_clone`; the waker's reference is consumed.
unsafe fn waker_wake(data: *const ()) {
    // SAFETY: as in `waker_clone`; the waker's reference is released here.
    unsafe {
        waker_wake_by_ref(data);
        waker_drop(data);
    }
}

/// # Safety
/// As `waker_clone`.
unsafe fn waker_wake_by_ref(data: *const ()) {
    // SAFETY: as in `waker_clone`.
    unsafe { &*data.cast::<Header>() }.schedule();
}

/// # Safety
/// As `waker_clone`; the waker's reference is released.
unsafe fn waker_drop(data: *const ()) {
    // SAFETY: the waker's reference, handed back to a `TaskRef` to release.
    drop(TaskRef(unsafe {
        NonNull::new_unchecked(data as *mut Header)
    }));
}
