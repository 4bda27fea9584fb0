//! The calls a simulation refuses because they leave it: starting a process
//! (`posix_spawn`, `posix_spawnp`, `fork`: std's `Command`, and crates that
//! run a tool), and sleeping where no executor can move the clock (an
//! interception test's thread). Inside a
//! simulation each is recorded for the executor, which fails the run as a
//! forbidden operation naming the call, and explained on stderr at once; the
//! call returns an error (a process: `EAGAIN`) or at once (a sleep). Outside a
//! simulation, on any other thread, or inside `hooks::on_real_disk` (the
//! simulator's own work, such as the deadlock report's forked copy), each is
//! glibc's own.

use super::sys::{set_errno, Real};
use crate::simulation::core::hooks;
use libc::{c_char, c_int, pid_t, timespec};

static REAL_POSIX_SPAWN: Real = Real::new(c"posix_spawn");
static REAL_POSIX_SPAWNP: Real = Real::new(c"posix_spawnp");
static REAL_FORK: Real = Real::new(c"fork");

/// Whether a call made now is simulated code's.
#[inline]
pub(super) fn simulated() -> bool {
    hooks::active() && !hooks::real_disk()
}

fn say(line: &str) {
    // SAFETY: `line` is a valid byte slice for its whole length; a failed
    // or short write to stderr changes nothing here.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

fn refuse_process(call: &'static str) {
    hooks::note_process_attempt(call);
    say(&format!(
        "sim: a simulated task called {call} to start a process (std::process::Command, or a \
         crate that runs one): a child process is outside the simulation's control; the run \
         fails as a forbidden operation. See docs/breakage.md, \"Child processes\".\n"
    ));
}

pub(super) fn refuse_sleep(call: &'static str) {
    hooks::note_real_sleep_attempt(call);
    say(&format!(
        "sim: a simulated task called {call} (std::thread::sleep, or a crate that sleeps): it \
         would block the whole simulation in real time and move no virtual time; the run fails \
         as a forbidden operation. Use tokio::time::sleep.\n"
    ));
}

/// Whether `t` is a positive duration (a zero sleep blocks nothing).
///
/// # Safety
///
/// `t` is null or points to a readable `timespec`.
pub(super) unsafe fn positive(t: *const timespec) -> bool {
    // SAFETY: the caller's contract.
    !t.is_null() && unsafe { (*t).tv_sec > 0 || (*t).tv_nsec > 0 }
}

/// `posix_spawn(3)`.
///
/// # Safety
///
/// The C contract of `posix_spawn`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut pid_t,
    path: *const c_char,
    actions: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: *const *mut c_char,
    envp: *const *mut c_char,
) -> c_int {
    if simulated() {
        refuse_process("posix_spawn");
        return libc::EAGAIN;
    }
    // SAFETY: glibc's `posix_spawn`, called under the caller's contract.
    unsafe {
        real!(
            REAL_POSIX_SPAWN
                as fn(
                    *mut pid_t,
                    *const c_char,
                    *const libc::posix_spawn_file_actions_t,
                    *const libc::posix_spawnattr_t,
                    *const *mut c_char,
                    *const *mut c_char,
                ) -> c_int
        )(pid, path, actions, attr, argv, envp)
    }
}

/// `posix_spawnp(3)`: what std's `Command::spawn` uses on Linux.
///
/// # Safety
///
/// The C contract of `posix_spawnp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut pid_t,
    file: *const c_char,
    actions: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: *const *mut c_char,
    envp: *const *mut c_char,
) -> c_int {
    if simulated() {
        refuse_process("posix_spawnp");
        return libc::EAGAIN;
    }
    // SAFETY: glibc's `posix_spawnp`, called under the caller's contract.
    unsafe {
        real!(
            REAL_POSIX_SPAWNP
                as fn(
                    *mut pid_t,
                    *const c_char,
                    *const libc::posix_spawn_file_actions_t,
                    *const libc::posix_spawnattr_t,
                    *const *mut c_char,
                    *const *mut c_char,
                ) -> c_int
        )(pid, file, actions, attr, argv, envp)
    }
}

/// `fork(2)`: what std's `Command::spawn` falls back to (`pre_exec`, a
/// `uid`, ...).
///
/// # Safety
///
/// The C contract of `fork`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fork() -> pid_t {
    if simulated() {
        refuse_process("fork");
        set_errno(libc::EAGAIN);
        return -1;
    }
    // SAFETY: glibc's `fork`, which has no arguments.
    unsafe { real!(REAL_FORK as fn() -> pid_t)() }
}
