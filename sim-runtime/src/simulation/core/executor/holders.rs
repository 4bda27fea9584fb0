//! Who holds what a blocked task waits for, found by experiment.
//!
//! The simulator cannot see inside a `tokio::sync` primitive (real Tokio's,
//! kept so types stay identical) or another crate's lock or channel: which
//! task holds a mutex's guard, which holds a channel's sender. But it can
//! ask: drop a task, and every task that waited on something it held is
//! woken (a guard's drop releases the lock, the last sender's drop closes
//! the channel, a task's end wakes its `JoinHandle`). Dropping is for good,
//! so each experiment runs in a forked copy of the process: the child drops
//! one task (or the main future), writes down which tasks its drop woke and
//! each wake's stack (return addresses), and exits at once without running
//! anything else. The parent is left as it was; it names, from the stack,
//! what was being dropped when the wake happened (`MutexGuard<()>`,
//! `Sender<u32>`), with symbols it loads once per process.
//!
//! This runs only when a run deadlocks, after the run's decisions are all
//! taken (nothing here reaches the fingerprint), and costs nothing before.
//! A child that does not finish in time (a destructor blocking on a lock
//! another thread of the parent held at the fork) is killed and said so.
//! `SIM_WAIT_PROBE=off` turns the experiment off; on a platform without
//! `fork` it is off.

use super::{Exec, NodeId, MAIN_SLOT, WAKE_BUF};
use std::fmt::Write;

/// Experiments run one at a time in the process.
static EXPERIMENTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// At most this many tasks are dropped in turn (each costs a fork).
const MAX_SUBJECTS: usize = 64;

/// How long one child may take (symbolizing its backtraces included).
#[cfg(unix)]
const CHILD_BUDGET_MS: i32 = 5_000;

/// The main future's id in the graph.
pub(super) const MAIN_ID: u64 = 0;

/// `waiter` was woken when `holder` was dropped, while `what` (a type's
/// name, when the backtrace had one) was being dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Held {
    pub waiter: u64,
    pub holder: u64,
    pub what: Option<String>,
}

/// The experiment's findings.
#[derive(Default, Debug)]
pub(super) struct Holders {
    pub edges: Vec<Held>,
    /// Said after the graph: subjects skipped, children that failed.
    pub notes: Vec<String>,
}

/// Whether the experiment is on (`SIM_WAIT_PROBE`, default on).
fn enabled() -> bool {
    cfg!(unix)
        && !matches!(
            std::env::var("SIM_WAIT_PROBE").as_deref(),
            Ok("off" | "0" | "false" | "no")
        )
}

impl Exec {
    /// Drops each live task (in id order) and then the main future, each
    /// in its own forked copy of the process, and returns who woke whom.
    /// `drop_main`, run only in a child, drops the main future in place
    /// (the child never returns to its frame).
    pub(super) fn find_holders(&self, drop_main: Option<&mut dyn FnMut()>) -> Holders {
        let mut found = Holders::default();
        if !enabled() {
            return found;
        }
        let mut subjects: Vec<(u64, u32, NodeId)> = {
            let core = self.core.borrow();
            core.slab
                .tasks
                .iter()
                .enumerate()
                .filter_map(|(slot, t)| t.as_ref().map(|t| (t, slot)))
                .filter(|(t, _)| t.future.is_some())
                .map(|(t, slot)| (t.id, slot as u32, t.node))
                .collect()
        };
        subjects.sort_unstable_by_key(|&(id, _, _)| id);
        if subjects.len() > MAX_SUBJECTS {
            found.notes.push(format!(
                "only the first {MAX_SUBJECTS} of {} tasks were dropped to find who holds what",
                subjects.len()
            ));
            subjects.truncate(MAX_SUBJECTS);
        }
        // One experiment at a time in the process: a fork while another
        // thread of ours is inside the backtrace crate would leave the copy
        // with its cache half written.
        let _one = EXPERIMENTS.lock().unwrap_or_else(|e| e.into_inner());
        // The watchdog must not take the parent's wait for a copy for a
        // blocked thread.
        self.progress.set_running(false);
        let mut drop_main = drop_main;
        let main = drop_main
            .is_some()
            .then_some((MAIN_ID, MAIN_SLOT, NodeId::MAIN));
        for (id, slot, node) in subjects.into_iter().chain(main) {
            let outcome = in_child(|| {
                if slot == MAIN_SLOT {
                    if let Some(f) = drop_main.as_mut() {
                        self.with_task(NodeId::MAIN, None, f);
                    }
                } else {
                    let task = self.core.borrow_mut().remove_task(slot);
                    self.with_task(node, Some(id), || drop(task));
                }
            });
            match outcome {
                Ok(woken) => {
                    found
                        .edges
                        .extend(woken.into_iter().filter(|(waiter, _)| *waiter != id).map(
                            |(waiter, ips)| Held {
                                waiter,
                                holder: id,
                                what: ips.and_then(|ips| dropped_type(frame_names(&ips))),
                            },
                        ))
                }
                Err(why) => found.notes.push(format!(
                    "dropping {} to see whom it wakes failed: {why}",
                    super::wait::name(id)
                )),
            }
        }
        self.progress.set_running(true);
        found.edges.sort_by_key(|e| (e.waiter, e.holder));
        found
            .edges
            .dedup_by(|a, b| a.waiter == b.waiter && a.holder == b.holder);
        found
    }
}

