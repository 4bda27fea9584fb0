//! What reports say about simulated threads: where each was started (its
//! creator's stack, recorded unresolved), and the futex words threads of
//! ended runs were left blocked on.

use super::spin::SpinCell;
use super::statics::WordSet;
use crate::simulation::core::hooks;
use std::collections::BTreeSet;

/// The return addresses of the calling stack, innermost first (at most 32).
pub(super) fn started_by() -> Vec<usize> {
    let mut ips = Vec::with_capacity(32);
    // SAFETY: the unsynchronized walk is unsafe for the backends that
    // need a lock (Windows' dbghelp); on Linux it is `_Unwind_Backtrace`,
    // which any thread may call at any time. The closure only records
    // addresses.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            ips.push(frame.ip() as usize);
            ips.len() < 32
        });
    }
    ips
}

/// Where a thread was started: the first frame of `ips` outside std, the
/// simulator and the unwinder, as `file:line`.
pub(super) fn start_site(ips: &[usize]) -> Option<String> {
    let mut site = None;
    for &ip in ips {
        hooks::on_real_disk(|| {
            backtrace::resolve(ip as *mut std::ffi::c_void, |symbol| {
                if site.is_some() {
                    return;
                }
                let (Some(file), Some(line)) = (symbol.filename(), symbol.lineno()) else {
                    return;
                };
                let file = file.to_string_lossy();
                let ours = [
                    "/rustc/",
                    "/sim-runtime/src/",
                    "/backtrace-",
                    "/library/std/",
                ];
                if !ours.iter().any(|o| file.contains(o)) {
                    site = Some(format!("{file}:{line}"));
                }
            })
        });
        if site.is_some() {
            break;
        }
    }
    site
}

/// Futex words that threads were blocked on when their run ended (they
/// never run again): a later run that wakes one is handing work to a
/// thread that is gone, as with a process-wide pool (rayon's global pool)
/// that an earlier run started. Bounded; guarded by a spin lock, since a
/// std lock here would itself be a simulated futex.
pub(super) static ORPHAN_WORDS: WordSet = SpinCell::new(BTreeSet::new());
