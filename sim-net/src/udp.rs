//! UDP: datagrams with boundaries, delivered after the link delay or lost.

use crate::errno::*;
use crate::net::{mix, same_family, Flow, HostId, Net, Progress, Proto, Sock, SocketId};
use crate::record::NetEvent;
use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65_507;

pub(crate) struct Udp {
    pub host: HostId,
    pub local: SocketAddr,
    pub peer: Option<SocketAddr>,
    /// Datagrams by (arrival, sequence number): jitter may reorder them.
    pub queue: BTreeMap<(u64, u64), (SocketAddr, Vec<u8>)>,
    pub bytes: usize,
    pub broadcast: bool,
    pub seq: u64,
    /// A pending error (ICMP port unreachable on a connected socket) and
    /// when it arrives.
    pub error: Option<(u64, i32)>,
}

impl Net {
    /// A UDP socket bound to `addr` on `host`.
    pub fn udp_bind(&mut self, host: HostId, addr: SocketAddr) -> io::Result<SocketId> {
        self.check_local_ip(host, addr.ip())?;
        let id = self.insert_sock(Sock::Udp(Udp {
            host,
            local: addr,
            peer: None,
            queue: BTreeMap::new(),
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
        let targets: Vec<HostId> = if is_broadcast {
            self.hosts
                .iter()
                .enumerate()
                .filter(|(_, h)| h.is_some())
                .map(|(i, _)| HostId(i as u32))
                .collect()
        } else {
            self.route(host, dst.ip()).into_iter().collect()
        };
        for to in targets {
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
        if self.flow(from, to) != Flow::Open {
            lost(self, "link cut");
            return false;
        }
        let (loss, dup, n) = {
            let l = self.link_mut(from, to);
            l.datagrams += 1;
            (l.udp_loss_ppm, l.udp_dup_ppm, l.datagrams)
        };
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
        let mut socks = self.lookup_port(to, Proto::Udp, lookup);
        if socks.is_empty() && lookup.ip().is_unspecified() {
            socks = self
                .host(to)
                .ports
                .get(&(Proto::Udp, dst.port()))
                .map(|v| v.iter().map(|&(_, s, _)| s).collect())
                .unwrap_or_default();
        }
        let Some(&sock) = socks.first() else {
            lost(self, "no listener");
            return true;
        };
        let cap = self.config.udp_recv_buffer;
        for c in 0..copies {
            let delay = self.delay(from, to, key, n * 2 + c);
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
            u.queue.insert((now + delay, seq), (src, data.to_vec()));
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
        let Some((&(at, seq), _)) = u.queue.first_key_value() else {
            return Progress::Pending {
                wake_at: pending_error,
            };
        };
        if at > now {
            return Progress::Pending { wake_at: Some(at) };
        }
        let (from, data) = if peek {
            u.queue.get(&(at, seq)).cloned().expect("present")
        } else {
            let d = u.queue.remove(&(at, seq)).expect("present");
            u.bytes -= d.1.len();
            d
        };
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Progress::Ready(Ok((n, from)))
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
        match u.queue.first_key_value() {
            Some((&(at, _), _)) if at <= now => (true, None),
            Some((&(at, _), _)) => (false, Some(at)),
            None => (false, None),
        }
    }
}
