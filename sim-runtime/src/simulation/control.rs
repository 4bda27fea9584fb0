//! `sim_runtime::sim`: control of the running simulation.
//!
//! These functions exist only under `--cfg simulation`; the harness
//! (`sim-harness`) builds its node lifecycle, fault scripts and reports on
//! them. Each one must be called from inside a simulation (a task or the
//! `block_on` future) and panics with a clear message otherwise.
//!
//! # What the simulation guarantees
//!
//! - Everything that happens is a function of the seed (and the binary):
//!   which task runs next, the order of timers due at the same instant, the
//!   fairness draws of `select!`, the values of `getrandom`, `HashMap`
//!   iteration order, and every clock read.
//! - The virtual clock moves only when no task is runnable, straight to the
//!   next timer; a timer never fires before its deadline.
//! - A node that is killed loses every task at once (Rust futures really are
//!   cancelled); a paused node's tasks are not polled and its timers are held
//!   until it resumes.

use super::core::executor::expect_current;
use super::core::hooks::local_elapsed_ns;
use super::core::node::{NodeId, NodeState};
use super::signal::{self, unix::SignalKind};
use super::task::JoinHandle;
use std::future::Future;
use std::net::IpAddr;
use std::panic::Location;
use std::time::Duration;

pub use super::core::config::{Schedule, UnhandledPanic};
pub use super::core::node::NodeId as Node;
pub use super::core::report::{Class, Failure};
pub use super::fs::control as fs;
pub use super::net::control as net;
pub use super::observe::{set_observer, Call, Fault, Observer};

/// What names a node in the control API: its id, or its name (a name no
/// node has panics, saying so). A harness implements it for its own node
/// handles.
pub trait AsNode {
    fn node_id(&self) -> NodeId;
}

impl AsNode for NodeId {
    fn node_id(&self) -> NodeId {
        *self
    }
}

impl AsNode for &NodeId {
    fn node_id(&self) -> NodeId {
        **self
    }
}

impl AsNode for &str {
    #[track_caller]
    fn node_id(&self) -> NodeId {
        match lookup_node(self) {
            Some(n) => n,
            None => {
                panic!("sim: there is no node named {self:?} (create it with sim::node({self:?}))")
            }
        }
    }
}

impl AsNode for String {
    #[track_caller]
    fn node_id(&self) -> NodeId {
        self.as_str().node_id()
    }
}

impl AsNode for &String {
    #[track_caller]
    fn node_id(&self) -> NodeId {
        self.as_str().node_id()
    }
}

/// Announces a lifecycle call on `node` (observe.rs).
#[track_caller]
fn announce_node(what: Fault, node: NodeId, injects: bool) {
    super::observe::announce(what, &[node], &[("node", node_name(node))], injects);
}

/// Whether this code runs inside a simulation.
pub fn is_simulation() -> bool {
    super::core::executor::current().is_some()
}

/// The seed of the running simulation.
#[track_caller]
pub fn seed() -> u64 {
    expect_current().core().seed()
}

/// A seed for a named consumer of randomness: `H(root seed, label)`. Adding
/// a consumer never shifts the streams of the others.
#[track_caller]
pub fn fork_seed(label: &str) -> u64 {
    super::core::seed::decide(seed(), label)
}

/// Global virtual time since the simulation started (no node's skew).
#[track_caller]
pub fn elapsed() -> Duration {
    Duration::from_nanos(expect_current().now_ns())
}

/// Steps (polls) taken so far.
#[track_caller]
pub fn step() -> u64 {
    expect_current().core().step()
}

/// The fingerprint so far: a hash of every decision made.
#[track_caller]
pub fn fingerprint() -> u64 {
    expect_current().core().trace().fingerprint()
}

/// The node the caller runs on.
#[track_caller]
pub fn current_node() -> NodeId {
    expect_current().current_node()
}

/// A node's name.
#[track_caller]
pub fn node_name(node: NodeId) -> String {
    expect_current().core().node(node).name.clone()
}

/// A node's IP address (every node has one).
#[track_caller]
pub fn node_ip(node: NodeId) -> Option<IpAddr> {
    expect_current().core().node(node).ip
}

