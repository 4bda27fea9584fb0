//! TCP: listeners, connects, and connections as two ordered byte pipes.

use crate::errno::*;
use crate::fault::{ConnFault, ConnInfo};
use crate::net::{same_family, Flow, HostId, Net, PortFault, Progress, Proto, Sock, SocketId};
use crate::record::{NetEvent, SegmentKind};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The arrival time of a chunk held by a blocked link.
pub(crate) const HELD: u64 = u64::MAX;

const SECOND: u64 = 1_000_000_000;

pub(crate) struct Connecting {
    pub host: HostId,
    pub local: SocketAddr,
    pub dst: SocketAddr,
    pub started: u64,
    pub attempt: u32,
    pub next_at: u64,
    /// The connect's failure and when the caller learns it.
    pub outcome: Option<(u64, i32)>,
}

pub(crate) struct Listener {
    pub host: HostId,
    pub addr: SocketAddr,
    pub backlog: usize,
    /// Connections ready to accept, by (ready time, connection number).
    pub queue: BTreeMap<(u64, u64), u32>,
    pub paused: bool,
}

#[derive(Default)]
pub(crate) struct End {
    pub sock: Option<SocketId>,
    /// The application closed this end (or its process died).
    pub closed: bool,
    /// This end's machine crashed: it vanished without a word.
    pub vanished: bool,
    pub write_shut: bool,
    pub read_shut: bool,
    /// A pending socket error (ETIMEDOUT, ECONNRESET from a fault).
    pub error: Option<i32>,
    /// The socket error was reported once; reads now see EOF.
    pub error_reported: bool,
    /// The RST was reported to a read once.
    pub rst_reported: bool,
    pub fault: ConnFault,
    pub partial_done: bool,
    /// This end owns its port (a connecting client's), released on close.
    pub owns_port: bool,
}

/// One direction of a connection: the bytes written by one end and not yet
/// read by the other, with their arrival times.
#[derive(Default)]
pub(crate) struct Pipe {
    pub data: VecDeque<u8>,
    /// `(end offset, arrival)`: bytes up to the offset arrive at the time.
    pub marks: VecDeque<(u64, u64)>,
    /// Stream offset of `data[0]`.
    pub head: u64,
    pub last_at: u64,
    pub fin: Option<u64>,
    pub rst: Option<u64>,
    pub held_since: Option<u64>,
    pub held_cut: bool,
    pub chunks: u64,
    /// Bytes from this offset on are held by a "hold after N bytes" fault.
    pub hold_from: Option<u64>,
}

impl Pipe {
    fn tail(&self) -> u64 {
        self.head + self.data.len() as u64
    }

    /// Bytes arrived by `now`.
    fn arrived(&self, now: u64) -> usize {
        let mut end = self.head;
        for &(off, at) in &self.marks {
            if at > now {
                break;
            }
            end = off;
        }
        (end - self.head) as usize
    }

    /// The next arrival after `now`, if one is scheduled.
    fn next_arrival(&self, now: u64) -> Option<u64> {
        let m = self.marks.iter().map(|&(_, at)| at).find(|&at| at > now);
        [m, self.fin, self.rst]
            .into_iter()
            .flatten()
            .filter(|&t| t > now && t != HELD)
            .min()
    }

    fn consume(&mut self, n: usize) {
        self.data.drain(..n);
        self.head += n as u64;
        while self.marks.front().is_some_and(|&(off, _)| off <= self.head) {
            self.marks.pop_front();
        }
    }

    fn has_held(&self) -> bool {
        self.marks.iter().any(|&(_, at)| at == HELD)
            || self.fin == Some(HELD)
            || self.rst == Some(HELD)
    }
}

pub(crate) struct Conn {
    pub number: u64,
    pub hosts: [HostId; 2],
    pub addrs: [SocketAddr; 2],
    pub ends: [End; 2],
    /// `pipes[e]` carries bytes from end `e` to end `1 - e`.
    pub pipes: [Pipe; 2],
    pub established_at: u64,
}

impl Conn {
    pub(crate) fn info(&self, e: usize) -> ConnInfo {
        ConnInfo {
            local: self.addrs[e],
            peer: self.addrs[1 - e],
            local_host: self.hosts[e],
            peer_host: self.hosts[1 - e],
        }
    }
}

/// What `readable()` / `writable()` / `ready()` see.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    pub readable: bool,
    pub writable: bool,
    pub read_closed: bool,
    pub write_closed: bool,
    pub error: bool,
    /// When the answer may change on its own.
    pub wake_at: Option<u64>,
}

/// The error a RST leaves: `EPIPE` if the peer's FIN came first (Linux's
/// `CLOSE_WAIT` case), `ECONNRESET` otherwise.
fn reset_errno(p: &Pipe) -> i32 {
    match (p.fin, p.rst) {
        (Some(f), Some(r)) if f <= r => EPIPE,
        _ => ECONNRESET,
    }
}

fn loopback_of(ip: IpAddr) -> IpAddr {
    if ip.is_ipv4() {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    }
}

impl Net {
    fn stream(&self, sock: SocketId) -> Option<(u32, usize)> {
        match self.sock(sock)? {
            Sock::Stream { conn, end, .. } => Some((*conn, *end)),
            _ => None,
        }
    }

    pub(crate) fn conn(&self, i: u32) -> &Conn {
        self.conns[i as usize]
            .as_ref()
            .expect("sim-net: live connection")
    }

    pub(crate) fn conn_mut(&mut self, i: u32) -> &mut Conn {
        self.conns[i as usize]
            .as_mut()
            .expect("sim-net: live connection")
    }

    pub(crate) fn listener_mut(&mut self, sock: SocketId) -> Option<&mut Listener> {
        match self.sock_mut(sock)? {
            Sock::Listener(l) => Some(l),
            _ => None,
        }
    }

    // ----- sockets ----------------------------------------------------------

