//! Unix-domain sockets: each host's namespace, and the sockets in it.
//!
//! Local IPC beside the network: a Unix socket lives in [`Net`]'s socket
//! slab (so its id, its notifications and the runtime's waiters are those
//! of every socket) but no link, delay or fault touches it, and no time
//! passes in it: every answer is ready now, or pending until a
//! notification. The rules are the crate docs' (**Unix sockets**).
//!
//! `stream.rs` holds listeners and streams, `dgram.rs` datagram sockets.

use crate::errno::*;
use crate::net::{HostId, Net, Progress, Sock, SocketId, Wakes};
use crate::tcp::Readiness;
use std::collections::{BTreeMap, VecDeque};
use std::io;

mod dgram;
mod stream;
#[cfg(test)]
mod tests;

/// Linux's default socket send buffer (`net.core.wmem_default`): a
/// stream's buffer per direction, and the bound on one datagram (less 32
/// bytes).
pub const UNIX_SNDBUF: usize = 212_992;
/// Linux's `net.unix.max_dgram_qlen`: a datagram receiver is full past
/// this many.
pub const UNIX_MAX_DGRAM_QLEN: usize = 10;
/// A listener's backlog (Tokio's listen backlog).
pub const UNIX_BACKLOG: usize = 1024;

/// A Unix socket's address, as `std::os::unix::net::SocketAddr` says it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnixAddr {
    /// No name (an unbound socket, either end of a pair, a client).
    Unnamed,
    /// A path name's bytes, as given (relative ones too).
    Path(Vec<u8>),
    /// A name in Linux's abstract namespace (without the leading NUL).
    Abstract(Vec<u8>),
}

/// What a socket is bound to in its host's namespace, and what a connect
/// or a send looks up.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnixName {
    /// A socket file on the host's disk, by inode number: the caller made
    /// it when it bound a path, or found it by the path it connects or
    /// sends to. The model never touches a file system; a socket holds the
    /// inode, not the path, as on Linux.
    File(u64),
    /// A name in Linux's abstract namespace (without the leading NUL).
    Abstract(Vec<u8>),
}

impl UnixName {
    /// The name a bind of `addr` takes, given the inode of the socket file
    /// a path address was given (`None`: the unnamed address, which
    /// autobinds).
    fn of(addr: &UnixAddr, file: Option<u64>) -> Option<UnixName> {
        match (addr, file) {
            (UnixAddr::Unnamed, None) => None,
            (UnixAddr::Abstract(name), None) => Some(UnixName::Abstract(name.clone())),
            (UnixAddr::Path(_), Some(ino)) => Some(UnixName::File(ino)),
            (addr, file) => panic!(
                "sim-net: a path address binds with the inode of its socket file, and only a \
                 path address does (got {addr:?} with {file:?})"
            ),
        }
    }
}

/// `shut` bits, as Linux's `sk_shutdown`.
pub(crate) const RCV: u8 = 1;
pub(crate) const SEND: u8 = 2;

pub(crate) enum UnixKind {
    Listener {
        /// Connections not accepted yet (their server ends), oldest first.
        backlog: VecDeque<SocketId>,
    },
    Stream {
        /// The other end (gone once it closed).
        peer: SocketId,
        peer_addr: UnixAddr,
        /// The host of the process that made the connection (`SO_PEERCRED`).
        peer_host: HostId,
        /// Bytes written by the peer, not yet read.
        rx: VecDeque<u8>,
        /// A write found no room; cleared once the peer's buffer is down to
        /// a quarter of [`UNIX_SNDBUF`].
        blocked: bool,
    },
    Dgram {
        peer: Option<(SocketId, UnixAddr)>,
        rx: VecDeque<(Vec<u8>, UnixAddr)>,
        /// Senders that found this socket's queue full (a send, or a
        /// readiness check of a socket connected here), in the order they
        /// did: Linux's `peer_wait`. Each is notified (its writers) when
        /// the queue gives up a datagram or the socket closes or shuts down.
        peer_wait: Vec<SocketId>,
    },
}

pub(crate) struct UnixSock {
    pub(crate) host: HostId,
    /// Creation order: a host's death closes its sockets in it.
    seq: u64,
    local: UnixAddr,
    /// The name it holds in its host's namespace.
    name: Option<UnixName>,
    /// `RCV`/`SEND` bits.
    shut: u8,
    /// The pending error (`SO_ERROR`).
    error: Option<i32>,
    pub(crate) kind: UnixKind,
}

