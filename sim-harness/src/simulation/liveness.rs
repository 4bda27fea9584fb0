//! The liveness phase: chaos, then a heal, then bounds that must hold.
//!
//! [`heal_after`] splits a run in two. Until the heal, faults happen as the
//! test scripts or draws them. At the heal the harness makes the system
//! whole, in this order, each step in the trace (target `sim`):
//!
//! 1. every fault plan ([`crate::faults::schedule`]) stops: faults that
//!    would start later never start, and the ends of faults under way do
//!    nothing (the heal already ended them);
//! 2. the network heals: every partition and clog is lifted
//!    ([`crate::net::heal_all`]), every per-connection fault cleared, every
//!    port fault and datagram loss or duplication set through `sim::net`
//!    removed (latencies stay: they are the network, not a fault);
//! 3. every node the test made (`sim::node`) that is down is restarted with
//!    its current service, every paused node resumed, and every node's disk
//!    faults cleared ([`crate::fs::clear_faults`]);
//! 4. every fake of the run heals ([`crate::fake::Faults::heal`]) and its
//!    drawn modes stop.
//!
//! From then on the run is in its quiet phase. A fault injected in the
//! quiet phase (a crash, kill or pause, a partition or clog, a port,
//! datagram, connection or disk fault) fails the run: it would turn a
//! liveness check into a chaos check. The harness sees every control call
//! through the runtime's observer ([`observe`]), so a call made through
//! `sim_runtime::sim` directly is checked too. Healing calls (restart,
//! resume, heal, unclog, clear) stay allowed.
//!
//! [`crate::eventually`] waits for the heal before it starts counting its
//! bound, so a test states "once the cluster is whole again, writes succeed
//! within 30 s" in one call wherever it sits in the body; a miss fails the
//! run with class `liveness`, naming what did not converge and when the
//! heal happened. Fault plans drawn once the heal is set draw their start
//! times before it (the envelope's window is cut at the heal), and their
//! [`Plan::quiet_at`](crate::faults::Plan::quiet_at) is no later than the
//! heal.
//!
//! The state is the run's: the runner clears it before each seed (and
//! [`World::new`](crate::World::new) before its simulation).

use super::node::Node;
use super::timeline::{self, Noted};
use sim_runtime::sim::{self as rt, Fault};
use sim_runtime::sync::Notify;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

#[derive(Default)]
struct State {
    /// When the heal happens, once [`heal_after`] set it (run time).
    heal_at: Option<Duration>,
    /// Whether the heal has happened.
    healed: bool,
    /// What the heal did, for the liveness report.
    summary: String,
    /// Wakes the `eventually` calls waiting for the heal.
    notify: Option<Rc<Notify>>,
    /// Every node the test made, in creation order.
    nodes: Vec<Node>,
    /// Port faults set through `sim::net` (node, port).
    ports: BTreeSet<(rt::Node, u16)>,
    /// Links given datagram loss or duplication through `sim::net`.
    udp: BTreeSet<(rt::Node, rt::Node)>,
    /// Faults injected through the control API (a run's size, shrink.rs).
    injected: u64,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Clears the run's liveness state (a new seed or world starts), and
/// makes this thread's control calls pass through [`observe`].
pub(crate) fn reset() {
    STATE.with(|s| *s.borrow_mut() = State::default());
    rt::set_observer(Some(Rc::new(observe)));
}

/// Faults injected through the control API in this thread's run so far.
pub(crate) fn injected() -> u64 {
    STATE.with(|s| s.borrow().injected)
}

/// What the harness does with every call of the runtime's control API on
/// this thread (`sim::net`, `sim::fs`, a node's lifecycle; the runtime
/// logs each one itself): refuses a fault in the quiet phase, remembers
/// the port and datagram faults the heal must clear, and draws the call on
/// the timeline.
#[track_caller]
fn observe(call: &rt::Call<'_>) {
    if call.injects {
        fault(call);
        STATE.with(|s| s.borrow_mut().injected += 1);
        super::explore::note(super::explore::Feature::Fault {
            kind: call.what.name(),
            nodes: call.nodes.iter().map(|n| n.as_u32()).collect(),
        });
    }
    match (call.what, call.nodes) {
        (Fault::RefuseConnects | Fault::BlackholeConnects, &[node]) => {
            if let Some(port) = call.arg("port").and_then(|p| p.parse().ok()) {
                STATE.with(|s| s.borrow_mut().ports.insert((node, port)));
            }
        }
        (Fault::UdpFaults, &[from, to]) if call.injects => {
            STATE.with(|s| s.borrow_mut().udp.insert((from, to)));
        }
        _ => {}
    }
    if timeline::recording() {
        let args: Vec<&str> = call.args.iter().map(|(_, v)| v.as_str()).collect();
        timeline::note(Noted::Call(call.what), &args);
    }
}

/// Turns the liveness phase on: the chaos phase lasts `chaos` of virtual
/// time from now, then the harness heals everything (see the module's
/// docs) and every [`crate::eventually`] bound counts from the heal.
/// Returns the run time of the heal. Call it once per run.
///
/// ```ignore
/// let heal = sim::heal_after(Duration::from_secs(30));
/// sim::faults::schedule(&nodes, &envelope); // faults start before `heal`
/// // … the workload runs through the chaos …
/// sim::eventually("a write succeeds", Duration::from_secs(10), || write_ok()).await;
/// ```
#[track_caller]
pub fn heal_after(chaos: Duration) -> Duration {
    let at = rt::elapsed() + chaos;
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(prev) = s.heal_at {
            panic!(
                "sim::heal_after called twice: the heal is already set for {prev:?}. A run has \
                 one chaos phase and one quiet phase."
            );
        }
        s.heal_at = Some(at);
        s.notify = Some(Rc::new(Notify::new()));
    });
    tracing::info!(target: "sim", heal_at = ?at, "liveness phase: chaos until the heal");
    rt::at(at, heal);
    at
}

