//! TCP sockets before they carry bytes: bind, listen, addresses, connect
//! (SYNs and their retries), accept.

use super::*;

impl Net {
    // ----- sockets ----------------------------------------------------------

    /// A TCP socket bound to `addr` on `host` (port 0: ephemeral).
    pub fn tcp_bind(
        &mut self,
        host: HostId,
        addr: SocketAddr,
        reuse: bool,
        now: u64,
    ) -> io::Result<SocketId> {
        self.clock = self.clock.max(now);
        self.check_local_ip(host, addr.ip())?;
        let id = self.insert_sock(Sock::TcpBound { host, addr });
        match self.bind_port(host, Proto::Tcp, addr, id, reuse) {
            Ok(bound) => {
                *self.sock_mut(id).expect("just inserted") = Sock::TcpBound { host, addr: bound };
                Ok(id)
            }
            Err(e) => {
                self.remove_sock(id);
                Err(e)
            }
        }
    }

    /// Turns a bound socket into a listener.
    pub fn tcp_listen(&mut self, sock: SocketId, backlog: u32) -> io::Result<()> {
        let (host, addr) = match self.sock(sock) {
            Some(Sock::TcpBound { host, addr }) => (*host, *addr),
            Some(Sock::Listener(_)) => return Ok(()),
            Some(_) => return Net::einval(),
            None => return Err(err(EBADF)),
        };
        // Sockets sharing a port through SO_REUSEADDR may not both listen.
        let others = self
            .host(host)
            .ports
            .get(&(Proto::Tcp, addr.port()))
            .cloned()
            .unwrap_or_default();
        for (ip, other, _) in others {
            let overlaps = ip == addr.ip() || ip.is_unspecified() || addr.ip().is_unspecified();
            if other != sock && overlaps && matches!(self.sock(other), Some(Sock::Listener(_))) {
                return Err(err(EADDRINUSE));
            }
        }
        // Linux caps the backlog at somaxconn (4096) and takes at least 1.
        let backlog = (backlog as usize).clamp(1, 4096);
        *self.sock_mut(sock).expect("exists") = Sock::Listener(Listener {
            host,
            addr,
            backlog,
            queue: BTreeMap::new(),
            paused: false,
        });
        Ok(())
    }

    /// The socket's local address.
    pub fn local_addr(&self, sock: SocketId) -> io::Result<SocketAddr> {
        match self.sock(sock) {
            Some(Sock::TcpBound { addr, .. }) => Ok(*addr),
            Some(Sock::Connecting(c)) => Ok(c.local),
            Some(Sock::Listener(l)) => Ok(l.addr),
            Some(Sock::Stream { conn, end, .. }) => Ok(self.conn(*conn).addrs[*end]),
            Some(Sock::Udp(u)) => Ok(u.local),
            Some(Sock::Unix(_)) => Net::einval(),
            None => Err(err(EBADF)),
        }
    }

    /// The connected peer's address.
    pub fn peer_addr(&self, sock: SocketId) -> io::Result<SocketAddr> {
        match self.sock(sock) {
            Some(Sock::Stream { conn, end, .. }) => {
                let c = self.conn(*conn);
                if c.ends[*end].rst_reported || c.ends[*end].error_reported {
                    // After a reported reset the socket is disconnected.
                    return Err(err(ENOTCONN));
                }
                Ok(c.addrs[1 - *end])
            }
            Some(Sock::Udp(u)) => u.peer.ok_or_else(|| err(ENOTCONN)),
            Some(_) => Err(err(ENOTCONN)),
            None => Err(err(EBADF)),
        }
    }

    // ----- connect ----------------------------------------------------------

