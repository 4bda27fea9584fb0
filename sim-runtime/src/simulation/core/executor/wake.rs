//! The wake path into the run queue: a wake made inside this executor's
//! poll goes to a thread-local buffer, drained into the run queue after the
//! poll (sorted by task id, so the order in which a library calls wakers
//! never leaks into the schedule); a wake from another thread goes to the
//! remote queue (header.rs) and is recorded as a decision when taken.

use super::*;

pub(super) struct WakeBuf {
    pub(super) exec_id: u64,
    pub(super) buf: Vec<(u32, u64)>,
    /// Set only in a forked copy probing who holds what (holders.rs): each
    /// wake pushed also pushes its backtrace to `traces`.
    pub(super) capture: bool,
    pub(super) traces: Vec<String>,
}

impl WakeBuf {
    #[inline]
    pub(super) fn push(&mut self, wake: (u32, u64)) {
        self.buf.push(wake);
        if self.capture {
            self.trace();
        }
    }

    #[cold]
    fn trace(&mut self) {
        self.traces.push(holders::wake_trace());
    }
}

thread_local! {
    pub(super) static WAKE_BUF: RefCell<WakeBuf> = const {
        RefCell::new(WakeBuf { exec_id: 0, buf: Vec::new(), capture: false, traces: Vec::new() })
    };
    /// Set whenever a wake is pushed to `WAKE_BUF`: while it is clear, the
    /// buffer is empty.
    pub(super) static WAKE_PENDING: Cell<bool> = const { Cell::new(false) };
}

crate::simulation::core::hooks::carried!(
    WAKE_CARRIED: (WakeBuf, bool),
    take: || (
        WAKE_BUF.with(|b| {
            std::mem::replace(
                &mut *b.borrow_mut(),
                WakeBuf { exec_id: 0, buf: Vec::new(), capture: false, traces: Vec::new() },
            )
        }),
        WAKE_PENDING.replace(false),
    ),
    put: |(buf, pending): (WakeBuf, bool)| {
        WAKE_BUF.with(|b| *b.borrow_mut() = buf);
        WAKE_PENDING.set(pending);
    },
);

impl Exec {
    /// Wakes task `id` in `slot` (as its waker would): through the buffer
    /// when this executor is entered, so it is ordered with the other wakes
    /// of the poll.
    pub(super) fn push_wake(&self, slot: u32, id: u64) {
        let local = WAKE_BUF.with(|b| {
            let mut b = b.borrow_mut();
            if b.exec_id == self.id {
                b.push((slot, id));
                WAKE_PENDING.set(true);
                true
            } else {
                false
            }
        });
        if !local {
            self.core.borrow_mut().take_request(slot, id);
        }
    }

    /// Moves wakes into the run queue. Wakes made during one poll are sorted
    /// by task id first, so the order in which a library happens to call
    /// wakers (e.g. across the shards of a `watch` channel) never leaks into
    /// the schedule; timer wakes keep their seeded order.
    #[inline]
    pub(super) fn drain_wakes(&self, sort: bool) {
        // Most steps buffer nothing and no foreign thread woke anything: a
        // flag without a destructor is cheaper to read than the buffer's
        // thread-local, and a plain load cheaper than the swap.
        if WAKE_PENDING.get() || self.shared.has_remote.load(Ordering::Acquire) {
            self.drain_wakes_now(sort);
        }
    }

    #[inline(never)]
    fn drain_wakes_now(&self, sort: bool) {
        let remote = self.shared.has_remote.load(Ordering::Acquire)
            && self.shared.has_remote.swap(false, Ordering::AcqRel);
        WAKE_PENDING.set(false);
        WAKE_BUF.with(|b| {
            let mut b = b.borrow_mut();
            if b.buf.is_empty() && !remote {
                return;
            }
            // No user code runs below: holding both borrows is fine.
            let mut core = self.core.borrow_mut();
            if b.buf.len() == 1 {
                // The common case (one task woke itself or one other).
                let (slot, raw) = b.buf[0];
                b.buf.clear();
                core.take_request(slot, raw);
            } else {
                if sort {
                    b.buf.sort_unstable_by_key(|&(_, raw)| raw & !ABORT_BIT);
                }
                for &(slot, raw) in b.buf.iter() {
                    core.take_request(slot, raw);
                }
                b.buf.clear();
            }
            if remote {
                let remote = std::mem::take(
                    &mut *self.shared.remote.lock().unwrap_or_else(|e| e.into_inner()),
                );
                for (slot, raw) in remote {
                    core.decide(Kind::RemoteWake, raw & !ABORT_BIT);
                    core.take_request(slot, raw);
                }
            }
        });
    }

