//! TCP bytes: when each chunk arrives, writes, reads, readiness, shutdown.

use super::*;

impl Net {
    // ----- bytes ------------------------------------------------------------

    /// Marks a pending timeout as the end's error when its time has come.
    pub(super) fn check_timeout(&mut self, conn: u32, e: usize, now: u64) {
        let rto = self.config.retransmit_timeout_ns;
        let c = self.conn_mut(conn);
        let p = &c.pipes[e];
        if let (Some(since), true) = (p.held_since, p.held_cut) {
            if now >= since.saturating_add(rto) && c.ends[e].error.is_none() {
                c.ends[e].error = Some(ETIMEDOUT);
            }
        }
    }

    fn timeout_at(&self, conn: u32, e: usize) -> Option<u64> {
        let p = &self.conn(conn).pipes[e];
        match (p.held_since, p.held_cut) {
            (Some(since), true) => Some(since.saturating_add(self.config.retransmit_timeout_ns)),
            _ => None,
        }
    }

    /// Whether bytes from end `e` get across now.
    pub(super) fn pipe_flow(&self, conn: u32, e: usize) -> Flow {
        let c = self.conn(conn);
        if c.ends[1 - e].fault.silent {
            return Flow::Cut;
        }
        self.flow(c.hosts[e], c.hosts[1 - e])
    }

    /// Schedules `n` new bytes (already in the pipe's data) or a FIN/RST
    /// marker (`n == 0`) from end `e`; returns their arrival.
    pub(super) fn schedule(&mut self, conn: u32, e: usize, n: usize, now: u64) -> u64 {
        let (src, dst, number, chunk, silent) = {
            let c = self.conn(conn);
            (
                c.hosts[e],
                c.hosts[1 - e],
                c.number,
                c.pipes[e].chunks,
                c.ends[1 - e].fault.silent,
            )
        };
        // One look-up of the link for its flow and its delay (as
        // `pipe_flow` and `delay`).
        let link = self.links.get(&(src, dst));
        let flow = if silent {
            Flow::Cut
        } else {
            self.flow_on(link, src, dst)
        };
        let delay = self.delay_on(link, src, dst, number.wrapping_mul(2) + e as u64, chunk)
            + self.extra_delay_ns;
        let c = self.conn_mut(conn);
        let throttle = c.ends[1 - e].fault.throttle_bytes_per_sec;
        let p = &mut c.pipes[e];
        p.chunks += 1;
        let mut held = flow != Flow::Open;
        if let Some(from) = p.hold_from {
            if p.tail() > from {
                held = true;
            }
        }
        let at = if held {
            if p.held_since.is_none() {
                p.held_since = Some(now);
            }
            p.held_cut |= flow == Flow::Cut || p.hold_from.is_some();
            HELD
        } else {
            let mut at = (now + delay).max(p.last_at);
            if let Some(bps) = throttle {
                let spacing = (n as u128 * 1_000_000_000 / u128::from(bps.max(1))) as u64;
                at = at.max(p.last_at.saturating_add(spacing));
            }
            p.last_at = at;
            at
        };
        if n > 0 {
            let tail = p.tail();
            p.marks.push_back((tail, at));
        }
        if at == HELD {
            self.held.entry((src, dst)).or_default().insert((conn, e));
        }
        if n > 0 && self.recording() {
            let keep = self.keep_payload(n);
            let p = &self.conn(conn).pipes[e];
            let start = p.data.len() - n;
            let payload: Vec<u8> = p.data.range(start..start + keep).copied().collect();
            let offset = p.tail() - n as u64;
            self.log(|_| NetEvent::Segment {
                conn: number,
                dir: e,
                kind: SegmentKind::Data,
                offset,
                len: n,
                sent: now,
                arrive: (at != HELD).then_some(at),
                payload,
            });
        }
        at
    }

