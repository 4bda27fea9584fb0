//! Unix listeners and streams: a connection is two byte buffers of
//! [`UNIX_SNDBUF`] bytes, made at once by `connect` and queued on the
//! listener until accepted.

use super::*;

impl Net {
    /// A listener bound to `addr` on `host` (a path with `file`, its socket
    /// file's inode; the unnamed address: an autobound abstract name), as
    /// [`Net::unix_bind`].
    pub fn unix_listen(
        &mut self,
        host: HostId,
        addr: UnixAddr,
        file: Option<u64>,
    ) -> io::Result<SocketId> {
        let id = self.unix_insert(
            host,
            UnixAddr::Unnamed,
            UnixKind::Listener {
                backlog: VecDeque::new(),
            },
        );
        if let Err(e) = self.unix_bind(id, addr, file) {
            self.remove_sock(id);
            return Err(e);
        }
        Ok(id)
    }

    /// Two connected streams on `host`, both unnamed (`UnixStream::pair`).
    pub fn unix_pair(&mut self, host: HostId) -> (SocketId, SocketId) {
        self.unix_stream_pair(host, UnixAddr::Unnamed, UnixAddr::Unnamed)
    }

    /// Two connected streams with these local addresses, each the other's
    /// peer address.
    fn unix_stream_pair(
        &mut self,
        host: HostId,
        a_local: UnixAddr,
        b_local: UnixAddr,
    ) -> (SocketId, SocketId) {
        let stream = |peer, peer_addr| UnixKind::Stream {
            peer,
            peer_addr,
            peer_host: host,
            rx: VecDeque::new(),
            blocked: false,
        };
        // `a`'s peer is set once `b` has an id.
        let a = self.unix_insert(
            host,
            a_local.clone(),
            stream(SocketId::NONE, b_local.clone()),
        );
        let b = self.unix_insert(host, b_local, stream(a, a_local));
        if let Ok(UnixKind::Stream { peer, .. }) = self.unix_mut(a).map(|s| &mut s.kind) {
            *peer = b;
        }
        (a, b)
    }

    /// Connects a stream of `host` to the listener holding `to`: done at
    /// once (the server end waits in the listener's backlog until
    /// accepted). Returns the client end, unnamed.
    pub fn unix_connect(&mut self, host: HostId, to: &UnixName, now: u64) -> io::Result<SocketId> {
        let target = self.unix_lookup(host, to)?;
        let l = self.unix(target)?;
        let UnixKind::Listener { backlog } = &l.kind else {
            return Err(err(match l.kind {
                UnixKind::Dgram { .. } => EPROTOTYPE,
                _ => ECONNREFUSED,
            }));
        };
        if backlog.len() > UNIX_BACKLOG {
            return Err(err(EAGAIN));
        }
        // The accepted end takes the listener's address; the client is
        // unnamed.
        let listener_addr = l.local.clone();
        let (client, server) = self.unix_stream_pair(host, UnixAddr::Unnamed, listener_addr);
        if let Ok(UnixKind::Listener { backlog }) = self.unix_mut(target).map(|s| &mut s.kind) {
            backlog.push_back(server);
        }
        self.unix_notify(target, Wakes::Readers, now);
        Ok(client)
    }

    /// Names a connected client (bound before it connected, `file` as for
    /// [`Net::unix_bind`]): its local address, and its peer's peer address.
    pub fn unix_bind_client(
        &mut self,
        sock: SocketId,
        addr: UnixAddr,
        file: Option<u64>,
    ) -> io::Result<()> {
        self.unix_bind(sock, addr, file)?;
        let local = self.unix(sock)?.local.clone();
        let UnixKind::Stream { peer, .. } = self.unix(sock)?.kind else {
            return Ok(());
        };
        if let Ok(UnixKind::Stream { peer_addr, .. }) = self.unix_mut(peer).map(|s| &mut s.kind) {
            *peer_addr = local;
        }
        Ok(())
    }