/// Starts recording the backtrace of every wake this thread buffers.
fn capture(on: bool) {
    WAKE_BUF.with(|b| {
        let mut b = b.borrow_mut();
        b.capture = on;
        b.buf.clear();
        b.traces.clear();
    });
}

/// What the wakes buffered since `capture(true)` woke: task ids (the main
/// future as `MAIN_ID`), each once, with its wake's stack.
fn woken() -> Vec<(u64, Option<String>)> {
    WAKE_BUF.with(|b| {
        let b = b.borrow();
        let mut out: Vec<(u64, Option<String>)> = Vec::new();
        for (i, &(slot, raw)) in b.buf.iter().enumerate() {
            let id = if slot == MAIN_SLOT {
                MAIN_ID
            } else {
                raw & !super::ABORT_BIT
            };
            if out.iter().any(|(w, _)| *w == id) {
                continue;
            }
            out.push((id, b.traces.get(i).cloned()));
        }
        out
    })
}

/// The wake's stack as return addresses, innermost first, written as
/// hex numbers separated by commas. Called only in the forked copy
/// (`capture` is set nowhere else); the parent, which has the same
/// addresses, names them (`frame_names`), so symbols are loaded once per
/// process and not once per copy.
pub(super) fn wake_trace() -> String {
    let mut ips = String::new();
    // SAFETY: the unsynchronized API requires that no other thread use
    // the backtrace crate at the same time: this runs only in the forked
    // copy, which has this one thread.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            let _ = write!(ips, "{:x},", frame.ip() as usize);
            true
        });
    }
    ips
}

/// The symbol names of a `wake_trace`'s addresses (inlined calls
/// included), innermost first, resolved lazily: the walk in
/// `dropped_type` stops after a few frames, and each resolved address may
/// load another part of the debug information.
fn frame_names(ips: &str) -> impl Iterator<Item = String> + '_ {
    ips.split(',')
        .filter_map(|ip| usize::from_str_radix(ip, 16).ok())
        .flat_map(|ip| {
            let mut names = Vec::new();
            // The debug information is on the real disk, not the node's.
            super::super::hooks::on_real_disk(|| {
                backtrace::resolve(ip as *mut std::ffi::c_void, |symbol| {
                    if let Some(name) = symbol.name() {
                        names.push(format!("{name:#}"));
                    }
                })
            });
            names
        })
}

/// The type being dropped when a wake happened, from the wake's stack
/// (symbol names, innermost first): walking outwards from the wake, the
/// drops up to the first one of a future (an `async` block or closure);
/// of those, the outermost from the same crate as the innermost (a
/// `Sender` rather than the channel's internal `Tx`, a `MutexGuard` rather
/// than the struct holding it).
pub(super) fn dropped_type(frames: impl IntoIterator<Item = String>) -> Option<String> {
    let mut chain: Vec<String> = Vec::new();
    for frame in frames {
        let frame = frame.trim();
        let ty = if let Some(rest) = frame.strip_prefix("core::ptr::drop_in_place<") {
            rest.strip_suffix('>')
        } else if frame.starts_with('<') && frame.ends_with(" as core::ops::drop::Drop>::drop") {
            frame
                .strip_prefix('<')
                .and_then(|f| f.strip_suffix(" as core::ops::drop::Drop>::drop"))
        } else {
            // Not a drop: the wake itself, or a drop's own code (a
            // release, a close) between two drops.
            continue;
        };
        let Some(ty) = ty else { continue };
        if ty.contains("{{closure}}") || ty.contains("{async") {
            break;
        }
        chain.push(ty.to_string());
    }
    let is_container = |t: &str| {
        ["core::", "alloc::", "std::"]
            .iter()
            .any(|p| t.starts_with(p))
    };
    let first = chain.iter().find(|t| !is_container(t))?;
    let krate = first.split("::").next().unwrap_or(first);
    let outer = chain
        .iter()
        .rev()
        .find(|t| !is_container(t) && t.split("::").next() == Some(krate))
        .unwrap_or(first);
    Some(outer.clone())
}

