//! `tokio::signal` under simulation: signals are delivered per node by the
//! simulation (`sim::signal(node, kind)`), never by the OS.
//!
//! As on Unix: a listener sees deliveries made after it was created, several
//! deliveries before it looks are coalesced into one, and a node that never
//! installed a handler for a terminating signal dies of it (the simulation
//! kills the node).

use super::executor::{self, expect_current};
use super::node::NodeId;
use std::future::poll_fn;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

static NEXT_LISTENER: AtomicU64 = AtomicU64::new(1);

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
        let exec = expect_current();
        let node = exec.current_node();
        let mut core = exec.core.borrow_mut();
        let slot = core.node_mut(node).signals.entry(signum).or_default();
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
        let mut core = exec.core.borrow_mut();
        let slot = core
            .node_mut(self.node)
            .signals
            .entry(self.signum)
            .or_default();
        if slot.count > self.seen {
            self.seen = slot.count;
            slot.waiters.remove(&self.id);
            return Poll::Ready(Some(()));
        }
        slot.waiters.insert(self.id, cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(exec) = executor::current().filter(|e| e.id == self.exec_id) {
            if let Ok(mut core) = exec.core.try_borrow_mut() {
                if let Some(slot) = core.node_mut(self.node).signals.get_mut(&self.signum) {
                    slot.waiters.remove(&self.id);
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

        /// Whether the default action of this signal ends the process.
        pub(crate) fn terminates_by_default(self) -> bool {
            !matches!(self.0, 17 | 28 | 23)
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
    /// Unix. SIGKILL, SIGSTOP and invalid numbers are refused like Tokio.
    #[track_caller]
    pub fn signal(kind: SignalKind) -> io::Result<Signal> {
        let signum = kind.as_raw_value();
        if signum <= 0 || signum > 64 || signum == 9 || signum == 19 {
            return Err(io::Error::other(format!(
                "Refusing to register signal {signum}"
            )));
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

/// Delivers `kind` to `node`: listeners wake, or — with no handler installed
/// and a terminating signal — the node is killed.
pub(crate) fn deliver(node: NodeId, kind: unix::SignalKind) {
    let exec = expect_current();
    let (wakers, kill) = {
        let mut core = exec.core.borrow_mut();
        core.decide(
            super::trace::Kind::Node,
            u64::from(node.as_u32()) << 8 | 0x40 | kind.as_raw_value() as u64,
        );
        let slot = core
            .node_mut(node)
            .signals
            .entry(kind.as_raw_value())
            .or_default();
        if slot.handled {
            slot.count += 1;
            (std::mem::take(&mut slot.waiters), false)
        } else {
            (Default::default(), kind.terminates_by_default())
        }
    };
    for (_, w) in wakers {
        w.wake();
    }
    if kill {
        exec.kill(node);
    }
}
