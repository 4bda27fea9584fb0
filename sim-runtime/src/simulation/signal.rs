//! `tokio::signal` under simulation: signals are delivered per node by the
//! simulation (`sim::signal(node, kind)`), never by the OS.
//!
//! As on Unix: a listener sees deliveries made after it was created, several
//! deliveries before it looks are coalesced into one, and a node that never
//! installed a handler for a terminating signal dies of it (the simulation
//! kills the node).
//!
//! Simulated code that signals its own process — `kill(getpid(), sig)`
//! (`libc::kill`, `nix::sys::signal::kill`) or `raise(sig)` — reaches
//! [`raise_on_current_node`] through the interposers in `intercept`: the
//! signal goes to the calling node, never to the OS.

use super::core::executor::{self, expect_current, Core, Death, Driver};
use super::core::node::NodeId;
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

static NEXT_LISTENER: AtomicU64 = AtomicU64::new(1);

/// The signals driver: per node, each signal number's handler state. A
/// node's dies with its process (a restarted process installs its handlers
/// afresh).
#[derive(Default)]
pub(crate) struct Signals {
    nodes: Vec<BTreeMap<i32, SignalSlot>>,
}

/// One signal number on one node.
#[derive(Default)]
pub(crate) struct SignalSlot {
    /// Deliveries so far (while handled).
    count: u64,
    /// A `signal()` listener was made: delivery no longer takes the
    /// default action.
    handled: bool,
    waiters: BTreeMap<u64, Waker>,
}

impl Signals {
    fn slot(&mut self, node: NodeId, signum: i32) -> &mut SignalSlot {
        if self.nodes.len() <= node.index() {
            self.nodes.resize_with(node.index() + 1, BTreeMap::new);
        }
        self.nodes[node.index()].entry(signum).or_default()
    }
}

impl Driver for Signals {
    fn create(_: &Core) -> Signals {
        Signals::default()
    }

    fn node_dying(&mut self, _: &mut Core, node: NodeId, _: Death, _: &mut Vec<Waker>) {
        if let Some(n) = self.nodes.get_mut(node.index()) {
            n.clear();
        }
    }

    fn describe_wait(&mut self, _: &Core, what: &'static str, signum: u64) -> Option<String> {
        (what == "signal").then(|| format!("signal {signum} (a tokio::signal listener)"))
    }
}

/// Whether `node` handles `signum` (a listener exists or existed in this
/// process).
pub(crate) fn handled(core: &mut Core, node: NodeId, signum: i32) -> bool {
    core.driver_if_used::<Signals>()
        .and_then(|s| s.nodes.get(node.index()))
        .and_then(|n| n.get(&signum))
        .is_some_and(|s| s.handled)
}

/// One registration for one signal number on one node.
#[derive(Debug)]
struct Listener {
    exec_id: u64,
    node: NodeId,
    signum: i32,
    id: u64,
    seen: u64,
}

impl Listener {
    #[track_caller]
    fn new(signum: i32) -> Listener {
        super::runtime::check_io();
        let exec = expect_current();
        let node = exec.current_node();
        let mut core = exec.core_mut();
        let slot = core.driver::<Signals>().slot(node, signum);
        slot.handled = true;
        let seen = slot.count;
        Listener {
            exec_id: exec.id,
            node,
            signum,
            id: NEXT_LISTENER.fetch_add(1, Ordering::Relaxed),
            seen,
        }
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        let Some(exec) = executor::current().filter(|e| e.id == self.exec_id) else {
            return Poll::Ready(None);
        };
        let mut core = exec.core_mut();
        let slot = core.driver::<Signals>().slot(self.node, self.signum);
        if slot.count > self.seen {
            self.seen = slot.count;
            slot.waiters.remove(&self.id);
            return Poll::Ready(Some(()));
        }
        slot.waiters.insert(self.id, cx.waker().clone());
        drop(core);
        exec.note_wait(executor::Wait::Driver("signal", self.signum as u64));
        Poll::Pending
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(exec) = executor::current().filter(|e| e.id == self.exec_id) {
            if let Some(mut core) = exec.try_core_mut() {
                if let Some(s) = core.driver_if_used::<Signals>() {
                    s.slot(self.node, self.signum).waiters.remove(&self.id);
                }
            }
        }
    }
}

