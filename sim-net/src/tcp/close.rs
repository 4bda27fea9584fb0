//! TCP teardown: close and abort (FIN or RST), resets, and the deaths
//! (kill, crash) and revival of a host.

use super::*;

impl Net {
    // ----- close ------------------------------------------------------------

    /// Closes a socket as `close(2)` does (the handle is gone).
    pub fn close(&mut self, sock: SocketId, now: u64) {
        let Some(s) = self.sock(sock) else { return };
        let host = s.host();
        match s {
            Sock::Unix(_) => return self.unix_close(sock, false, now),
            Sock::TcpBound { addr, .. } => {
                let port = addr.port();
                self.unbind_port(host, Proto::Tcp, port, sock);
            }
            Sock::Connecting(c) => {
                let port = c.local.port();
                self.unbind_port(host, Proto::Tcp, port, sock);
            }
            Sock::Listener(l) => {
                let port = l.addr.port();
                let queued: Vec<u32> = l.queue.values().copied().collect();
                self.unbind_port(host, Proto::Tcp, port, sock);
                for conn in queued {
                    // Never accepted: the kernel resets them.
                    self.close_end(conn, 1, true, now);
                }
            }
            Sock::Stream { conn, end, .. } => {
                let (conn, end) = (*conn, *end);
                let unread = !self.conn(conn).pipes[1 - end].data.is_empty();
                self.close_end(conn, end, unread, now);
                if self.conn(conn).ends[end].owns_port {
                    let port = self.conn(conn).addrs[end].port();
                    self.unbind_port(host, Proto::Tcp, port, sock);
                }
                self.conn_mut(conn).ends[end].sock = None;
                self.gc_conn(conn);
            }
            Sock::Udp(u) => {
                let port = u.local.port();
                self.unbind_port(host, Proto::Udp, port, sock);
            }
        }
        self.remove_sock(sock);
    }

    /// Aborts a stream (`SO_LINGER` of zero, then close): its end sends a
    /// RST instead of a FIN. Call [`Net::close`] after.
    pub fn abort(&mut self, sock: SocketId, now: u64) {
        if let Some((conn, e)) = self.stream(sock) {
            self.close_end(conn, e, true, now);
        }
    }

    /// Closes end `e`: a FIN, or a RST (`rst`) after the bytes it sent
    /// that the peer's receive buffer took (the rest of its send queue is
    /// discarded).
    pub(super) fn close_end(&mut self, conn: u32, e: usize, rst: bool, now: u64) {
        let c = self.conn_mut(conn);
        if c.ends[e].closed || c.ends[e].vanished {
            return;
        }
        c.ends[e].closed = true;
        if rst {
            self.discard_send_queue(conn, e, now);
        }
        let c = self.conn(conn);
        let discarded = c.pipes[1 - e].data.len();
        // The end that closes first waits in TIME_WAIT (2 MSL, 60 s on
        // Linux) on its local address.
        if !rst && c.pipes[1 - e].fin.is_none() {
            let (h, addr) = (c.hosts[e], c.addrs[e]);
            let tw = &mut self.host_mut(h).time_wait;
            if tw.len() >= 1024 {
                tw.retain(|_, until| *until > now);
            }
            tw.insert((addr.ip(), addr.port()), now + 60 * SECOND);
        }
        let c = self.conn_mut(conn);
        if rst || c.ends[e].error.is_none() {
            let at = self.schedule(conn, e, 0, now);
            let c = self.conn_mut(conn);
            let marker = if rst {
                c.pipes[e].rst = Some(at);
                Some(SegmentKind::Rst)
            } else if !c.ends[e].write_shut {
                c.pipes[e].fin = Some(at);
                Some(SegmentKind::Fin)
            } else {
                None
            };
            if let Some(kind) = marker {
                self.log_marker(conn, e, kind, now, at);
            }
            let c = self.conn_mut(conn);
            if at != HELD {
                let s = c.ends[1 - e].sock;
                self.notify(s, at);
            }
        }
        // What this end never read is gone with it.
        let c = self.conn_mut(conn);
        let p = &mut c.pipes[1 - e];
        let tail = p.tail();
        p.data.clear();
        p.head = tail;
        p.marks.clear();
        self.bytes_gone += discarded as u64;
    }

