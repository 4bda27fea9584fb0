//! The network: hosts, sockets, links, and the notifications a call leaves.

use crate::config::Config;
use crate::errno::*;
use crate::tcp::{Conn, Connecting, Listener};
use crate::udp::Udp;
use crate::unix::{UnixKind, UnixSock, UnixSockets};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A host: one per simulated node (same number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostId(pub u32);

/// A socket: a slot and a generation, so a stale id never reaches a reused
/// slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SocketId {
    pub(crate) index: u32,
    pub(crate) gen: u32,
}

impl SocketId {
    /// No socket (a placeholder while a pair is being made).
    pub(crate) const NONE: SocketId = SocketId {
        index: u32::MAX,
        gen: u32::MAX,
    };

    /// The slot number (dense: suitable as an index into a side table).
    pub fn index(self) -> usize {
        self.index as usize
    }

    /// One number naming this socket for the run's trace.
    pub fn as_u64(self) -> u64 {
        u64::from(self.gen) << 32 | u64::from(self.index)
    }

    /// The socket [`SocketId::as_u64`] named (a report names it back).
    pub fn from_u64(v: u64) -> SocketId {
        SocketId {
            index: v as u32,
            gen: (v >> 32) as u32,
        }
    }
}

/// The answer to an operation that may have to wait.
#[derive(Debug)]
pub enum Progress<T> {
    /// Done, with this result.
    Ready(io::Result<T>),
    /// Not now. Ask again when notified, or at `wake_at` (virtual ns) if
    /// given: the earliest time the answer may change on its own.
    Pending { wake_at: Option<u64> },
}

impl<T> Progress<T> {
    pub(crate) fn err(errno: i32) -> Progress<T> {
        Progress::Ready(Err(err(errno)))
    }
}

/// A socket whose answers may change from `at` on (a virtual time, possibly
/// already past) because of the call that left this notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification {
    pub socket: SocketId,
    pub at: u64,
    /// Whose answers: a write concerns the peer's readers only, a read its
    /// writers (TCP bytes, Unix sockets), so a task waiting in the other
    /// direction is not polled for nothing; the rest (connects, closes,
    /// resets, UDP) concern both directions.
    pub wakes: Wakes,
}

/// Which of a socket's waiters a [`Notification`] concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wakes {
    /// Readers and writers (readers first).
    All,
    /// Those waiting to read (or accept).
    Readers,
    /// Those waiting to write (or send).
    Writers,
}

impl Wakes {
    /// Whether the waiters of direction `dir` (0: reading, 1: writing) are
    /// concerned.
    pub fn includes(self, dir: usize) -> bool {
        match self {
            Wakes::All => true,
            Wakes::Readers => dir == 0,
            Wakes::Writers => dir == 1,
        }
    }
}

/// What a socket is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketKind {
    TcpBound,
    TcpConnecting,
    TcpListener,
    TcpStream,
    Udp,
    UnixListener,
    UnixStream,
    UnixDatagram,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Proto {
    Tcp,
    Udp,
}

/// A socket bound on a port: its local IP, the socket, `SO_REUSEADDR`.
pub(crate) type Binding = (IpAddr, SocketId, bool);

pub(crate) struct Host {
    pub ip: IpAddr,
    /// Crashed: the machine is off; nothing it sends or receives happens.
    pub crashed: bool,
    /// Bound ports: every socket on `(proto, port)` with its local IP.
    pub ports: BTreeMap<(Proto, u16), Vec<Binding>>,
    pub next_ephemeral: u16,
    /// Connections with an end on this host (slot numbers).
    pub conns: BTreeSet<u32>,
    /// Sockets open on this host.
    pub sockets: BTreeSet<SocketId>,
    pub clogged: bool,
    /// Local addresses of connections this host closed first, in
    /// `TIME_WAIT` until the given time: binding them needs `SO_REUSEADDR`.
    pub time_wait: BTreeMap<(IpAddr, u16), u64>,
}

pub(crate) enum Sock {
    TcpBound {
        host: HostId,
        addr: SocketAddr,
    },
    Connecting(Connecting),
    Listener(Listener),
    Stream {
        host: HostId,
        conn: u32,
        end: usize,
    },
    Udp(Udp),
    /// Boxed: a Unix socket carries its buffers, and most sockets are not one.
    Unix(Box<UnixSock>),
}

