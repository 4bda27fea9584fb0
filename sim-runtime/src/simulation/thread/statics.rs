//! Which futex words are process-wide: a word in the writable segment of a
//! loaded object (a `static`'s lock: std's stdout and environment locks,
//! tracing's registries, a `OnceLock`) is shared by every run in the
//! process, so a thread outside this run may hold it for a moment. A word
//! on the heap or a stack belongs to the run that allocated it.
//!
//! The answer is a property of the program, not of timing: the segments
//! are read once per process.
//!
//! A wait on such a word is first waited out for real ([`wait_for_outside`]):
//! an outside holder releases it within moments, and the run then goes on
//! as if it had never been held, so no decision of the run depends on how
//! long another thread of the process held a lock (a run that let its
//! other threads or its clock move meanwhile would differ from its replay).

use super::gate;
use super::spin::SpinCell;
use crate::simulation::core::watchdog;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::time::Duration;

/// The writable segments of every object loaded when first asked (the
/// program, its shared libraries), as `[start, end)` address ranges,
/// sorted. Published through an atomic pointer, not a `OnceLock`: a
/// `OnceLock` another thread is filling is a futex wait, which would ask
/// this again.
fn segments() -> &'static [(usize, usize)] {
    static SEGMENTS: AtomicPtr<Vec<(usize, usize)>> = AtomicPtr::new(std::ptr::null_mut());
    let found = SEGMENTS.load(Ordering::Acquire);
    if !found.is_null() {
        // SAFETY: a published list is leaked, never freed or changed.
        return unsafe { &*found };
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    // SAFETY: the callback gets a valid `dl_phdr_info` for the duration of
    // each call, and `data` is `out`, alive for the whole iteration.
    unsafe {
        libc::dl_iterate_phdr(
            Some(each_object),
            (&mut out as *mut Vec<(usize, usize)>).cast(),
        );
    }
    out.sort_unstable();
    let mine = Box::into_raw(Box::new(out));
    match SEGMENTS.compare_exchange(
        std::ptr::null_mut(),
        mine,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just published, leaked from here on.
        Ok(_) => unsafe { &*mine },
        Err(theirs) => {
            // SAFETY: `mine` was never shared; `theirs` is published.
            unsafe {
                drop(Box::from_raw(mine));
                &*theirs
            }
        }
    }
}

/// Records `info`'s writable loaded segments into the `Vec` at `data`.
///
/// # Safety
///
/// As `dl_iterate_phdr` calls it: `info` is valid for the call, and `data`
/// is the `Vec<(usize, usize)>` that [`segments`] passed.
unsafe extern "C" fn each_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid `info` whose `dlpi_phdr` has
    // `dlpi_phnum` entries; `data` is the `Vec` `segments` passed.
    unsafe {
        let info = &*info;
        let out = &mut *data.cast::<Vec<(usize, usize)>>();
        let headers = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
        for h in headers {
            if h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_W != 0 {
                let start = info.dlpi_addr as usize + h.p_vaddr as usize;
                out.push((start, start + h.p_memsz as usize));
            }
        }
    }
    0
}

/// Whether `addr` lies in a `static` of some loaded object.
pub(crate) fn is_static(addr: usize) -> bool {
    let segs = segments();
    let i = segs.partition_point(|&(start, _)| start <= addr);
    i > 0 && addr < segs[i - 1].1
}

/// How long a wait on a process-wide word waits for real for a holder
/// outside the run before it concludes that a thread of the run holds it.
const PATIENCE: Duration = Duration::from_secs(2);
const STEP: Duration = Duration::from_millis(20);

/// Process-wide words found held by a thread of a run (a `static` lock a
/// simulated thread held across a hand-off, a `static` condition variable
/// that only the run signals): later waits on them skip the real wait.
static HELD_INSIDE: WordSet = SpinCell::new(BTreeSet::new());

/// Waits for real, up to [`PATIENCE`], while the process-wide word `word`
/// holds `expected`, the calling thread keeping the baton. `true` when it
/// changed or was woken from outside (the caller looks again, as after
/// any futex wake); `false` when it did not: a thread of the run holds it,
/// and the wait is the run's to schedule.
pub(crate) fn wait_for_outside(word: &AtomicU32, expected: u32) -> bool {
    let addr = word.as_ptr() as usize;
    if HELD_INSIDE.with(|s| s.contains(&addr)) {
        return false;
    }
    let mut left = PATIENCE;
    loop {
        if word.load(Ordering::SeqCst) != expected {
            return true;
        }
        if gate::wait_outside(word, expected, STEP) {
            // A wake from outside (a release may leave the word as it was:
            // a reader-writer lock's counter), or a signal: the caller looks
            // again, as after any futex wake.
            return true;
        }
        left = left.saturating_sub(STEP);
        if left.is_zero() {
            break;
        }
    }
    HELD_INSIDE.with(|s| {
        if s.len() < 4096 {
            s.insert(addr);
        }
    });
    false
}

/// How long in all a run waits for other runs of the process that still
/// move, on a process-wide word (below).
const OTHERS_LIMIT: Duration = Duration::from_secs(60);

/// A run in which nothing can move waits on a process-wide word (a `static`
/// lock) that one of its threads is blocked on. Another simulation in the
/// process may hold that word across its own hand-offs, for as long as its
/// turns last, which under a loaded machine can be longer than the run's
/// patience (2 s): while another run still moves, the wait is not counted
/// against that patience (up to [`OTHERS_LIMIT`]). When no other run moves
/// (none exists, or they are all stuck), the patience runs out as before and
/// the run is declared deadlocked.
pub(crate) struct Others {
    seen: u64,
    waited: Duration,
}

impl Others {
    pub(crate) fn new() -> Others {
        Others {
            seen: watchdog::moves(),
            waited: Duration::ZERO,
        }
    }

    /// After a wait of `step` on the word at `addr`: whether another run
    /// moved meanwhile and the word is process-wide, so that the wait does
    /// not count against the run's patience.
    pub(crate) fn moved(&mut self, addr: usize, step: Duration) -> bool {
        let now = watchdog::moves();
        let moved = now != self.seen;
        self.seen = now;
        if !moved || !is_static(addr) || self.waited >= OTHERS_LIMIT {
            return false;
        }
        self.waited += step;
        true
    }
}

/// A set of futex words shared by every run in the process.
pub(crate) type WordSet = SpinCell<BTreeSet<usize>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static LOCK: Mutex<u8> = Mutex::new(0);

    #[test]
    fn a_static_is_static_and_the_heap_and_stack_are_not() {
        assert!(is_static(&LOCK as *const _ as usize));
        let boxed = Box::new(Mutex::new(0u8));
        assert!(!is_static(&*boxed as *const _ as usize));
        let local = 7u32;
        assert!(!is_static(&local as *const _ as usize));
    }
}