/// The node called `name`, if there is one.
#[track_caller]
pub fn lookup_node(name: &str) -> Option<NodeId> {
    let exec = expect_current();
    let core = exec.core();
    core.nodes().named(name)
}

/// Starts describing a new node.
pub fn node(name: impl Into<String>) -> NodeBuilder {
    NodeBuilder {
        name: name.into(),
        ip: None,
        cpus: None,
    }
}

/// Describes a node before it is created.
#[derive(Debug, Clone)]
pub struct NodeBuilder {
    name: String,
    ip: Option<IpAddr>,
    cpus: Option<u32>,
}

impl NodeBuilder {
    /// The node's IP address on the simulated network. Without one the node
    /// gets an implicit address: the next free one in 198.18.0.0/15 (the
    /// main node is 198.18.0.1), a range services never configure, so any
    /// address outside it (10.0.0.1 included) is free for an explicit one.
    pub fn ip(mut self, ip: IpAddr) -> Self {
        self.ip = Some(ip);
        self
    }

    /// How many CPUs the node's machine has (default 1): what
    /// `std::thread::available_parallelism` answers on it, so how many
    /// threads rayon's pool starts. Threads run one at a time whatever the
    /// count; it changes what the program decides, not the simulation.
    pub fn cpus(mut self, cpus: u32) -> Self {
        assert!(
            cpus >= 1,
            "sim: node {:?} needs at least one CPU",
            self.name
        );
        self.cpus = Some(cpus);
        self
    }

    /// Creates the node. Names are unique within a simulation, and so are
    /// addresses: an explicit address another node already has panics,
    /// naming both nodes.
    #[track_caller]
    pub fn build(self) -> NodeId {
        let exec = expect_current();
        let mut core = exec.core_mut();
        assert!(
            core.nodes().named(&self.name).is_none(),
            "sim: a node named {:?} already exists; node names are unique",
            self.name
        );
        let (ip, explicit) = match self.ip {
            Some(ip) => {
                assert!(
                    !ip.is_unspecified() && !ip.is_loopback() && !ip.is_multicast(),
                    "sim: node {:?} cannot have the IP {ip}: give it a routable unicast address",
                    self.name
                );
                if let Some(holder) = core.nodes().with_ip(ip) {
                    let how = if holder.ip_explicit {
                        "as its explicit address (given with .ip(..))"
                    } else {
                        "as its implicit address (it was built without .ip(..))"
                    };
                    panic!(
                        "sim: node {:?} cannot have the IP {ip}: node {:?} already has it, \
                         {how}. Pick another address for {:?}; one outside {} (where implicit \
                         addresses come from) never collides with an implicit address",
                        self.name,
                        holder.name,
                        self.name,
                        super::core::node::implicit_net()
                    );
                }
                (ip, true)
            }
            None => (super::core::node::auto_ip(Some(core.nodes())), false),
        };
        let mut state = NodeState::new(self.name, Some(ip), explicit);
        if let Some(cpus) = self.cpus {
            state.cpus = cpus;
        }
        let id = core.add_node(state);
        core.decide(super::core::trace::Kind::Node, u64::from(id.0) << 8);
        id
    }
}

/// Sets how many CPUs `node`'s machine has (see [`NodeBuilder::cpus`]);
/// the main node's too (`sim::current_node()` in the test body).
pub fn set_cpus(node: NodeId, cpus: u32) {
    assert!(cpus >= 1, "sim: a node needs at least one CPU");
    expect_current().core_mut().node_mut(node).cpus = cpus;
}

/// How many CPUs the calling node's machine has (1 outside a simulation's
/// executor).
pub(crate) fn current_cpus() -> u32 {
    super::core::executor::with_current(|e| {
        e.try_core().map_or(1, |c| c.node(e.current_node()).cpus)
    })
    .unwrap_or(1)
}

/// Spawns `future` as a task of `node`; the tasks it spawns belong to
/// `node` too.
#[track_caller]
pub fn spawn_on<F>(node: NodeId, future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let exec = expect_current();
    check_node(&exec, node);
    exec.spawn(future, None, Location::caller(), Some(node))
}

