//! The model of the simulation's Unix sockets: the socket table and each
//! node's namespace. Synchronous, like `sim_net`: no waker is woken here,
//! they are collected for the binding (`super`) to wake once the core
//! borrow is released.

use super::*;
use std::collections::{BTreeMap, VecDeque};

/// A name in a node's namespace.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Key {
    Path(Vec<u8>),
    Abstract(Vec<u8>),
}

pub(super) fn key_of(addr: &StdSocketAddr) -> Option<Key> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        #[cfg(target_os = "android")]
        use std::os::android::net::SocketAddrExt;
        #[cfg(target_os = "linux")]
        use std::os::linux::net::SocketAddrExt;
        if let Some(name) = addr.as_abstract_name() {
            return Some(Key::Abstract(name.to_vec()));
        }
    }
    let path = addr.as_pathname()?;
    let bytes = path.as_os_str().as_bytes();
    Some(Key::Path(if bytes.starts_with(b"/") {
        bytes.to_vec()
    } else {
        // The simulated working directory is `/`.
        let mut v = b"/".to_vec();
        v.extend_from_slice(bytes);
        v
    }))
}

/// Whether a stream whose peer holds `queued` unread bytes has write space
/// again after blocking: Linux's `unix_writable` (a quarter of the send
/// buffer).
pub(super) fn write_space(queued: usize) -> bool {
    queued <= SNDBUF / 4
}

/// Which of a socket's waiter lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dir {
    Read = 0,
    Write = 1,
}

pub(super) const RCV: u8 = 1;
pub(super) const SEND: u8 = 2;

pub(super) enum Kind {
    Listener {
        backlog: VecDeque<u32>,
    },
    Stream {
        /// The other end (its slot is empty once it closed).
        peer: u32,
        peer_addr: StdSocketAddr,
        /// The peer's credentials, taken when the connection was made.
        peer_cred: UCred,
        rx: VecDeque<u8>,
        /// A write found no room; cleared once the peer's buffer is down to
        /// a quarter of `SNDBUF`.
        blocked: bool,
    },
    Dgram {
        peer: Option<(u32, StdSocketAddr)>,
        rx: VecDeque<(Vec<u8>, StdSocketAddr)>,
    },
}

pub(super) struct Sock {
    pub(super) node: NodeId,
    pub(super) local: StdSocketAddr,
    pub(super) key: Option<Key>,
    /// `RCV`/`SEND` bits, as Linux's `sk_shutdown`.
    pub(super) shut: u8,
    /// The pending error (`SO_ERROR`).
    pub(super) error: Option<i32>,
    pub(super) kind: Kind,
    pub(super) waiters: [Vec<Waker>; 2],
    /// Tokio's cached readiness, by direction: once the socket was seen
    /// ready it stays ready for `readable()`/`writable()` until an
    /// operation in that direction would block (as Tokio's
    /// `ScheduledIo` clears readiness only on `WouldBlock`). An accepted
    /// stream starts assumed readable and writable, as on Tokio.
    pub(super) cached: [bool; 2],
}

/// All Unix sockets of a simulation (in `Core::net`).
#[derive(Default)]
pub(crate) struct Table {
    socks: Vec<Option<Box<Sock>>>,
    /// Per node: name → the socket holding it (`None`: a stale pathname).
    names: BTreeMap<(u32, Key), Option<u32>>,
    /// Autobind's counter (`bind` to the unnamed address).
    autobind: u32,
}

/// The outcome of one step: done, or wait on a socket's list.
pub(super) enum Step<T> {
    Done(io::Result<T>),
    Wait(u32, Dir),
}

impl<T> From<io::Result<T>> for Step<T> {
    fn from(r: io::Result<T>) -> Self {
        Step::Done(r)
    }
}

macro_rules! done_err {
    ($code:expr) => {
        return Step::Done(Err(err($code)))
    };
}

impl Table {
    pub(super) fn sock(&self, id: u32) -> io::Result<&Sock> {
        self.socks
            .get(id as usize)
            .and_then(|s| s.as_deref())
            .ok_or_else(|| err(EBADF))
    }