    /// A reset discards end `e`'s send queue, as Linux's close does
    /// (`tcp_write_queue_purge`). The model keeps a direction as one pipe of
    /// `send_buffer + recv_buffer` bytes; of the bytes end `e` wrote and
    /// the peer has not read, the earliest `recv_buffer` are the ones the
    /// peer's window let out: in its receive buffer, or on their way there
    /// (in flight, or held by a blocked link, which the model holds rather
    /// than loses). They keep their arrival, and the RST follows them. The
    /// rest were still in end `e`'s send queue, and never leave, with a FIN
    /// an earlier `shutdown(Write)` queued behind them.
    fn discard_send_queue(&mut self, conn: u32, e: usize, now: u64) {
        let keep = self.config.recv_buffer;
        let c = self.conn_mut(conn);
        let number = c.number;
        let p = &mut c.pipes[e];
        if p.data.len() <= keep {
            return;
        }
        let lost = p.data.len() - keep;
        let cut = p.head + keep as u64;
        p.data.truncate(keep);
        // The chunk the cut splits keeps its arrival; the later ones go.
        if let Some(i) = p.marks.iter().position(|&(off, _)| off >= cut) {
            p.marks[i].0 = cut;
            p.marks.truncate(i + 1);
        }
        p.fin = None;
        // The RST is not sent after the discarded bytes' arrivals.
        p.last_at = p
            .marks
            .iter()
            .map(|&(_, at)| at)
            .filter(|&at| at != HELD)
            .max()
            .unwrap_or(0);
        if !p.has_held() {
            p.held_since = None;
            p.held_cut = false;
        }
        self.bytes_gone += lost as u64;
        self.log(|_| NetEvent::Discard {
            conn: number,
            dir: e,
            offset: cut,
            at: now,
        });
    }

    /// Forgets a connection once neither end has a socket.
    fn gc_conn(&mut self, conn: u32) {
        let c = self.conn(conn);
        let queued = c.ends[1].sock.is_none() && !c.ends[1].closed && !c.ends[1].vanished;
        if c.ends.iter().any(|e| e.sock.is_some()) || queued {
            return;
        }
        let c = self.conns[conn as usize].take().expect("live");
        for p in &c.pipes {
            self.bytes_gone += p.data.len() as u64;
        }
        for h in c.hosts {
            if let Some(Some(host)) = self.hosts.get_mut(h.0 as usize) {
                host.conns.remove(&conn);
            }
        }
        for e in 0..2 {
            let key = (c.hosts[e], c.hosts[1 - e]);
            if let Some(set) = self.held.get_mut(&key) {
                set.remove(&(conn, e));
                if set.is_empty() {
                    self.held.remove(&key);
                }
            }
        }
        self.free_conns.push(conn);
    }

    /// Resets both directions now: each end reads what has arrived, then
    /// gets `ConnectionReset`.
    pub(crate) fn reset_conn(&mut self, conn: u32, now: u64) {
        self.log(|net| NetEvent::Reset {
            conn: net.conn(conn).number,
            at: now,
        });
        for e in 0..2 {
            let c = self.conn_mut(conn);
            let p = &mut c.pipes[e];
            // Bytes still in flight are lost with the connection.
            let arrived = p.arrived(now);
            let lost = p.data.len() - arrived;
            p.data.truncate(arrived);
            while p.marks.back().is_some_and(|&(_, at)| at > now) {
                p.marks.pop_back();
            }
            if let Some(last) = p.marks.back_mut() {
                last.0 = p.head + arrived as u64;
            }
            if p.rst.is_none_or(|t| t > now) {
                p.rst = Some(now);
            }
            p.held_since = None;
            self.bytes_gone += lost as u64;
            let s = self.conn(conn).ends[1 - e].sock;
            self.notify(s, now);
        }
    }

    // ----- lifecycle --------------------------------------------------------

    /// The host's process died: every socket closes as `close(2)` would.
    pub fn host_kill(&mut self, host: HostId, now: u64) {
        self.unix_close_host(host, now);
        let socks: Vec<SocketId> = self.host(host).sockets.iter().copied().collect();
        for s in socks {
            self.close(s, now);
        }
    }

