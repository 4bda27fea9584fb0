//! `sim::net`: the network's faults and settings, each one call, each
//! recorded in the run's fingerprint.
//!
//! Every call here has a scripted form through `sim::at`:
//! `sim::at(secs(30), move || sim::net::partition(a, b))`.

use super::{model, route_notes};
use crate::simulation::control::{node_name, AsNode};
use crate::simulation::core::executor::expect_current;
use crate::simulation::core::node::NodeId;
use crate::simulation::core::trace::Kind;
use crate::simulation::observe::{announce, Fault};
use sim_net::{HostId, Net};
use std::time::Duration;

pub use sim_net::{Config, ConnFault, ConnInfo};

/// Applies a fault to the model, records it, and wakes whoever it affects.
/// The trace names it with `words` (`partition kv1 ⇄ kv2`), built only
/// when the trace is on; the fingerprint records `code` alone, so the
/// words never change a run.
#[track_caller]
fn fault<R>(words: impl FnOnce() -> String, code: u64, f: impl FnOnce(&mut Net, u64) -> R) -> R {
    if tracing::enabled!(target: "sim::net", tracing::Level::DEBUG) {
        let words = words();
        tracing::debug!(target: "sim::net", code = format!("{code:#x}"), "{words}");
    }
    let exec = expect_current();
    let mut wake = Vec::new();
    let r = {
        let mut core = exec.core_mut();
        let now = core.now();
        core.decide(Kind::Net, code);
        let r = f(model(&mut core), now);
        route_notes(&mut core, &mut wake);
        r
    };
    for w in wake {
        w.wake();
    }
    r
}

/// A call about the link between two nodes: both directions, or one way
/// from `a` to `b`.
#[derive(Clone, Copy)]
struct Link {
    what: Fault,
    a: NodeId,
    b: NodeId,
    oneway: bool,
}

impl Link {
    fn both(what: Fault, a: NodeId, b: NodeId) -> Link {
        Link {
            what,
            a,
            b,
            oneway: false,
        }
    }

    fn oneway(what: Fault, from: NodeId, to: NodeId) -> Link {
        Link {
            what,
            a: from,
            b: to,
            oneway: true,
        }
    }

    /// Announces the call (observe.rs).
    #[track_caller]
    fn announce(self, injects: bool) {
        let (ka, kb) = if self.oneway {
            ("from", "to")
        } else {
            ("a", "b")
        };
        announce(
            self.what,
            &[self.a, self.b],
            &[(ka, node_name(self.a)), (kb, node_name(self.b))],
            injects,
        );
    }

    /// The trace's words for it: `partition kv1 ⇄ kv2`, `clog one way
    /// kv1 → kv2`.
    fn words(self) -> String {
        let arrow = if self.oneway { "→" } else { "⇄" };
        format!(
            "{} {} {arrow} {}",
            self.what,
            node_name(self.a),
            node_name(self.b)
        )
    }
}

/// The trace's words for a call about one node: `clog node kv1`.
fn node_words(what: Fault, node: NodeId) -> impl FnOnce() -> String {
    move || format!("{what} {}", node_name(node))
}

fn host(n: NodeId) -> HostId {
    HostId(n.as_u32())
}

fn pair(op: u64, a: NodeId, b: NodeId) -> u64 {
    op << 56 | u64::from(a.as_u32()) << 28 | u64::from(b.as_u32())
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos())
        .unwrap_or(u64::MAX / 4)
        .min(u64::MAX / 4)
}

/// Replaces the network's settings. Only before the first TCP or UDP socket
/// of the run (the model is built from them then); panics afterwards.
#[track_caller]
pub fn configure(config: Config) {
    let exec = expect_current();
    let mut core = exec.core_mut();
    let net = super::network(&mut core);
    assert!(
        net.model_is_unused(),
        "sim::net::configure must come before the run's first socket"
    );
    net.config = Some(config);
    // A model made before any socket existed is rebuilt from the new
    // settings at its next use; Unix sockets, which no setting touches,
    // move into it now.
    if let Some(mut old) = net.reset_model() {
        if old.open_unix_sockets() > 0 {
            super::model(&mut core).adopt_unix_sockets(&mut old);
        }
    }
}