    pub(super) fn sock_mut(&mut self, id: u32) -> io::Result<&mut Sock> {
        self.socks
            .get_mut(id as usize)
            .and_then(|s| s.as_deref_mut())
            .ok_or_else(|| err(EBADF))
    }

    pub(super) fn alive(&self, id: u32) -> bool {
        self.sock(id).is_ok()
    }

    pub(super) fn wake_all(&mut self, id: u32, wake: &mut Vec<Waker>) {
        if let Ok(s) = self.sock_mut(id) {
            for list in &mut s.waiters {
                wake.append(list);
            }
        }
    }

    pub(super) fn wake_dir(&mut self, id: u32, dir: Dir, wake: &mut Vec<Waker>) {
        if let Ok(s) = self.sock_mut(id) {
            wake.append(&mut s.waiters[dir as usize]);
        }
    }

    /// An operation on `id` in direction `dir` would block: Tokio forgets
    /// the readiness it cached.
    pub(super) fn would_block(&mut self, id: u32, dir: Dir) {
        if let Ok(s) = self.sock_mut(id) {
            s.cached[dir as usize] = false;
        }
    }

    /// `readiness` as Tokio reports it: the model's, plus what was cached
    /// and not yet found to block; what the model reports is cached.
    pub(super) fn cached_readiness(&mut self, id: u32) -> (Ready, u32) {
        let (mut r, write_on) = self.readiness(id);
        if let Ok(s) = self.sock_mut(id) {
            for (dir, bit) in [(Dir::Read, Ready::READABLE), (Dir::Write, Ready::WRITABLE)] {
                let c = &mut s.cached[dir as usize];
                if !(r & bit).is_empty() {
                    *c = true;
                } else if *c {
                    r |= bit;
                }
            }
        }
        (r, write_on)
    }

    pub(super) fn register(&mut self, id: u32, dir: Dir, waker: &Waker) {
        if let Ok(s) = self.sock_mut(id) {
            let list = &mut s.waiters[dir as usize];
            if !list.iter().any(|w| w.will_wake(waker)) {
                list.push(waker.clone());
            }
        }
    }

    pub(super) fn insert(&mut self, node: NodeId, local: StdSocketAddr, kind: Kind) -> u32 {
        let id = u32::try_from(self.socks.len()).expect("fewer than 2^32 Unix sockets");
        self.socks.push(Some(Box::new(Sock {
            node,
            local,
            key: None,
            shut: 0,
            error: None,
            kind,
            waiters: [Vec::new(), Vec::new()],
            cached: [false; 2],
        })));
        id
    }

    /// Binds `id` to `addr` in its node's namespace.
    pub(super) fn bind(&mut self, id: u32, addr: StdSocketAddr) -> io::Result<()> {
        let node = self.sock(id)?.node;
        let addr = if addr.is_unnamed() {
            self.autobind_addr()?
        } else {
            addr
        };
        self.check_free(node, &addr)?;
        let Some(key) = key_of(&addr) else {
            return Err(err(EINVAL));
        };
        self.names.insert((node.0, key.clone()), Some(id));
        let s = self.sock_mut(id)?;
        s.key = Some(key);
        s.local = addr;
        Ok(())
    }

    /// `EADDRINUSE` if a live socket of `node` holds `addr`'s name.
    pub(super) fn check_free(&self, node: NodeId, addr: &StdSocketAddr) -> io::Result<()> {
        let Some(key) = key_of(addr) else {
            return if addr.is_unnamed() {
                Ok(())
            } else {
                Err(err(EINVAL))
            };
        };
        match self.names.get(&(node.0, key)) {
            Some(Some(_)) => Err(err(EADDRINUSE)),
            _ => Ok(()),
        }
    }

