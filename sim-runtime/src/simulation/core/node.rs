//! Nodes: every task belongs to one, inherited from its spawner.
//!
//! A node models one process on one machine: a name, an optional IP, a clock
//! (offset and drift). What else a node has — signals, sockets, a disk —
//! lives in the drivers (core/executor/driver.rs). The executor can kill it (process death: every task
//! dropped), pause and resume it (tasks not polled, timers held), and revive
//! it for a restart.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::ops::{Deref, DerefMut};

/// A node of the simulation. `NodeId::MAIN` runs the `block_on` future.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    pub const MAIN: NodeId = NodeId(0);

    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    /// The node's number (0 is the main node).
    pub fn as_u32(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "node#{}", self.0)
    }
}

pub(crate) struct NodeState {
    pub name: String,
    pub ip: Option<IpAddr>,
    /// Whether `ip` was given with `.ip(..)` rather than drawn from
    /// [`IMPLICIT_NET`]: a node that asks for a taken address is told which
    /// kind its holder has, since the fix differs (an implicit holder means
    /// the address asked for lies inside the implicit range).
    pub ip_explicit: bool,
    pub alive: bool,
    pub paused: bool,
    pub incarnation: u32,
    pub mono_offset_ns: i64,
    pub wall_offset_ns: i64,
    pub drift_ppm: i64,
    /// CPUs the node's machine has: what `available_parallelism` answers
    /// on it (rayon's pool size, Tokio's worker count).
    pub cpus: u32,
    /// Tasks woken while the node was paused.
    pub parked: Vec<(u32, u64)>,
    /// Timers that came due while the node was paused.
    pub deferred: Vec<Option<crate::simulation::core::executor::WakeRef>>,
}

impl NodeState {
    pub(crate) fn new(name: String, ip: Option<IpAddr>, ip_explicit: bool) -> NodeState {
        NodeState {
            name,
            ip,
            ip_explicit,
            alive: true,
            paused: false,
            incarnation: 0,
            mono_offset_ns: 0,
            wall_offset_ns: 0,
            drift_ppm: 0,
            cpus: 1,
            parked: Vec::new(),
            deferred: Vec::new(),
        }
    }
}

/// The nodes, in creation order (a node's index is its [`NodeId`]), with
/// their names and addresses indexed: creating node N asks whether a name
/// or an address is taken, which a scan of the list made quadratic in the
/// cluster's size (issue 26 item 3: 10,000 nodes). Ordered maps, not hash
/// maps: std's hasher seeds itself from the randomness the simulation
/// draws. Nodes are only ever added, and a node's name and address never
/// change, so the indexes stay true.
pub(crate) struct Nodes {
    list: Vec<NodeState>,
    by_name: BTreeMap<String, u32>,
    by_ip: BTreeMap<IpAddr, u32>,
}

impl Nodes {
    /// The nodes, `main` the first.
    pub(crate) fn new(main: NodeState) -> Nodes {
        let mut n = Nodes {
            list: Vec::new(),
            by_name: BTreeMap::new(),
            by_ip: BTreeMap::new(),
        };
        n.push(main);
        n
    }

    /// Adds a node; returns its id.
    pub(crate) fn push(&mut self, state: NodeState) -> NodeId {
        let id = NodeId(self.list.len() as u32);
        self.by_name.entry(state.name.clone()).or_insert(id.0);
        if let Some(ip) = state.ip {
            self.by_ip.entry(ip).or_insert(id.0);
        }
        self.list.push(state);
        id
    }

    /// The first node called `name`.
    pub(crate) fn named(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).map(|&i| NodeId(i))
    }

    /// The first node whose address is `ip`.
    pub(crate) fn with_ip(&self, ip: IpAddr) -> Option<&NodeState> {
        self.by_ip.get(&ip).map(|&i| &self.list[i as usize])
    }
}

impl Deref for Nodes {
    type Target = [NodeState];
    fn deref(&self) -> &[NodeState] {
        &self.list
    }
}

impl DerefMut for Nodes {
    fn deref_mut(&mut self) -> &mut [NodeState] {
        &mut self.list
    }
}

/// Where implicit addresses come from (nodes built without `.ip(..)`, the
/// main node included): 198.18.0.0/15, which RFC 2544 sets aside for
/// benchmarking network devices. Services never configure addresses there,
/// so an implicit address never takes one a test gives a node explicitly
/// (10.0.0.1, 192.168.1.10, ...), and a test that wants an address of its
/// own only has to stay outside this range.
pub(crate) const IMPLICIT_NET: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 18, 0, 0), 15);

/// [`IMPLICIT_NET`] written as `198.18.0.0/15`, for messages.
pub(crate) fn implicit_net() -> String {
    format!("{}/{}", IMPLICIT_NET.0, IMPLICIT_NET.1)
}

/// The implicit address of the next node: the host numbers of
/// [`IMPLICIT_NET`] in order (198.18.0.1 for the main node, then counting
/// up with the node's number), skipping any address a node already has.
#[track_caller]
pub(crate) fn auto_ip(nodes: Option<&Nodes>) -> IpAddr {
    let (net, prefix) = IMPLICIT_NET;
    // Host numbers 1 ..= size - 2: neither the range's first address (the
    // network's own) nor its last (its broadcast) is a host's.
    let hosts = (1u64 << (32 - prefix)) - 2;
    let first = nodes.map_or(0, |n| n.len()) as u64 % hosts;
    for k in 0..hosts {
        let host = (first + k) % hosts + 1;
        let ip = IpAddr::V4(Ipv4Addr::from(u32::from(net) | host as u32));
        if nodes.is_none_or(|n| n.with_ip(ip).is_none()) {
            return ip;
        }
    }
    panic!(
        "sim: no implicit address is left: every address of {} belongs to a node. Give \
         nodes explicit addresses outside it with .ip(..)",
        implicit_net()
    )
}