    /// A TCP socket bound to `addr` on `host` (port 0: ephemeral).
    pub fn tcp_bind(
        &mut self,
        host: HostId,
        addr: SocketAddr,
        reuse: bool,
        now: u64,
    ) -> io::Result<SocketId> {
        self.clock = self.clock.max(now);
        self.check_local_ip(host, addr.ip())?;
        let id = self.insert_sock(Sock::TcpBound { host, addr });
        match self.bind_port(host, Proto::Tcp, addr, id, reuse) {
            Ok(bound) => {
                *self.sock_mut(id).expect("just inserted") = Sock::TcpBound { host, addr: bound };
                Ok(id)
            }
            Err(e) => {
                self.remove_sock(id);
                Err(e)
            }
        }
    }

    /// Turns a bound socket into a listener.
    pub fn tcp_listen(&mut self, sock: SocketId, backlog: u32) -> io::Result<()> {
        let (host, addr) = match self.sock(sock) {
            Some(Sock::TcpBound { host, addr }) => (*host, *addr),
            Some(Sock::Listener(_)) => return Ok(()),
            Some(_) => return Net::einval(),
            None => return Err(err(EBADF)),
        };
        // Sockets sharing a port through SO_REUSEADDR may not both listen.
        let others = self
            .host(host)
            .ports
            .get(&(Proto::Tcp, addr.port()))
            .cloned()
            .unwrap_or_default();
        for (ip, other, _) in others {
            let overlaps = ip == addr.ip() || ip.is_unspecified() || addr.ip().is_unspecified();
            if other != sock && overlaps && matches!(self.sock(other), Some(Sock::Listener(_))) {
                return Err(err(EADDRINUSE));
            }
        }
        // Linux caps the backlog at somaxconn (4096) and takes at least 1.
        let backlog = (backlog as usize).clamp(1, 4096);
        *self.sock_mut(sock).expect("exists") = Sock::Listener(Listener {
            host,
            addr,
            backlog,
            queue: BTreeMap::new(),
            paused: false,
        });
        Ok(())
    }

    /// The socket's local address.
    pub fn local_addr(&self, sock: SocketId) -> io::Result<SocketAddr> {
        match self.sock(sock) {
            Some(Sock::TcpBound { addr, .. }) => Ok(*addr),
            Some(Sock::Connecting(c)) => Ok(c.local),
            Some(Sock::Listener(l)) => Ok(l.addr),
            Some(Sock::Stream { conn, end, .. }) => Ok(self.conn(*conn).addrs[*end]),
            Some(Sock::Udp(u)) => Ok(u.local),
            None => Err(err(EBADF)),
        }
    }

    /// The connected peer's address.
    pub fn peer_addr(&self, sock: SocketId) -> io::Result<SocketAddr> {
        match self.sock(sock) {
            Some(Sock::Stream { conn, end, .. }) => {
                let c = self.conn(*conn);
                if c.ends[*end].rst_reported || c.ends[*end].error_reported {
                    // After a reported reset the socket is disconnected.
                    return Err(err(ENOTCONN));
                }
                Ok(c.addrs[1 - *end])
            }
            Some(Sock::Udp(u)) => u.peer.ok_or_else(|| err(ENOTCONN)),
            Some(_) => Err(err(ENOTCONN)),
            None => Err(err(EBADF)),
        }
    }

    // ----- connect ----------------------------------------------------------

    /// Starts connecting to `dst` from `host` (from `bound`'s address if
    /// given; that socket becomes the connecting one). Poll the returned
    /// socket with [`Net::tcp_poll_connect`].
    pub fn tcp_connect(
        &mut self,
        host: HostId,
        bound: Option<SocketId>,
        dst: SocketAddr,
        now: u64,
    ) -> io::Result<SocketId> {
        let dst = if dst.ip().is_unspecified() {
            SocketAddr::new(loopback_of(dst.ip()), dst.port())
        } else {
            dst
        };
        self.clock = self.clock.max(now);
        let (id, local) = match bound {
            Some(b) => match self.sock(b) {
                Some(Sock::TcpBound { addr, .. }) => {
                    same_family(addr.ip(), dst.ip())?;
                    let mut local = *addr;
                    if local.ip().is_unspecified() {
                        local.set_ip(self.source_ip(host, dst.ip()));
                    }
                    (b, local)
                }
                Some(Sock::Stream { .. }) | Some(Sock::Connecting(_)) => return Err(err(EISCONN)),
                Some(_) => return Net::einval(),
                None => return Err(err(EBADF)),
            },
            None => {
                let ip = self.source_ip(host, dst.ip());
                let id = self.insert_sock(Sock::TcpBound {
                    host,
                    addr: SocketAddr::new(ip, 0),
                });
                match self.bind_port(host, Proto::Tcp, SocketAddr::new(ip, 0), id, false) {
                    Ok(local) => (id, local),
                    Err(e) => {
                        self.remove_sock(id);
                        return Err(e);
                    }
                }
            }
        };
        *self.sock_mut(id).expect("exists") = Sock::Connecting(Connecting {
            host,
            local,
            dst,
            started: now,
            attempt: 0,
            next_at: now,
            outcome: None,
        });
        self.syn(id, now);
        Ok(id)
    }