    /// The host's machine died: its sockets vanish without a word.
    pub fn host_crash(&mut self, host: HostId, now: u64) {
        // Its Unix sockets close as in a kill: the node's processes are gone
        // with the machine, and no peer lives off it.
        self.unix_close_host(host, now);
        self.host_mut(host).crashed = true;
        let conns: Vec<u32> = self.host(host).conns.iter().copied().collect();
        for conn in conns {
            for e in 0..2 {
                let c = self.conn_mut(conn);
                if c.hosts[e] != host || c.ends[e].closed || c.ends[e].vanished {
                    continue;
                }
                c.ends[e].vanished = true;
                c.ends[e].sock = None;
                let number = c.number;
                self.log(|_| NetEvent::Vanish {
                    conn: number,
                    end: e,
                    at: now,
                });
                let c = self.conn_mut(conn);
                // What it had not sent yet is lost with the machine.
                let p = &mut c.pipes[e];
                let keep = p.marks.iter().filter(|m| m.1 != HELD).map(|m| m.0).max();
                let keep_len = keep.map_or(0, |k| (k - p.head) as usize);
                let lost = p.data.len() - keep_len;
                p.data.truncate(keep_len);
                p.marks.retain(|m| m.1 != HELD);
                // What it had received is lost too. Bytes still in flight
                // toward it were never acknowledged: the peer retransmits
                // them into the silence and times out.
                let p = &mut c.pipes[1 - e];
                if p.data.len() > p.arrived(now) && p.held_since.is_none() {
                    p.held_since = Some(now);
                    p.held_cut = true;
                }
                let gone = p.data.len();
                let tail = p.tail();
                p.data.clear();
                p.head = tail;
                p.marks.clear();
                self.bytes_gone += (lost + gone) as u64;
            }
        }
        let socks: Vec<SocketId> = self.host(host).sockets.iter().copied().collect();
        for s in socks {
            match self.sock(s) {
                Some(Sock::Stream { conn, .. }) => {
                    let conn = *conn;
                    self.remove_sock(s);
                    self.gc_conn(conn);
                }
                Some(Sock::Listener(l)) => {
                    let queued: Vec<u32> = l.queue.values().copied().collect();
                    for conn in queued {
                        self.conn_mut(conn).ends[1].vanished = true;
                        self.gc_conn(conn);
                    }
                    self.remove_sock(s);
                }
                _ => {
                    self.remove_sock(s);
                }
            }
        }
        self.host_mut(host).ports.clear();
    }

    /// The host runs again after a crash: peers that send to its vanished
    /// sockets get a RST.
    pub fn host_revive(&mut self, host: HostId, now: u64) {
        if !self.host(host).crashed {
            return;
        }
        self.host_mut(host).crashed = false;
        let conns: Vec<u32> = self.host(host).conns.iter().copied().collect();
        for conn in conns {
            if self.conns.get(conn as usize).is_none_or(|c| c.is_none()) {
                continue;
            }
            for e in 0..2 {
                let c = self.conn(conn);
                if c.hosts[e] != host || !c.ends[e].vanished {
                    continue;
                }
                let peer = 1 - e;
                if c.ends[peer].closed || c.ends[peer].vanished {
                    continue;
                }
                // The peer's retransmissions now reach a kernel that knows
                // nothing of the connection.
                if c.pipes[peer].has_held() || c.pipes[peer].held_since.is_some() {
                    let (ph, me) = (c.hosts[peer], c.hosts[e]);
                    let rtt = self.delay(ph, me, 0, 0) + self.delay(me, ph, 0, 1);
                    let c = self.conn_mut(conn);
                    let p = &mut c.pipes[peer];
                    let gone = p.data.len();
                    let tail = p.tail();
                    p.data.clear();
                    p.head = tail;
                    p.marks.clear();
                    p.held_since = None;
                    p.fin = None;
                    let at = (now + rtt).max(c.pipes[e].last_at);
                    c.pipes[e].rst = Some(at);
                    let s = c.ends[peer].sock;
                    self.bytes_gone += gone as u64;
                    self.notify(s, at);
                    let key = (self.conn(conn).hosts[peer], host);
                    if let Some(set) = self.held.get_mut(&key) {
                        set.remove(&(conn, peer));
                    }
                }
            }
        }
    }
}
