//! The alternate signal stacks of simulated threads, kept in a pool.
//!
//! std gives every thread it starts an alternate signal stack (where its
//! handler prints "stack overflow"): a mapping of its own plus a guard
//! page, unmapped when the thread's start routine returns. A simulated
//! thread killed where it stands never returns, so each killed std thread
//! would leave two mappings behind, until the process reaches the kernel's
//! limit (`vm.max_map_count`, 65,530 by default) and can map nothing more:
//! a sweep that kills threads failed after about 10,000 seeds.
//!
//! std makes no stack for a thread that already has one, so the trampoline
//! installs one of these first ([`install`]), and the thread gives it back
//! when it ends or dies ([`release`]): the pool holds as many stacks as
//! simulated threads ever ran at once in the process.

use super::spin::SpinCell;
use std::cell::Cell;

thread_local! {
    /// The pool's stack this thread runs with (0: none).
    static MINE: Cell<usize> = const { Cell::new(0) };
}

/// Stacks not in use, by address.
static POOL: SpinCell<Vec<usize>> = SpinCell::new(Vec::new());

/// The size std gives its stacks (`SIGSTKSZ`, or the kernel's minimum for
/// this CPU's signal frame if larger).
fn size() -> usize {
    // SAFETY: `getauxval` reads the process's auxiliary vector.
    let min = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    libc::SIGSTKSZ.max(min)
}

fn page() -> usize {
    // SAFETY: `sysconf` has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// A new stack with a guard page below it, as std maps its own; `None` if
/// the process cannot map one (std then makes its own, as without the pool).
fn map() -> Option<usize> {
    let (size, page) = (size(), page());
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    unsafe {
        let base = libc::mmap(
            std::ptr::null_mut(),
            page + size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return None;
        }
        if libc::mprotect(base, page, libc::PROT_NONE) != 0 {
            libc::munmap(base, page + size);
            return None;
        }
        Some(base as usize + page)
    }
}

/// Gives the calling thread (a simulated thread before its start routine)
/// an alternate signal stack from the pool, unless it has one already.
pub(super) fn install() {
    // SAFETY: an all-zero `stack_t` is a valid value (null, no flags).
    let mut now: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: `sigaltstack` reads and writes only the structures passed.
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut now) } != 0
        || now.ss_flags & libc::SS_DISABLE == 0
    {
        return;
    }
    let Some(sp) = POOL.with(Vec::pop).or_else(map) else {
        return;
    };
    let stack = libc::stack_t {
        ss_sp: sp as *mut libc::c_void,
        ss_flags: 0,
        ss_size: size(),
    };
    // SAFETY: as above; the stack is mapped and the pool's alone.
    if unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) } != 0 {
        POOL.with(|p| p.push(sp));
        return;
    }
    let _ = MINE.try_with(|m| m.set(sp));
}

/// The calling thread ends or dies: it stops using the pool's stack and
/// gives it back. Runs none of the program's code.
pub(super) fn release() {
    let sp = MINE.try_with(|m| m.replace(0)).unwrap_or(0);
    if sp == 0 {
        return;
    }
    let off = libc::stack_t {
        ss_sp: std::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    // SAFETY: as in `install`; the thread is not on its signal stack (it
    // runs the simulator's code, outside any handler).
    if unsafe { libc::sigaltstack(&off, std::ptr::null_mut()) } == 0 {
        POOL.with(|p| p.push(sp));
    }
}
