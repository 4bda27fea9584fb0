//! The simulated network's traffic as a classic libpcap file
//! (nanosecond timestamps, `LINKTYPE_RAW`: each packet an IPv4 packet)
//! that Wireshark and tshark read. Headers are synthetic: a connection is
//! a SYN, SYN-ACK, ACK; each segment's bytes go out in packets of at most
//! 1460 bytes whose sequence numbers advance by their length from the
//! direction's initial number, acknowledging what the other direction has
//! sent; FIN and RST carry their flags. A packet whose payload the
//! recorder did not keep (past its bound) is truncated as a capture with a
//! short snap length is: its lengths say what was sent. Packets are
//! stamped with their
//! send time (a capture at the sender), held and lost ones included. IP
//! header checksums are correct; TCP and UDP checksums are zero. IPv6
//! traffic is left out.

use super::Recorded;
use sim_runtime::__private::harness::{NetEvent, SegmentKind};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

const LINKTYPE_RAW: u32 = 101;
const MSS: usize = 1460;
pub(crate) const SYN: u8 = 0x02;
pub(crate) const FIN: u8 = 0x01;
pub(crate) const RST: u8 = 0x04;
pub(crate) const PSH: u8 = 0x08;
pub(crate) const ACK: u8 = 0x10;

/// The initial sequence number of direction `dir` of connection `conn`.
pub(crate) fn isn(conn: u64, dir: usize) -> u32 {
    let x = (conn.wrapping_mul(2) + dir as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 32) as u32
}

struct Conn {
    addrs: [SocketAddr; 2],
    /// Sequence space used per direction (bytes, plus one for a FIN).
    next: [u32; 2],
}

fn v4(a: &SocketAddr) -> Option<Ipv4Addr> {
    match a.ip() {
        IpAddr::V4(ip) => Some(ip),
        IpAddr::V6(_) => None,
    }
}

fn ipv4(out: &mut Vec<u8>, proto: u8, src: Ipv4Addr, dst: Ipv4Addr, body_len: usize, id: u16) {
    let total = (20 + body_len) as u16;
    let start = out.len();
    out.extend_from_slice(&[0x45, 0]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0x40, 0, 64, proto, 0, 0]);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst.octets());
    let mut sum: u32 = out[start..start + 20]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    out[start + 10..start + 12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

struct Writer {
    /// (time, the packet's bytes as kept, its length on the wire).
    packets: Vec<(u64, Vec<u8>, usize)>,
    ip_id: u16,
}

impl Writer {
    /// A TCP packet of `len` payload bytes, of which `payload` were kept.
    #[allow(clippy::too_many_arguments)]
    fn tcp(
        &mut self,
        at: u64,
        from: &SocketAddr,
        to: &SocketAddr,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
        len: usize,
    ) {
        let (Some(s), Some(d)) = (v4(from), v4(to)) else {
            return;
        };
        let mut p = Vec::with_capacity(40 + payload.len());
        self.ip_id = self.ip_id.wrapping_add(1);
        ipv4(&mut p, 6, s, d, 20 + len, self.ip_id);
        p.extend_from_slice(&from.port().to_be_bytes());
        p.extend_from_slice(&to.port().to_be_bytes());
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&ack.to_be_bytes());
        p.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(payload);
        self.packets.push((at, p, 40 + len));
    }

    /// A datagram of `len` bytes, of which `payload` were kept.
    fn udp(&mut self, at: u64, from: &SocketAddr, to: &SocketAddr, payload: &[u8], len: usize) {
        let (Some(s), Some(d)) = (v4(from), v4(to)) else {
            return;
        };
        let mut p = Vec::with_capacity(28 + payload.len());
        self.ip_id = self.ip_id.wrapping_add(1);
        ipv4(&mut p, 17, s, d, 8 + len, self.ip_id);
        p.extend_from_slice(&from.port().to_be_bytes());
        p.extend_from_slice(&to.port().to_be_bytes());
        p.extend_from_slice(&((8 + len) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        self.packets.push((at, p, 28 + len));
    }
}

/// The pcap file's bytes.
pub(crate) fn render(rec: &Recorded) -> Vec<u8> {
    let mut w = Writer {
        packets: Vec::new(),
        ip_id: 0,
    };
    let mut conns: BTreeMap<u64, Conn> = BTreeMap::new();
    for e in &rec.run.traffic {
        match e {
            NetEvent::Connect {
                conn,
                addrs,
                at,
                established,
                ..
            } => {
                let (i0, i1) = (isn(*conn, 0), isn(*conn, 1));
                let [a, b] = addrs;
                w.tcp(*at, a, b, i0, 0, SYN, &[], 0);
                w.tcp(
                    at + (established - at) / 2,
                    b,
                    a,
                    i1,
                    i0.wrapping_add(1),
                    SYN | ACK,
                    &[],
                    0,
                );
                w.tcp(
                    *established,
                    a,
                    b,
                    i0.wrapping_add(1),
                    i1.wrapping_add(1),
                    ACK,
                    &[],
                    0,
                );
                conns.insert(
                    *conn,
                    Conn {
                        addrs: *addrs,
                        next: [1, 1],
                    },
                );
            }
            NetEvent::Segment {
                conn,
                dir,
                kind,
                offset,
                len,
                sent,
                payload,
                ..
            } => {
                let Some(c) = conns.get_mut(conn) else {
                    continue;
                };
                let (from, to) = (c.addrs[*dir], c.addrs[1 - dir]);
                let base = isn(*conn, *dir)
                    .wrapping_add(1)
                    .wrapping_add(*offset as u32);
                let ack = isn(*conn, 1 - dir).wrapping_add(c.next[1 - dir]);
                match kind {
                    SegmentKind::Data => {
                        // Packets of at most MSS bytes over the whole
                        // length; each carries what was kept of its bytes.
                        for at in (0..*len).step_by(MSS) {
                            let n = MSS.min(len - at);
                            let kept = &payload[at.min(payload.len())..(at + n).min(payload.len())];
                            let seq = base.wrapping_add(at as u32);
                            w.tcp(*sent, &from, &to, seq, ack, ACK | PSH, kept, n);
                        }
                        c.next[*dir] = c.next[*dir].max(1 + (*offset as u32) + *len as u32);
                    }
                    SegmentKind::Fin => {
                        w.tcp(*sent, &from, &to, base, ack, FIN | ACK, &[], 0);
                        c.next[*dir] = c.next[*dir].max(2 + *offset as u32);
                    }
                    SegmentKind::Rst => w.tcp(*sent, &from, &to, base, ack, RST | ACK, &[], 0),
                }
            }
            NetEvent::Reset { conn, at } => {
                if let Some(c) = conns.get(conn) {
                    for dir in 0..2 {
                        let seq = isn(*conn, dir).wrapping_add(c.next[dir]);
                        let ack = isn(*conn, 1 - dir).wrapping_add(c.next[1 - dir]);
                        w.tcp(
                            *at,
                            &c.addrs[dir],
                            &c.addrs[1 - dir],
                            seq,
                            ack,
                            RST | ACK,
                            &[],
                            0,
                        );
                    }
                }
            }
            NetEvent::Datagram {
                from,
                to,
                sent,
                why,
                len,
                payload,
                ..
            } if *why != "duplicate" => w.udp(*sent, from, to, payload, *len),
            _ => {}
        }
    }
    // In time order; the model's order breaks ties.
    w.packets.sort_by_key(|(at, _, _)| *at);
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&262_144u32.to_le_bytes());
    out.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
    for (at, p, wire) in &w.packets {
        out.extend_from_slice(&((at / 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((at % 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&(*wire as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}