/// Completes when this node receives SIGINT (ctrl-c).
pub async fn ctrl_c() -> io::Result<()> {
    let mut l = Listener::new(unix::SignalKind::interrupt().as_raw_value());
    poll_fn(|cx| l.poll_recv(cx)).await;
    Ok(())
}

/// Unix signals.
pub mod unix {
    use super::Listener;
    use std::io;
    use std::task::{Context, Poll};

    /// A signal number, as in Tokio.
    #[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
    pub struct SignalKind(i32);

    impl SignalKind {
        pub const fn from_raw(signum: i32) -> Self {
            SignalKind(signum)
        }
        pub const fn as_raw_value(&self) -> i32 {
            self.0
        }
        pub const fn alarm() -> Self {
            SignalKind(14)
        }
        pub const fn child() -> Self {
            SignalKind(17)
        }
        pub const fn hangup() -> Self {
            SignalKind(1)
        }
        pub const fn interrupt() -> Self {
            SignalKind(2)
        }
        pub const fn io() -> Self {
            SignalKind(29)
        }
        pub const fn pipe() -> Self {
            SignalKind(13)
        }
        pub const fn quit() -> Self {
            SignalKind(3)
        }
        pub const fn terminate() -> Self {
            SignalKind(15)
        }
        pub const fn user_defined1() -> Self {
            SignalKind(10)
        }
        pub const fn user_defined2() -> Self {
            SignalKind(12)
        }
        pub const fn window_change() -> Self {
            SignalKind(28)
        }

        /// What Linux does with this signal when no handler is installed
        /// (signal(7)).
        pub(crate) fn default_action(self) -> super::DefaultAction {
            use super::DefaultAction::*;
            match self.0 {
                // SIGCHLD, SIGURG, SIGWINCH.
                17 | 23 | 28 => Ignore,
                // SIGCONT.
                18 => Continue,
                // SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU.
                19..=22 => Stop,
                _ => Terminate,
            }
        }

        /// Whether the default action of this signal ends the process.
        pub(crate) fn terminates_by_default(self) -> bool {
            self.default_action() == super::DefaultAction::Terminate
        }
    }

    impl From<std::os::raw::c_int> for SignalKind {
        fn from(signum: std::os::raw::c_int) -> Self {
            Self::from_raw(signum)
        }
    }

    impl From<SignalKind> for std::os::raw::c_int {
        fn from(kind: SignalKind) -> Self {
            kind.as_raw_value()
        }
    }

    /// A stream of deliveries of one signal to this node.
    #[derive(Debug)]
    #[must_use = "streams do nothing unless polled"]
    pub struct Signal {
        listener: Listener,
    }

    /// Listens for `kind` on the current node. Installing the listener
    /// replaces the default action for the rest of the node's life, as on
    /// Unix. Refused with Tokio's errors: numbers up to 0 and the signals
    /// a process may not or should not handle (signal-hook's `FORBIDDEN`:
    /// SIGKILL, SIGSTOP, SIGILL, SIGFPE, SIGSEGV), and numbers from
    /// `SIGRTMAX` (64) up ("signal too large": Tokio keeps slots 0..64).
    #[track_caller]
    pub fn signal(kind: SignalKind) -> io::Result<Signal> {
        // Tokio finds its I/O driver before it looks at the number.
        crate::simulation::runtime::check_io();
        /// SIGILL, SIGFPE, SIGKILL, SIGSEGV, SIGSTOP.
        const FORBIDDEN: [i32; 5] = [4, 8, 9, 11, 19];
        /// `SIGRTMAX` on Linux: Tokio's table has this many slots.
        const SLOTS: i32 = 64;
        let signum = kind.as_raw_value();
        if signum <= 0 || FORBIDDEN.contains(&signum) {
            return Err(io::Error::other(format!(
                "Refusing to register signal {signum}"
            )));
        }
        if signum >= SLOTS {
            return Err(io::Error::other("signal too large"));
        }
        Ok(Signal {
            listener: Listener::new(signum),
        })
    }

