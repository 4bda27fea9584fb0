//! TCP: listeners, connects, and connections as two ordered byte pipes.
//!
//! Here: the sockets' and connections' types, a pipe's arithmetic.
//! `connect.rs`: bind, listen, addresses, connect (SYNs, retries), accept.
//! `bytes.rs`: when a chunk arrives, writes, reads, readiness, shutdown.
//! `close.rs`: close and abort, resets, a host's kill, crash and revival.
//! `held.rs`: bytes held by a blocked link or a fault, and their release.

use crate::errno::*;
use crate::fault::{ConnFault, ConnInfo};
use crate::net::{
    same_family, Flow, HostId, Net, PortFault, Progress, Proto, Sock, SocketId, Wakes,
};
use crate::record::{NetEvent, SegmentKind};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

mod bytes;
mod close;
mod connect;
mod held;

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

impl Readiness {
    /// A closed socket's: ready every way, as every operation fails at once.
    pub const CLOSED: Readiness = Readiness {
        readable: true,
        writable: true,
        read_closed: true,
        write_closed: true,
        error: true,
        wake_at: None,
    };
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
}
