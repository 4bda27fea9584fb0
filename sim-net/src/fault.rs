//! Faults: partitions, clogs, link settings, and per-connection faults.

use crate::net::{HostId, Net, PortFault};
use std::net::SocketAddr;

/// Faults of one end of a connection: what that end's reads, writes and
/// incoming bytes suffer. The default is no fault.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnFault {
    /// Each read returns at most this many bytes.
    pub short_reads: Option<usize>,
    /// Bytes toward this end arrive at most this fast (a slow reader).
    pub throttle_bytes_per_sec: Option<u64>,
    /// Of the bytes written toward this end from now on, the first N
    /// arrive and the rest are held (the request was processed, the
    /// response is lost); the sender times out as across a partition.
    pub hold_after_bytes: Option<u64>,
    /// This end's next write accepts at most this many bytes; the write
    /// after it fails with `ConnectionReset` and resets the connection.
    pub partial_write_then_reset: Option<usize>,
    /// Bytes toward this end are lost (and retransmitted) until the fault
    /// is cleared: a silent connection. The sender times out eventually.
    pub silent: bool,
}

/// What a predicate over connections sees of one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnInfo {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub local_host: HostId,
    pub peer_host: HostId,
}

impl Net {
    /// Cuts the link from `a` to `b` (and back, unless `one_way`): SYNs are
    /// lost, stream bytes are held and retransmitted, datagrams are lost.
    pub fn partition(&mut self, a: HostId, b: HostId, one_way: bool, now: u64) {
        self.link_mut(a, b).partitioned = true;
        if !one_way {
            self.link_mut(b, a).partitioned = true;
        }
        let _ = now;
    }

    /// Clogs the link from `a` to `b` (and back, unless `one_way`): bytes
    /// queue and none are lost; connects wait for SYN retransmissions.
    pub fn clog(&mut self, a: HostId, b: HostId, one_way: bool, now: u64) {
        self.link_mut(a, b).clogged = true;
        if !one_way {
            self.link_mut(b, a).clogged = true;
        }
        let _ = now;
    }

    /// Clogs every link to and from `host`.
    pub fn clog_host(&mut self, host: HostId, now: u64) {
        self.host_mut(host).clogged = true;
        let _ = now;
    }

    /// Undoes partitions and clogs between `a` and `b` (both directions);
    /// held bytes leave now.
    pub fn heal(&mut self, a: HostId, b: HostId, now: u64) {
        for (s, d) in [(a, b), (b, a)] {
            if let Some(l) = self.links.get_mut(&(s, d)) {
                l.partitioned = false;
                l.clogged = false;
            }
            self.release_link(s, d, now);
        }
    }

    /// Unclogs a host clogged with [`Net::clog_host`].
    pub fn unclog_host(&mut self, host: HostId, now: u64) {
        self.host_mut(host).clogged = false;
        let links: Vec<(HostId, HostId)> = self
            .held
            .keys()
            .filter(|(s, d)| *s == host || *d == host)
            .copied()
            .collect();
        for (s, d) in links {
            self.release_link(s, d, now);
        }
    }

    /// Undoes every partition and clog.
    pub fn heal_all(&mut self, now: u64) {
        for l in self.links.values_mut() {
            l.partitioned = false;
            l.clogged = false;
        }
        for h in self.hosts.iter_mut().flatten() {
            h.clogged = false;
        }
        let links: Vec<(HostId, HostId)> = self.held.keys().copied().collect();
        for (s, d) in links {
            self.release_link(s, d, now);
        }
    }

    /// Sets the latency and jitter of the link from `a` to `b`.
    pub fn set_link_latency(&mut self, a: HostId, b: HostId, latency_ns: u64, jitter_ns: u64) {
        assert!(
            latency_ns <= u64::MAX / 4 && jitter_ns <= u64::MAX / 4,
            "sim-net: latency and jitter must leave room for arithmetic"
        );
        let l = self.link_mut(a, b);
        l.latency_ns = Some(latency_ns);
        l.jitter_ns = Some(jitter_ns);
    }

