//! UDP: datagrams with boundaries, delivered after the link delay or lost.

use crate::errno::*;
use crate::net::{mix, same_family, Flow, HostId, Net, Progress, Proto, Sock, SocketId};
use crate::record::NetEvent;
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65_507;

/// How many received payload buffers are kept for reuse, and the largest
/// kept (a burst of big datagrams does not stay allocated).
const SPARE_PAYLOADS: usize = 64;
const SPARE_CAPACITY: usize = 2048;

pub(crate) struct Udp {
    pub host: HostId,
    pub local: SocketAddr,
    pub peer: Option<SocketAddr>,
    /// Datagrams in (arrival, sequence number) order: jitter may reorder
    /// them. A sorted deque, not a map: a datagram usually arrives after
    /// every one queued (it goes at the back) and leaves from the front.
    pub queue: VecDeque<Datagram>,
    pub bytes: usize,
    pub broadcast: bool,
    pub seq: u64,
    /// A pending error (ICMP port unreachable on a connected socket) and
    /// when it arrives.
    pub error: Option<(u64, i32)>,
}

/// A datagram on its way to, or waiting in, a socket's queue.
pub(crate) struct Datagram {
    pub at: u64,
    pub seq: u64,
    pub from: SocketAddr,
    pub data: Vec<u8>,
}

impl Udp {
    /// Queues `d` after every datagram that arrives before it (or at the
    /// same time with a smaller sequence number).
    fn enqueue(&mut self, d: Datagram) {
        let key = (d.at, d.seq);
        let i = self.queue.partition_point(|q| (q.at, q.seq) < key);
        self.queue.insert(i, d);
    }
}

impl Net {
    /// A UDP socket bound to `addr` on `host`.
    pub fn udp_bind(&mut self, host: HostId, addr: SocketAddr) -> io::Result<SocketId> {
        self.check_local_ip(host, addr.ip())?;
        let id = self.insert_sock(Sock::Udp(Udp {
            host,
            local: addr,
            peer: None,
            queue: VecDeque::new(),
            bytes: 0,
            broadcast: false,
            seq: 0,
            error: None,
        }));
        match self.bind_port(host, Proto::Udp, addr, id, false) {
            Ok(bound) => {
                self.udp_mut(id).expect("exists").local = bound;
                Ok(id)
            }
            Err(e) => {
                self.remove_sock(id);
                Err(e)
            }
        }
    }

    fn udp(&self, id: SocketId) -> io::Result<&Udp> {
        match self.sock(id) {
            Some(Sock::Udp(u)) => Ok(u),
            Some(_) => Net::einval(),
            None => Err(err(EBADF)),
        }
    }

    fn udp_mut(&mut self, id: SocketId) -> io::Result<&mut Udp> {
        match self.sock_mut(id) {
            Some(Sock::Udp(u)) => Ok(u),
            Some(_) => Net::einval(),
            None => Err(err(EBADF)),
        }
    }

    /// Sets the default destination; datagrams from other addresses are
    /// then filtered out.
    pub fn udp_connect(&mut self, id: SocketId, peer: SocketAddr) -> io::Result<()> {
        let u = self.udp(id)?;
        same_family(u.local.ip(), peer.ip())?;
        let host = u.host;
        let mut local = u.local;
        if local.ip().is_unspecified() {
            local.set_ip(self.source_ip(host, peer.ip()));
        }
        let peer = if peer.ip().is_unspecified() {
            SocketAddr::new(self.source_ip(host, peer.ip()), peer.port())
        } else {
            peer
        };
        let u = self.udp_mut(id)?;
        u.peer = Some(peer);
        u.local = local;
        Ok(())
    }

    pub fn udp_set_broadcast(&mut self, id: SocketId, on: bool) -> io::Result<()> {
        self.udp_mut(id)?.broadcast = on;
        Ok(())
    }

    pub fn udp_broadcast(&self, id: SocketId) -> io::Result<bool> {
        Ok(self.udp(id)?.broadcast)
    }