    impl Signal {
        /// Receives the next signal notification; `None` once the simulation
        /// that delivered them is gone.
        pub async fn recv(&mut self) -> Option<()> {
            std::future::poll_fn(|cx| self.poll_recv(cx)).await
        }

        pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
            self.listener.poll_recv(cx)
        }
    }
}

/// What a signal does to a process that installed no handler for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultAction {
    Terminate,
    Ignore,
    /// The process stops until SIGCONT: the node is paused.
    Stop,
    /// A stopped process continues: the node resumes.
    Continue,
}

/// Delivers `kind` to `node`: listeners wake, or — with no handler
/// installed — the signal's default action: a terminating signal kills the
/// node, a stop signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) pauses it
/// (not the main node, which runs the test and cannot be paused: there it
/// is ignored), and SIGCHLD, SIGURG and SIGWINCH are ignored. SIGCONT
/// resumes a paused node whether or not it is handled, as on Unix.
pub(crate) fn deliver(node: NodeId, kind: unix::SignalKind) {
    let exec = expect_current();
    let action = kind.default_action();
    let (wakers, default) = {
        let mut core = exec.core_mut();
        core.decide(
            super::core::trace::Kind::Node,
            u64::from(node.as_u32()) << 8 | 0x40 | kind.as_raw_value() as u64,
        );
        let slot = core.driver::<Signals>().slot(node, kind.as_raw_value());
        if slot.handled {
            slot.count += 1;
            (std::mem::take(&mut slot.waiters), None)
        } else {
            (Default::default(), Some(action))
        }
    };
    if action == DefaultAction::Continue && exec.core().node(node).paused {
        exec.resume(node);
    }
    for (_, w) in wakers {
        w.wake();
    }
    match default {
        Some(DefaultAction::Terminate) => exec.kill(node),
        Some(DefaultAction::Stop) if node != NodeId::MAIN => exec.pause(node),
        _ => {}
    }
}

/// What became of a signal that simulated code sent to its own process.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Raised {
    /// No simulation runs on this thread: the caller sends the real signal.
    Outside,
    /// Accepted (signal 0 only checks that the process exists).
    Sent,
    /// Not a signal number (1..=64, or 0): `EINVAL`.
    Invalid,
}

/// The highest signal number on Linux (`SIGRTMAX`).
const SIGNUM_MAX: i32 = 64;

/// `kill(getpid(), signum)` or `raise(signum)` from simulated code: the
/// signal is delivered to the calling node, as `sim::signal(node, kind)`
/// would, by a scripted action (a task of the main node) that runs at the
/// current virtual time, once the caller yields. Tokio's listeners do not
/// see a signal before its driver next runs either (the OS handler only
/// writes to a pipe), so a listener created right after the call still
/// receives it. Without a handler, a terminating signal kills the node (on
/// the main node, which runs the test, the run fails with that reason).
/// A node that dies before the delivery (or is revived) does not get it.
pub(crate) fn raise_on_current_node(signum: i32) -> Raised {
    let Some(exec) = executor::current() else {
        return Raised::Outside;
    };
    if !(0..=SIGNUM_MAX).contains(&signum) {
        return Raised::Invalid;
    }
    if signum == 0 {
        return Raised::Sent;
    }
    // Called from C (an interposed libc function), where a panic cannot
    // unwind: a simulation whose state is borrowed right now (a destructor
    // run by the executor itself) gets the signal as if it had no node.
    let Some(core) = exec.try_core() else {
        return Raised::Outside;
    };
    let node = exec.current_node();
    let incarnation = core.node(node).incarnation;
    drop(core);
    let kind = unix::SignalKind::from_raw(signum);
    let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let now = super::control::elapsed();
        drop(super::control::at(now, move || {
            let exec = expect_current();
            let alive = {
                let core = exec.core();
                let n = core.node(node);
                n.alive && n.incarnation == incarnation
            };
            if alive {
                super::control::signal(node, kind);
            }
        }));
    }));
    match spawned {
        Ok(()) => Raised::Sent,
        Err(_) => Raised::Outside,
    }
}