/// Cuts both directions between `a` and `b`: connects time out (SYNs are
/// lost), stream bytes wait (and time out after the retransmission limit),
/// datagrams are lost.
#[track_caller]
pub fn partition(a: impl AsNode, b: impl AsNode) {
    let (a, b) = (a.node_id(), b.node_id());
    let link = Link::both(Fault::Partition, a, b);
    link.announce(true);
    fault(
        || link.words(),
        pair(1, a, b),
        |net, now| net.partition(host(a), host(b), false, now),
    );
}

/// Cuts only the direction from `from` to `to`.
#[track_caller]
pub fn partition_oneway(from: impl AsNode, to: impl AsNode) {
    let (from, to) = (from.node_id(), to.node_id());
    let link = Link::oneway(Fault::PartitionOneWay, from, to);
    link.announce(true);
    fault(
        || link.words(),
        pair(2, from, to),
        |net, now| net.partition(host(from), host(to), true, now),
    );
}

/// Clogs both directions between `a` and `b`: bytes queue, none are lost.
#[track_caller]
pub fn clog(a: impl AsNode, b: impl AsNode) {
    let (a, b) = (a.node_id(), b.node_id());
    let link = Link::both(Fault::Clog, a, b);
    link.announce(true);
    fault(
        || link.words(),
        pair(3, a, b),
        |net, now| net.clog(host(a), host(b), false, now),
    );
}

/// Clogs only the direction from `from` to `to`.
#[track_caller]
pub fn clog_oneway(from: impl AsNode, to: impl AsNode) {
    let (from, to) = (from.node_id(), to.node_id());
    let link = Link::oneway(Fault::ClogOneWay, from, to);
    link.announce(true);
    fault(
        || link.words(),
        pair(4, from, to),
        |net, now| net.clog(host(from), host(to), true, now),
    );
}

/// Clogs every link to and from `node`.
#[track_caller]
pub fn clog_node(node: impl AsNode) {
    let node = node.node_id();
    announce(Fault::ClogNode, &[node], &[("node", node_name(node))], true);
    fault(
        node_words(Fault::ClogNode, node),
        pair(5, node, node),
        |net, now| net.clog_host(host(node), now),
    );
}

/// Unclogs a node clogged with [`clog_node`].
#[track_caller]
pub fn unclog_node(node: impl AsNode) {
    let node = node.node_id();
    announce(
        Fault::UnclogNode,
        &[node],
        &[("node", node_name(node))],
        false,
    );
    fault(
        node_words(Fault::UnclogNode, node),
        pair(6, node, node),
        |net, now| net.unclog_host(host(node), now),
    );
}

/// Heals partitions and clogs between `a` and `b`; held bytes leave now.
#[track_caller]
pub fn heal(a: impl AsNode, b: impl AsNode) {
    let (a, b) = (a.node_id(), b.node_id());
    let link = Link::both(Fault::Heal, a, b);
    link.announce(false);
    fault(
        || link.words(),
        pair(7, a, b),
        |net, now| net.heal(host(a), host(b), now),
    );
}

/// Lifts clogs (and partitions) between `a` and `b`: [`heal`] under the
/// name that reads right after a [`clog`].
#[track_caller]
pub fn unclog(a: impl AsNode, b: impl AsNode) {
    let (a, b) = (a.node_id(), b.node_id());
    let link = Link::both(Fault::Unclog, a, b);
    link.announce(false);
    fault(
        || link.words(),
        pair(7, a, b),
        |net, now| net.heal(host(a), host(b), now),
    );
}

/// Heals every partition and clog.
#[track_caller]
pub fn heal_all() {
    announce(Fault::HealAll, &[], &[], false);
    fault(
        || Fault::HealAll.to_string(),
        8 << 56,
        |net, now| net.heal_all(now),
    );
}

/// Sets the one-way latency and jitter from `from` to `to`.
#[track_caller]
pub fn set_latency(from: impl AsNode, to: impl AsNode, latency: Duration, jitter: Duration) {
    let (from, to) = (from.node_id(), to.node_id());
    announce(
        Fault::Latency,
        &[from, to],
        &[
            ("from", node_name(from)),
            ("to", node_name(to)),
            ("latency", format!("{latency:?}")),
        ],
        false,
    );
    let words = || {
        let (a, b) = (node_name(from), node_name(to));
        format!(
            "{} {a} → {b} {latency:?} (jitter {jitter:?})",
            Fault::Latency
        )
    };
    fault(
        words,
        pair(9, from, to) ^ ns(latency).rotate_left(17) ^ ns(jitter),
        |net, _| net.set_link_latency(host(from), host(to), ns(latency), ns(jitter)),
    );
}