    /// Starts connecting to `dst` from `host` (from `bound`'s address if
    /// given; that socket becomes the connecting one). Poll the returned
    /// socket with [`Net::tcp_poll_connect`].
    pub fn tcp_connect(
        &mut self,
        host: HostId,
        bound: Option<SocketId>,
        dst: SocketAddr,
        now: u64,
    ) -> io::Result<SocketId> {
        let dst = if dst.ip().is_unspecified() {
            SocketAddr::new(loopback_of(dst.ip()), dst.port())
        } else {
            dst
        };
        self.clock = self.clock.max(now);
        let (id, local) = match bound {
            Some(b) => match self.sock(b) {
                Some(Sock::TcpBound { addr, .. }) => {
                    same_family(addr.ip(), dst.ip())?;
                    let mut local = *addr;
                    if local.ip().is_unspecified() {
                        local.set_ip(self.source_ip(host, dst.ip()));
                    }
                    (b, local)
                }
                Some(Sock::Stream { .. }) | Some(Sock::Connecting(_)) => return Err(err(EISCONN)),
                Some(_) => return Net::einval(),
                None => return Err(err(EBADF)),
            },
            None => {
                let ip = self.source_ip(host, dst.ip());
                let id = self.insert_sock(Sock::TcpBound {
                    host,
                    addr: SocketAddr::new(ip, 0),
                });
                match self.bind_port(host, Proto::Tcp, SocketAddr::new(ip, 0), id, false) {
                    Ok(local) => (id, local),
                    Err(e) => {
                        self.remove_sock(id);
                        return Err(e);
                    }
                }
            }
        };
        *self.sock_mut(id).expect("exists") = Sock::Connecting(Connecting {
            host,
            local,
            dst,
            started: now,
            attempt: 0,
            next_at: now,
            outcome: None,
        });
        self.syn(id, now);
        Ok(id)
    }

    /// Sends the connecting socket's next SYN at `now`.
    fn syn(&mut self, id: SocketId, now: u64) {
        let Some(Sock::Connecting(c)) = self.sock(id) else {
            return;
        };
        let (host, local, dst, started, attempt) = (c.host, c.local, c.dst, c.started, c.attempt);
        let target = self.route(host, dst.ip());
        enum Answer {
            Lost,
            Refused(u64),
            Accepted(SocketId, HostId),
        }
        let answer = match target {
            None => Answer::Lost,
            Some(h) if self.flow(host, h) != Flow::Open || self.flow(h, host) != Flow::Open => {
                Answer::Lost
            }
            Some(h) => match self.port_faults.get(&(h, dst.port())) {
                Some(PortFault::BlackHole) => Answer::Lost,
                Some(PortFault::Refuse) => {
                    Answer::Refused(self.max_delay(host, h) + self.max_delay(h, host))
                }
                None => {
                    let listener = self
                        .lookup_port(h, Proto::Tcp, dst)
                        .into_iter()
                        .find(|&s| matches!(self.sock(s), Some(Sock::Listener(_))));
                    match listener {
                        None => Answer::Refused(self.max_delay(host, h) + self.max_delay(h, host)),
                        Some(l) => {
                            let Some(Sock::Listener(li)) = self.sock(l) else {
                                unreachable!()
                            };
                            if li.queue.len() >= li.backlog {
                                Answer::Lost
                            } else {
                                Answer::Accepted(l, h)
                            }
                        }
                    }
                }
            },
        };
        match answer {
            Answer::Lost => {
                let retries = self.config.syn_retries;
                let Some(Sock::Connecting(c)) = self.sock_mut(id) else {
                    unreachable!()
                };
                c.attempt = attempt + 1;
                // Linux doubles the SYN timeout from 1 s: retries at 1, 3,
                // 7, … s after the first SYN, failure after the last wait.
                let next = started + ((1u64 << (attempt + 1).min(40)) - 1) * SECOND;
                let why = if attempt >= retries {
                    c.outcome = Some((next, ETIMEDOUT));
                    "timed out"
                } else {
                    c.next_at = next;
                    "lost"
                };
                self.notify(Some(id), next);
                self.log(|_| NetEvent::ConnectFailed {
                    host,
                    to_host: target,
                    from: local,
                    to: dst,
                    at: now,
                    fails_at: next,
                    why,
                });
            }
            Answer::Refused(rtt) => {
                let Some(Sock::Connecting(c)) = self.sock_mut(id) else {
                    unreachable!()
                };
                c.outcome = Some((now + rtt, ECONNREFUSED));
                self.notify(Some(id), now + rtt);
                self.log(|_| NetEvent::ConnectFailed {
                    host,
                    to_host: target,
                    from: local,
                    to: dst,
                    at: now,
                    fails_at: now + rtt,
                    why: "refused",
                });
            }
            Answer::Accepted(listener, h) => {
                let number = self.conn_numbers;
                self.conn_numbers += 1;
                let d1 = self.delay(host, h, number, u64::MAX);
                let d2 = self.delay(h, host, number, u64::MAX);
                let d3 = self.delay(host, h, number, u64::MAX - 1);
                let established_at = now + d1 + d2;
                let ready_at = established_at + d3;
                let conn = Conn {
                    number,
                    hosts: [host, h],
                    addrs: [local, dst],
                    ends: [
                        End {
                            sock: Some(id),
                            owns_port: true,
                            ..End::default()
                        },
                        End::default(),
                    ],
                    pipes: [
                        Pipe {
                            last_at: established_at,
                            ..Pipe::default()
                        },
                        Pipe {
                            last_at: ready_at,
                            ..Pipe::default()
                        },
                    ],
                    established_at,
                };
                let slot = match self.free_conns.pop() {
                    Some(s) => {
                        self.conns[s as usize] = Some(conn);
                        s
                    }
                    None => {
                        self.conns.push(Some(conn));
                        (self.conns.len() - 1) as u32
                    }
                };
                self.host_mut(host).conns.insert(slot);
                self.host_mut(h).conns.insert(slot);
                *self.sock_mut(id).expect("exists") = Sock::Stream {
                    host,
                    conn: slot,
                    end: 0,
                };
                self.listener_mut(listener)
                    .expect("listener exists")
                    .queue
                    .insert((ready_at, number), slot);
                self.notify(Some(listener), ready_at);
                self.notify(Some(id), established_at);
                self.log(|_| NetEvent::Connect {
                    conn: number,
                    hosts: [host, h],
                    addrs: [local, dst],
                    at: now,
                    established: established_at,
                    ready: ready_at,
                });
            }
        }
    }