/// The namespaces of every host (the sockets are in [`Net`]'s slab).
#[derive(Default)]
pub(crate) struct UnixSockets {
    /// Per host: name → the open socket holding it. A socket file whose
    /// socket closed stays on the disk, but names no socket here.
    names: BTreeMap<(HostId, UnixName), SocketId>,
    /// Autobind's counter (`bind` to the unnamed address).
    autobind: u32,
    /// Sockets made so far (the next one's `seq`).
    made: u64,
}

/// Whether a stream whose peer holds `queued` unread bytes has write space
/// again after blocking: Linux's `unix_writable` (a quarter of the send
/// buffer).
fn write_space(queued: usize) -> bool {
    queued <= UNIX_SNDBUF / 4
}

impl Net {
    pub(crate) fn unix(&self, id: SocketId) -> io::Result<&UnixSock> {
        match self.sock(id) {
            Some(Sock::Unix(u)) => Ok(u),
            Some(_) => Net::einval(),
            None => Err(err(EBADF)),
        }
    }

    pub(crate) fn unix_mut(&mut self, id: SocketId) -> io::Result<&mut UnixSock> {
        match self.sock_mut(id) {
            Some(Sock::Unix(u)) => Ok(u),
            Some(_) => Net::einval(),
            None => Err(err(EBADF)),
        }
    }

    fn unix_insert(&mut self, host: HostId, local: UnixAddr, kind: UnixKind) -> SocketId {
        let seq = self.unix.made;
        self.unix.made += 1;
        self.insert_sock(Sock::Unix(Box::new(UnixSock {
            host,
            seq,
            local,
            name: None,
            shut: 0,
            error: None,
            kind,
        })))
    }

    /// Notifies a live socket's `wakes` waiters.
    fn unix_notify(&mut self, id: SocketId, wakes: Wakes, now: u64) {
        if self.unix(id).is_ok() {
            self.notify_some(Some(id), now, wakes);
        }
    }

    /// Every change a socket's closing or shutdown may bring: its own
    /// waiters, and the senders waiting for room in its queue.
    fn unix_notify_all(&mut self, id: SocketId, now: u64) {
        self.unix_notify(id, Wakes::All, now);
        self.unix_relay(id, now);
    }

    /// Notifies (their writers) the senders waiting for room in `id`'s
    /// queue; they wait no longer.
    fn unix_relay(&mut self, id: SocketId, now: u64) {
        let waiting = match self.unix_mut(id).map(|s| &mut s.kind) {
            Ok(UnixKind::Dgram { peer_wait, .. }) => std::mem::take(peer_wait),
            _ => return,
        };
        for s in waiting {
            self.notify_some(Some(s), now, Wakes::Writers);
        }
    }

    /// The invariants of Unix socket `id` ([`Net::check_invariants`]).
    pub(crate) fn unix_check(&self, id: SocketId, s: &UnixSock) {
        match &s.kind {
            UnixKind::Listener { backlog } => {
                assert!(
                    backlog.len() <= UNIX_BACKLOG + 1,
                    "sim-net: a Unix backlog holds at most UNIX_BACKLOG + 1 connections"
                );
            }
            UnixKind::Stream { peer, rx, .. } => {
                assert!(
                    rx.len() <= UNIX_SNDBUF,
                    "sim-net: a Unix stream buffer holds at most UNIX_SNDBUF bytes"
                );
                if let Ok(UnixKind::Stream { peer: back, .. }) = self.unix(*peer).map(|p| &p.kind) {
                    assert_eq!(*back, id, "sim-net: a Unix stream is its peer's peer");
                }
            }
            UnixKind::Dgram { rx, .. } => {
                assert!(
                    rx.len() <= UNIX_MAX_DGRAM_QLEN + 1,
                    "sim-net: a Unix datagram queue holds at most UNIX_MAX_DGRAM_QLEN + 1"
                );
            }
        }
        if let Some(name) = &s.name {
            assert_eq!(
                self.unix.names.get(&(s.host, name.clone())),
                Some(&id),
                "sim-net: a bound Unix socket holds its name in its host's namespace"
            );
        }
    }

    /// Every name is held by an open socket of its host, which knows it.
    pub(crate) fn unix_check_names(&self) {
        for ((host, name), &id) in &self.unix.names {
            let s = self
                .unix(id)
                .expect("sim-net: a name is held by an open Unix socket");
            assert_eq!(s.host, *host, "sim-net: a name is its host's");
            assert_eq!(
                s.name.as_ref(),
                Some(name),
                "sim-net: a socket knows its name"
            );
        }
    }