#[track_caller]
fn check_node(exec: &super::core::executor::Exec, node: NodeId) {
    let n = exec.core().nodes().len();
    assert!(
        node.index() < n,
        "sim: {node} does not exist in this simulation"
    );
}

#[track_caller]
fn not_main(node: NodeId, what: &str) {
    assert!(
        node != NodeId::MAIN,
        "sim: cannot {what} the main node: it runs the test itself. Create a node with \
         sim::node(..).build() and run the service there."
    );
}

/// Kills the node's process: every task is dropped now, inside the node's
/// context. The node stays dead (spawns on it are cancelled) until
/// [`revive`].
#[track_caller]
pub fn kill(node: impl AsNode) {
    let node = node.node_id();
    not_main(node, "kill");
    let exec = expect_current();
    check_node(&exec, node);
    announce_node(Fault::Kill, node, true);
    exec.kill(node);
}

/// Crashes the node's machine: as [`kill`], but the host goes silent (its
/// connections get no FIN or RST; peers notice only by their own timeouts)
/// and its disk keeps only what was synced. The node stays dead until
/// [`revive`].
#[track_caller]
pub fn crash(node: impl AsNode) {
    let node = node.node_id();
    not_main(node, "crash");
    let exec = expect_current();
    check_node(&exec, node);
    announce_node(Fault::Crash, node, true);
    exec.crash(node);
    // What the crash took from the node's disk, in the trace.
    crate::simulation::fs::journal::flush(&exec);
}

/// Makes a killed node alive again, as a fresh process (no tasks, no signal
/// handlers). The caller then spawns its init on it.
#[track_caller]
pub fn revive(node: impl AsNode) {
    let node = node.node_id();
    let exec = expect_current();
    check_node(&exec, node);
    announce_node(Fault::Restart, node, false);
    exec.revive(node);
}

/// Restarts the node's process: kills it if it runs (part of the restart,
/// not a fault of its own), then revives it. The caller then spawns its
/// init on it.
#[track_caller]
pub fn restart(node: impl AsNode) {
    let node = node.node_id();
    not_main(node, "restart");
    let exec = expect_current();
    check_node(&exec, node);
    announce_node(Fault::Restart, node, false);
    if exec.core().node(node).alive {
        exec.kill(node);
    }
    exec.revive(node);
}

/// Whether the node is alive (not killed, or revived since).
#[track_caller]
pub fn is_alive(node: impl AsNode) -> bool {
    let node = node.node_id();
    expect_current().core().node(node).alive
}

/// Pauses the node: its tasks are not polled and its timers do not fire
/// until [`resume`].
#[track_caller]
pub fn pause(node: impl AsNode) {
    let node = node.node_id();
    not_main(node, "pause");
    let exec = expect_current();
    check_node(&exec, node);
    announce_node(Fault::Pause, node, true);
    exec.pause(node);
}

/// Resumes a paused node: woken tasks run, and timers that came due while
/// it was paused fire now.
#[track_caller]
pub fn resume(node: impl AsNode) {
    let node = node.node_id();
    let exec = expect_current();
    check_node(&exec, node);
    announce_node(Fault::Resume, node, false);
    exec.resume(node);
}

/// Whether the node is paused.
#[track_caller]
pub fn is_paused(node: impl AsNode) -> bool {
    let node = node.node_id();
    expect_current().core().node(node).paused
}

/// Sets the node's wall-clock offset (what `SystemTime::now()` reads is
/// shifted by it); `ahead = false` puts the clock behind.
#[track_caller]
pub fn skew_clock(node: NodeId, offset: Duration, ahead: bool) {
    let exec = expect_current();
    check_node(&exec, node);
    let ns = offset.as_nanos().min(i64::MAX as u128) as i64;
    let mut core = exec.core_mut();
    let n = core.node_mut(node);
    // The monotonic offset is what drift changes have kept (see
    // `set_drift_ppm`); the wall clock keeps it too, plus the skew.
    n.wall_offset_ns = n
        .mono_offset_ns
        .saturating_add(if ahead { ns } else { -ns });
    drop(core);
    exec.refresh_clock();
}