/// Datagrams from `from` to `to` are lost / duplicated with these
/// probabilities (parts per million).
#[track_caller]
pub fn set_udp_faults(from: impl AsNode, to: impl AsNode, loss_ppm: u32, dup_ppm: u32) {
    let (from, to) = (from.node_id(), to.node_id());
    announce(
        Fault::UdpFaults,
        &[from, to],
        &[
            ("from", node_name(from)),
            ("to", node_name(to)),
            ("loss_ppm", loss_ppm.to_string()),
            ("dup_ppm", dup_ppm.to_string()),
        ],
        loss_ppm > 0 || dup_ppm > 0,
    );
    let words = || {
        let (a, b) = (node_name(from), node_name(to));
        format!(
            "{} {a} → {b}: loss {loss_ppm} ppm, duplication {dup_ppm} ppm",
            Fault::UdpFaults
        )
    };
    fault(
        words,
        pair(10, from, to) ^ u64::from(loss_ppm) << 20 ^ u64::from(dup_ppm),
        |net, _| net.set_udp_faults(host(from), host(to), loss_ppm, dup_ppm),
    );
}

/// The connection ends `pred` selects. The predicate runs with the
/// simulation released, so it may call `sim::` functions.
fn select(mut pred: impl FnMut(&ConnInfo) -> bool) -> Vec<(u32, usize)> {
    let all = {
        let exec = expect_current();
        let mut core = exec.core_mut();
        model(&mut core).connections()
    };
    all.into_iter()
        .filter(|(_, _, info)| pred(info))
        .map(|(i, e, _)| (i, e))
        .collect()
}

/// Resets every connection with an end matching `pred`; returns how many.
#[track_caller]
pub fn reset_connections(pred: impl FnMut(&ConnInfo) -> bool) -> usize {
    let mut ids: Vec<u32> = select(pred).into_iter().map(|(i, _)| i).collect();
    ids.dedup();
    announce(
        Fault::ResetConnections,
        &[],
        &[("count", ids.len().to_string())],
        true,
    );
    let words = || format!("{}: {} connection(s)", Fault::ResetConnections, ids.len());
    fault(words, 11 << 56 ^ ids.len() as u64, |net, now| {
        net.reset_connections_by_id(&ids, now)
    });
    ids.len()
}

/// Resets every connection from `a` to `b` (the ends on `a` whose peer is
/// `b`); returns how many.
#[track_caller]
pub fn reset_between(a: impl AsNode, b: impl AsNode) -> usize {
    let (a, b) = (a.node_id(), b.node_id());
    let (ia, ib) = (
        crate::simulation::control::node_ip(a),
        crate::simulation::control::node_ip(b),
    );
    reset_connections(|c| Some(c.local.ip()) == ia && Some(c.peer.ip()) == ib)
}

/// Sets `fault` on every existing connection end matching `pred` (short
/// reads, throttling, hold after N bytes, partial write then reset,
/// silence); returns how many ends. `ConnFault::default()` clears.
#[track_caller]
pub fn set_conn_fault(pred: impl FnMut(&ConnInfo) -> bool, fault_: ConnFault) -> usize {
    let ends = select(pred);
    announce(
        Fault::ConnectionFault,
        &[],
        &[("count", ends.len().to_string())],
        fault_ != ConnFault::default(),
    );
    let code = 12 << 56
        ^ fault_.short_reads.map_or(0, |n| n as u64)
        ^ fault_.throttle_bytes_per_sec.unwrap_or(0).rotate_left(8)
        ^ fault_.hold_after_bytes.unwrap_or(0).rotate_left(16)
        ^ fault_
            .partial_write_then_reset
            .map_or(0, |n| n as u64)
            .rotate_left(24)
        ^ u64::from(fault_.silent) << 40
        ^ (ends.len() as u64).rotate_left(48);
    let applied = fault_.clone();
    let words = || {
        let count = ends.len();
        format!(
            "{} {} on {count} end(s)",
            Fault::ConnectionFault,
            conn_fault_words(&fault_)
        )
    };
    fault(words, code, |net, now| {
        net.set_conn_fault_by_id(&ends, applied, now)
    });
    ends.len()
}

