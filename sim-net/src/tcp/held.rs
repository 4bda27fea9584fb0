//! Bytes held by a blocked link or a fault, and their release.

use super::*;

impl Net {
    pub(crate) fn apply_conn_fault(&mut self, conn: u32, e: usize, fault: ConnFault, now: u64) {
        let c = self.conn_mut(conn);
        let was_silent = c.ends[e].fault.silent;
        c.pipes[1 - e].hold_from = fault.hold_after_bytes.map(|n| c.pipes[1 - e].tail() + n);
        c.ends[e].partial_done = false;
        c.ends[e].fault = fault;
        if was_silent || c.pipes[1 - e].hold_from.is_none() {
            self.release(conn, 1 - e, now);
        }
    }

    /// Re-times the held chunks of a direction if it flows again.
    pub(crate) fn release(&mut self, conn: u32, e: usize, now: u64) {
        if self.conns.get(conn as usize).is_none_or(|c| c.is_none()) {
            return;
        }
        self.check_timeout(conn, e, now);
        if self.conn(conn).ends[e].error.is_some() {
            // The sender gave up (`ETIMEDOUT`): its kernel dropped the
            // connection and retransmits nothing, whatever heals later.
            self.drop_held(conn, e, now);
            return;
        }
        if self.pipe_flow(conn, e) != Flow::Open || self.conn(conn).pipes[e].hold_from.is_some() {
            return;
        }
        if !self.conn(conn).pipes[e].has_held() {
            // Nothing held (bytes a closed peer discarded): the
            // retransmissions are answered now, no timeout runs on.
            let c = self.conn_mut(conn);
            let (src, dst) = (c.hosts[e], c.hosts[1 - e]);
            c.pipes[e].held_since = None;
            c.pipes[e].held_cut = false;
            if let Some(set) = self.held.get_mut(&(src, dst)) {
                set.remove(&(conn, e));
                if set.is_empty() {
                    self.held.remove(&(src, dst));
                }
            }
            return;
        }
        let (src, dst, number) = {
            let c = self.conn(conn);
            (c.hosts[e], c.hosts[1 - e], c.number)
        };
        let chunk = self.conn(conn).pipes[e].chunks;
        let delay = self.delay(src, dst, number.wrapping_mul(2) + e as u64, chunk);
        let c = self.conn_mut(conn);
        let p = &mut c.pipes[e];
        p.chunks += 1;
        let at = (now + delay).max(p.last_at);
        p.last_at = at;
        for m in p.marks.iter_mut() {
            if m.1 == HELD {
                m.1 = at;
            }
        }
        if p.fin == Some(HELD) {
            p.fin = Some(at);
        }
        if p.rst == Some(HELD) {
            p.rst = Some(at);
        }
        p.held_since = None;
        p.held_cut = false;
        let s = c.ends[1 - e].sock;
        let w = c.ends[e].sock;
        self.log(|_| NetEvent::Release {
            conn: number,
            dir: e,
            at: now,
            arrive: at,
        });
        self.notify(s, at);
        self.notify(w, now);
        if let Some(set) = self.held.get_mut(&(src, dst)) {
            set.remove(&(conn, e));
            if set.is_empty() {
                self.held.remove(&(src, dst));
            }
        }
    }

    /// Forgets the held chunks of direction `e` (its sender is gone).
    fn drop_held(&mut self, conn: u32, e: usize, now: u64) {
        self.log(|net| NetEvent::DropHeld {
            conn: net.conn(conn).number,
            dir: e,
            at: now,
        });
        let c = self.conn_mut(conn);
        let (src, dst) = (c.hosts[e], c.hosts[1 - e]);
        let p = &mut c.pipes[e];
        let keep = p.marks.iter().filter(|m| m.1 != HELD).map(|m| m.0).max();
        let keep_len = keep.map_or(0, |k| (k - p.head) as usize);
        let lost = p.data.len() - keep_len;
        p.data.truncate(keep_len);
        p.marks.retain(|m| m.1 != HELD);
        if p.fin == Some(HELD) {
            p.fin = None;
        }
        if p.rst == Some(HELD) {
            p.rst = None;
        }
        p.held_since = None;
        p.held_cut = false;
        self.bytes_gone += lost as u64;
        if let Some(set) = self.held.get_mut(&(src, dst)) {
            set.remove(&(conn, e));
            if set.is_empty() {
                self.held.remove(&(src, dst));
            }
        }
    }

    pub(crate) fn release_link(&mut self, src: HostId, dst: HostId, now: u64) {
        let Some(set) = self.held.get(&(src, dst)) else {
            return;
        };
        let v: Vec<(u32, usize)> = set.iter().copied().collect();
        for (conn, e) in v {
            self.release(conn, e, now);
        }
    }
}
