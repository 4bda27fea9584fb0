//! A task's header: what wakers hold, and the wake path into the run queue.

use super::*;

impl Header {
    pub(super) fn new(exec_id: u64, slot: u32, id: u64, shared: Arc<Shared>) -> Header {
        Header {
            refs: AtomicUsize::new(0),
            vtable: &raw::UNSET,
            join_offset: 0,
            exec_id,
            slot,
            id,
            finished: AtomicBool::new(false),
            shared,
        }
    }

    /// Set by `raw::new_task`, before the header is shared.
    pub(crate) fn init_raw(
        &mut self,
        vtable: &'static TaskVtable,
        join_offset: usize,
        refs: usize,
    ) {
        self.vtable = vtable;
        self.join_offset = join_offset;
        *self.refs.get_mut() = refs;
    }

    #[inline]
    pub(crate) fn vtable(&self) -> &'static TaskVtable {
        self.vtable
    }

    #[inline]
    pub(crate) fn join_offset(&self) -> usize {
        self.join_offset
    }

    pub(crate) fn schedule(&self) {
        self.request(self.id);
    }

    /// Sends a wake request (`raw`: the id, maybe with `ABORT_BIT`): to this
    /// thread's buffer when the executor is this thread's, else to the
    /// remote queue.
    pub(super) fn request(&self, raw: u64) {
        let local = WAKE_BUF
            .try_with(|b| match b.try_borrow_mut() {
                Ok(mut b) if b.exec_id == self.exec_id => {
                    b.push((self.slot, raw));
                    WAKE_PENDING.set(true);
                    true
                }
                _ => false,
            })
            .unwrap_or(false);
        if !local {
            let mut remote = self.shared.remote.lock().unwrap_or_else(|e| e.into_inner());
            // Rare (only another thread wakes this way): a scan is cheap.
            if !remote.contains(&(self.slot, raw)) {
                remote.push((self.slot, raw));
            }
            drop(remote);
            self.shared.has_remote.store(true, Ordering::Release);
        }
    }

    pub(crate) fn set_finished(&self) {
        self.finished.store(true, Ordering::Release);
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Asks the executor to drop the task at its next turn (the request
    /// marks the task aborted when the executor takes it, queued or not).
    pub(crate) fn abort(&self) {
        self.request(self.id | ABORT_BIT);
    }
}
