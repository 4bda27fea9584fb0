//! The traffic log: what the model decided about each connection, segment
//! and datagram, kept only when asked for ([`Net::record_traffic`]), for
//! tools that draw or export a run (the harness's timeline page, pcap).
//!
//! Recording is write-only: nothing in the model reads the log, so a run
//! makes the same decisions with it on or off. Off, each hook is one
//! `Option` test. On, it is bounded: at most [`MAX_EVENTS`] events (later
//! ones are counted, not kept) and [`MAX_PAYLOAD_BYTES`] bytes of payload
//! (later payloads keep their length, not their bytes).

use crate::net::{HostId, Net};
use std::net::SocketAddr;

/// Events a log keeps; later ones are only counted.
pub const MAX_EVENTS: usize = 2_000_000;
/// Payload bytes a log keeps; later segments and datagrams keep their
/// length only.
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 20;

/// The log and its bounds' state.
pub(crate) struct Traffic {
    events: Vec<NetEvent>,
    /// Each event's actor (see [`Net::set_actor`]), beside it.
    actors: Vec<Option<u64>>,
    actor: Option<u64>,
    payload_bytes: u64,
    dropped: u64,
    max_events: usize,
    max_payload_bytes: u64,
}

impl Default for Traffic {
    fn default() -> Traffic {
        Traffic {
            events: Vec::new(),
            actors: Vec::new(),
            actor: None,
            payload_bytes: 0,
            dropped: 0,
            max_events: MAX_EVENTS,
            max_payload_bytes: MAX_PAYLOAD_BYTES,
        }
    }
}

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
    /// Bytes `offset..offset + len` of direction `dir` (from end `dir` to
    /// end `1 - dir`), or a FIN / RST marker at `offset` (`len` 0);
    /// `payload` is their first bytes, all of them until the log's payload
    /// bound is reached.
    Segment {
        conn: u64,
        dir: usize,
        kind: SegmentKind,
        offset: u64,
        len: usize,
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
    /// End `dir` closed with a RST at `at` and discarded its send queue:
    /// the bytes of direction `dir` from `offset` on never arrive.
    Discard {
        conn: u64,
        dir: usize,
        offset: u64,
        at: u64,
    },
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
        len: usize,
        payload: Vec<u8>,
    },
}

impl Net {
    /// Keeps a log of the traffic from now on.
    pub fn record_traffic(&mut self) {
        self.traffic.get_or_insert_with(Traffic::default);
    }

    /// The log so far (empty when not recording); recording goes on.
    pub fn take_traffic(&mut self) -> Vec<NetEvent> {
        self.traffic
            .as_mut()
            .map(|t| std::mem::take(&mut t.events))
            .unwrap_or_default()
    }

    /// Each event's actor, in the order of [`Net::take_traffic`]'s events
    /// (take it first, then the events).
    pub fn take_traffic_actors(&mut self) -> Vec<Option<u64>> {
        self.traffic
            .as_mut()
            .map(|t| std::mem::take(&mut t.actors))
            .unwrap_or_default()
    }

    /// Whether the log is kept.
    pub fn records_traffic(&self) -> bool {
        self.traffic.is_some()
    }

    /// Who makes the calls from now on (the runtime's task id), logged with
    /// each event; ignored when not recording.
    pub fn set_actor(&mut self, actor: Option<u64>) {
        if let Some(t) = self.traffic.as_mut() {
            t.actor = actor;
        }
    }

    /// Events past [`MAX_EVENTS`], counted but not kept.
    pub fn traffic_dropped(&self) -> u64 {
        self.traffic.as_ref().map_or(0, |t| t.dropped)
    }

    /// How many of a payload's `len` bytes the log keeps (0 when not
    /// recording, or past the payload bound).
    pub(crate) fn keep_payload(&mut self, len: usize) -> usize {
        let Some(t) = self.traffic.as_mut() else {
            return 0;
        };
        let keep = (len as u64).min(t.max_payload_bytes.saturating_sub(t.payload_bytes));
        t.payload_bytes += keep;
        keep as usize
    }

    /// Whether the log is kept (a hook builds its event only then).
    #[inline]
    pub(crate) fn recording(&self) -> bool {
        self.traffic.is_some()
    }

    #[inline]
    pub(crate) fn log(&mut self, event: impl FnOnce(&Net) -> NetEvent) {
        match self.traffic.as_mut() {
            None => {}
            Some(t) if t.events.len() >= t.max_events => t.dropped += 1,
            Some(_) => {
                let e = event(self);
                if let Some(t) = self.traffic.as_mut() {
                    t.events.push(e);
                    t.actors.push(t.actor);
                }
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
    fn the_log_is_bounded_in_events_and_payload_bytes() {
        let mut net = Net::new(Config::default());
        net.record_traffic();
        if let Some(t) = net.traffic.as_mut() {
            t.max_events = 3;
            t.max_payload_bytes = 7;
        }
        let mut plain = Net::new(Config::default());
        assert_eq!(
            script(&mut plain),
            script(&mut net),
            "bounds change no answer"
        );
        let log = net.take_traffic();
        assert_eq!(log.len(), 3);
        assert!(net.traffic_dropped() > 0);
        // "hello" kept whole (5 of 7 bytes), the datagram's 4 bytes cut to 2.
        assert!(
            matches!(&log[1], NetEvent::Segment { len: 5, payload, .. } if payload == b"hello"),
            "{log:?}"
        );
        let mut net = Net::new(Config::default());
        net.record_traffic();
        if let Some(t) = net.traffic.as_mut() {
            t.max_payload_bytes = 7;
        }
        script(&mut net);
        let log = net.take_traffic();
        assert!(
            log.iter().any(
                |e| matches!(e, NetEvent::Datagram { len: 4, payload, .. } if payload == b"pi")
            ),
            "{log:?}"
        );
    }

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