    /// Takes the oldest connection of the listener's backlog, with its
    /// peer's address.
    pub fn unix_accept(&mut self, sock: SocketId) -> Progress<(SocketId, UnixAddr)> {
        let l = match self.unix_mut(sock) {
            Ok(l) => l,
            Err(e) => return Progress::Ready(Err(e)),
        };
        let UnixKind::Listener { backlog } = &mut l.kind else {
            return Progress::err(EINVAL);
        };
        match backlog.pop_front() {
            Some(s) => {
                let from = match self.unix(s).map(|s| &s.kind) {
                    Ok(UnixKind::Stream { peer_addr, .. }) => peer_addr.clone(),
                    _ => UnixAddr::Unnamed,
                };
                Progress::Ready(Ok((s, from)))
            }
            None => Progress::Pending { wake_at: None },
        }
    }

    /// The host whose process made the stream's connection (`SO_PEERCRED`).
    pub fn unix_peer_host(&self, sock: SocketId) -> io::Result<HostId> {
        match &self.unix(sock)?.kind {
            UnixKind::Stream { peer_host, .. } => Ok(*peer_host),
            _ => Err(err(ENOTCONN)),
        }
    }

    /// Writes what fits of `data` into the peer's buffer.
    pub fn unix_write(&mut self, sock: SocketId, data: &[u8], now: u64) -> Progress<usize> {
        let s = match self.unix(sock) {
            Ok(s) => s,
            Err(e) => return Progress::Ready(Err(e)),
        };
        let UnixKind::Stream { peer, blocked, .. } = s.kind else {
            return Progress::err(ENOTCONN);
        };
        if s.shut & SEND != 0 {
            return Progress::err(EPIPE);
        }
        let Ok(p) = self.unix_mut(peer) else {
            return Progress::err(EPIPE);
        };
        if p.shut & RCV != 0 {
            return Progress::err(EPIPE);
        }
        let UnixKind::Stream { rx, .. } = &mut p.kind else {
            return Progress::err(EPIPE);
        };
        if data.is_empty() {
            return Progress::Ready(Ok(0));
        }
        let queued = rx.len();
        assert!(
            queued <= UNIX_SNDBUF,
            "sim-net: a Unix stream buffer holds {queued} bytes, more than UNIX_SNDBUF"
        );
        if blocked && !write_space(queued) {
            return Progress::Pending { wake_at: None };
        }
        let n = (UNIX_SNDBUF - queued).min(data.len());
        rx.extend(&data[..n]);
        if let Ok(UnixKind::Stream { blocked, .. }) = self.unix_mut(sock).map(|s| &mut s.kind) {
            *blocked = n == 0;
        }
        if n == 0 {
            return Progress::Pending { wake_at: None };
        }
        self.unix_notify(peer, Wakes::Readers, now);
        Progress::Ready(Ok(n))
    }

    /// Reads what the peer wrote; 0 at the end (the peer closed or shut
    /// its writing down); a pending error (`ECONNRESET`) once, when nothing
    /// is left to read.
    pub fn unix_read(&mut self, sock: SocketId, buf: &mut [u8], now: u64) -> Progress<usize> {
        let s = match self.unix_mut(sock) {
            Ok(s) => s,
            Err(e) => return Progress::Ready(Err(e)),
        };
        let UnixKind::Stream { rx, peer, .. } = &mut s.kind else {
            return Progress::err(ENOTCONN);
        };
        let peer = *peer;
        if buf.is_empty() {
            return Progress::Ready(Ok(0));
        }
        if !rx.is_empty() {
            let n = buf.len().min(rx.len());
            for (d, b) in buf.iter_mut().zip(rx.drain(..n)) {
                *d = b;
            }
            // A blocked writer hears of the room only once there is a
            // quarter's worth (Linux's `unix_write_space`).
            if write_space(rx.len()) {
                self.unix_notify(peer, Wakes::Writers, now);
            }
            return Progress::Ready(Ok(n));
        }
        if let Some(e) = s.error.take() {
            return Progress::err(e);
        }
        if s.shut & RCV != 0 {
            return Progress::Ready(Ok(0));
        }
        Progress::Pending { wake_at: None }
    }
}