/// Runs `experiment` in a forked child with wake capture on, and returns
/// what it woke. The child writes one line per woken task (`id` and its
/// wake's stack or `-`) to a pipe and exits with `_exit`, running no
/// destructor, no `atexit` handler and no flush of the parent's buffers.
#[cfg(unix)]
fn in_child(experiment: impl FnOnce()) -> Result<Vec<(u64, Option<String>)>, String> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    // The simulator's own fork: inside `on_real_disk`, the interposer that
    // refuses simulated code's processes (libc/refused.rs) lets it through.
    // SAFETY: fork(2) has no memory-safety preconditions; the child below
    // only drops one task, writes to a pipe and calls `_exit`, and never
    // returns into the parent's frames.
    let pid = super::super::hooks::on_real_disk(|| unsafe { libc::fork() });
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: both descriptors were just opened by pipe(2) and are ours.
        unsafe {
            libc::close(read_fd);
            libc::close(write_fd);
        }
        return Err(format!("fork: {e}"));
    }
    if pid == 0 {
        child(read_fd, write_fd, experiment);
    }
    // SAFETY: the write end is ours and the child holds its own copy.
    unsafe { libc::close(write_fd) };
    let text = read_with_budget(read_fd);
    // SAFETY: the read end is ours; `pid` is our child, reaped here once
    // (after a kill when it ran over its budget).
    let status = unsafe {
        libc::close(read_fd);
        if text.is_err() {
            libc::kill(pid, libc::SIGKILL);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        status
    };
    let text = text?;
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err("the forked copy did not exit cleanly".into());
    }
    let mut woken = Vec::new();
    for line in text.lines() {
        let (id, what) = line.split_once(' ').unwrap_or((line, "-"));
        let Ok(id) = id.parse::<u64>() else { continue };
        woken.push((id, (what != "-").then(|| what.to_string())));
    }
    Ok(woken)
}

#[cfg(unix)]
fn child(read_fd: i32, write_fd: i32, experiment: impl FnOnce()) -> ! {
    // SAFETY: in the child: the read end is closed, and stdout and stderr
    // are pointed at /dev/null so that destructors and panic messages of
    // the experiment print nothing into the parent's output.
    unsafe {
        libc::close(read_fd);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if null >= 0 {
            libc::dup2(null, 1);
            libc::dup2(null, 2);
        }
    }
    capture(true);
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(experiment));
    let mut text = String::new();
    if ran.is_ok() {
        for (id, what) in woken() {
            let _ = writeln!(text, "{id} {}", what.as_deref().unwrap_or("-"));
        }
    }
    let mut bytes = text.as_bytes();
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live buffer of `bytes.len()` bytes and
        // `write_fd` the pipe's write end.
        let n = unsafe { libc::write(write_fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            break;
        }
        bytes = &bytes[n as usize..];
    }
    // SAFETY: `_exit` ends the child at once: nothing of the parent's state
    // (buffers, files, destructors) is flushed or run from this copy.
    unsafe { libc::_exit(if ran.is_ok() { 0 } else { 3 }) }
}

/// Reads the pipe to its end, within the child's budget.
#[cfg(unix)]
fn read_with_budget(fd: i32) -> Result<String, String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, CHILD_BUDGET_MS) };
        if ready == 0 {
            return Err(format!(
                "the forked copy did not finish within {} s (a destructor may block on \
                 something another thread held)",
                CHILD_BUDGET_MS / 1000
            ));
        }
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("poll: {e}"));
        }
        // SAFETY: `buf` is a live buffer of `buf.len()` bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => break,
            n if n < 0 => {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("read: {e}"));
            }
            n => out.extend_from_slice(&buf[..n as usize]),
        }
    }
    String::from_utf8(out).map_err(|e| e.to_string())
}

#[cfg(not(unix))]
fn in_child(_experiment: impl FnOnce()) -> Result<Vec<(u64, Option<String>)>, String> {
    Err("no fork on this platform".into())
}

#[cfg(test)]
mod tests {
    use super::dropped_type;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    #[test]
    fn the_dropped_type_is_the_outermost_of_the_innermost_crate() {
        let trace = "sim_runtime::simulation::executor::holders::wake_trace
sim_runtime::simulation::executor::header::Header::request
tokio::sync::mpsc::chan::Rx::close
<tokio::sync::mpsc::chan::Tx<T,S> as core::ops::drop::Drop>::drop
core::ptr::drop_in_place<tokio::sync::mpsc::chan::Tx<u32,tokio::sync::mpsc::bounded::Semaphore>>
core::ptr::drop_in_place<tokio::sync::mpsc::bounded::Sender<u32>>
core::ptr::drop_in_place<alloc::sync::Arc<my::State>>
core::ptr::drop_in_place<my::main::{{closure}}::{{closure}}>
core::ptr::drop_in_place<tokio::sync::mutex::MutexGuard<()>>";
        assert_eq!(
            dropped_type(lines(trace)).as_deref(),
            Some("tokio::sync::mpsc::bounded::Sender<u32>")
        );
        let guard = "<tokio::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop
core::ptr::drop_in_place<tokio::sync::mutex::MutexGuard<()>>
core::ptr::drop_in_place<my::main::{{closure}}>";
        assert_eq!(
            dropped_type(lines(guard)).as_deref(),
            Some("tokio::sync::mutex::MutexGuard<()>")
        );
        assert_eq!(dropped_type(lines("my::f\nmy::g")), None);
    }
}