    /// Logs a FIN or RST marker of direction `e` scheduled at `at`.
    pub(super) fn log_marker(&mut self, conn: u32, e: usize, kind: SegmentKind, now: u64, at: u64) {
        self.log(|net| {
            let c = net.conn(conn);
            NetEvent::Segment {
                conn: c.number,
                dir: e,
                kind,
                offset: c.pipes[e].tail(),
                len: 0,
                sent: now,
                arrive: (at != HELD).then_some(at),
                payload: Vec::new(),
            }
        });
    }

    /// Writes as much of `data` as the direction's buffer takes.
    /// As [`Net::tcp_write`], with `extra_ns` added to this write's delivery
    /// (a slow path: congestion, a retransmission). Bytes stay in order: a
    /// later write never arrives before this one.
    pub fn tcp_write_slow(
        &mut self,
        sock: SocketId,
        data: &[u8],
        now: u64,
        extra_ns: u64,
    ) -> Progress<usize> {
        self.extra_delay_ns = extra_ns.min(u64::MAX / 4);
        let r = self.tcp_write(sock, data, now);
        self.extra_delay_ns = 0;
        r
    }

    pub fn tcp_write(&mut self, sock: SocketId, data: &[u8], now: u64) -> Progress<usize> {
        let Some((conn, e)) = self.stream(sock) else {
            return match self.sock(sock) {
                Some(_) => Progress::err(ENOTCONN),
                None => Progress::err(EBADF),
            };
        };
        self.check_timeout(conn, e, now);
        let cap = self.config.send_buffer + self.config.recv_buffer;
        let c = self.conn_mut(conn);
        if let Some(errno) = c.ends[e].error {
            if !c.ends[e].error_reported {
                c.ends[e].error_reported = true;
                return Progress::err(errno);
            }
            return Progress::err(EPIPE);
        }
        if c.pipes[1 - e].rst.is_some_and(|t| t <= now) {
            // The reset is reported once, to whichever call comes first.
            if !c.ends[e].rst_reported {
                c.ends[e].rst_reported = true;
                return Progress::err(reset_errno(&c.pipes[1 - e]));
            }
            return Progress::err(EPIPE);
        }
        if c.ends[e].write_shut {
            return Progress::err(EPIPE);
        }
        if data.is_empty() {
            return Progress::Ready(Ok(0));
        }
        let mut limit = data.len();
        if let Some(k) = c.ends[e].fault.partial_write_then_reset {
            if c.ends[e].partial_done {
                c.ends[e].error = Some(ECONNRESET);
                c.ends[e].error_reported = true;
                // This end's stack aborts the connection: its RST follows
                // the bytes the partial write already sent, so the peer
                // reads them, then gets the reset (a reset at `now` would
                // lose them whenever they are still in flight).
                self.close_end(conn, e, true, now);
                return Progress::err(ECONNRESET);
            }
            c.ends[e].partial_done = true;
            limit = limit.min(k.max(1));
        }
        // A peer that timed out has no connection left in its kernel.
        self.check_timeout(conn, 1 - e, now);
        let c = self.conn_mut(conn);
        let (peer_closed, peer_vanished) = (c.ends[1 - e].closed, c.ends[1 - e].vanished);
        let peer_timed_out = c.ends[1 - e].error == Some(ETIMEDOUT);
        let peer_host = c.hosts[1 - e];
        let my_host = c.hosts[e];
        let peer_gone =
            peer_closed || peer_timed_out || (peer_vanished && !self.host(peer_host).crashed);
        if peer_gone {
            // The peer's kernel discards the bytes and answers with a RST.
            self.bytes_written += limit as u64;
            self.bytes_gone += limit as u64;
            let rtt = self.delay(my_host, peer_host, 0, 0) + self.delay(peer_host, my_host, 0, 1);
            // Across a blocked link the bytes and the RST wait for it to
            // clear: the RST is held like any chunk and leaves on the heal.
            let flows = [self.flow(my_host, peer_host), self.flow(peer_host, my_host)];
            let blocked = flows.iter().any(|&f| f != Flow::Open);
            let cut = flows.contains(&Flow::Cut);
            let c = self.conn_mut(conn);
            if c.pipes[1 - e].rst.is_none() {
                if blocked {
                    c.pipes[1 - e].rst = Some(HELD);
                    self.log_marker(conn, 1 - e, SegmentKind::Rst, now, HELD);
                    let c = self.conn_mut(conn);
                    // The bytes are retransmitted until the link clears,
                    // and time out across a partition that lasts.
                    let p = &mut c.pipes[e];
                    p.held_since.get_or_insert(now);
                    p.held_cut |= cut;
                    // Keyed by each pipe's own direction (as `gc_conn`
                    // expects); a heal releases both directions.
                    self.held
                        .entry((peer_host, my_host))
                        .or_default()
                        .insert((conn, 1 - e));
                    self.held
                        .entry((my_host, peer_host))
                        .or_default()
                        .insert((conn, e));
                } else {
                    let at = (now + rtt).max(c.pipes[1 - e].last_at);
                    c.pipes[1 - e].rst = Some(at);
                    let s = c.ends[e].sock;
                    self.notify(s, at);
                    self.log_marker(conn, 1 - e, SegmentKind::Rst, now, at);
                }
            }
            return Progress::Ready(Ok(limit));
        }
        let c = self.conn_mut(conn);
        let room = cap.saturating_sub(c.pipes[e].data.len());
        if room == 0 {
            return Progress::Pending {
                wake_at: self.timeout_at(conn, e),
            };
        }
        let n = room.min(limit);
        c.pipes[e].data.extend(&data[..n]);
        let hold_from = c.pipes[e].hold_from;
        let tail = c.pipes[e].tail();
        self.bytes_written += n as u64;
        // A "hold after N bytes" fault splits the chunk at its limit.
        let at = match hold_from {
            Some(from) if from > tail - n as u64 && from < tail => {
                let first = (from - (tail - n as u64)) as usize;
                // Schedule the part before the limit, then the rest (held).
                let c = self.conn_mut(conn);
                c.pipes[e]
                    .data
                    .truncate(c.pipes[e].data.len() - (n - first));
                let at = self.schedule(conn, e, first, now);
                self.conn_mut(conn).pipes[e].data.extend(&data[first..n]);
                self.schedule(conn, e, n - first, now);
                at
            }
            _ => self.schedule(conn, e, n, now),
        };
        if at != HELD {
            // The bytes concern the peer's readers only: its writers wait
            // for room in the other pipe.
            let s = self.conn(conn).ends[1 - e].sock;
            self.notify_some(s, at, Wakes::Readers);
        }
        Progress::Ready(Ok(n))
    }

