//! Every call of the control API that changes the simulated world — a
//! fault, a heal, a lifecycle step (`sim::crash`, `sim::net::partition`,
//! `sim::fs::fail_syncs`, ...) — is announced here before it acts: logged
//! (target `sim`, one line: what, then its arguments as `name=value`) and
//! shown to this thread's observer, if one is set.
//!
//! The observer is how a harness sees the calls without wrapping them:
//! sim-harness re-exports this API as it is and sets an observer that draws
//! the calls on the timeline, remembers what its heal must undo, and fails a
//! fault injected after the heal (the liveness phase). Whoever calls — the
//! test, a fault plan, a service's own test helper — goes through the same
//! door.

use super::core::node::NodeId;
use std::cell::RefCell;
use std::rc::Rc;

/// One call of the control API, as the observer sees it.
#[derive(Debug)]
pub struct Call<'a> {
    /// What it does, in a few words (`"partition"`, `"crash"`,
    /// `"refuse connects"`, `"disk: fail syncs"`, ...).
    pub what: &'static str,
    /// The nodes it names, in argument order.
    pub nodes: &'a [NodeId],
    /// Its arguments, by name, as text (nodes by name), in order.
    pub args: &'a [(&'static str, String)],
    /// Whether it injects a fault. Healing calls (heal, unclog, resume,
    /// restart, clearing a fault) and settings that are the network rather
    /// than a fault (latency, routes) do not.
    pub injects: bool,
}

impl Call<'_> {
    /// The argument called `name`.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What sees every call on this thread.
pub type Observer = Rc<dyn Fn(&Call<'_>)>;

thread_local! {
    static OBSERVER: RefCell<Option<Observer>> = const { RefCell::new(None) };
}

/// Sets (or, with `None`, clears) this thread's observer; returns the one
/// it replaces. Simulations run one at a time on a thread, so a harness
/// sets it before each run.
pub fn set_observer(observer: Option<Observer>) -> Option<Observer> {
    OBSERVER.with(|o| o.replace(observer))
}

/// Announces a call: logs it, then shows it to the observer (which may
/// panic to refuse it: the call then does not happen). Runs no simulated
/// code and holds no borrow of the simulation while the observer runs.
#[track_caller]
pub(crate) fn announce(
    what: &'static str,
    nodes: &[NodeId],
    args: &[(&'static str, String)],
    injects: bool,
) {
    if tracing::enabled!(target: "sim", tracing::Level::INFO) {
        let mut line = String::from(what);
        for (name, value) in args {
            line.push(' ');
            line.push_str(name);
            line.push('=');
            line.push_str(value);
        }
        tracing::info!(target: "sim", "{line}");
    }
    let observer = OBSERVER.with(|o| o.borrow().clone());
    if let Some(f) = observer {
        f(&Call {
            what,
            nodes,
            args,
            injects,
        });
    }
}