    /// Sends the connecting socket's next SYN at `now`.
    fn syn(&mut self, id: SocketId, now: u64) {
        let Some(Sock::Connecting(c)) = self.sock(id) else {
            return;
        };
        let (host, local, dst, started, attempt) = (c.host, c.local, c.dst, c.started, c.attempt);
        let target = self.route(host, dst.ip());
        enum Answer {
            Lost,
            Refused(u64),
            Accepted(SocketId, HostId),
        }
        let answer = match target {
            None => Answer::Lost,
            Some(h) if self.flow(host, h) != Flow::Open || self.flow(h, host) != Flow::Open => {
                Answer::Lost
            }
            Some(h) => match self.port_faults.get(&(h, dst.port())) {
                Some(PortFault::BlackHole) => Answer::Lost,
                Some(PortFault::Refuse) => {
                    Answer::Refused(self.max_delay(host, h) + self.max_delay(h, host))
                }
                None => {
                    let listener = self
                        .lookup_port(h, Proto::Tcp, dst)
                        .into_iter()
                        .find(|&s| matches!(self.sock(s), Some(Sock::Listener(_))));
                    match listener {
                        None => Answer::Refused(self.max_delay(host, h) + self.max_delay(h, host)),
                        Some(l) => {
                            let Some(Sock::Listener(li)) = self.sock(l) else {
                                unreachable!()
                            };
                            if li.queue.len() >= li.backlog {
                                Answer::Lost
                            } else {
                                Answer::Accepted(l, h)
                            }
                        }
                    }
                }
            },
        };
        match answer {
            Answer::Lost => {
                let retries = self.config.syn_retries;
                let Some(Sock::Connecting(c)) = self.sock_mut(id) else {
                    unreachable!()
                };
                c.attempt = attempt + 1;
                // Linux doubles the SYN timeout from 1 s: retries at 1, 3,
                // 7, … s after the first SYN, failure after the last wait.
                let next = started + ((1u64 << (attempt + 1).min(40)) - 1) * SECOND;
                let why = if attempt >= retries {
                    c.outcome = Some((next, ETIMEDOUT));
                    "timed out"
                } else {
                    c.next_at = next;
                    "lost"
                };
                self.notify(Some(id), next);
                self.log(|_| NetEvent::ConnectFailed {
                    host,
                    to_host: target,
                    from: local,
                    to: dst,
                    at: now,
                    fails_at: next,
                    why,
                });
            }
            Answer::Refused(rtt) => {
                let Some(Sock::Connecting(c)) = self.sock_mut(id) else {
                    unreachable!()
                };
                c.outcome = Some((now + rtt, ECONNREFUSED));
                self.notify(Some(id), now + rtt);
                self.log(|_| NetEvent::ConnectFailed {
                    host,
                    to_host: target,
                    from: local,
                    to: dst,
                    at: now,
                    fails_at: now + rtt,
                    why: "refused",
                });
            }
            Answer::Accepted(listener, h) => {
                let number = self.conn_numbers;
                self.conn_numbers += 1;
                let d1 = self.delay(host, h, number, u64::MAX);
                let d2 = self.delay(h, host, number, u64::MAX);
                let d3 = self.delay(host, h, number, u64::MAX - 1);
                let established_at = now + d1 + d2;
                let ready_at = established_at + d3;
                let conn = Conn {
                    number,
                    hosts: [host, h],
                    addrs: [local, dst],
                    ends: [
                        End {
                            sock: Some(id),
                            owns_port: true,
                            ..End::default()
                        },
                        End::default(),
                    ],
                    pipes: [
                        Pipe {
                            last_at: established_at,
                            ..Pipe::default()
                        },
                        Pipe {
                            last_at: ready_at,
                            ..Pipe::default()
                        },
                    ],
                    established_at,
                };
                let slot = match self.free_conns.pop() {
                    Some(s) => {
                        self.conns[s as usize] = Some(conn);
                        s
                    }
                    None => {
                        self.conns.push(Some(conn));
                        (self.conns.len() - 1) as u32
                    }
                };
                self.host_mut(host).conns.insert(slot);
                self.host_mut(h).conns.insert(slot);
                *self.sock_mut(id).expect("exists") = Sock::Stream {
                    host,
                    conn: slot,
                    end: 0,
                };
                self.listener_mut(listener)
                    .expect("listener exists")
                    .queue
                    .insert((ready_at, number), slot);
                self.notify(Some(listener), ready_at);
                self.notify(Some(id), established_at);
                self.log(|_| NetEvent::Connect {
                    conn: number,
                    hosts: [host, h],
                    addrs: [local, dst],
                    at: now,
                    established: established_at,
                    ready: ready_at,
                });
            }
        }
    }

    /// Whether the connect has completed.
    pub fn tcp_poll_connect(&mut self, sock: SocketId, now: u64) -> Progress<()> {
        loop {
            match self.sock(sock) {
                Some(Sock::Connecting(c)) => {
                    if let Some((at, errno)) = c.outcome {
                        return if now >= at {
                            Progress::err(errno)
                        } else {
                            Progress::Pending { wake_at: Some(at) }
                        };
                    }
                    if now < c.next_at {
                        return Progress::Pending {
                            wake_at: Some(c.next_at),
                        };
                    }
                    self.syn(sock, now);
                }
                Some(Sock::Stream { conn, .. }) => {
                    let at = self.conn(*conn).established_at;
                    return if now >= at {
                        Progress::Ready(Ok(()))
                    } else {
                        Progress::Pending { wake_at: Some(at) }
                    };
                }
                Some(_) => return Progress::err(EINVAL),
                None => return Progress::err(EBADF),
            }
        }
    }

    // ----- accept -----------------------------------------------------------

    /// Takes the next connection ready in the listener's queue.
    pub fn tcp_accept(&mut self, sock: SocketId, now: u64) -> Progress<(SocketId, SocketAddr)> {
        let (host, first) = match self.sock(sock) {
            Some(Sock::Listener(l)) => {
                if l.paused {
                    return Progress::Pending { wake_at: None };
                }
                (l.host, l.queue.first_key_value().map(|(k, v)| (*k, *v)))
            }
            Some(_) => return Progress::err(EINVAL),
            None => return Progress::err(EBADF),
        };
        let Some(((at, number), slot)) = first else {
            return Progress::Pending { wake_at: None };
        };
        if at > now {
            return Progress::Pending { wake_at: Some(at) };
        }
        self.listener_mut(sock)
            .expect("listener")
            .queue
            .remove(&(at, number));
        let id = self.insert_sock(Sock::Stream {
            host,
            conn: slot,
            end: 1,
        });
        let c = self.conn_mut(slot);
        c.ends[1].sock = Some(id);
        let peer = c.addrs[0];
        // Bytes (or a FIN / RST) that arrived before the accept are there.
        Progress::Ready(Ok((id, peer)))
    }