    /// Datagrams from `a` to `b` are lost with probability `loss_ppm` and
    /// duplicated with probability `dup_ppm` (parts per million).
    pub fn set_udp_faults(&mut self, a: HostId, b: HostId, loss_ppm: u32, dup_ppm: u32) {
        assert!(
            loss_ppm <= 1_000_000 && dup_ppm <= 1_000_000,
            "sim-net: probabilities are parts per million (at most 1,000,000)"
        );
        let l = self.link_mut(a, b);
        l.udp_loss_ppm = loss_ppm;
        l.udp_dup_ppm = dup_ppm;
    }

    /// Connects to `port` of `host` are refused (RST), whether or not
    /// something listens there.
    pub fn refuse_connects(&mut self, host: HostId, port: u16) {
        self.port_faults.insert((host, port), PortFault::Refuse);
    }

    /// Connects to `port` of `host` get no answer (their SYNs are lost).
    pub fn blackhole_connects(&mut self, host: HostId, port: u16) {
        self.port_faults.insert((host, port), PortFault::BlackHole);
    }

    /// Connects to `port` of `host` behave normally again.
    pub fn clear_port_fault(&mut self, host: HostId, port: u16) {
        self.port_faults.remove(&(host, port));
    }

    /// Every end of every connection, as predicates see them.
    pub fn connections(&self) -> Vec<(u32, usize, ConnInfo)> {
        let mut v = Vec::new();
        for (i, c) in self.conns.iter().enumerate() {
            let Some(c) = c else { continue };
            for e in 0..2 {
                v.push((i as u32, e, c.info(e)));
            }
        }
        v
    }

    /// Resets every connection with an end matching `pred` (as a middlebox
    /// would): both ends read what has arrived, then get `ConnectionReset`.
    /// Returns how many connections were reset.
    pub fn reset_connections(
        &mut self,
        now: u64,
        mut pred: impl FnMut(&ConnInfo) -> bool,
    ) -> usize {
        let mut hit = Vec::new();
        for (i, e, info) in self.connections() {
            if pred(&info) && hit.last() != Some(&i) {
                let _ = e;
                hit.push(i);
            }
        }
        for &i in &hit {
            self.reset_conn(i, now);
        }
        hit.len()
    }

    /// Resets the connections numbered `ids` (from [`Net::connections`]).
    pub fn reset_connections_by_id(&mut self, ids: &[u32], now: u64) {
        for &i in ids {
            if self.conns.get(i as usize).is_some_and(|c| c.is_some()) {
                self.reset_conn(i, now);
            }
        }
    }

    /// Sets `fault` on the connection ends `ends` (from
    /// [`Net::connections`]).
    pub fn set_conn_fault_by_id(&mut self, ends: &[(u32, usize)], fault: ConnFault, now: u64) {
        for &(i, e) in ends {
            if self.conns.get(i as usize).is_some_and(|c| c.is_some()) {
                self.apply_conn_fault(i, e, fault.clone(), now);
            }
        }
    }

    /// Sets `fault` on every connection end matching `pred` (existing
    /// connections only). Returns how many ends were changed.
    pub fn set_conn_fault(
        &mut self,
        now: u64,
        mut pred: impl FnMut(&ConnInfo) -> bool,
        fault: ConnFault,
    ) -> usize {
        let mut n = 0;
        for (i, e, info) in self.connections() {
            if pred(&info) {
                self.apply_conn_fault(i, e, fault.clone(), now);
                n += 1;
            }
        }
        n
    }

    /// Pauses or resumes a listener: while paused, connections complete
    /// into its queue (until the backlog is full) but `accept` waits.
    pub fn set_listener_paused(
        &mut self,
        listener: crate::SocketId,
        paused: bool,
        now: u64,
    ) -> bool {
        let ok = self
            .listener_mut(listener)
            .map(|l| l.paused = paused)
            .is_some();
        if ok && !paused {
            self.notify(Some(listener), now);
        }
        ok
    }
}