impl Sock {
    pub(crate) fn host(&self) -> HostId {
        match self {
            Sock::TcpBound { host, .. } | Sock::Stream { host, .. } => *host,
            Sock::Connecting(c) => c.host,
            Sock::Listener(l) => l.host,
            Sock::Udp(u) => u.host,
            Sock::Unix(u) => u.host,
        }
    }
}

struct SockSlot {
    gen: u32,
    sock: Option<Sock>,
}

/// A link's settings and faults (only links that differ from the default
/// are stored).
#[derive(Default, Clone, Debug)]
pub(crate) struct Link {
    pub latency_ns: Option<u64>,
    pub jitter_ns: Option<u64>,
    pub partitioned: bool,
    pub clogged: bool,
    pub udp_loss_ppm: u32,
    pub udp_dup_ppm: u32,
    pub datagrams: u64,
}

/// Whether bytes get across a link now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Open,
    /// Held, none lost; no retransmission timeout.
    Clogged,
    /// Lost and retransmitted; the sender times out eventually.
    Cut,
}

impl Flow {
    /// The flow between two hosts: either crashed, one host talking to
    /// itself, the link's own faults, either host clogged, in that order.
    pub(crate) fn of(crashed: bool, same: bool, link: Option<&Link>, clogged: bool) -> Flow {
        if crashed {
            return Flow::Cut;
        }
        if same {
            return Flow::Open;
        }
        if let Some(l) = link {
            if l.partitioned {
                return Flow::Cut;
            }
            if l.clogged {
                return Flow::Clogged;
            }
        }
        if clogged {
            return Flow::Clogged;
        }
        Flow::Open
    }
}

/// Refused or black-holed connects to one port of one host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortFault {
    Refuse,
    BlackHole,
}

/// The simulated network of one run.
pub struct Net {
    pub(crate) config: Config,
    /// Payload buffers of received datagrams, kept for the next ones sent
    /// (udp.rs): a datagram then costs no allocation.
    pub(crate) spare_payloads: Vec<Vec<u8>>,
    pub(crate) hosts: Vec<Option<Host>>,
    ips: BTreeMap<IpAddr, HostId>,
    names: BTreeMap<String, Vec<IpAddr>>,
    socks: Vec<SockSlot>,
    free_socks: Vec<u32>,
    pub(crate) conns: Vec<Option<Conn>>,
    pub(crate) free_conns: Vec<u32>,
    pub(crate) conn_numbers: u64,
    pub(crate) links: BTreeMap<(HostId, HostId), Link>,
    /// Directions held by a blocked link or a silent host, by link.
    pub(crate) held: BTreeMap<(HostId, HostId), BTreeSet<(u32, usize)>>,
    pub(crate) port_faults: BTreeMap<(HostId, u16), PortFault>,
    notes: Vec<Notification>,
    /// The latest time any call passed in (for expiring `TIME_WAIT`).
    pub(crate) clock: u64,
    /// Extra delivery delay of the write in progress (`tcp_write_slow`).
    pub(crate) extra_delay_ns: u64,
    /// Bytes accepted by writes, and bytes consumed by reads or discarded,
    /// over the run (the pipes hold the difference).
    pub(crate) bytes_written: u64,
    pub(crate) bytes_gone: u64,
    /// The traffic log, when asked for (record.rs); never read here.
    pub(crate) traffic: Option<crate::record::Traffic>,
    /// The Unix sockets' namespaces (their sockets are in `socks`).
    pub(crate) unix: UnixSockets,
}

pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut x = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub(crate) const EPHEMERAL_LOW: u16 = 32768;
pub(crate) const EPHEMERAL_HIGH: u16 = 60999;