    // ----- bytes ------------------------------------------------------------

    /// Marks a pending timeout as the end's error when its time has come.
    fn check_timeout(&mut self, conn: u32, e: usize, now: u64) {
        let rto = self.config.retransmit_timeout_ns;
        let c = self.conn_mut(conn);
        let p = &c.pipes[e];
        if let (Some(since), true) = (p.held_since, p.held_cut) {
            if now >= since.saturating_add(rto) && c.ends[e].error.is_none() {
                c.ends[e].error = Some(ETIMEDOUT);
            }
        }
    }

    fn timeout_at(&self, conn: u32, e: usize) -> Option<u64> {
        let p = &self.conn(conn).pipes[e];
        match (p.held_since, p.held_cut) {
            (Some(since), true) => Some(since.saturating_add(self.config.retransmit_timeout_ns)),
            _ => None,
        }
    }

    /// Whether bytes from end `e` get across now.
    fn pipe_flow(&self, conn: u32, e: usize) -> Flow {
        let c = self.conn(conn);
        if c.ends[1 - e].fault.silent {
            return Flow::Cut;
        }
        self.flow(c.hosts[e], c.hosts[1 - e])
    }

    /// Schedules `n` new bytes (already in the pipe's data) or a FIN/RST
    /// marker (`n == 0`) from end `e`; returns their arrival.
    fn schedule(&mut self, conn: u32, e: usize, n: usize, now: u64) -> u64 {
        let flow = self.pipe_flow(conn, e);
        let number = self.conn(conn).number;
        let (src, dst) = {
            let c = self.conn(conn);
            (c.hosts[e], c.hosts[1 - e])
        };
        let chunk = self.conn(conn).pipes[e].chunks;
        let delay =
            self.delay(src, dst, number.wrapping_mul(2) + e as u64, chunk) + self.extra_delay_ns;
        let c = self.conn_mut(conn);
        let throttle = c.ends[1 - e].fault.throttle_bytes_per_sec;
        let p = &mut c.pipes[e];
        p.chunks += 1;
        let mut held = flow != Flow::Open;
        if let Some(from) = p.hold_from {
            if p.tail() > from {
                held = true;
            }
        }
        let at = if held {
            if p.held_since.is_none() {
                p.held_since = Some(now);
            }
            p.held_cut |= flow == Flow::Cut || p.hold_from.is_some();
            HELD
        } else {
            let mut at = (now + delay).max(p.last_at);
            if let Some(bps) = throttle {
                let spacing = (n as u128 * 1_000_000_000 / u128::from(bps.max(1))) as u64;
                at = at.max(p.last_at.saturating_add(spacing));
            }
            p.last_at = at;
            at
        };
        if n > 0 {
            let tail = p.tail();
            p.marks.push_back((tail, at));
        }
        if at == HELD {
            self.held.entry((src, dst)).or_default().insert((conn, e));
        }
        if n > 0 && self.recording() {
            let keep = self.keep_payload(n);
            let p = &self.conn(conn).pipes[e];
            let start = p.data.len() - n;
            let payload: Vec<u8> = p.data.range(start..start + keep).copied().collect();
            let offset = p.tail() - n as u64;
            self.log(|_| NetEvent::Segment {
                conn: number,
                dir: e,
                kind: SegmentKind::Data,
                offset,
                len: n,
                sent: now,
                arrive: (at != HELD).then_some(at),
                payload,
            });
        }
        at
    }

    /// Logs a FIN or RST marker of direction `e` scheduled at `at`.
    fn log_marker(&mut self, conn: u32, e: usize, kind: SegmentKind, now: u64, at: u64) {
        self.log(|net| {
            let c = net.conn(conn);
            NetEvent::Segment {
                conn: c.number,
                dir: e,
                kind,
                offset: c.pipes[e].tail(),
                len: 0,
                sent: now,
                arrive: (at != HELD).then_some(at),
                payload: Vec::new(),
            }
        });
    }

    /// Writes as much of `data` as the direction's buffer takes.
    /// As [`Net::tcp_write`], with `extra_ns` added to this write's delivery
    /// (a slow path: congestion, a retransmission). Bytes stay in order: a
    /// later write never arrives before this one.
    pub fn tcp_write_slow(
        &mut self,
        sock: SocketId,
        data: &[u8],
        now: u64,
        extra_ns: u64,
    ) -> Progress<usize> {
        self.extra_delay_ns = extra_ns.min(u64::MAX / 4);
        let r = self.tcp_write(sock, data, now);
        self.extra_delay_ns = 0;
        r
    }