    /// Names the connected client `id` (bound before it connected): its
    /// local address and its peer's `peer_addr`.
    pub(super) fn name_client(&mut self, id: u32, addr: StdSocketAddr) -> io::Result<()> {
        self.bind(id, addr)?;
        let local = self.sock(id)?.local.clone();
        let Kind::Stream { peer, .. } = self.sock(id)?.kind else {
            return Ok(());
        };
        if let Ok(Sock {
            kind: Kind::Stream { peer_addr, .. },
            ..
        }) = self.sock_mut(peer)
        {
            *peer_addr = local;
        }
        Ok(())
    }

    /// Linux's autobind: an abstract name of five hex digits.
    pub(super) fn autobind_addr(&mut self) -> io::Result<StdSocketAddr> {
        self.autobind += 1;
        let name = format!("{:05x}", self.autobind);
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let mut path = vec![0u8];
            path.extend_from_slice(name.as_bytes());
            addr_of(Path::new(std::ffi::OsStr::from_bytes(&path)))
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            drop(name);
            Err(err(EINVAL))
        }
    }

    /// The socket holding `addr`'s name on `node`.
    pub(super) fn lookup(&self, node: NodeId, addr: &StdSocketAddr) -> io::Result<u32> {
        let key = key_of(addr).ok_or_else(|| err(EINVAL))?;
        let abstract_name = matches!(key, Key::Abstract(_));
        match self.names.get(&(node.0, key)) {
            Some(Some(id)) => Ok(*id),
            Some(None) => Err(err(ECONNREFUSED)),
            None if abstract_name => Err(err(ECONNREFUSED)),
            None => Err(err(ENOENT)),
        }
    }

    /// Closes `id`, as the last `close(2)` of its descriptor.
    /// `embryo`: a connection closed before it was accepted.
    pub(super) fn close(&mut self, id: u32, embryo: bool, wake: &mut Vec<Waker>) {
        let Some(mut sock) = self.socks.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        for list in &mut sock.waiters {
            wake.append(list);
        }
        if let Some(key) = sock.key.take() {
            let name = (sock.node.0, key);
            if self.names.get(&name) == Some(&Some(id)) {
                if matches!(name.1, Key::Path(_)) {
                    // The socket file stays behind.
                    self.names.insert(name, None);
                } else {
                    self.names.remove(&name);
                }
            }
        }
        match sock.kind {
            Kind::Listener { backlog } => {
                for s in backlog {
                    self.close(s, true, wake);
                }
            }
            Kind::Stream { peer, rx, .. } => {
                if let Ok(p) = self.sock_mut(peer) {
                    p.shut = RCV | SEND;
                    if !rx.is_empty() || embryo {
                        p.error = Some(ECONNRESET);
                    }
                    self.wake_all(peer, wake);
                }
            }
            Kind::Dgram { .. } => {}
        }
    }

    /// Closes every socket made on `node`.
    pub(super) fn close_node(&mut self, node: NodeId, wake: &mut Vec<Waker>) {
        for id in 0..self.socks.len() {
            if self.socks[id].as_ref().is_some_and(|s| s.node == node) {
                self.close(id as u32, false, wake);
            }
        }
    }

    // ----- streams ---------------------------------------------------------

    pub(super) fn listen(&mut self, node: NodeId, addr: StdSocketAddr) -> io::Result<u32> {
        let id = self.insert(
            node,
            unnamed(),
            Kind::Listener {
                backlog: VecDeque::new(),
            },
        );
        if let Err(e) = self.bind(id, addr) {
            self.socks[id as usize] = None;
            return Err(e);
        }
        Ok(id)
    }

    pub(super) fn stream_pair(
        &mut self,
        node: NodeId,
        a_addr: StdSocketAddr,
        b_addr: StdSocketAddr,
    ) -> (u32, u32) {
        let a = self.socks.len() as u32;
        let b = a + 1;
        let cred = cred_of(node);
        let a_local = a_addr.clone();
        let b_local = b_addr.clone();
        self.insert(
            node,
            a_local,
            Kind::Stream {
                peer: b,
                peer_addr: b_addr,
                peer_cred: cred,
                rx: VecDeque::new(),
                blocked: false,
            },
        );
        self.insert(
            node,
            b_local,
            Kind::Stream {
                peer: a,
                peer_addr: a_addr,
                peer_cred: cred,
                rx: VecDeque::new(),
                blocked: false,
            },
        );
        (a, b)
    }

    pub(super) fn connect(
        &mut self,
        node: NodeId,
        addr: &StdSocketAddr,
        wake: &mut Vec<Waker>,
    ) -> io::Result<u32> {
        let target = self.lookup(node, addr)?;
        let l = self.sock(target)?;
        let Kind::Listener { backlog } = &l.kind else {
            return Err(err(match l.kind {
                Kind::Dgram { .. } => EPROTOTYPE,
                _ => ECONNREFUSED,
            }));
        };
        if backlog.len() > BACKLOG {
            return Err(err(EAGAIN));
        }
        let listener_addr = l.local.clone();
        // The accepted end takes the listener's address; the client is
        // unnamed.
        let (client, server) = self.stream_pair(node, unnamed(), listener_addr);
        if let Ok(Sock {
            kind: Kind::Listener { backlog },
            ..
        }) = self.sock_mut(target)
        {
            backlog.push_back(server);
        }
        self.wake_dir(target, Dir::Read, wake);
        Ok(client)
    }

    pub(super) fn accept(&mut self, id: u32) -> Step<(u32, StdSocketAddr)> {
        let l = match self.sock_mut(id) {
            Ok(l) => l,
            Err(e) => return Step::Done(Err(e)),
        };
        let Kind::Listener { backlog } = &mut l.kind else {
            done_err!(EINVAL)
        };
        match backlog.pop_front() {
            Some(s) => {
                let from = match &self.sock(s).map(|s| &s.kind) {
                    Ok(Kind::Stream { peer_addr, .. }) => peer_addr.clone(),
                    _ => unnamed(),
                };
                if let Ok(a) = self.sock_mut(s) {
                    a.cached = [true; 2];
                }
                Step::Done(Ok((s, from)))
            }
            None => Step::Wait(id, Dir::Read),
        }
    }

    pub(super) fn stream_write(
        &mut self,
        id: u32,
        data: &[u8],
        wake: &mut Vec<Waker>,
    ) -> Step<usize> {
        let s = match self.sock(id) {
            Ok(s) => s,
            Err(e) => return Step::Done(Err(e)),
        };
        let Kind::Stream { peer, blocked, .. } = s.kind else {
            done_err!(ENOTCONN)
        };
        if s.shut & SEND != 0 {
            done_err!(EPIPE)
        }
        let Ok(p) = self.sock_mut(peer) else {
            done_err!(EPIPE)
        };
        if p.shut & RCV != 0 {
            done_err!(EPIPE)
        }
        let Kind::Stream { rx, .. } = &mut p.kind else {
            done_err!(EPIPE)
        };
        if data.is_empty() {
            return Step::Done(Ok(0));
        }
        let queued = rx.len();
        assert!(
            queued <= SNDBUF,
            "a stream buffer holds {queued} bytes, more than SNDBUF"
        );
        if blocked && !write_space(queued) {
            return Step::Wait(id, Dir::Write);
        }
        let room = SNDBUF - queued;
        let n = room.min(data.len());
        if n > 0 {
            rx.extend(&data[..n]);
        }
        let became_blocked = n == 0;
        if let Ok(Sock {
            kind: Kind::Stream { blocked, .. },
            ..
        }) = self.sock_mut(id)
        {
            *blocked = became_blocked;
        }
        if became_blocked {
            return Step::Wait(id, Dir::Write);
        }
        self.wake_dir(peer, Dir::Read, wake);
        Step::Done(Ok(n))
    }

    pub(super) fn stream_read(
        &mut self,
        id: u32,
        buf: &mut [u8],
        wake: &mut Vec<Waker>,
    ) -> Step<usize> {
        let s = match self.sock_mut(id) {
            Ok(s) => s,
            Err(e) => return Step::Done(Err(e)),
        };
        let Kind::Stream { rx, peer, .. } = &mut s.kind else {
            done_err!(ENOTCONN)
        };
        let peer = *peer;
        if buf.is_empty() {
            return Step::Done(Ok(0));
        }
        if !rx.is_empty() {
            let n = buf.len().min(rx.len());
            for (d, b) in buf.iter_mut().zip(rx.drain(..n)) {
                *d = b;
            }
            // A blocked writer hears of the room only once there is a
            // quarter's worth (Linux's `unix_write_space`).
            if write_space(rx.len()) {
                self.wake_dir(peer, Dir::Write, wake);
            }
            return Step::Done(Ok(n));
        }
        if let Some(e) = s.error.take() {
            done_err!(e)
        }
        if s.shut & RCV != 0 {
            return Step::Done(Ok(0));
        }
        Step::Wait(id, Dir::Read)
    }

    pub(super) fn shutdown(
        &mut self,
        id: u32,
        how: std::net::Shutdown,
        wake: &mut Vec<Waker>,
    ) -> io::Result<()> {
        let mask = match how {
            std::net::Shutdown::Read => RCV,
            std::net::Shutdown::Write => SEND,
            std::net::Shutdown::Both => RCV | SEND,
        };
        let s = self.sock_mut(id)?;
        s.shut |= mask;
        let peer = match &s.kind {
            Kind::Stream { peer, .. } => Some(*peer),
            _ => None,
        };
        self.wake_all(id, wake);
        if let Some(p) = peer {
            if let Ok(p_sock) = self.sock_mut(p) {
                // The peer's directions mirror ours.
                let flipped = (mask & RCV) << 1 | (mask & SEND) >> 1;
                p_sock.shut |= flipped;
                self.wake_all(p, wake);
            }
        }
        Ok(())
    }

    /// (ready, the socket whose write list a writer waits on).
    pub(super) fn readiness(&self, id: u32) -> (Ready, u32) {
        let Ok(s) = self.sock(id) else {
            // A closed descriptor: every operation fails at once.
            return (
                Ready::READABLE | Ready::WRITABLE | Ready::READ_CLOSED | Ready::WRITE_CLOSED,
                id,
            );
        };
        let mut r = Ready::EMPTY;
        let mut write_on = id;
        if s.shut & RCV != 0 {
            r |= Ready::READABLE | Ready::READ_CLOSED;
        }
        if s.shut & SEND != 0 {
            r |= Ready::WRITABLE | Ready::WRITE_CLOSED;
        }
        if s.error.is_some() {
            r |= Ready::READABLE;
        }
        match &s.kind {
            Kind::Listener { backlog } => {
                if !backlog.is_empty() {
                    r |= Ready::READABLE;
                }
            }
            Kind::Stream {
                rx, peer, blocked, ..
            } => {
                if !rx.is_empty() {
                    r |= Ready::READABLE;
                }
                match self.sock(*peer) {
                    Ok(p) => match &p.kind {
                        // Tokio's readiness: writable until a write found
                        // no room, then from the write-space signal on.
                        Kind::Stream { rx, .. }
                            if (!blocked || write_space(rx.len())) && p.shut & RCV == 0 =>
                        {
                            r |= Ready::WRITABLE;
                        }
                        Kind::Stream { .. } if p.shut & RCV != 0 => r |= Ready::WRITABLE,
                        _ => {}
                    },
                    Err(_) => r |= Ready::WRITABLE,
                }
            }
            Kind::Dgram { rx, peer } => {
                if !rx.is_empty() {
                    r |= Ready::READABLE;
                }
                match peer.as_ref().map(|(p, _)| (*p, self.sock(*p))) {
                    Some((
                        p,
                        Ok(Sock {
                            kind: Kind::Dgram { rx, .. },
                            ..
                        }),
                    )) if rx.len() > MAX_DGRAM_QLEN => write_on = p,
                    _ => r |= Ready::WRITABLE,
                }
            }
        }
        (r, write_on)
    }

    // ----- datagrams -------------------------------------------------------

    pub(super) fn dgram(&mut self, node: NodeId) -> u32 {
        self.insert(
            node,
            unnamed(),
            Kind::Dgram {
                peer: None,
                rx: VecDeque::new(),
            },
        )
    }

    pub(super) fn dgram_connect(&mut self, id: u32, addr: &StdSocketAddr) -> io::Result<()> {
        let node = self.sock(id)?.node;
        let target = self.lookup(node, addr)?;
        let t = self.sock(target)?;
        let Kind::Dgram { peer, .. } = &t.kind else {
            return Err(err(EPROTOTYPE));
        };
        if peer.as_ref().is_some_and(|(p, _)| *p != id) {
            return Err(err(EPERM));
        }
        let to = t.local.clone();
        if let Kind::Dgram { peer, .. } = &mut self.sock_mut(id)?.kind {
            *peer = Some((target, to));
        }
        Ok(())
    }

    pub(super) fn dgram_peer_addr(&self, id: u32) -> io::Result<StdSocketAddr> {
        match &self.sock(id)?.kind {
            Kind::Dgram {
                peer: Some((_, a)), ..
            } => Ok(a.clone()),
            Kind::Stream { peer_addr, .. } => Ok(peer_addr.clone()),
            _ => Err(err(ENOTCONN)),
        }
    }

    /// A datagram from `id` to `target` (`None`: its connected peer).
    pub(super) fn dgram_send(
        &mut self,
        id: u32,
        data: &[u8],
        target: Option<&StdSocketAddr>,
        wake: &mut Vec<Waker>,
    ) -> Step<usize> {
        let s = match self.sock(id) {
            Ok(s) => s,
            Err(e) => return Step::Done(Err(e)),
        };
        if data.len() > SNDBUF - 32 {
            done_err!(EMSGSIZE)
        }
        if s.shut & SEND != 0 {
            done_err!(EPIPE)
        }
        let from = s.local.clone();
        let to = match target {
            Some(addr) => match self.lookup(s.node, addr) {
                Ok(t) => t,
                Err(e) => return Step::Done(Err(e)),
            },
            None => match &s.kind {
                Kind::Dgram {
                    peer: Some((p, _)), ..
                } => {
                    let p = *p;
                    if !self.alive(p) {
                        // The peer is gone: refused once, then not connected.
                        if let Ok(Sock {
                            kind: Kind::Dgram { peer, .. },
                            ..
                        }) = self.sock_mut(id)
                        {
                            *peer = None;
                        }
                        done_err!(ECONNREFUSED)
                    }
                    p
                }
                _ => done_err!(ENOTCONN),
            },
        };
        let Ok(t) = self.sock_mut(to) else {
            done_err!(ECONNREFUSED)
        };
        if t.shut & RCV != 0 {
            done_err!(EPIPE)
        }
        let Kind::Dgram { peer, rx } = &mut t.kind else {
            done_err!(EPROTOTYPE)
        };
        if peer.as_ref().is_some_and(|(p, _)| *p != id) {
            done_err!(EPERM)
        }
        if rx.len() > MAX_DGRAM_QLEN {
            return Step::Wait(to, Dir::Write);
        }
        rx.push_back((data.to_vec(), from));
        self.wake_dir(to, Dir::Read, wake);
        Step::Done(Ok(data.len()))
    }

    pub(super) fn dgram_recv(
        &mut self,
        id: u32,
        buf: &mut [u8],
        wake: &mut Vec<Waker>,
    ) -> Step<(usize, StdSocketAddr)> {
        let s = match self.sock_mut(id) {
            Ok(s) => s,
            Err(e) => return Step::Done(Err(e)),
        };
        let Kind::Dgram { rx, .. } = &mut s.kind else {
            done_err!(EINVAL)
        };
        match rx.pop_front() {
            Some((d, from)) => {
                // The rest of a datagram longer than the buffer is lost.
                let n = d.len().min(buf.len());
                buf[..n].copy_from_slice(&d[..n]);
                self.wake_dir(id, Dir::Write, wake);
                Step::Done(Ok((n, from)))
            }
            // Shut for reading: Linux answers `EAGAIN`, not the end (only
            // `SOCK_SEQPACKET` reads 0), while readiness says read-closed.
            None => Step::Wait(id, Dir::Read),
        }
    }
}