    /// Sends one datagram to `dst` (or the connected peer when `None`).
    pub fn udp_send(
        &mut self,
        id: SocketId,
        data: &[u8],
        dst: Option<SocketAddr>,
        now: u64,
    ) -> io::Result<usize> {
        let u = self.udp(id)?;
        let dst = match dst.or(u.peer) {
            Some(d) => d,
            None => return Err(err(EDESTADDRREQ)),
        };
        same_family(u.local.ip(), dst.ip())?;
        if dst.port() == 0 {
            return Err(err(EINVAL));
        }
        if data.len() > MAX_DATAGRAM {
            return Err(err(EMSGSIZE));
        }
        let (host, broadcast_ok, connected) = (u.host, u.broadcast, u.peer.is_some());
        let mut src = u.local;
        if let Some(e) = self.udp_take_error(id, now) {
            return Err(e);
        }
        if src.ip().is_unspecified() {
            src.set_ip(self.source_ip(host, dst.ip()));
        }
        let is_broadcast = dst.ip() == IpAddr::V4(Ipv4Addr::BROADCAST);
        if is_broadcast && !broadcast_ok {
            return Err(err(EACCES));
        }
        // A broadcast goes to every host, in order; any other datagram to
        // at most one (no list is made for it).
        let mut unicast = if is_broadcast {
            None
        } else {
            self.route(host, dst.ip())
        };
        let mut next = 0;
        loop {
            let to = if is_broadcast {
                match (next..self.hosts.len()).find(|&i| self.hosts[i].is_some()) {
                    Some(i) => {
                        next = i + 1;
                        HostId(i as u32)
                    }
                    None => break,
                }
            } else {
                match unicast.take() {
                    Some(h) => h,
                    None => break,
                }
            };
            let refused = self.deliver(host, to, src, dst, data, now);
            if refused && connected {
                // ICMP port unreachable reaches connected sockets only.
                let rtt = self.delay(host, to, 0, 0) + self.delay(to, host, 0, 1);
                if let Ok(u) = self.udp_mut(id) {
                    u.error.get_or_insert((now + rtt, ECONNREFUSED));
                }
                self.notify(Some(id), now + rtt);
            }
        }
        Ok(data.len())
    }