    /// Wakes `wakers` in their order and empties the list, as calling each
    /// and then `drain_wakes(false)` would, but its own tasks go straight to
    /// the run queue (with their slab entries and headers fetched ahead when
    /// the list is long). Expects no wake buffered.
    pub(super) fn wake_in_order(&self, wakers: &mut Vec<WakeRef>) {
        let n = wakers.len();
        let prefetching = n > self.core.borrow().prefetch_min;
        let mut i = 0;
        while i < n {
            {
                let mut core = self.core.borrow_mut();
                while i < n {
                    let WakeRef::Task { slot, id } = wakers[i] else {
                        break;
                    };
                    if prefetching {
                        core.prefetch_wake(wakers.get(i + 8));
                    }
                    core.take_request(slot, id);
                    i += 1;
                }
            }
            if i < n {
                // Another waker: it runs user code, outside the borrow, and
                // what it wakes queues before the wakes after it.
                if let WakeRef::Other(w) = &wakers[i] {
                    w.wake_by_ref();
                }
                self.drain_wakes(false);
                i += 1;
            }
        }
        wakers.clear();
    }

    /// Wakes what `w` stands for, as its waker would: a task that has
    /// finished or was dropped since is not woken.
    pub(crate) fn wake(&self, w: WakeRef) {
        match w {
            WakeRef::Task { slot, id } => self.push_wake(slot, id),
            WakeRef::Other(w) => w.wake(),
        }
    }
}

impl Core {
    /// Takes wake requests (from the buffer or the remote queue) into the
    /// run queue, in their order.
    pub(super) fn take_requests(&mut self, requests: impl IntoIterator<Item = (u32, u64)>) {
        for (slot, raw) in requests {
            self.take_request(slot, raw);
        }
    }

    /// Takes one wake request: the task goes to the run queue unless it is
    /// already there (or gone); `ABORT_BIT` marks it aborted first.
    #[inline]
    pub(super) fn take_request(&mut self, slot: u32, raw: u64) {
        let id = raw & !ABORT_BIT;
        if slot == MAIN_SLOT {
            if !self.main.queued {
                self.main.queued = true;
                self.run_queue.push_back((slot, id));
            }
            return;
        }
        if let Some(Some(t)) = self.slab.tasks.get_mut(slot as usize) {
            if t.id == id {
                t.aborted |= raw & ABORT_BIT != 0;
                if !t.queued {
                    t.queued = true;
                    self.run_queue.push_back((slot, id));
                }
            }
        }
    }

    /// Keeps `waker` as a [`WakeRef`].
    #[inline]
    pub(crate) fn wake_ref(&self, waker: &Waker) -> WakeRef {
        let (data, slot, id) = self.polling;
        let ours = std::ptr::eq(waker.vtable(), &raw::WAKER);
        if ours && std::ptr::eq(waker.data(), data) {
            return WakeRef::Task { slot, id };
        }
        if ours {
            // SAFETY: the vtable is `raw::WAKER`: the data is a live header
            // (the waker holds a reference for this call).
            let h = unsafe { raw::waker_header(waker) };
            if h.exec_id == self.exec_id {
                return WakeRef::Task {
                    slot: h.slot,
                    id: h.id,
                };
            }
        }
        WakeRef::Other(waker.clone())
    }

    /// Asks the CPU to fetch the slab entry of `next`, a wake to come.
    #[inline]
    fn prefetch_wake(&self, next: Option<&WakeRef>) {
        if let Some(&WakeRef::Task { slot, .. }) = next {
            if let Some(entry) = self.slab.tasks.get(slot as usize) {
                prefetch(entry as *const Option<Task>);
            }
        }
    }
}