impl Net {
    pub fn new(config: Config) -> Net {
        config.validate();
        Net {
            config,
            hosts: Vec::new(),
            ips: BTreeMap::new(),
            names: BTreeMap::new(),
            socks: Vec::new(),
            free_socks: Vec::new(),
            conns: Vec::new(),
            free_conns: Vec::new(),
            conn_numbers: 0,
            links: BTreeMap::new(),
            spare_payloads: Vec::new(),
            held: BTreeMap::new(),
            port_faults: BTreeMap::new(),
            notes: Vec::new(),
            clock: 0,
            extra_delay_ns: 0,
            bytes_written: 0,
            bytes_gone: 0,
            traffic: None,
            unix: UnixSockets::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Adds a host with its IP. Panics if the host or the IP exists already
    /// (the runtime assigns both).
    pub fn add_host(&mut self, id: HostId, ip: IpAddr) {
        assert!(
            !ip.is_unspecified() && !ip.is_loopback(),
            "sim-net: a host's IP must be a routable address, not {ip}"
        );
        let i = id.0 as usize;
        if self.hosts.len() <= i {
            self.hosts.resize_with(i + 1, || None);
        }
        assert!(self.hosts[i].is_none(), "sim-net: host {} exists", id.0);
        assert!(
            self.ips.insert(ip, id).is_none(),
            "sim-net: IP {ip} belongs to another host"
        );
        let range = u64::from(EPHEMERAL_HIGH - EPHEMERAL_LOW) + 1;
        let start = EPHEMERAL_LOW + (mix(self.config.seed, u64::from(id.0)) % range) as u16;
        self.hosts[i] = Some(Host {
            ip,
            crashed: false,
            ports: BTreeMap::new(),
            next_ephemeral: start,
            conns: BTreeSet::new(),
            sockets: BTreeSet::new(),
            clogged: false,
            time_wait: BTreeMap::new(),
        });
    }

    pub fn has_host(&self, id: HostId) -> bool {
        self.hosts.get(id.0 as usize).is_some_and(|h| h.is_some())
    }

    /// The host that owns `ip`, if any.
    pub fn host_of(&self, ip: IpAddr) -> Option<HostId> {
        self.ips.get(&ip).copied()
    }

    /// The host's IP.
    pub fn host_ip(&self, id: HostId) -> IpAddr {
        self.host(id).ip
    }

    pub(crate) fn host(&self, id: HostId) -> &Host {
        self.hosts
            .get(id.0 as usize)
            .and_then(|h| h.as_ref())
            .unwrap_or_else(|| panic!("sim-net: host {} does not exist", id.0))
    }

    pub(crate) fn host_mut(&mut self, id: HostId) -> &mut Host {
        self.hosts
            .get_mut(id.0 as usize)
            .and_then(|h| h.as_mut())
            .unwrap_or_else(|| panic!("sim-net: host {} does not exist", id.0))
    }

    /// Makes `name` resolve to `ips` (a node's name, or a routed name that
    /// reaches several hosts).
    pub fn set_name(&mut self, name: &str, ips: Vec<IpAddr>) {
        self.names.insert(name.to_ascii_lowercase(), ips);
    }

    /// What `name` resolves to: `localhost`, a literal IP, or a set name.
    pub fn resolve(&self, name: &str) -> Option<Vec<IpAddr>> {
        if let Ok(ip) = name.parse::<IpAddr>() {
            return Some(vec![ip]);
        }
        let lower = name.trim_end_matches('.').to_ascii_lowercase();
        if lower == "localhost" {
            return Some(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        }
        self.names.get(&lower).cloned()
    }

    /// Chooses one of a routed name's addresses for connection attempt
    /// `attempt` (callers number their attempts; the draw is a function of
    /// the seed, the name and the number).
    pub fn pick_route(&self, name: &str, ips: &[IpAddr], attempt: u64) -> IpAddr {
        assert!(
            !ips.is_empty(),
            "sim-net: a route needs at least one address"
        );
        let mut h = self.config.seed;
        for b in name.bytes() {
            h = mix(h, u64::from(b));
        }
        ips[(mix(h, attempt) % ips.len() as u64) as usize]
    }

    // ----- sockets ----------------------------------------------------------

    pub(crate) fn insert_sock(&mut self, sock: Sock) -> SocketId {
        let host = sock.host();
        let index = match self.free_socks.pop() {
            Some(i) => i,
            None => {
                self.socks.push(SockSlot { gen: 0, sock: None });
                (self.socks.len() - 1) as u32
            }
        };
        let slot = &mut self.socks[index as usize];
        debug_assert!(slot.sock.is_none());
        slot.sock = Some(sock);
        let id = SocketId {
            index,
            gen: slot.gen,
        };
        self.host_mut(host).sockets.insert(id);
        id
    }

    pub(crate) fn sock(&self, id: SocketId) -> Option<&Sock> {
        self.socks
            .get(id.index as usize)
            .filter(|s| s.gen == id.gen)
            .and_then(|s| s.sock.as_ref())
    }

    pub(crate) fn sock_mut(&mut self, id: SocketId) -> Option<&mut Sock> {
        self.socks
            .get_mut(id.index as usize)
            .filter(|s| s.gen == id.gen)
            .and_then(|s| s.sock.as_mut())
    }

    /// Removes a socket's slot (the caller has already undone its effects).
    pub(crate) fn remove_sock(&mut self, id: SocketId) -> Option<Sock> {
        let slot = self
            .socks
            .get_mut(id.index as usize)
            .filter(|s| s.gen == id.gen)?;
        let sock = slot.sock.take()?;
        slot.gen = slot.gen.wrapping_add(1);
        self.free_socks.push(id.index);
        if let Some(Some(h)) = self.hosts.get_mut(sock.host().0 as usize) {
            h.sockets.remove(&id);
        }
        Some(sock)
    }

    /// What the socket is, or `None` once it was closed.
    pub fn kind(&self, id: SocketId) -> Option<SocketKind> {
        Some(match self.sock(id)? {
            Sock::TcpBound { .. } => SocketKind::TcpBound,
            Sock::Connecting(_) => SocketKind::TcpConnecting,
            Sock::Listener(_) => SocketKind::TcpListener,
            Sock::Stream { .. } => SocketKind::TcpStream,
            Sock::Udp(_) => SocketKind::Udp,
            Sock::Unix(u) => match u.kind {
                UnixKind::Listener { .. } => SocketKind::UnixListener,
                UnixKind::Stream { .. } => SocketKind::UnixStream,
                UnixKind::Dgram { .. } => SocketKind::UnixDatagram,
            },
        })
    }

    /// The host a socket lives on.
    pub fn socket_host(&self, id: SocketId) -> Option<HostId> {
        self.sock(id).map(Sock::host)
    }

    pub(crate) fn notify(&mut self, socket: Option<SocketId>, at: u64) {
        self.notify_some(socket, at, Wakes::All);
    }

    pub(crate) fn notify_some(&mut self, socket: Option<SocketId>, at: u64, wakes: Wakes) {
        if let Some(socket) = socket {
            self.notes.push(Notification { socket, at, wakes });
        }
    }

    /// The notifications left by the calls since the last take.
    pub fn take_notifications(&mut self, into: &mut Vec<Notification>) {
        into.append(&mut self.notes);
    }

    // ----- addresses --------------------------------------------------------

    /// Checks that `host` may bind `ip`.
    pub(crate) fn check_local_ip(&self, host: HostId, ip: IpAddr) -> io::Result<()> {
        if ip.is_unspecified() || ip.is_loopback() || ip == self.host(host).ip {
            Ok(())
        } else {
            Err(err(EADDRNOTAVAIL))
        }
    }

    /// Binds `(proto, addr)` on `host` for `sock`, choosing an ephemeral
    /// port for port 0. Returns the bound address.
    pub(crate) fn bind_port(
        &mut self,
        host: HostId,
        proto: Proto,
        addr: SocketAddr,
        sock: SocketId,
        reuse: bool,
    ) -> io::Result<SocketAddr> {
        self.check_local_ip(host, addr.ip())?;
        let port = if addr.port() == 0 {
            self.ephemeral(host, proto, addr.ip())?
        } else {
            if self.port_taken(host, proto, addr.ip(), addr.port(), reuse) {
                return Err(err(EADDRINUSE));
            }
            addr.port()
        };
        self.host_mut(host)
            .ports
            .entry((proto, port))
            .or_default()
            .push((addr.ip(), sock, reuse));
        Ok(SocketAddr::new(addr.ip(), port))
    }

    pub(crate) fn unbind_port(&mut self, host: HostId, proto: Proto, port: u16, sock: SocketId) {
        let Some(Some(h)) = self.hosts.get_mut(host.0 as usize) else {
            return;
        };
        if let Some(v) = h.ports.get_mut(&(proto, port)) {
            v.retain(|&(_, s, _)| s != sock);
            if v.is_empty() {
                h.ports.remove(&(proto, port));
            }
        }
    }

    /// Whether binding `ip:port` conflicts: an overlapping address is bound,
    /// unless both sockets set `SO_REUSEADDR` (for TCP; `listen` then
    /// refuses the second listener).
    fn port_taken(&self, host: HostId, proto: Proto, ip: IpAddr, port: u16, reuse: bool) -> bool {
        if proto == Proto::Tcp && !reuse {
            let waiting = self
                .host(host)
                .time_wait
                .iter()
                .any(|(&(wip, wport), &until)| {
                    wport == port
                        && until > self.clock
                        && (wip == ip || wip.is_unspecified() || ip.is_unspecified())
                });
            if waiting {
                return true;
            }
        }
        self.host(host).ports.get(&(proto, port)).is_some_and(|v| {
            v.iter().any(|&(other, s, other_reuse)| {
                let overlaps = other == ip || other.is_unspecified() || ip.is_unspecified();
                let shared = proto == Proto::Tcp
                    && reuse
                    && other_reuse
                    && !matches!(self.sock(s), Some(Sock::Listener(_)));
                overlaps && !shared
            })
        })
    }

    fn ephemeral(&mut self, host: HostId, proto: Proto, ip: IpAddr) -> io::Result<u16> {
        let range = EPHEMERAL_HIGH - EPHEMERAL_LOW + 1;
        for _ in 0..range {
            let h = self.host_mut(host);
            let port = h.next_ephemeral;
            h.next_ephemeral = if port >= EPHEMERAL_HIGH {
                EPHEMERAL_LOW
            } else {
                port + 1
            };
            if !self.port_taken(host, proto, ip, port, false) {
                return Ok(port);
            }
        }
        Err(err(EADDRNOTAVAIL))
    }

    /// The sockets bound on `(proto, addr)` of `host` that would receive for
    /// that address: exact IP first, then the unspecified address.
    pub(crate) fn lookup_port(
        &self,
        host: HostId,
        proto: Proto,
        addr: SocketAddr,
    ) -> Vec<SocketId> {
        let Some(v) = self.host(host).ports.get(&(proto, addr.port())) else {
            return Vec::new();
        };
        let exact: Vec<SocketId> = v
            .iter()
            .filter(|(ip, _, _)| *ip == addr.ip())
            .map(|&(_, s, _)| s)
            .collect();
        if !exact.is_empty() {
            return exact;
        }
        v.iter()
            .filter(|(ip, _, _)| ip.is_unspecified() && ip.is_ipv4() == addr.ip().is_ipv4())
            .map(|&(_, s, _)| s)
            .collect()
    }

    /// The first socket [`Net::lookup_port`] would list, without the list.
    pub(crate) fn first_on_port(
        &self,
        host: HostId,
        proto: Proto,
        addr: SocketAddr,
    ) -> Option<SocketId> {
        let v = self.host(host).ports.get(&(proto, addr.port()))?;
        v.iter()
            .find(|(ip, _, _)| *ip == addr.ip())
            .or_else(|| {
                v.iter()
                    .find(|(ip, _, _)| ip.is_unspecified() && ip.is_ipv4() == addr.ip().is_ipv4())
            })
            .map(|&(_, s, _)| s)
    }

    /// The host that receives packets for `ip` sent from `src`.
    pub(crate) fn route(&self, src: HostId, ip: IpAddr) -> Option<HostId> {
        if ip.is_loopback() || ip.is_unspecified() || ip == self.host(src).ip {
            Some(src)
        } else {
            self.ips.get(&ip).copied()
        }
    }

    /// The local IP a socket of `src` uses to reach `dst_ip`.
    pub(crate) fn source_ip(&self, src: HostId, dst_ip: IpAddr) -> IpAddr {
        if dst_ip.is_loopback() || dst_ip.is_unspecified() {
            if dst_ip.is_ipv4() {
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            } else {
                IpAddr::V6(Ipv6Addr::LOCALHOST)
            }
        } else {
            self.host(src).ip
        }
    }

    // ----- links ------------------------------------------------------------

    /// Whether bytes from `src` reach `dst` now.
    pub(crate) fn flow(&self, src: HostId, dst: HostId) -> Flow {
        self.flow_on(self.links.get(&(src, dst)), src, dst)
    }

    /// [`Net::flow`] with the link already looked up.
    pub(crate) fn flow_on(&self, link: Option<&Link>, src: HostId, dst: HostId) -> Flow {
        let (crashed, clogged) = self.hosts_state(src, dst);
        Flow::of(crashed, src == dst, link, clogged)
    }

    /// Whether either host is crashed, and whether either is clogged.
    pub(crate) fn hosts_state(&self, src: HostId, dst: HostId) -> (bool, bool) {
        let (s, d) = (self.host(src), self.host(dst));
        (s.crashed || d.crashed, s.clogged || d.clogged)
    }

    /// The one-way delay of chunk `chunk` of stream `key` from `src` to `dst`.
    pub(crate) fn delay(&self, src: HostId, dst: HostId, key: u64, chunk: u64) -> u64 {
        self.delay_on(self.links.get(&(src, dst)), src, dst, key, chunk)
    }

    /// [`Net::delay`] with the link already looked up.
    pub(crate) fn delay_on(
        &self,
        link: Option<&Link>,
        src: HostId,
        dst: HostId,
        key: u64,
        chunk: u64,
    ) -> u64 {
        if src == dst {
            return self.config.loopback_latency_ns;
        }
        let latency = link
            .and_then(|l| l.latency_ns)
            .unwrap_or(self.config.latency_ns);
        let jitter = link
            .and_then(|l| l.jitter_ns)
            .unwrap_or(self.config.jitter_ns);
        if jitter == 0 {
            return latency;
        }
        let h = mix(
            mix(self.config.seed, u64::from(src.0) << 32 | u64::from(dst.0)),
            mix(key, chunk),
        );
        latency + h % (jitter + 1)
    }

    /// The longest round trip between two hosts (for answers that take one).
    pub(crate) fn max_delay(&self, src: HostId, dst: HostId) -> u64 {
        if src == dst {
            return self.config.loopback_latency_ns;
        }
        let link = self.links.get(&(src, dst));
        link.and_then(|l| l.latency_ns)
            .unwrap_or(self.config.latency_ns)
            + link
                .and_then(|l| l.jitter_ns)
                .unwrap_or(self.config.jitter_ns)
    }

    pub(crate) fn link_mut(&mut self, src: HostId, dst: HostId) -> &mut Link {
        self.links.entry((src, dst)).or_default()
    }

    /// Bookkeeping invariant: bytes accepted = bytes gone + bytes in pipes.
    pub fn check_invariants(&self) {
        let queued: u64 = self
            .conns
            .iter()
            .flatten()
            .map(|c| c.pipes.iter().map(|p| p.data.len() as u64).sum::<u64>())
            .sum();
        assert_eq!(
            self.bytes_written,
            self.bytes_gone + queued,
            "sim-net: written = consumed + discarded + queued"
        );
        for (i, s) in self.socks.iter().enumerate() {
            if let Some(sock) = &s.sock {
                let id = SocketId {
                    index: i as u32,
                    gen: s.gen,
                };
                assert!(
                    self.host(sock.host()).sockets.contains(&id),
                    "sim-net: every socket is listed by its host"
                );
                if let Sock::Unix(u) = sock {
                    self.unix_check(id, u);
                }
            }
        }
        self.unix_check_names();
    }

    /// Number of open sockets (all hosts).
    pub fn open_sockets(&self) -> usize {
        self.socks.iter().filter(|s| s.sock.is_some()).count()
    }

    /// Number of open Unix sockets (all hosts).
    pub fn open_unix_sockets(&self) -> usize {
        self.socks
            .iter()
            .filter(|s| matches!(s.sock, Some(Sock::Unix(_))))
            .count()
    }

    /// Moves every Unix socket of `old` into this network, under the same
    /// ids, with its names, buffers and peers: for a network rebuilt with
    /// new settings, which say nothing about Unix sockets (local IPC, on no
    /// link). Panics unless this network never had a socket and knows every
    /// host of `old`, and `old` has no TCP or UDP socket open.
    pub fn adopt_unix_sockets(&mut self, old: &mut Net) {
        assert!(
            self.socks.is_empty(),
            "sim-net: Unix sockets move only into a network that never had a socket"
        );
        assert_eq!(
            old.open_sockets(),
            old.open_unix_sockets(),
            "sim-net: a network with TCP or UDP sockets open cannot hand its Unix sockets over"
        );
        // The whole slab moves (free slots and their generations too), so
        // every id names the same socket as before.
        self.socks = std::mem::take(&mut old.socks);
        self.free_socks = std::mem::take(&mut old.free_socks);
        self.unix = std::mem::take(&mut old.unix);
        for h in old.hosts.iter_mut().flatten() {
            h.sockets.clear();
        }
        for i in 0..self.socks.len() {
            let slot = &self.socks[i];
            if let Some(sock) = &slot.sock {
                let id = SocketId {
                    index: i as u32,
                    gen: slot.gen,
                };
                let host = sock.host();
                self.host_mut(host).sockets.insert(id);
            }
        }
    }

    pub(crate) fn einval<T>() -> io::Result<T> {
        Err(err(EINVAL))
    }
}

/// The address family check Linux does on connect/send.
pub(crate) fn same_family(a: IpAddr, b: IpAddr) -> io::Result<()> {
    if a.is_ipv4() == b.is_ipv4() || a.is_unspecified() {
        Ok(())
    } else {
        Err(err(EAFNOSUPPORT))
    }
}