    /// Delivers (or loses) one datagram; true if nothing listens on the
    /// destination port (the host answers "port unreachable").
    fn deliver(
        &mut self,
        from: HostId,
        to: HostId,
        src: SocketAddr,
        dst: SocketAddr,
        data: &[u8],
        now: u64,
    ) -> bool {
        // What happened to each copy, for the traffic log (record.rs).
        let lost = |net: &mut Net, why: &'static str| {
            let keep = net.keep_payload(data.len());
            net.log(|_| NetEvent::Datagram {
                from_host: from,
                to_host: to,
                from: src,
                to: dst,
                sent: now,
                arrive: None,
                why,
                len: data.len(),
                payload: data[..keep].to_vec(),
            });
        };
        // One look-up of the link for its flow, its counter and its delay.
        let (crashed, clogged) = self.hosts_state(from, to);
        let l = self.link_mut(from, to);
        let open = Flow::of(crashed, from == to, Some(l), clogged) == Flow::Open;
        if open {
            l.datagrams += 1;
        }
        let link = l.clone();
        if !open {
            lost(self, "link cut");
            return false;
        }
        let (loss, dup, n) = (link.udp_loss_ppm, link.udp_dup_ppm, link.datagrams);
        let key = mix(
            self.config.seed ^ 0x5544_5000,
            u64::from(from.0) << 32 | u64::from(to.0),
        );
        if loss > 0 && mix(key, n) % 1_000_000 < u64::from(loss) {
            lost(self, "loss");
            return false;
        }
        let copies = if dup > 0 && mix(key ^ 1, n) % 1_000_000 < u64::from(dup) {
            2
        } else {
            1
        };
        let lookup = if dst.ip() == IpAddr::V4(Ipv4Addr::BROADCAST) {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), dst.port())
        } else if dst.ip().is_unspecified() {
            SocketAddr::new(self.source_ip(to, dst.ip()), dst.port())
        } else {
            dst
        };
        let mut sock = self.first_on_port(to, Proto::Udp, lookup);
        if sock.is_none() && lookup.ip().is_unspecified() {
            sock = self
                .host(to)
                .ports
                .get(&(Proto::Udp, dst.port()))
                .and_then(|v| v.first())
                .map(|&(_, s, _)| s);
        }
        let Some(sock) = sock else {
            lost(self, "no listener");
            return true;
        };
        let cap = self.config.udp_recv_buffer;
        for c in 0..copies {
            let delay = self.delay_on(Some(&link), from, to, key, n * 2 + c);
            let mut payload = self.spare_payloads.pop().unwrap_or_default();
            payload.extend_from_slice(data);
            let Ok(u) = self.udp_mut(sock) else {
                return false;
            };
            if u.peer.is_some_and(|p| p != src) {
                lost(self, "filtered");
                return false;
            }
            if u.bytes + data.len() > cap {
                lost(self, "buffer full");
                return false;
            }
            let seq = u.seq;
            u.seq += 1;
            u.bytes += data.len();
            u.enqueue(Datagram {
                at: now + delay,
                seq,
                from: src,
                data: payload,
            });
            self.notify(Some(sock), now + delay);
            let keep = self.keep_payload(data.len());
            self.log(|_| NetEvent::Datagram {
                from_host: from,
                to_host: to,
                from: src,
                to: dst,
                sent: now,
                arrive: Some(now + delay),
                why: if c == 0 { "" } else { "duplicate" },
                len: data.len(),
                payload: data[..keep].to_vec(),
            });
        }
        false
    }

    /// Takes the socket's pending error if it has arrived.
    pub fn udp_take_error(&mut self, id: SocketId, now: u64) -> Option<io::Error> {
        let u = self.udp_mut(id).ok()?;
        match u.error {
            Some((at, errno)) if at <= now => {
                u.error = None;
                Some(err(errno))
            }
            _ => None,
        }
    }

    /// Receives (or peeks at) the next arrived datagram; a buffer shorter
    /// than the datagram gets its first bytes, and the rest is dropped.
    pub fn udp_recv(
        &mut self,
        id: SocketId,
        buf: &mut [u8],
        peek: bool,
        now: u64,
    ) -> Progress<(usize, SocketAddr)> {
        if let Some(e) = self.udp_take_error(id, now) {
            return Progress::Ready(Err(e));
        }
        let u = match self.udp_mut(id) {
            Ok(u) => u,
            Err(e) => return Progress::Ready(Err(e)),
        };
        let pending_error = u.error.map(|(at, _)| at);
        let Some(at) = u.queue.front().map(|d| d.at) else {
            return Progress::Pending {
                wake_at: pending_error,
            };
        };
        if at > now {
            return Progress::Pending { wake_at: Some(at) };
        }
        let copy = |d: &Datagram, buf: &mut [u8]| {
            let n = d.data.len().min(buf.len());
            buf[..n].copy_from_slice(&d.data[..n]);
            (n, d.from)
        };
        let got = if peek {
            copy(u.queue.front().expect("present"), buf)
        } else {
            let mut d = u.queue.pop_front().expect("present");
            u.bytes -= d.data.len();
            let got = copy(&d, buf);
            if self.spare_payloads.len() < SPARE_PAYLOADS && d.data.capacity() <= SPARE_CAPACITY {
                d.data.clear();
                self.spare_payloads.push(d.data);
            }
            got
        };
        Progress::Ready(Ok(got))
    }

    /// Whether a datagram has arrived, and when the next one will.
    pub fn udp_readiness(&self, id: SocketId, now: u64) -> (bool, Option<u64>) {
        let Ok(u) = self.udp(id) else {
            return (true, None);
        };
        if let Some((at, _)) = u.error {
            if at <= now {
                return (true, None);
            }
        }
        match u.queue.front().map(|d| d.at) {
            Some(at) if at <= now => (true, None),
            Some(at) => (false, Some(at)),
            None => (false, None),
        }
    }
}