    pub fn tcp_write(&mut self, sock: SocketId, data: &[u8], now: u64) -> Progress<usize> {
        let Some((conn, e)) = self.stream(sock) else {
            return match self.sock(sock) {
                Some(_) => Progress::err(ENOTCONN),
                None => Progress::err(EBADF),
            };
        };
        self.check_timeout(conn, e, now);
        let cap = self.config.send_buffer + self.config.recv_buffer;
        let c = self.conn_mut(conn);
        if let Some(errno) = c.ends[e].error {
            if !c.ends[e].error_reported {
                c.ends[e].error_reported = true;
                return Progress::err(errno);
            }
            return Progress::err(EPIPE);
        }
        if c.pipes[1 - e].rst.is_some_and(|t| t <= now) {
            // The reset is reported once, to whichever call comes first.
            if !c.ends[e].rst_reported {
                c.ends[e].rst_reported = true;
                return Progress::err(reset_errno(&c.pipes[1 - e]));
            }
            return Progress::err(EPIPE);
        }
        if c.ends[e].write_shut {
            return Progress::err(EPIPE);
        }
        if data.is_empty() {
            return Progress::Ready(Ok(0));
        }
        let mut limit = data.len();
        if let Some(k) = c.ends[e].fault.partial_write_then_reset {
            if c.ends[e].partial_done {
                c.ends[e].error = Some(ECONNRESET);
                c.ends[e].error_reported = true;
                // This end's stack aborts the connection: its RST follows
                // the bytes the partial write already sent, so the peer
                // reads them, then gets the reset (a reset at `now` would
                // lose them whenever they are still in flight).
                self.close_end(conn, e, true, now);
                return Progress::err(ECONNRESET);
            }
            c.ends[e].partial_done = true;
            limit = limit.min(k.max(1));
        }
        // A peer that timed out has no connection left in its kernel.
        self.check_timeout(conn, 1 - e, now);
        let c = self.conn_mut(conn);
        let (peer_closed, peer_vanished) = (c.ends[1 - e].closed, c.ends[1 - e].vanished);
        let peer_timed_out = c.ends[1 - e].error == Some(ETIMEDOUT);
        let peer_host = c.hosts[1 - e];
        let my_host = c.hosts[e];
        let peer_gone =
            peer_closed || peer_timed_out || (peer_vanished && !self.host(peer_host).crashed);
        if peer_gone {
            // The peer's kernel discards the bytes and answers with a RST.
            self.bytes_written += limit as u64;
            self.bytes_gone += limit as u64;
            let rtt = self.delay(my_host, peer_host, 0, 0) + self.delay(peer_host, my_host, 0, 1);
            // Across a blocked link the bytes and the RST wait for it to
            // clear: the RST is held like any chunk and leaves on the heal.
            let flows = [self.flow(my_host, peer_host), self.flow(peer_host, my_host)];
            let blocked = flows.iter().any(|&f| f != Flow::Open);
            let cut = flows.contains(&Flow::Cut);
            let c = self.conn_mut(conn);
            if c.pipes[1 - e].rst.is_none() {
                if blocked {
                    c.pipes[1 - e].rst = Some(HELD);
                    self.log_marker(conn, 1 - e, SegmentKind::Rst, now, HELD);
                    let c = self.conn_mut(conn);
                    // The bytes are retransmitted until the link clears,
                    // and time out across a partition that lasts.
                    let p = &mut c.pipes[e];
                    p.held_since.get_or_insert(now);
                    p.held_cut |= cut;
                    // Keyed by each pipe's own direction (as `gc_conn`
                    // expects); a heal releases both directions.
                    self.held
                        .entry((peer_host, my_host))
                        .or_default()
                        .insert((conn, 1 - e));
                    self.held
                        .entry((my_host, peer_host))
                        .or_default()
                        .insert((conn, e));
                } else {
                    let at = (now + rtt).max(c.pipes[1 - e].last_at);
                    c.pipes[1 - e].rst = Some(at);
                    let s = c.ends[e].sock;
                    self.notify(s, at);
                    self.log_marker(conn, 1 - e, SegmentKind::Rst, now, at);
                }
            }
            return Progress::Ready(Ok(limit));
        }
        let c = self.conn_mut(conn);
        let room = cap.saturating_sub(c.pipes[e].data.len());
        if room == 0 {
            return Progress::Pending {
                wake_at: self.timeout_at(conn, e),
            };
        }
        let n = room.min(limit);
        c.pipes[e].data.extend(&data[..n]);
        let hold_from = c.pipes[e].hold_from;
        let tail = c.pipes[e].tail();
        self.bytes_written += n as u64;
        // A "hold after N bytes" fault splits the chunk at its limit.
        let at = match hold_from {
            Some(from) if from > tail - n as u64 && from < tail => {
                let first = (from - (tail - n as u64)) as usize;
                // Schedule the part before the limit, then the rest (held).
                let c = self.conn_mut(conn);
                c.pipes[e]
                    .data
                    .truncate(c.pipes[e].data.len() - (n - first));
                let at = self.schedule(conn, e, first, now);
                self.conn_mut(conn).pipes[e].data.extend(&data[first..n]);
                self.schedule(conn, e, n - first, now);
                at
            }
            _ => self.schedule(conn, e, n, now),
        };
        if at != HELD {
            let s = self.conn(conn).ends[1 - e].sock;
            self.notify(s, at);
        }
        Progress::Ready(Ok(n))
    }

    /// Reads (or, with `peek`, copies without consuming) arrived bytes.
    pub fn tcp_read(
        &mut self,
        sock: SocketId,
        buf: &mut [u8],
        peek: bool,
        now: u64,
    ) -> Progress<usize> {
        let Some((conn, e)) = self.stream(sock) else {
            return match self.sock(sock) {
                Some(_) => Progress::err(ENOTCONN),
                None => Progress::err(EBADF),
            };
        };
        self.check_timeout(conn, e, now);
        let c = self.conn_mut(conn);
        if let Some(errno) = c.ends[e].error {
            if !c.ends[e].error_reported {
                c.ends[e].error_reported = true;
                return Progress::err(errno);
            }
            return Progress::Ready(Ok(0));
        }
        if buf.is_empty() {
            return Progress::Ready(Ok(0));
        }
        let p = &mut c.pipes[1 - e];
        let avail = p.arrived(now);
        if avail > 0 {
            let mut n = avail.min(buf.len());
            if let Some(k) = c.ends[e].fault.short_reads {
                n = n.min(k.max(1));
            }
            let (a, b) = p.data.as_slices();
            if n <= a.len() {
                buf[..n].copy_from_slice(&a[..n]);
            } else {
                buf[..a.len()].copy_from_slice(a);
                buf[a.len()..n].copy_from_slice(&b[..n - a.len()]);
            }
            if !peek {
                p.consume(n);
                self.bytes_gone += n as u64;
                let w = self.conn(conn).ends[1 - e].sock;
                self.notify(w, now);
            }
            return Progress::Ready(Ok(n));
        }
        if p.rst.is_some_and(|t| t <= now) {
            // After the peer's FIN, Linux's reads see EOF (`SOCK_DONE`
            // comes before `sk_err` in `tcp_recvmsg`): the reset is left
            // for the next write, as `EPIPE`.
            if reset_errno(p) == EPIPE {
                return Progress::Ready(Ok(0));
            }
            if !c.ends[e].rst_reported {
                c.ends[e].rst_reported = true;
                return Progress::err(reset_errno(p));
            }
            return Progress::Ready(Ok(0));
        }
        if p.fin.is_some_and(|t| t <= now) || c.ends[e].read_shut {
            return Progress::Ready(Ok(0));
        }
        let next = p.next_arrival(now);
        let timeout = self.timeout_at(conn, e);
        Progress::Pending {
            wake_at: [next, timeout].into_iter().flatten().min(),
        }
    }

