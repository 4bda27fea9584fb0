//! `sim::net`: the network's faults and settings, each one call, each
//! recorded in the run's fingerprint.
//!
//! Every call here has a scripted form through `sim::at`:
//! `sim::at(secs(30), move || sim::net::partition(a, b))`.

use super::{model, route_notes};
use crate::simulation::executor::expect_current;
use crate::simulation::node::NodeId;
use crate::simulation::trace::Kind;
use sim_net::{HostId, Net};
use std::time::Duration;

pub use sim_net::{Config, ConnFault, ConnInfo};

/// Applies a fault to the model, records it, and wakes whoever it affects.
#[track_caller]
fn fault<R>(code: u64, f: impl FnOnce(&mut Net, u64) -> R) -> R {
    tracing::debug!(target: "sim::net", code = format!("{code:#x}"), "fault");
    let exec = expect_current();
    let mut wake = Vec::new();
    let r = {
        let mut core = exec.core.borrow_mut();
        let now = core.now;
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
    let mut core = exec.core.borrow_mut();
    assert!(
        core.net.model_is_unused(),
        "sim::net::configure must come before the run's first socket"
    );
    core.net.config = Some(config);
    // A model made before any socket existed is rebuilt from the new
    // settings at its next use; Unix sockets, which no setting touches,
    // move into it now.
    if let Some(mut old) = core.net.reset_model() {
        if old.open_unix_sockets() > 0 {
            super::model(&mut core).adopt_unix_sockets(&mut old);
        }
    }
}

/// Cuts both directions between `a` and `b`: connects time out (SYNs are
/// lost), stream bytes wait (and time out after the retransmission limit),
/// datagrams are lost.
#[track_caller]
pub fn partition(a: NodeId, b: NodeId) {
    fault(pair(1, a, b), |net, now| {
        net.partition(host(a), host(b), false, now)
    });
}

/// Cuts only the direction from `from` to `to`.
#[track_caller]
pub fn partition_one_way(from: NodeId, to: NodeId) {
    fault(pair(2, from, to), |net, now| {
        net.partition(host(from), host(to), true, now)
    });
}

/// Clogs both directions between `a` and `b`: bytes queue, none are lost.
#[track_caller]
pub fn clog(a: NodeId, b: NodeId) {
    fault(pair(3, a, b), |net, now| {
        net.clog(host(a), host(b), false, now)
    });
}

/// Clogs only the direction from `from` to `to`.
#[track_caller]
pub fn clog_one_way(from: NodeId, to: NodeId) {
    fault(pair(4, from, to), |net, now| {
        net.clog(host(from), host(to), true, now)
    });
}

/// Clogs every link to and from `node`.
#[track_caller]
pub fn clog_node(node: NodeId) {
    fault(pair(5, node, node), |net, now| {
        net.clog_host(host(node), now)
    });
}

/// Unclogs a node clogged with [`clog_node`].
#[track_caller]
pub fn unclog_node(node: NodeId) {
    fault(pair(6, node, node), |net, now| {
        net.unclog_host(host(node), now)
    });
}

/// Heals partitions and clogs between `a` and `b`; held bytes leave now.
#[track_caller]
pub fn heal(a: NodeId, b: NodeId) {
    fault(pair(7, a, b), |net, now| net.heal(host(a), host(b), now));
}

/// Heals every partition and clog.
#[track_caller]
pub fn heal_all() {
    fault(8 << 56, |net, now| net.heal_all(now));
}

/// Sets the one-way latency and jitter from `from` to `to`.
#[track_caller]
pub fn set_latency(from: NodeId, to: NodeId, latency: Duration, jitter: Duration) {
    fault(
        pair(9, from, to) ^ ns(latency).rotate_left(17) ^ ns(jitter),
        |net, _| net.set_link_latency(host(from), host(to), ns(latency), ns(jitter)),
    );
}

/// Datagrams from `from` to `to` are lost / duplicated with these
/// probabilities (parts per million).
#[track_caller]
pub fn set_udp_faults(from: NodeId, to: NodeId, loss_ppm: u32, dup_ppm: u32) {
    fault(
        pair(10, from, to) ^ u64::from(loss_ppm) << 20 ^ u64::from(dup_ppm),
        |net, _| net.set_udp_faults(host(from), host(to), loss_ppm, dup_ppm),
    );
}

/// The connection ends `pred` selects. The predicate runs with the
/// simulation released, so it may call `sim::` functions.
fn select(mut pred: impl FnMut(&ConnInfo) -> bool) -> Vec<(u32, usize)> {
    let all = {
        let exec = expect_current();
        let mut core = exec.core.borrow_mut();
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
    fault(11 << 56 ^ ids.len() as u64, |net, now| {
        net.reset_connections_by_id(&ids, now)
    });
    ids.len()
}

/// Sets `fault` on every existing connection end matching `pred` (short
/// reads, throttling, hold after N bytes, partial write then reset,
/// silence); returns how many ends. `ConnFault::default()` clears.
#[track_caller]
pub fn set_conn_fault(pred: impl FnMut(&ConnInfo) -> bool, fault_: ConnFault) -> usize {
    let ends = select(pred);
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
    fault(code, |net, now| {
        net.set_conn_fault_by_id(&ends, fault_, now)
    });
    ends.len()
}

/// Connects to `port` of `node` are refused.
#[track_caller]
pub fn refuse_connects(node: NodeId, port: u16) {
    fault(pair(13, node, node) ^ u64::from(port), |net, _| {
        net.refuse_connects(host(node), port)
    });
}

/// Connects to `port` of `node` go unanswered (and time out).
#[track_caller]
pub fn blackhole_connects(node: NodeId, port: u16) {
    fault(pair(14, node, node) ^ u64::from(port), |net, _| {
        net.blackhole_connects(host(node), port)
    });
}

/// Connects to `port` of `node` behave normally again.
#[track_caller]
pub fn clear_port_fault(node: NodeId, port: u16) {
    fault(pair(15, node, node) ^ u64::from(port), |net, _| {
        net.clear_port_fault(host(node), port)
    });
}

/// Pauses a listener: connections complete into its backlog, `accept`
/// waits (a process too busy to accept).
#[track_caller]
pub fn pause_listener(listener: &super::TcpListener) {
    let id = listener.socket_id();
    fault(16 << 56 ^ id.as_u64(), |net, now| {
        net.set_listener_paused(id, true, now)
    });
}

/// Resumes a paused listener.
#[track_caller]
pub fn resume_listener(listener: &super::TcpListener) {
    let id = listener.socket_id();
    fault(17 << 56 ^ id.as_u64(), |net, now| {
        net.set_listener_paused(id, false, now)
    });
}

/// Makes `name` a routed name (like a Kubernetes ClusterIP): it resolves
/// to every node in `nodes`, and each connection to it reaches one of them,
/// drawn from the seed.
#[track_caller]
pub fn route(name: &str, nodes: &[NodeId]) {
    assert!(!nodes.is_empty(), "sim::net::route needs at least one node");
    let exec = expect_current();
    let ips: Vec<std::net::IpAddr> = {
        let core = exec.core.borrow();
        nodes
            .iter()
            .map(|&n| core.node(n).ip.expect("every node has an IP"))
            .collect()
    };
    fault(18 << 56 ^ nodes.len() as u64, |net, _| {
        net.set_name(name, ips)
    });
}