    /// Whether the connect has completed.
    pub fn tcp_poll_connect(&mut self, sock: SocketId, now: u64) -> Progress<()> {
        loop {
            match self.sock(sock) {
                Some(Sock::Connecting(c)) => {
                    if let Some((at, errno)) = c.outcome {
                        return if now >= at {
                            Progress::err(errno)
                        } else {
                            Progress::Pending { wake_at: Some(at) }
                        };
                    }
                    if now < c.next_at {
                        return Progress::Pending {
                            wake_at: Some(c.next_at),
                        };
                    }
                    self.syn(sock, now);
                }
                Some(Sock::Stream { conn, .. }) => {
                    let at = self.conn(*conn).established_at;
                    return if now >= at {
                        Progress::Ready(Ok(()))
                    } else {
                        Progress::Pending { wake_at: Some(at) }
                    };
                }
                Some(_) => return Progress::err(EINVAL),
                None => return Progress::err(EBADF),
            }
        }
    }

    // ----- accept -----------------------------------------------------------

    /// Takes the next connection ready in the listener's queue.
    pub fn tcp_accept(&mut self, sock: SocketId, now: u64) -> Progress<(SocketId, SocketAddr)> {
        let (host, first) = match self.sock(sock) {
            Some(Sock::Listener(l)) => {
                if l.paused {
                    return Progress::Pending { wake_at: None };
                }
                (l.host, l.queue.first_key_value().map(|(k, v)| (*k, *v)))
            }
            Some(_) => return Progress::err(EINVAL),
            None => return Progress::err(EBADF),
        };
        let Some(((at, number), slot)) = first else {
            return Progress::Pending { wake_at: None };
        };
        if at > now {
            return Progress::Pending { wake_at: Some(at) };
        }
        self.listener_mut(sock)
            .expect("listener")
            .queue
            .remove(&(at, number));
        let id = self.insert_sock(Sock::Stream {
            host,
            conn: slot,
            end: 1,
        });
        let c = self.conn_mut(slot);
        c.ends[1].sock = Some(id);
        let peer = c.addrs[0];
        // Bytes (or a FIN / RST) that arrived before the accept are there.
        Progress::Ready(Ok((id, peer)))
    }
}