    /// Reads (or, with `peek`, copies without consuming) arrived bytes.
    pub fn tcp_read(
        &mut self,
        sock: SocketId,
        buf: &mut [u8],
        peek: bool,
        now: u64,
    ) -> Progress<usize> {
        let Some((conn, e)) = self.stream(sock) else {
            return match self.sock(sock) {
                Some(_) => Progress::err(ENOTCONN),
                None => Progress::err(EBADF),
            };
        };
        self.check_timeout(conn, e, now);
        let cap = self.config.send_buffer + self.config.recv_buffer;
        let c = self.conn_mut(conn);
        if let Some(errno) = c.ends[e].error {
            if !c.ends[e].error_reported {
                c.ends[e].error_reported = true;
                return Progress::err(errno);
            }
            return Progress::Ready(Ok(0));
        }
        if buf.is_empty() {
            return Progress::Ready(Ok(0));
        }
        let p = &mut c.pipes[1 - e];
        let avail = p.arrived(now);
        if avail > 0 {
            let mut n = avail.min(buf.len());
            if let Some(k) = c.ends[e].fault.short_reads {
                n = n.min(k.max(1));
            }
            let (a, b) = p.data.as_slices();
            if n <= a.len() {
                buf[..n].copy_from_slice(&a[..n]);
            } else {
                buf[..a.len()].copy_from_slice(a);
                buf[a.len()..n].copy_from_slice(&b[..n - a.len()]);
            }
            if !peek {
                // Only a full pipe has writers waiting for room (a write
                // waits only when nothing fits), so only freeing one
                // concerns them: Linux wakes a writer for room only after a
                // send found none (`SOCK_NOSPACE`).
                let was_full = p.data.len() >= cap;
                p.consume(n);
                self.bytes_gone += n as u64;
                if was_full {
                    let w = self.conn(conn).ends[1 - e].sock;
                    self.notify_some(w, now, Wakes::Writers);
                }
            }
            return Progress::Ready(Ok(n));
        }
        if p.rst.is_some_and(|t| t <= now) {
            // After the peer's FIN, Linux's reads see EOF (`SOCK_DONE`
            // comes before `sk_err` in `tcp_recvmsg`): the reset is left
            // for the next write, as `EPIPE`.
            if reset_errno(p) == EPIPE {
                return Progress::Ready(Ok(0));
            }
            if !c.ends[e].rst_reported {
                c.ends[e].rst_reported = true;
                return Progress::err(reset_errno(p));
            }
            return Progress::Ready(Ok(0));
        }
        if p.fin.is_some_and(|t| t <= now) || c.ends[e].read_shut {
            return Progress::Ready(Ok(0));
        }
        let next = p.next_arrival(now);
        let timeout = self.timeout_at(conn, e);
        Progress::Pending {
            wake_at: [next, timeout].into_iter().flatten().min(),
        }
    }

