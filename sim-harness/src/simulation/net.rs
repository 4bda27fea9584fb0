//! `sim::net`: the network's faults, by node (a [`Node`](crate::Node), its
//! name, or its id). Each is one call, recorded in the run's fingerprint;
//! `sim::at(t, move || sim::net::partition("a", "b"))` scripts any of them.

use crate::AsNode;
use sim_runtime::sim::net as rt;
use std::time::Duration;

pub use rt::{Config, ConnFault, ConnInfo};

macro_rules! logged {
    ($what:literal, $($field:ident = $value:expr),*) => {{
        tracing::info!(target: "sim", $($field = %$value,)* $what);
        if super::timeline::recording() {
            super::timeline::note($what, &[$(&$value.to_string()),*]);
        }
    }};
}

fn name(n: &impl AsNode) -> String {
    sim_runtime::sim::node_name(n.node_id())
}

/// Cuts both directions between `a` and `b`: connects time out, streams
/// stall (and fail with `TimedOut` after the retransmission limit),
/// datagrams are lost.
#[track_caller]
pub fn partition(a: impl AsNode, b: impl AsNode) {
    super::liveness::fault(&format!("partition {} | {}", name(&a), name(&b)));
    logged!("partition", a = name(&a), b = name(&b));
    rt::partition(a.node_id(), b.node_id());
}

/// Cuts the direction from `from` to `to` only.
#[track_caller]
pub fn partition_oneway(from: impl AsNode, to: impl AsNode) {
    super::liveness::fault(&format!("partition {} -> {}", name(&from), name(&to)));
    logged!("partition one way", from = name(&from), to = name(&to));
    rt::partition_one_way(from.node_id(), to.node_id());
}

/// Heals partitions and clogs between `a` and `b`.
#[track_caller]
pub fn heal(a: impl AsNode, b: impl AsNode) {
    logged!("heal", a = name(&a), b = name(&b));
    rt::heal(a.node_id(), b.node_id());
}

/// Heals every partition and clog.
#[track_caller]
pub fn heal_all() {
    tracing::info!(target: "sim", "heal all");
    super::timeline::note("heal all", &[]);
    rt::heal_all();
}

/// Clogs both directions between `a` and `b`: bytes queue, none are lost.
#[track_caller]
pub fn clog(a: impl AsNode, b: impl AsNode) {
    super::liveness::fault(&format!("clog {} | {}", name(&a), name(&b)));
    logged!("clog", a = name(&a), b = name(&b));
    rt::clog(a.node_id(), b.node_id());
}

/// Clogs the direction from `from` to `to` only.
#[track_caller]
pub fn clog_oneway(from: impl AsNode, to: impl AsNode) {
    super::liveness::fault(&format!("clog {} -> {}", name(&from), name(&to)));
    logged!("clog one way", from = name(&from), to = name(&to));
    rt::clog_one_way(from.node_id(), to.node_id());
}

/// Unclogs (and heals) the links between `a` and `b`; queued bytes leave.
#[track_caller]
pub fn unclog(a: impl AsNode, b: impl AsNode) {
    logged!("unclog", a = name(&a), b = name(&b));
    rt::heal(a.node_id(), b.node_id());
}

/// Clogs every link of `node`.
#[track_caller]
pub fn clog_node(node: impl AsNode) {
    super::liveness::fault(&format!("clog node {}", name(&node)));
    logged!("clog node", node = name(&node));
    rt::clog_node(node.node_id());
}

/// Unclogs a node clogged with [`clog_node`].
#[track_caller]
pub fn unclog_node(node: impl AsNode) {
    logged!("unclog node", node = name(&node));
    rt::unclog_node(node.node_id());
}

/// One-way latency and jitter from `from` to `to`.
#[track_caller]
pub fn set_latency(from: impl AsNode, to: impl AsNode, latency: Duration, jitter: Duration) {
    logged!(
        "latency",
        from = name(&from),
        to = name(&to),
        latency = format!("{latency:?}")
    );
    rt::set_latency(from.node_id(), to.node_id(), latency, jitter);
}

/// Datagrams from `from` to `to` are lost / duplicated with these
/// probabilities (parts per million).
#[track_caller]
pub fn set_udp_faults(from: impl AsNode, to: impl AsNode, loss_ppm: u32, dup_ppm: u32) {
    logged!(
        "udp faults",
        from = name(&from),
        to = name(&to),
        loss_ppm = loss_ppm,
        dup_ppm = dup_ppm
    );
    if loss_ppm > 0 || dup_ppm > 0 {
        super::liveness::fault(&format!("datagram faults {} -> {}", name(&from), name(&to)));
        super::liveness::note_udp_faults(from.node_id(), to.node_id());
    }
    rt::set_udp_faults(from.node_id(), to.node_id(), loss_ppm, dup_ppm);
}

/// Resets every connection with an end matching `pred`; returns how many.
#[track_caller]
pub fn reset_connections(pred: impl FnMut(&ConnInfo) -> bool) -> usize {
    super::liveness::fault("a connection reset");
    let n = rt::reset_connections(pred);
    tracing::info!(target: "sim", count = n, "reset connections");
    if super::timeline::recording() {
        super::timeline::note("reset connections", &[&n.to_string()]);
    }
    n
}

/// Resets every connection between `a` and `b`.
#[track_caller]
pub fn reset_between(a: impl AsNode, b: impl AsNode) -> usize {
    let (a, b) = (a.node_id(), b.node_id());
    let (ia, ib) = (sim_runtime::sim::node_ip(a), sim_runtime::sim::node_ip(b));
    reset_connections(|c| Some(c.local.ip()) == ia && Some(c.peer.ip()) == ib)
}

/// Sets a per-connection fault on every end matching `pred`.
#[track_caller]
pub fn set_conn_fault(pred: impl FnMut(&ConnInfo) -> bool, fault: ConnFault) -> usize {
    if fault != ConnFault::default() {
        super::liveness::fault("a connection fault");
    }
    let n = rt::set_conn_fault(pred, fault);
    tracing::info!(target: "sim", count = n, "connection fault");
    if super::timeline::recording() {
        super::timeline::note("connection fault", &[&n.to_string()]);
    }
    n
}

/// Connects to `port` of `node` are refused.
#[track_caller]
pub fn refuse_connects(node: impl AsNode, port: u16) {
    super::liveness::fault(&format!("refused connects to {}:{port}", name(&node)));
    super::liveness::note_port_fault(node.node_id(), port);
    logged!("refuse connects", node = name(&node), port = port);
    rt::refuse_connects(node.node_id(), port);
}

/// Connects to `port` of `node` go unanswered (and time out).
#[track_caller]
pub fn blackhole_connects(node: impl AsNode, port: u16) {
    super::liveness::fault(&format!("black-holed connects to {}:{port}", name(&node)));
    super::liveness::note_port_fault(node.node_id(), port);
    logged!("black-hole connects", node = name(&node), port = port);
    rt::blackhole_connects(node.node_id(), port);
}

/// Connects to `port` of `node` behave normally again.
#[track_caller]
pub fn clear_port_fault(node: impl AsNode, port: u16) {
    rt::clear_port_fault(node.node_id(), port);
}

/// Makes `name` a routed name reaching one of `nodes` per connection.
#[track_caller]
pub fn route<N: AsNode>(route_name: &str, nodes: &[N]) {
    let ids: Vec<_> = nodes.iter().map(|n| n.node_id()).collect();
    logged!("route", name = route_name, nodes = ids.len());
    rt::route(route_name, &ids);
}

/// The network's settings; only before the run's first socket.
#[track_caller]
pub fn configure(config: Config) {
    rt::configure(config);
}