/// The trace's words for a connection fault: the parts it sets
/// (`short reads of 3 bytes, silent`), or `cleared`.
fn conn_fault_words(f: &ConnFault) -> String {
    let mut parts = Vec::new();
    if let Some(n) = f.short_reads {
        parts.push(format!("short reads of {n} bytes"));
    }
    if let Some(n) = f.throttle_bytes_per_sec {
        parts.push(format!("throttled to {n} bytes/s"));
    }
    if let Some(n) = f.hold_after_bytes {
        parts.push(format!("held after {n} bytes"));
    }
    if let Some(n) = f.partial_write_then_reset {
        parts.push(format!("a partial write of {n} bytes, then a reset"));
    }
    if f.silent {
        parts.push("silent".to_string());
    }
    if parts.is_empty() {
        "cleared".to_string()
    } else {
        parts.join(", ")
    }
}

/// Connects to `port` of `node` are refused.
#[track_caller]
pub fn refuse_connects(node: impl AsNode, port: u16) {
    let node = node.node_id();
    announce(
        Fault::RefuseConnects,
        &[node],
        &[("node", node_name(node)), ("port", port.to_string())],
        true,
    );
    let words = || format!("{} {}:{port}", Fault::RefuseConnects, node_name(node));
    fault(words, pair(13, node, node) ^ u64::from(port), |net, _| {
        net.refuse_connects(host(node), port)
    });
}

/// Connects to `port` of `node` go unanswered (and time out).
#[track_caller]
pub fn blackhole_connects(node: impl AsNode, port: u16) {
    let node = node.node_id();
    announce(
        Fault::BlackholeConnects,
        &[node],
        &[("node", node_name(node)), ("port", port.to_string())],
        true,
    );
    let words = || format!("{} {}:{port}", Fault::BlackholeConnects, node_name(node));
    fault(words, pair(14, node, node) ^ u64::from(port), |net, _| {
        net.blackhole_connects(host(node), port)
    });
}

/// Connects to `port` of `node` behave normally again.
#[track_caller]
pub fn clear_port_fault(node: impl AsNode, port: u16) {
    let node = node.node_id();
    announce(
        Fault::ClearPortFault,
        &[node],
        &[("node", node_name(node)), ("port", port.to_string())],
        false,
    );
    let words = || format!("{} {}:{port}", Fault::ClearPortFault, node_name(node));
    fault(words, pair(15, node, node) ^ u64::from(port), |net, _| {
        net.clear_port_fault(host(node), port)
    });
}

/// Pauses a listener: connections complete into its backlog, `accept`
/// waits (a process too busy to accept).
#[track_caller]
pub fn pause_listener(listener: &super::TcpListener) {
    let id = listener.socket_id();
    let words = || format!("pause listener {}", id.as_u64());
    fault(words, 16 << 56 ^ id.as_u64(), |net, now| {
        net.set_listener_paused(id, true, now)
    });
}

/// Resumes a paused listener.
#[track_caller]
pub fn resume_listener(listener: &super::TcpListener) {
    let id = listener.socket_id();
    let words = || format!("resume listener {}", id.as_u64());
    fault(words, 17 << 56 ^ id.as_u64(), |net, now| {
        net.set_listener_paused(id, false, now)
    });
}

/// Makes `name` a routed name (like a Kubernetes ClusterIP): it resolves
/// to every node in `nodes`, and each connection to it reaches one of them,
/// drawn from the seed.
#[track_caller]
pub fn route<N: AsNode>(name: &str, nodes: &[N]) {
    assert!(!nodes.is_empty(), "sim::net::route needs at least one node");
    let nodes: Vec<NodeId> = nodes.iter().map(AsNode::node_id).collect();
    announce(
        Fault::Route,
        &nodes,
        &[
            ("name", name.to_string()),
            ("nodes", nodes.len().to_string()),
        ],
        false,
    );
    let exec = expect_current();
    let ips: Vec<std::net::IpAddr> = {
        let core = exec.core();
        nodes
            .iter()
            .map(|&n| core.node(n).ip.expect("every node has an IP"))
            .collect()
    };
    let words = || {
        let names: Vec<String> = nodes.iter().map(|&n| node_name(n)).collect();
        format!("{} {name} → {}", Fault::Route, names.join(", "))
    };
    fault(words, 18 << 56 ^ nodes.len() as u64, |net, _| {
        net.set_name(name, ips)
    });
}