    /// What a stream's readiness is now.
    pub fn tcp_readiness(&mut self, sock: SocketId, now: u64) -> Readiness {
        let Some((conn, e)) = self.stream(sock) else {
            return Readiness {
                readable: true,
                writable: true,
                read_closed: true,
                write_closed: true,
                error: true,
                wake_at: None,
            };
        };
        self.check_timeout(conn, e, now);
        let cap = self.config.send_buffer + self.config.recv_buffer;
        let c = self.conn(conn);
        let p = &c.pipes[1 - e];
        let error = c.ends[e].error.is_some();
        let rst = p.rst.is_some_and(|t| t <= now);
        let read_closed = rst || p.fin.is_some_and(|t| t <= now) || c.ends[e].read_shut || error;
        let write_closed = rst || c.ends[e].write_shut || error;
        let readable = p.arrived(now) > 0 || read_closed;
        let writable = write_closed || c.pipes[e].data.len() < cap;
        let wake_at = [p.next_arrival(now), self.timeout_at(conn, e)]
            .into_iter()
            .flatten()
            .min();
        Readiness {
            readable,
            writable,
            read_closed,
            write_closed,
            error: error || rst,
            wake_at,
        }
    }

    /// `shutdown(Write)`: a FIN after the queued bytes. `shutdown(Read)`:
    /// reads see EOF.
    pub fn tcp_shutdown(
        &mut self,
        sock: SocketId,
        read: bool,
        write: bool,
        now: u64,
    ) -> io::Result<()> {
        let Some((conn, e)) = self.stream(sock) else {
            return Err(err(ENOTCONN));
        };
        if read {
            self.conn_mut(conn).ends[e].read_shut = true;
            let s = self.conn(conn).ends[e].sock;
            self.notify(s, now);
        }
        if write && !self.conn(conn).ends[e].write_shut {
            self.conn_mut(conn).ends[e].write_shut = true;
            let at = self.schedule(conn, e, 0, now);
            self.conn_mut(conn).pipes[e].fin = Some(at);
            self.log_marker(conn, e, SegmentKind::Fin, now, at);
            if at != HELD {
                let s = self.conn(conn).ends[1 - e].sock;
                self.notify(s, at);
            }
            let s = self.conn(conn).ends[e].sock;
            self.notify(s, now);
        }
        Ok(())
    }

    // ----- close ------------------------------------------------------------

    /// Closes a socket as `close(2)` does (the handle is gone).
    pub fn close(&mut self, sock: SocketId, now: u64) {
        let Some(s) = self.sock(sock) else { return };
        let host = s.host();
        match s {
            Sock::TcpBound { addr, .. } => {
                let port = addr.port();
                self.unbind_port(host, Proto::Tcp, port, sock);
            }
            Sock::Connecting(c) => {
                let port = c.local.port();
                self.unbind_port(host, Proto::Tcp, port, sock);
            }
            Sock::Listener(l) => {
                let port = l.addr.port();
                let queued: Vec<u32> = l.queue.values().copied().collect();
                self.unbind_port(host, Proto::Tcp, port, sock);
                for conn in queued {
                    // Never accepted: the kernel resets them.
                    self.close_end(conn, 1, true, now);
                }
            }
            Sock::Stream { conn, end, .. } => {
                let (conn, end) = (*conn, *end);
                let unread = !self.conn(conn).pipes[1 - end].data.is_empty();
                self.close_end(conn, end, unread, now);
                if self.conn(conn).ends[end].owns_port {
                    let port = self.conn(conn).addrs[end].port();
                    self.unbind_port(host, Proto::Tcp, port, sock);
                }
                self.conn_mut(conn).ends[end].sock = None;
                self.gc_conn(conn);
            }
            Sock::Udp(u) => {
                let port = u.local.port();
                self.unbind_port(host, Proto::Udp, port, sock);
            }
        }
        self.remove_sock(sock);
    }

    /// Aborts a stream (`SO_LINGER` of zero, then close): its end sends a
    /// RST instead of a FIN. Call [`Net::close`] after.
    pub fn abort(&mut self, sock: SocketId, now: u64) {
        if let Some((conn, e)) = self.stream(sock) {
            self.close_end(conn, e, true, now);
        }
    }

    /// Closes end `e`: a FIN, or a RST (`rst`) after the bytes it sent.
    fn close_end(&mut self, conn: u32, e: usize, rst: bool, now: u64) {
        let c = self.conn_mut(conn);
        if c.ends[e].closed || c.ends[e].vanished {
            return;
        }
        c.ends[e].closed = true;
        let discarded = c.pipes[1 - e].data.len();
        // The end that closes first waits in TIME_WAIT (2 MSL, 60 s on
        // Linux) on its local address.
        if !rst && c.pipes[1 - e].fin.is_none() {
            let (h, addr) = (c.hosts[e], c.addrs[e]);
            let tw = &mut self.host_mut(h).time_wait;
            if tw.len() >= 1024 {
                tw.retain(|_, until| *until > now);
            }
            tw.insert((addr.ip(), addr.port()), now + 60 * SECOND);
        }
        let c = self.conn_mut(conn);
        if rst || c.ends[e].error.is_none() {
            let at = self.schedule(conn, e, 0, now);
            let c = self.conn_mut(conn);
            let marker = if rst {
                c.pipes[e].rst = Some(at);
                Some(SegmentKind::Rst)
            } else if !c.ends[e].write_shut {
                c.pipes[e].fin = Some(at);
                Some(SegmentKind::Fin)
            } else {
                None
            };
            if let Some(kind) = marker {
                self.log_marker(conn, e, kind, now, at);
            }
            let c = self.conn_mut(conn);
            if at != HELD {
                let s = c.ends[1 - e].sock;
                self.notify(s, at);
            }
        }
        // What this end never read is gone with it.
        let c = self.conn_mut(conn);
        let p = &mut c.pipes[1 - e];
        let tail = p.tail();
        p.data.clear();
        p.head = tail;
        p.marks.clear();
        self.bytes_gone += discarded as u64;
    }

