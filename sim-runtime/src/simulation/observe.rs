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
use std::fmt;
use std::rc::Rc;

/// What a call of the fault-control API does: a fault, or the heal,
/// lifecycle step or setting that goes with one. An observer matches on
/// it; [`Call::injects`] says whether this call injects a fault. Its
/// `Display` is the call's name in the trace (`partition`, `crash`,
/// `disk: fail syncs`).
///
/// A new fault is a variant here, its name in [`Fault::name`], and the
/// call that announces it (`sim::net`, `sim::fs`, or a node's lifecycle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// `sim::kill`: the node's process dies.
    Kill,
    /// `sim::crash`: the node's machine dies.
    Crash,
    /// `sim::restart` and `sim::revive`: the node runs again.
    Restart,
    /// `sim::pause`.
    Pause,
    /// `sim::resume`.
    Resume,
    /// `sim::signal`: a signal delivered to the node.
    Signal,
    /// `sim::net::partition`: both directions between two nodes cut.
    Partition,
    /// `sim::net::partition_oneway`.
    PartitionOneWay,
    /// `sim::net::clog`: both directions between two nodes held.
    Clog,
    /// `sim::net::clog_oneway`.
    ClogOneWay,
    /// `sim::net::clog_node`: every link of a node held.
    ClogNode,
    /// `sim::net::unclog_node`.
    UnclogNode,
    /// `sim::net::heal`: a link's partitions and clogs lifted.
    Heal,
    /// `sim::net::unclog`: `Heal` under the name that follows a clog.
    Unclog,
    /// `sim::net::heal_all`.
    HealAll,
    /// `sim::net::set_latency` (a setting, not a fault).
    Latency,
    /// `sim::net::set_udp_faults`: datagram loss and duplication.
    UdpFaults,
    /// `sim::net::reset_connections` and `reset_between`.
    ResetConnections,
    /// `sim::net::set_conn_fault` (a fault, or its clearing).
    ConnectionFault,
    /// `sim::net::refuse_connects`.
    RefuseConnects,
    /// `sim::net::blackhole_connects`.
    BlackholeConnects,
    /// `sim::net::clear_port_fault`.
    ClearPortFault,
    /// `sim::net::route`: a routed name (a setting, not a fault).
    Route,
    /// `sim::fs::set_faults` with a plan that has faults.
    DiskFaultPlan,
    /// `sim::fs::set_faults` with the empty plan, `sim::fs::clear_faults`.
    DiskClearFaults,
    /// `sim::fs::fail_io`.
    DiskFailIo,
    /// `sim::fs::heal_io`.
    DiskHealIo,
    /// `sim::fs::set_capacity`.
    DiskCapacity,
    /// `sim::fs::set_latency` (a setting, not a fault).
    DiskLatency,
    /// `sim::fs::fail_syncs`.
    DiskFailSyncs,
    /// `sim::fs::set_torn_writes`.
    DiskTornWrites,
}

impl Fault {
    /// The call's name in the trace and on the timeline.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Crash => "crash",
            Fault::Restart => "restart",
            Fault::Pause => "pause",
            Fault::Resume => "resume",
            Fault::Signal => "signal",
            Fault::Partition => "partition",
            Fault::PartitionOneWay => "partition one way",
            Fault::Clog => "clog",
            Fault::ClogOneWay => "clog one way",
            Fault::ClogNode => "clog node",
            Fault::UnclogNode => "unclog node",
            Fault::Heal => "heal",
            Fault::Unclog => "unclog",
            Fault::HealAll => "heal all",
            Fault::Latency => "latency",
            Fault::UdpFaults => "udp faults",
            Fault::ResetConnections => "reset connections",
            Fault::ConnectionFault => "connection fault",
            Fault::RefuseConnects => "refuse connects",
            Fault::BlackholeConnects => "black-hole connects",
            Fault::ClearPortFault => "clear port fault",
            Fault::Route => "route",
            Fault::DiskFaultPlan => "disk: fault plan",
            Fault::DiskClearFaults => "disk: clear faults",
            Fault::DiskFailIo => "disk: fail io",
            Fault::DiskHealIo => "disk: heal io",
            Fault::DiskCapacity => "disk: capacity",
            Fault::DiskLatency => "disk: latency",
            Fault::DiskFailSyncs => "disk: fail syncs",
            Fault::DiskTornWrites => "disk: torn writes",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One call of the control API, as the observer sees it.
#[derive(Debug)]
pub struct Call<'a> {
    /// What it does.
    pub what: Fault,
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

crate::simulation::core::hooks::carried!(
    OBSERVER_CARRIED: Option<Observer>,
    take: || OBSERVER.with(|o| o.borrow_mut().take()),
    put: |v| OBSERVER.with(|o| *o.borrow_mut() = v),
);

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
    what: Fault,
    nodes: &[NodeId],
    args: &[(&'static str, String)],
    injects: bool,
) {
    if tracing::enabled!(target: "sim", tracing::Level::INFO) {
        let mut line = String::from(what.name());
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

#[cfg(test)]
mod tests {
    use super::Fault;

    /// The names the trace, the timeline and the liveness report showed
    /// when calls were named by strings: each variant prints exactly its
    /// old string.
    #[test]
    fn every_fault_prints_its_name_of_old() {
        let old = [
            (Fault::Kill, "kill"),
            (Fault::Crash, "crash"),
            (Fault::Restart, "restart"),
            (Fault::Pause, "pause"),
            (Fault::Resume, "resume"),
            (Fault::Signal, "signal"),
            (Fault::Partition, "partition"),
            (Fault::PartitionOneWay, "partition one way"),
            (Fault::Clog, "clog"),
            (Fault::ClogOneWay, "clog one way"),
            (Fault::ClogNode, "clog node"),
            (Fault::UnclogNode, "unclog node"),
            (Fault::Heal, "heal"),
            (Fault::Unclog, "unclog"),
            (Fault::HealAll, "heal all"),
            (Fault::Latency, "latency"),
            (Fault::UdpFaults, "udp faults"),
            (Fault::ResetConnections, "reset connections"),
            (Fault::ConnectionFault, "connection fault"),
            (Fault::RefuseConnects, "refuse connects"),
            (Fault::BlackholeConnects, "black-hole connects"),
            (Fault::ClearPortFault, "clear port fault"),
            (Fault::Route, "route"),
            (Fault::DiskFaultPlan, "disk: fault plan"),
            (Fault::DiskClearFaults, "disk: clear faults"),
            (Fault::DiskFailIo, "disk: fail io"),
            (Fault::DiskHealIo, "disk: heal io"),
            (Fault::DiskCapacity, "disk: capacity"),
            (Fault::DiskLatency, "disk: latency"),
            (Fault::DiskFailSyncs, "disk: fail syncs"),
            (Fault::DiskTornWrites, "disk: torn writes"),
        ];
        for (fault, name) in old {
            assert_eq!(fault.to_string(), name, "{fault:?}");
        }
        let mut names: Vec<&str> = old.iter().map(|(f, _)| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), old.len(), "two faults share a name");
    }
}