    // ----- names ------------------------------------------------------------

    /// Binds `sock` to `addr` in its host's namespace. A path address
    /// comes with `file`, the inode of the socket file the caller made for
    /// it on the host's disk (where a name in use was refused); an
    /// abstract one without. The unnamed address autobinds an abstract
    /// name (a bound socket keeps its name). A socket binds once
    /// (`EINVAL`); an abstract name an open socket holds is `EADDRINUSE`.
    pub fn unix_bind(
        &mut self,
        sock: SocketId,
        addr: UnixAddr,
        file: Option<u64>,
    ) -> io::Result<()> {
        let s = self.unix(sock)?;
        let host = s.host;
        let bound = s.name.is_some();
        let name = UnixName::of(&addr, file);
        if bound {
            // Linux's autobind leaves a bound socket as it is.
            return if name.is_none() {
                Ok(())
            } else {
                Net::einval()
            };
        }
        let (addr, name) = match name {
            Some(name) => (addr, name),
            None => self.unix_autobind(host),
        };
        self.unix_check_free(host, &name)?;
        self.unix.names.insert((host, name.clone()), sock);
        let s = self.unix_mut(sock)?;
        s.name = Some(name);
        s.local = addr;
        Ok(())
    }

    /// `EADDRINUSE` if an open socket of `host` holds `name`.
    pub fn unix_check_free(&self, host: HostId, name: &UnixName) -> io::Result<()> {
        match self.unix.names.contains_key(&(host, name.clone())) {
            true => Err(err(EADDRINUSE)),
            false => Ok(()),
        }
    }

    /// Linux's autobind: an abstract name of five hex digits, the next one
    /// free on `host`.
    fn unix_autobind(&mut self, host: HostId) -> (UnixAddr, UnixName) {
        loop {
            self.unix.autobind += 1;
            let name = format!("{:05x}", self.unix.autobind).into_bytes();
            let key = UnixName::Abstract(name.clone());
            if self.unix_check_free(host, &key).is_ok() {
                return (UnixAddr::Abstract(name), key);
            }
        }
    }

    /// The open socket holding `name` on `host`: `ECONNREFUSED` if none
    /// (a socket file whose socket closed, or that none holds any more).
    fn unix_lookup(&self, host: HostId, name: &UnixName) -> io::Result<SocketId> {
        match self.unix.names.get(&(host, name.clone())) {
            Some(&id) => Ok(id),
            None => Err(err(ECONNREFUSED)),
        }
    }

    /// The socket's own address.
    pub fn unix_local_addr(&self, sock: SocketId) -> io::Result<UnixAddr> {
        Ok(self.unix(sock)?.local.clone())
    }

    /// The address of a stream's peer, or of a datagram socket's
    /// connected peer.
    pub fn unix_peer_addr(&self, sock: SocketId) -> io::Result<UnixAddr> {
        match &self.unix(sock)?.kind {
            UnixKind::Dgram {
                peer: Some((_, a)), ..
            } => Ok(a.clone()),
            UnixKind::Stream { peer_addr, .. } => Ok(peer_addr.clone()),
            _ => Err(err(ENOTCONN)),
        }
    }

    /// Takes the pending error (`SO_ERROR`).
    pub fn unix_take_error(&mut self, sock: SocketId) -> io::Result<Option<io::Error>> {
        Ok(self.unix_mut(sock)?.error.take().map(err))
    }

    // ----- readiness and shutdown -------------------------------------------