/// Sets the node's clock drift in parts per million: from now on, both its
/// monotonic and its wall clock run `1 + ppm/1e6` times as fast as global
/// virtual time. The clocks change rate, never jump: what they read now
/// they still read (a rate that changes mid-run, as a crystal's does with
/// its temperature, or as NTP slews it). Takes effect for timers registered
/// afterwards (a timer keeps the global deadline it was given).
#[track_caller]
pub fn set_drift_ppm(node: NodeId, ppm: i64) {
    assert!(
        ppm > -1_000_000,
        "sim: a drift of {ppm} ppm would stop or reverse the clock"
    );
    let exec = expect_current();
    check_node(&exec, node);
    let now = exec.core().now();
    let mut core = exec.core_mut();
    let n = core.node_mut(node);
    // What the old rate has run up to now, kept in the offsets, so the
    // clocks read the same before and after the change.
    let gap =
        i128::from(local_elapsed_ns(now, n.drift_ppm)) - i128::from(local_elapsed_ns(now, ppm));
    let gap = gap.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    n.mono_offset_ns = n.mono_offset_ns.saturating_add(gap);
    n.wall_offset_ns = n.wall_offset_ns.saturating_add(gap);
    n.drift_ppm = ppm;
    drop(core);
    exec.refresh_clock();
}

/// Delivers a signal to the node, as `kill -<sig>` would.
#[track_caller]
pub fn signal(node: impl AsNode, kind: SignalKind) {
    let node = node.node_id();
    let exec = expect_current();
    check_node(&exec, node);
    super::observe::announce(
        Fault::Signal,
        &[node],
        &[
            ("node", node_name(node)),
            ("signal", kind.as_raw_value().to_string()),
        ],
        false,
    );
    let handled = super::signal::handled(&mut exec.core_mut(), node, kind.as_raw_value());
    if node == NodeId::MAIN && !handled && kind.terminates_by_default() {
        panic!(
            "sim: signal {} reached the main node, which has no handler for it: the process \
             would die here",
            kind.as_raw_value()
        );
    }
    signal::deliver(node, kind);
}

/// Runs `action` at global virtual time `when` (since the start of the run;
/// at once if that time has passed), in a task of the main node. This is the
/// scripted form of every fault and lifecycle call: `sim::at(secs(5), move ||
/// sim::kill(node))`. Abort the handle to cancel it.
#[track_caller]
pub fn at(when: Duration, action: impl FnOnce() + 'static) -> JoinHandle<()> {
    let exec = expect_current();
    let location = Location::caller();
    exec.spawn(
        async move {
            let now = elapsed();
            // An exact sleep: to the nanosecond, and never made late by
            // the late-timer fault point (a script happens at its time).
            if when > now {
                super::time::Sleep::exact(when - now).await;
            }
            action();
        },
        Some(super::core::executor::SCRIPTED.into()),
        location,
        Some(NodeId::MAIN),
    )
}

/// How many times the node's process has died (kill or crash): a number
/// that names the current process of the node.
#[track_caller]
pub fn incarnation(node: NodeId) -> u32 {
    let exec = expect_current();
    check_node(&exec, node);
    let n = exec.core().node(node).incarnation;
    n
}

/// Virtual time and the current node's name, if a simulation runs on this
/// thread and is not busy (for trace stamps; never panics).
pub fn stamp() -> Option<(Duration, String)> {
    let exec = super::core::executor::current()?;
    let node = exec.current_node();
    let core = exec.try_core()?;
    Some((
        Duration::from_nanos(core.now()),
        core.nodes().get(node.index())?.name.clone(),
    ))
}

/// A fault point: whether the site named `site` fires now, with
/// probability `num / den` when the site is active in this run (see
/// `sim::buggify!` in the harness). Always `false` outside a simulation and
/// in runs where fault points are off.
pub fn buggify(site: &'static str, num: u32, den: u32) -> bool {
    let Some(exec) = super::core::executor::current() else {
        return false;
    };
    let Some(mut core) = exec.try_core_mut() else {
        return false;
    };
    core.fault_point(site, num, den).is_some()
}