/// The run time of the heal, once [`heal_after`] set it.
pub fn heal_at() -> Option<Duration> {
    STATE.with(|s| s.borrow().heal_at)
}

/// Whether the heal has happened (the run is in its quiet phase).
pub fn healed() -> bool {
    STATE.with(|s| s.borrow().healed)
}

/// Records a node the test made, for the heal to restart and resume.
pub(crate) fn register_node(node: &Node) {
    STATE.with(|s| s.borrow_mut().nodes.push(node.clone()));
}

/// Fails the run when `call`, a fault, is injected in the quiet phase.
#[track_caller]
fn fault(call: &rt::Call<'_>) {
    let heal = STATE.with(|s| {
        let s = s.borrow();
        s.healed.then_some(s.heal_at).flatten()
    });
    if let Some(heal) = heal {
        let what = match (call.what, call.arg("node")) {
            (Fault::Crash | Fault::Kill | Fault::Pause, Some(node)) => {
                format!("{} of node '{node}'", call.what)
            }
            _ => std::iter::once(call.what.to_string())
                .chain(call.args.iter().map(|(k, v)| format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(" "),
        };
        panic!(
            "sim: {what} at {:?} is a fault in the quiet phase, which began with the heal at \
             {heal:?} (sim::heal_after): the liveness phase checks that the system recovers \
             without faults. Inject faults before the heal, or heal later.",
            rt::elapsed()
        );
    }
}

/// The heal (see the module's docs).
fn heal() {
    let (nodes, ports, udp) = STATE.with(|s| {
        let mut s = s.borrow_mut();
        // Set first: the fault plans' pending starts and ends look at it.
        s.healed = true;
        (
            s.nodes.clone(),
            std::mem::take(&mut s.ports),
            std::mem::take(&mut s.udp),
        )
    });
    tracing::info!(target: "sim", "liveness phase: the heal begins; the quiet phase starts");
    rt::net::heal_all();
    super::fake::heal_all();
    let conns = rt::net::set_conn_fault(|_| true, Default::default());
    for (node, port) in &ports {
        rt::net::clear_port_fault(*node, *port);
    }
    for (from, to) in &udp {
        rt::net::set_udp_faults(*from, *to, 0, 0);
    }
    let mut restarted = Vec::new();
    let mut resumed = Vec::new();
    for node in &nodes {
        if rt::is_paused(node.id()) {
            node.resume();
            resumed.push(node.name().to_string());
        }
        if !node.is_alive() {
            node.restart();
            restarted.push(node.name().to_string());
        }
        super::fs::clear_faults(node);
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let summary = format!(
        "partitions and clogs healed, {conns} connection faults and {} port and {} datagram \
         faults cleared, restarted: {}, resumed: {}",
        ports.len(),
        udp.len(),
        list(&restarted),
        list(&resumed)
    );
    tracing::info!(target: "sim", what = %summary, "liveness phase: healed");
    let notify = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.summary = summary;
        s.notify.clone()
    });
    if let Some(n) = notify {
        n.notify_waiters();
    }
}

/// Waits for the heal if one is set and has not happened; returns the
/// time and summary of the heal, if there is one.
pub(crate) async fn wait_for_heal() -> Option<(Duration, String)> {
    let notify = STATE.with(|s| s.borrow().notify.clone())?;
    loop {
        // Registered before the check, so a heal in between still wakes us.
        let notified = notify.notified();
        let done = STATE.with(|s| {
            let s = s.borrow();
            s.healed
                .then(|| (s.heal_at.expect("a heal has a time"), s.summary.clone()))
        });
        if let Some(done) = done {
            return Some(done);
        }
        notified.await;
    }
}
