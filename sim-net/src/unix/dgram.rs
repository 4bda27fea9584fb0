//! Unix datagram sockets: boundaries kept, a receiver queue of at most
//! [`UNIX_MAX_DGRAM_QLEN`]` + 1` datagrams, senders that wait for room.

use super::*;

impl Net {
    /// An unbound datagram socket on `host`.
    pub fn unix_datagram(&mut self, host: HostId) -> SocketId {
        self.unix_insert(
            host,
            UnixAddr::Unnamed,
            UnixKind::Dgram {
                peer: None,
                rx: VecDeque::new(),
                peer_wait: Vec::new(),
            },
        )
    }

    /// Two datagram sockets on `host` connected to each other, both
    /// unnamed (`UnixDatagram::pair`).
    pub fn unix_datagram_pair(&mut self, host: HostId) -> (SocketId, SocketId) {
        let (a, b) = (self.unix_datagram(host), self.unix_datagram(host));
        for (me, other) in [(a, b), (b, a)] {
            if let Ok(UnixKind::Dgram { peer, .. }) = self.unix_mut(me).map(|s| &mut s.kind) {
                *peer = Some((other, UnixAddr::Unnamed));
            }
        }
        (a, b)
    }

    /// Connects a datagram socket to the one holding `to`: sends without
    /// an address go there. A socket connected elsewhere refuses it
    /// (`EPERM`), as it refuses any datagram not from its peer.
    pub fn unix_datagram_connect(&mut self, sock: SocketId, to: &UnixName) -> io::Result<()> {
        let host = self.unix(sock)?.host;
        let target = self.unix_lookup(host, to)?;
        let t = self.unix(target)?;
        let UnixKind::Dgram { peer, .. } = &t.kind else {
            return Err(err(EPROTOTYPE));
        };
        if peer.as_ref().is_some_and(|(p, _)| *p != sock) {
            return Err(err(EPERM));
        }
        let to = t.local.clone();
        if let UnixKind::Dgram { peer, .. } = &mut self.unix_mut(sock)?.kind {
            *peer = Some((target, to));
        }
        Ok(())
    }

    /// Sends a datagram to the socket holding `to` (`None`: the connected
    /// peer). Pending while the receiver's queue is full: the sender then
    /// waits among the receiver's waiting senders (its writers are
    /// notified when there is room).
    pub fn unix_send(
        &mut self,
        sock: SocketId,
        data: &[u8],
        to: Option<&UnixName>,
        now: u64,
    ) -> Progress<usize> {
        let s = match self.unix(sock) {
            Ok(s) => s,
            Err(e) => return Progress::Ready(Err(e)),
        };
        if data.len() > UNIX_SNDBUF - 32 {
            return Progress::err(EMSGSIZE);
        }
        if s.shut & SEND != 0 {
            return Progress::err(EPIPE);
        }
        let from = s.local.clone();
        let target = match to {
            Some(name) => match self.unix_lookup(s.host, name) {
                Ok(t) => t,
                Err(e) => return Progress::Ready(Err(e)),
            },
            None => match &s.kind {
                UnixKind::Dgram {
                    peer: Some((p, _)), ..
                } => {
                    let p = *p;
                    if self.unix(p).is_err() {
                        // The peer is gone: refused once, then not connected.
                        if let Ok(UnixKind::Dgram { peer, .. }) =
                            self.unix_mut(sock).map(|s| &mut s.kind)
                        {
                            *peer = None;
                        }
                        return Progress::err(ECONNREFUSED);
                    }
                    p
                }
                _ => return Progress::err(ENOTCONN),
            },
        };
        let Ok(t) = self.unix_mut(target) else {
            return Progress::err(ECONNREFUSED);
        };
        if t.shut & RCV != 0 {
            return Progress::err(EPIPE);
        }
        let UnixKind::Dgram { peer, rx, .. } = &mut t.kind else {
            return Progress::err(EPROTOTYPE);
        };
        if peer.as_ref().is_some_and(|(p, _)| *p != sock) {
            return Progress::err(EPERM);
        }
        if rx.len() > UNIX_MAX_DGRAM_QLEN {
            self.unix_wait_for_room(target, sock);
            return Progress::Pending { wake_at: None };
        }
        rx.push_back((data.to_vec(), from));
        self.unix_notify(target, Wakes::Readers, now);
        Progress::Ready(Ok(data.len()))
    }

    /// Receives the oldest datagram and its sender's address; a buffer
    /// shorter than the datagram takes its start, the rest is lost. An
    /// empty queue waits, even after `shutdown(Read)` (Linux's
    /// non-blocking `recvmsg` answers `EAGAIN` there; only
    /// `SOCK_SEQPACKET` reads 0).
    pub fn unix_recv(
        &mut self,
        sock: SocketId,
        buf: &mut [u8],
        now: u64,
    ) -> Progress<(usize, UnixAddr)> {
        let s = match self.unix_mut(sock) {
            Ok(s) => s,
            Err(e) => return Progress::Ready(Err(e)),
        };
        let UnixKind::Dgram { rx, .. } = &mut s.kind else {
            return Progress::err(EINVAL);
        };
        match rx.pop_front() {
            Some((d, from)) => {
                let n = d.len().min(buf.len());
                buf[..n].copy_from_slice(&d[..n]);
                self.unix_relay(sock, now);
                Progress::Ready(Ok((n, from)))
            }
            None => Progress::Pending { wake_at: None },
        }
    }
}