    /// Forgets a connection once neither end has a socket.
    fn gc_conn(&mut self, conn: u32) {
        let c = self.conn(conn);
        let queued = c.ends[1].sock.is_none() && !c.ends[1].closed && !c.ends[1].vanished;
        if c.ends.iter().any(|e| e.sock.is_some()) || queued {
            return;
        }
        let c = self.conns[conn as usize].take().expect("live");
        for p in &c.pipes {
            self.bytes_gone += p.data.len() as u64;
        }
        for h in c.hosts {
            if let Some(Some(host)) = self.hosts.get_mut(h.0 as usize) {
                host.conns.remove(&conn);
            }
        }
        for e in 0..2 {
            let key = (c.hosts[e], c.hosts[1 - e]);
            if let Some(set) = self.held.get_mut(&key) {
                set.remove(&(conn, e));
                if set.is_empty() {
                    self.held.remove(&key);
                }
            }
        }
        self.free_conns.push(conn);
    }

    /// Resets both directions now: each end reads what has arrived, then
    /// gets `ConnectionReset`.
    pub(crate) fn reset_conn(&mut self, conn: u32, now: u64) {
        self.log(|net| NetEvent::Reset {
            conn: net.conn(conn).number,
            at: now,
        });
        for e in 0..2 {
            let c = self.conn_mut(conn);
            let p = &mut c.pipes[e];
            // Bytes still in flight are lost with the connection.
            let arrived = p.arrived(now);
            let lost = p.data.len() - arrived;
            p.data.truncate(arrived);
            while p.marks.back().is_some_and(|&(_, at)| at > now) {
                p.marks.pop_back();
            }
            if let Some(last) = p.marks.back_mut() {
                last.0 = p.head + arrived as u64;
            }
            if p.rst.is_none_or(|t| t > now) {
                p.rst = Some(now);
            }
            p.held_since = None;
            self.bytes_gone += lost as u64;
            let s = self.conn(conn).ends[1 - e].sock;
            self.notify(s, now);
        }
    }

    pub(crate) fn apply_conn_fault(&mut self, conn: u32, e: usize, fault: ConnFault, now: u64) {
        let c = self.conn_mut(conn);
        let was_silent = c.ends[e].fault.silent;
        c.pipes[1 - e].hold_from = fault.hold_after_bytes.map(|n| c.pipes[1 - e].tail() + n);
        c.ends[e].partial_done = false;
        c.ends[e].fault = fault;
        if was_silent || c.pipes[1 - e].hold_from.is_none() {
            self.release(conn, 1 - e, now);
        }
    }

    /// Re-times the held chunks of a direction if it flows again.
    pub(crate) fn release(&mut self, conn: u32, e: usize, now: u64) {
        if self.conns.get(conn as usize).is_none_or(|c| c.is_none()) {
            return;
        }
        self.check_timeout(conn, e, now);
        if self.conn(conn).ends[e].error.is_some() {
            // The sender gave up (`ETIMEDOUT`): its kernel dropped the
            // connection and retransmits nothing, whatever heals later.
            self.drop_held(conn, e, now);
            return;
        }
        if self.pipe_flow(conn, e) != Flow::Open || self.conn(conn).pipes[e].hold_from.is_some() {
            return;
        }
        if !self.conn(conn).pipes[e].has_held() {
            // Nothing held (bytes a closed peer discarded): the
            // retransmissions are answered now, no timeout runs on.
            let c = self.conn_mut(conn);
            let (src, dst) = (c.hosts[e], c.hosts[1 - e]);
            c.pipes[e].held_since = None;
            c.pipes[e].held_cut = false;
            if let Some(set) = self.held.get_mut(&(src, dst)) {
                set.remove(&(conn, e));
                if set.is_empty() {
                    self.held.remove(&(src, dst));
                }
            }
            return;
        }
        let (src, dst, number) = {
            let c = self.conn(conn);
            (c.hosts[e], c.hosts[1 - e], c.number)
        };
        let chunk = self.conn(conn).pipes[e].chunks;
        let delay = self.delay(src, dst, number.wrapping_mul(2) + e as u64, chunk);
        let c = self.conn_mut(conn);
        let p = &mut c.pipes[e];
        p.chunks += 1;
        let at = (now + delay).max(p.last_at);
        p.last_at = at;
        for m in p.marks.iter_mut() {
            if m.1 == HELD {
                m.1 = at;
            }
        }
        if p.fin == Some(HELD) {
            p.fin = Some(at);
        }
        if p.rst == Some(HELD) {
            p.rst = Some(at);
        }
        p.held_since = None;
        p.held_cut = false;
        let s = c.ends[1 - e].sock;
        let w = c.ends[e].sock;
        self.log(|_| NetEvent::Release {
            conn: number,
            dir: e,
            at: now,
            arrive: at,
        });
        self.notify(s, at);
        self.notify(w, now);
        if let Some(set) = self.held.get_mut(&(src, dst)) {
            set.remove(&(conn, e));
            if set.is_empty() {
                self.held.remove(&(src, dst));
            }
        }
    }