    /// What `readable()` / `writable()` / `ready()` see. A closed socket is
    /// ready every way (every operation fails at once). A datagram socket
    /// connected to a full receiver is not writable, and joins the
    /// receiver's waiting senders (its writers are notified when there is
    /// room), as Linux's `unix_dgram_poll` does.
    pub fn unix_readiness(&mut self, sock: SocketId) -> Readiness {
        let Ok(s) = self.unix(sock) else {
            return Readiness::CLOSED;
        };
        let mut r = Readiness {
            read_closed: s.shut & RCV != 0,
            write_closed: s.shut & SEND != 0,
            error: s.error.is_some(),
            ..Readiness::default()
        };
        r.readable = r.read_closed || r.error;
        r.writable = r.write_closed;
        let mut full_peer = None;
        match &s.kind {
            UnixKind::Listener { backlog } => r.readable |= !backlog.is_empty(),
            UnixKind::Stream {
                rx, peer, blocked, ..
            } => {
                r.readable |= !rx.is_empty();
                r.writable |= match self.unix(*peer) {
                    // Tokio's readiness: writable until a write found no
                    // room, then from the write-space signal on.
                    Ok(p) => match &p.kind {
                        UnixKind::Stream { rx, .. } => {
                            p.shut & RCV != 0 || !blocked || write_space(rx.len())
                        }
                        _ => false,
                    },
                    Err(_) => true,
                };
            }
            UnixKind::Dgram { rx, peer, .. } => {
                r.readable |= !rx.is_empty();
                match peer
                    .as_ref()
                    .map(|(p, _)| (*p, self.unix(*p).map(|s| &s.kind)))
                {
                    Some((p, Ok(UnixKind::Dgram { rx, .. }))) if rx.len() > UNIX_MAX_DGRAM_QLEN => {
                        full_peer = Some(p);
                    }
                    _ => r.writable = true,
                }
            }
        }
        if let Some(p) = full_peer {
            self.unix_wait_for_room(p, sock);
        }
        r
    }

    /// `sender` waits for room in `receiver`'s queue.
    fn unix_wait_for_room(&mut self, receiver: SocketId, sender: SocketId) {
        if let Ok(UnixKind::Dgram { peer_wait, .. }) = self.unix_mut(receiver).map(|s| &mut s.kind)
        {
            if !peer_wait.contains(&sender) {
                peer_wait.push(sender);
            }
        }
    }

    /// Shuts down reading, writing or both; a stream's peer sees the
    /// mirror image (its writes fail, its reads end).
    pub fn unix_shutdown(
        &mut self,
        sock: SocketId,
        how: std::net::Shutdown,
        now: u64,
    ) -> io::Result<()> {
        let mask = match how {
            std::net::Shutdown::Read => RCV,
            std::net::Shutdown::Write => SEND,
            std::net::Shutdown::Both => RCV | SEND,
        };
        let s = self.unix_mut(sock)?;
        s.shut |= mask;
        let peer = match &s.kind {
            UnixKind::Stream { peer, .. } => Some(*peer),
            _ => None,
        };
        self.unix_notify_all(sock, now);
        if let Some(p) = peer {
            if let Ok(p_sock) = self.unix_mut(p) {
                // The peer's directions mirror ours.
                p_sock.shut |= (mask & RCV) << 1 | (mask & SEND) >> 1;
                self.unix_notify_all(p, now);
            }
        }
        Ok(())
    }

    // ----- close ------------------------------------------------------------

    /// Closes `sock`, as the last `close(2)` of its descriptor. `embryo`: a
    /// connection closed before it was accepted.
    pub(crate) fn unix_close(&mut self, sock: SocketId, embryo: bool, now: u64) {
        if self.unix(sock).is_err() {
            return;
        }
        self.unix_notify_all(sock, now);
        let Some(Sock::Unix(s)) = self.remove_sock(sock) else {
            unreachable!("a Unix socket was found above")
        };
        if let Some(name) = s.name {
            // The name is free again; a socket file stays on the disk,
            // refusing connects, until it is unlinked.
            let held = self.unix.names.remove(&(s.host, name));
            assert_eq!(held, Some(sock), "sim-net: a socket held its name");
        }
        match s.kind {
            UnixKind::Listener { backlog } => {
                for s in backlog {
                    self.unix_close(s, true, now);
                }
            }
            UnixKind::Stream { peer, rx, .. } => {
                if let Ok(p) = self.unix_mut(peer) {
                    p.shut = RCV | SEND;
                    if !rx.is_empty() || embryo {
                        p.error = Some(ECONNRESET);
                    }
                    self.unix_notify_all(peer, now);
                }
            }
            UnixKind::Dgram { .. } => {}
        }
    }

    /// The host's process died: the kernel closes every Unix socket made
    /// on it, in the order they were made, wherever their handles are.
    pub(crate) fn unix_close_host(&mut self, host: HostId, now: u64) {
        let mut socks: Vec<(u64, SocketId)> = self
            .host(host)
            .sockets
            .iter()
            .filter_map(|&id| self.unix(id).ok().map(|s| (s.seq, id)))
            .collect();
        socks.sort_unstable();
        for (_, id) in socks {
            self.unix_close(id, false, now);
        }
    }
}
