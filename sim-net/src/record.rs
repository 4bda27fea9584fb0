//! The traffic log: what the model decided about each connection, segment
//! and datagram, kept only when asked for ([`Net::record_traffic`]), for
//! tools that draw or export a run (the harness's timeline page, pcap).
//!
//! Recording is write-only: nothing in the model reads the log, so a run
//! makes the same decisions with it on or off. Off, each hook is one
//! `Option` test.

use crate::net::{HostId, Net};
use std::net::SocketAddr;

/// What a segment carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentKind {
    Data,
    Fin,
    Rst,
}

/// One decision of the model about traffic between hosts, in the order the
/// model made them. Times are virtual nanoseconds; `None` as an arrival
/// means held (a blocked link or a fault holds it until a
/// [`NetEvent::Release`], or forever).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetEvent {
    /// A SYN was answered: the connection `conn` (its number, never reused)
    /// exists from `at`, is established for the client at `established`
    /// and ready to accept at `ready`.
    Connect {
        conn: u64,
        hosts: [HostId; 2],
        addrs: [SocketAddr; 2],
        at: u64,
        established: u64,
        ready: u64,
    },
    /// A connect attempt that got no connection: `why` is `"refused"`,
    /// `"lost"` (a SYN that will be retried) or `"timed out"`; the caller
    /// learns it at `fails_at`.
    ConnectFailed {
        host: HostId,
        to_host: Option<HostId>,
        from: SocketAddr,
        to: SocketAddr,
        at: u64,
        fails_at: u64,
        why: &'static str,
    },
    /// Bytes `offset..offset + payload.len()` of direction `dir` (from end
    /// `dir` to end `1 - dir`), or a FIN / RST marker at `offset`.
    Segment {
        conn: u64,
        dir: usize,
        kind: SegmentKind,
        offset: u64,
        sent: u64,
        arrive: Option<u64>,
        payload: Vec<u8>,
    },
    /// The held segments of a direction leave: they arrive at `arrive`.
    Release {
        conn: u64,
        dir: usize,
        at: u64,
        arrive: u64,
    },
    /// The held segments of a direction are dropped (the sender gave up).
    DropHeld { conn: u64, dir: usize, at: u64 },
    /// The connection was reset at `at`: what had not arrived is lost.
    Reset { conn: u64, at: u64 },
    /// End `end`'s machine crashed at `at`: what it had not sent and what
    /// was still on its way to it is lost.
    Vanish { conn: u64, end: usize, at: u64 },
    /// One datagram (one copy of it): `arrive: None` means lost, and `why`
    /// says how (`"link cut"`, `"loss"`, `"no listener"`, `"buffer full"`,
    /// `"filtered"`).
    Datagram {
        from_host: HostId,
        to_host: HostId,
        from: SocketAddr,
        to: SocketAddr,
        sent: u64,
        arrive: Option<u64>,
        why: &'static str,
        payload: Vec<u8>,
    },
}

impl Net {
    /// Keeps a log of the traffic from now on.
    pub fn record_traffic(&mut self) {
        self.traffic.get_or_insert_with(Vec::new);
    }

    /// The log so far (empty when not recording); recording goes on.
    pub fn take_traffic(&mut self) -> Vec<NetEvent> {
        self.traffic
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Whether the log is kept (a hook builds its event only then).
    #[inline]
    pub(crate) fn recording(&self) -> bool {
        self.traffic.is_some()
    }

    #[inline]
    pub(crate) fn log(&mut self, event: impl FnOnce(&Net) -> NetEvent) {
        if self.traffic.is_some() {
            let e = event(self);
            if let Some(t) = self.traffic.as_mut() {
                t.push(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Progress};

    /// A connect, a write across a partition (held), the heal (released),
    /// a read, a datagram: returns what the model answered and notified.
    fn script(net: &mut Net) -> Vec<String> {
        let (a, b) = (HostId(0), HostId(1));
        net.add_host(a, "10.0.0.1".parse().unwrap());
        net.add_host(b, "10.0.0.2".parse().unwrap());
        let mut seen = Vec::new();
        let l = net
            .tcp_bind(b, "0.0.0.0:80".parse().unwrap(), false, 0)
            .unwrap();
        net.tcp_listen(l, 8).unwrap();
        let c = net
            .tcp_connect(a, None, "10.0.0.2:80".parse().unwrap(), 0)
            .unwrap();
        let t = SECOND;
        seen.push(format!("{:?}", net.tcp_poll_connect(c, t)));
        let s = match net.tcp_accept(l, t) {
            Progress::Ready(Ok((s, _))) => s,
            other => panic!("{other:?}"),
        };
        net.partition(a, b, false, t);
        seen.push(format!("{:?}", net.tcp_write(c, b"hello", t)));
        net.heal(a, b, 2 * t);
        let mut buf = [0u8; 16];
        seen.push(format!("{:?}", net.tcp_read(s, &mut buf, false, 3 * t)));
        let u = net.udp_bind(a, "0.0.0.0:0".parse().unwrap()).unwrap();
        let v = net.udp_bind(b, "0.0.0.0:53".parse().unwrap()).unwrap();
        seen.push(format!(
            "{:?}",
            net.udp_send(u, b"ping", Some("10.0.0.2:53".parse().unwrap()), 3 * t)
        ));
        seen.push(format!("{:?}", net.udp_recv(v, &mut buf, false, 4 * t)));
        let mut notes = Vec::new();
        net.take_notifications(&mut notes);
        seen.push(format!("{notes:?}"));
        seen
    }

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn recording_changes_no_answer_and_logs_the_traffic() {
        let mut plain = Net::new(Config::default());
        let mut recorded = Net::new(Config::default());
        recorded.record_traffic();
        assert_eq!(script(&mut plain), script(&mut recorded));
        assert!(plain.take_traffic().is_empty());
        let log = recorded.take_traffic();
        assert!(
            matches!(log[0], NetEvent::Connect { conn: 0, .. }),
            "{log:?}"
        );
        assert!(
            matches!(&log[1], NetEvent::Segment { kind: SegmentKind::Data, offset: 0, arrive: None, payload, .. } if payload == b"hello"),
            "held across the partition: {log:?}"
        );
        assert!(
            matches!(log[2], NetEvent::Release { conn: 0, dir: 0, at, arrive } if at == 2 * SECOND && arrive > at),
            "{log:?}"
        );
        assert!(
            matches!(&log[3], NetEvent::Datagram { arrive: Some(_), payload, .. } if payload == b"ping"),
            "{log:?}"
        );
    }
}