    /// Forgets the held chunks of direction `e` (its sender is gone).
    fn drop_held(&mut self, conn: u32, e: usize, now: u64) {
        self.log(|net| NetEvent::DropHeld {
            conn: net.conn(conn).number,
            dir: e,
            at: now,
        });
        let c = self.conn_mut(conn);
        let (src, dst) = (c.hosts[e], c.hosts[1 - e]);
        let p = &mut c.pipes[e];
        let keep = p.marks.iter().filter(|m| m.1 != HELD).map(|m| m.0).max();
        let keep_len = keep.map_or(0, |k| (k - p.head) as usize);
        let lost = p.data.len() - keep_len;
        p.data.truncate(keep_len);
        p.marks.retain(|m| m.1 != HELD);
        if p.fin == Some(HELD) {
            p.fin = None;
        }
        if p.rst == Some(HELD) {
            p.rst = None;
        }
        p.held_since = None;
        p.held_cut = false;
        self.bytes_gone += lost as u64;
        if let Some(set) = self.held.get_mut(&(src, dst)) {
            set.remove(&(conn, e));
            if set.is_empty() {
                self.held.remove(&(src, dst));
            }
        }
    }

    pub(crate) fn release_link(&mut self, src: HostId, dst: HostId, now: u64) {
        let Some(set) = self.held.get(&(src, dst)) else {
            return;
        };
        let v: Vec<(u32, usize)> = set.iter().copied().collect();
        for (conn, e) in v {
            self.release(conn, e, now);
        }
    }

    // ----- lifecycle --------------------------------------------------------

    /// The host's process died: every socket closes as `close(2)` would.
    pub fn host_kill(&mut self, host: HostId, now: u64) {
        let socks: Vec<SocketId> = self.host(host).sockets.iter().copied().collect();
        for s in socks {
            self.close(s, now);
        }
    }

    /// The host's machine died: its sockets vanish without a word.
    pub fn host_crash(&mut self, host: HostId, now: u64) {
        self.host_mut(host).crashed = true;
        let conns: Vec<u32> = self.host(host).conns.iter().copied().collect();
        for conn in conns {
            for e in 0..2 {
                let c = self.conn_mut(conn);
                if c.hosts[e] != host || c.ends[e].closed || c.ends[e].vanished {
                    continue;
                }
                c.ends[e].vanished = true;
                c.ends[e].sock = None;
                let number = c.number;
                self.log(|_| NetEvent::Vanish {
                    conn: number,
                    end: e,
                    at: now,
                });
                let c = self.conn_mut(conn);
                // What it had not sent yet is lost with the machine.
                let p = &mut c.pipes[e];
                let keep = p.marks.iter().filter(|m| m.1 != HELD).map(|m| m.0).max();
                let keep_len = keep.map_or(0, |k| (k - p.head) as usize);
                let lost = p.data.len() - keep_len;
                p.data.truncate(keep_len);
                p.marks.retain(|m| m.1 != HELD);
                // What it had received is lost too. Bytes still in flight
                // toward it were never acknowledged: the peer retransmits
                // them into the silence and times out.
                let p = &mut c.pipes[1 - e];
                if p.data.len() > p.arrived(now) && p.held_since.is_none() {
                    p.held_since = Some(now);
                    p.held_cut = true;
                }
                let gone = p.data.len();
                let tail = p.tail();
                p.data.clear();
                p.head = tail;
                p.marks.clear();
                self.bytes_gone += (lost + gone) as u64;
            }
        }
        let socks: Vec<SocketId> = self.host(host).sockets.iter().copied().collect();
        for s in socks {
            match self.sock(s) {
                Some(Sock::Stream { conn, .. }) => {
                    let conn = *conn;
                    self.remove_sock(s);
                    self.gc_conn(conn);
                }
                Some(Sock::Listener(l)) => {
                    let queued: Vec<u32> = l.queue.values().copied().collect();
                    for conn in queued {
                        self.conn_mut(conn).ends[1].vanished = true;
                        self.gc_conn(conn);
                    }
                    self.remove_sock(s);
                }
                _ => {
                    self.remove_sock(s);
                }
            }
        }
        self.host_mut(host).ports.clear();
    }

    /// The host runs again after a crash: peers that send to its vanished
    /// sockets get a RST.
    pub fn host_revive(&mut self, host: HostId, now: u64) {
        if !self.host(host).crashed {
            return;
        }
        self.host_mut(host).crashed = false;
        let conns: Vec<u32> = self.host(host).conns.iter().copied().collect();
        for conn in conns {
            if self.conns.get(conn as usize).is_none_or(|c| c.is_none()) {
                continue;
            }
            for e in 0..2 {
                let c = self.conn(conn);
                if c.hosts[e] != host || !c.ends[e].vanished {
                    continue;
                }
                let peer = 1 - e;
                if c.ends[peer].closed || c.ends[peer].vanished {
                    continue;
                }
                // The peer's retransmissions now reach a kernel that knows
                // nothing of the connection.
                if c.pipes[peer].has_held() || c.pipes[peer].held_since.is_some() {
                    let (ph, me) = (c.hosts[peer], c.hosts[e]);
                    let rtt = self.delay(ph, me, 0, 0) + self.delay(me, ph, 0, 1);
                    let c = self.conn_mut(conn);
                    let p = &mut c.pipes[peer];
                    let gone = p.data.len();
                    let tail = p.tail();
                    p.data.clear();
                    p.head = tail;
                    p.marks.clear();
                    p.held_since = None;
                    p.fin = None;
                    let at = (now + rtt).max(c.pipes[e].last_at);
                    c.pipes[e].rst = Some(at);
                    let s = c.ends[peer].sock;
                    self.bytes_gone += gone as u64;
                    self.notify(s, at);
                    let key = (self.conn(conn).hosts[peer], host);
                    if let Some(set) = self.held.get_mut(&key) {
                        set.remove(&(conn, peer));
                    }
                }
            }
        }
    }
}