    /// What a stream's readiness is now.
    pub fn tcp_readiness(&mut self, sock: SocketId, now: u64) -> Readiness {
        let Some((conn, e)) = self.stream(sock) else {
            return Readiness::CLOSED;
        };
        self.check_timeout(conn, e, now);
        let cap = self.config.send_buffer + self.config.recv_buffer;
        let c = self.conn(conn);
        let p = &c.pipes[1 - e];
        let error = c.ends[e].error.is_some();
        let rst = p.rst.is_some_and(|t| t <= now);
        let read_closed = rst || p.fin.is_some_and(|t| t <= now) || c.ends[e].read_shut || error;
        let write_closed = rst || c.ends[e].write_shut || error;
        let readable = p.arrived(now) > 0 || read_closed;
        let writable = write_closed || c.pipes[e].data.len() < cap;
        let wake_at = [p.next_arrival(now), self.timeout_at(conn, e)]
            .into_iter()
            .flatten()
            .min();
        Readiness {
            readable,
            writable,
            read_closed,
            write_closed,
            error: error || rst,
            wake_at,
        }
    }

    /// `shutdown(Write)`: a FIN after the queued bytes. `shutdown(Read)`:
    /// reads see EOF.
    pub fn tcp_shutdown(
        &mut self,
        sock: SocketId,
        read: bool,
        write: bool,
        now: u64,
    ) -> io::Result<()> {
        let Some((conn, e)) = self.stream(sock) else {
            return Err(err(ENOTCONN));
        };
        if read {
            self.conn_mut(conn).ends[e].read_shut = true;
            let s = self.conn(conn).ends[e].sock;
            self.notify(s, now);
        }
        if write && !self.conn(conn).ends[e].write_shut {
            self.conn_mut(conn).ends[e].write_shut = true;
            let at = self.schedule(conn, e, 0, now);
            self.conn_mut(conn).pipes[e].fin = Some(at);
            self.log_marker(conn, e, SegmentKind::Fin, now, at);
            if at != HELD {
                let s = self.conn(conn).ends[1 - e].sock;
                self.notify(s, at);
            }
            let s = self.conn(conn).ends[e].sock;
            self.notify(s, now);
        }
        Ok(())
    }
}
