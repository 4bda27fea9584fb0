//! `UdpSocket` on the simulated network.

use super::addr::{resolve, resolve_first, ToSocketAddrs};
use super::shared::{datagram_bufs, debug_addrs, fill, refuse_std};
use super::{poll_net, poll_ready_with, with_net, Dir, Handle};
use crate::io::{Interest, ReadBuf, Ready};
use sim_net::Progress;
use std::future::poll_fn;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::task::{Context, Poll};

#[derive(Debug, Default)]
struct Options {
    ttl: Option<u32>,
    multicast_loop_v4: Option<bool>,
    multicast_loop_v6: Option<bool>,
    multicast_ttl_v4: Option<u32>,
    tos: u32,
    tclass: u32,
}

/// A UDP socket on the simulated network.
pub struct UdpSocket {
    handle: Handle,
    options: Mutex<Options>,
}

debug_addrs!(UdpSocket, local: local_addr);

impl UdpSocket {
    /// Binds to each resolved address in turn until one works.
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        super::check_running()?;
        let addrs = resolve(&addr)?;
        let mut last = None;
        for addr in addrs {
            match with_net(|net, host, _| net.udp_bind(host, addr)) {
                Ok(id) => {
                    return Ok(UdpSocket {
                        handle: Handle::new(id),
                        options: Mutex::new(Options::default()),
                    })
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any address",
            )
        }))
    }

    /// A socket bound inside the simulation with std
    /// (`std::net::UdpSocket::bind`, whose `socket(2)` made a stub:
    /// net/fd.rs), now on the simulated network. A real OS socket is
    /// refused.
    #[track_caller]
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        use std::os::fd::IntoRawFd;
        let fd = socket.into_raw_fd();
        match crate::simulation::net::fd::take(fd) {
            Some(stub) if !stub.stream => {
                super::check_running()?;
                let any = if stub.v6 { "[::]:0" } else { "0.0.0.0:0" };
                let addr = stub.bound.unwrap_or_else(|| any.parse().expect("literal"));
                let id = with_net(|net, host, _| net.udp_bind(host, addr))?;
                Ok(UdpSocket {
                    handle: Handle::new(id),
                    options: Mutex::new(Options::default()),
                })
            }
            Some(_) => super::refuse_std("UdpSocket::from_std of a stream socket"),
            None => {
                super::close_real(fd);
                super::refuse_std("UdpSocket::from_std")
            }
        }
    }

    pub(crate) fn id(&self) -> sim_net::SocketId {
        self.handle.id
    }

    fn opts(&self) -> std::sync::MutexGuard<'_, Options> {
        self.options.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with_net(|net, _, _| net.local_addr(id))
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with_net(|net, _, _| net.peer_addr(id))
    }

    /// Sets the default destination (the first resolved address that
    /// works) and filters datagrams from other senders.
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        let addrs = resolve(&addr)?;
        let id = self.id();
        let mut last = None;
        for addr in addrs {
            match with_net(|net, _, _| net.udp_connect(id, addr)) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any address",
            )
        }))
    }

    pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        let id = self.id();
        let mut ready = Ready::EMPTY;
        if interest.is_writable() {
            // A datagram socket can always send (the kernel drops instead).
            ready |= Ready::WRITABLE;
            return Ok(ready);
        }
        poll_fn(|cx| poll_ready_with(cx, id, Dir::Read, |net, now, _| readable(net, id, now)))
            .await;
        Ok(Ready::READABLE)
    }

    pub async fn writable(&self) -> io::Result<()> {
        Ok(())
    }

    pub fn poll_send_ready(&self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        super::spend_budget().await;
        self.try_send(buf)
    }

    pub fn poll_send(&self, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(self.try_send(buf))
    }

    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        let id = self.id();
        with_net(|net, _, now| net.udp_send(id, buf, None, now))
    }

    pub async fn readable(&self) -> io::Result<()> {
        self.ready(Interest::READABLE).await.map(|_| ())
    }

    pub fn poll_recv_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let id = self.id();
        poll_ready_with(cx, id, Dir::Read, |net, now, _| readable(net, id, now)).map(|_| Ok(()))
    }

    pub async fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        match resolve_first(&target)? {
            Some(addr) => {
                super::spend_budget().await;
                self.try_send_to(buf, addr)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no addresses to send data to",
            )),
        }
    }

    pub fn poll_send_to(
        &self,
        _cx: &mut Context<'_>,
        buf: &[u8],
        target: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.try_send_to(buf, target))
    }

    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        let id = self.id();
        with_net(|net, _, now| net.udp_send(id, buf, Some(target), now))
    }

    pub async fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let id = self.id();
        poll_fn(|cx| {
            poll_net(cx, id, Dir::Read, |net, now| {
                net.udp_recv(id, buf, true, now)
            })
        })
        .await
    }

    pub fn poll_peek_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        let id = self.id();
        fill(buf, |dst| {
            poll_net(cx, id, Dir::Read, |net, now| {
                net.udp_recv(id, dst, true, now)
            })
        })
    }

    pub fn try_peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let id = self.id();
        with_net(|net, _, now| now_or_would_block(net.udp_recv(id, buf, true, now)))
    }

    /// Receives the next datagram without removing it from the queue (a
    /// connected socket's: from its peer only).
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.peek_from(buf).await.map(|(n, _)| n)
    }

    pub fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.poll_peek_from(cx, buf).map(|r| r.map(|_| ()))
    }

    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_peek_from(buf).map(|(n, _)| n)
    }

    pub async fn peek_sender(&self) -> io::Result<SocketAddr> {
        let mut none = [0u8; 0];
        self.peek_from(&mut none).await.map(|(_, a)| a)
    }

    pub fn poll_peek_sender(&self, cx: &mut Context<'_>) -> Poll<io::Result<SocketAddr>> {
        let id = self.id();
        poll_net(cx, id, Dir::Read, |net, now| {
            net.udp_recv(id, &mut [], true, now)
        })
        .map(|r| r.map(|(_, a)| a))
    }

    pub fn try_peek_sender(&self) -> io::Result<SocketAddr> {
        self.try_peek_from(&mut []).map(|(_, a)| a)
    }

    pub fn broadcast(&self) -> io::Result<bool> {
        let id = self.id();
        with_net(|net, _, _| net.udp_broadcast(id))
    }

    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        let id = self.id();
        with_net(|net, _, _| net.udp_set_broadcast(id, on))
    }

    pub fn multicast_loop_v4(&self) -> io::Result<bool> {
        Ok(self.opts().multicast_loop_v4.unwrap_or(true))
    }

    pub fn set_multicast_loop_v4(&self, on: bool) -> io::Result<()> {
        self.opts().multicast_loop_v4 = Some(on);
        Ok(())
    }

    pub fn multicast_ttl_v4(&self) -> io::Result<u32> {
        Ok(self.opts().multicast_ttl_v4.unwrap_or(1))
    }

    pub fn set_multicast_ttl_v4(&self, ttl: u32) -> io::Result<()> {
        self.opts().multicast_ttl_v4 = Some(ttl);
        Ok(())
    }

    pub fn multicast_loop_v6(&self) -> io::Result<bool> {
        Ok(self.opts().multicast_loop_v6.unwrap_or(true))
    }

    pub fn set_multicast_loop_v6(&self, on: bool) -> io::Result<()> {
        self.opts().multicast_loop_v6 = Some(on);
        Ok(())
    }

    pub fn ttl(&self) -> io::Result<u32> {
        Ok(self.opts().ttl.unwrap_or(64))
    }

    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        if ttl == 0 || ttl > 255 {
            return Err(io::Error::from_raw_os_error(22));
        }
        self.opts().ttl = Some(ttl);
        Ok(())
    }

    pub fn tos_v4(&self) -> io::Result<u32> {
        Ok(self.opts().tos)
    }

    pub fn set_tos_v4(&self, tos: u32) -> io::Result<()> {
        self.opts().tos = tos;
        Ok(())
    }

    pub fn tclass_v6(&self) -> io::Result<u32> {
        Ok(self.opts().tclass)
    }

    pub fn set_tclass_v6(&self, tclass: u32) -> io::Result<()> {
        self.opts().tclass = tclass;
        Ok(())
    }

    /// Multicast is not simulated: joining a group is refused clearly.
    pub fn join_multicast_v4(&self, _multiaddr: Ipv4Addr, _interface: Ipv4Addr) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "sim: multicast is not simulated",
        ))
    }

    pub fn join_multicast_v6(&self, _multiaddr: &Ipv6Addr, _interface: u32) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "sim: multicast is not simulated",
        ))
    }

    pub fn leave_multicast_v4(&self, _multiaddr: Ipv4Addr, _interface: Ipv4Addr) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(99))
    }

    pub fn leave_multicast_v6(&self, _multiaddr: &Ipv6Addr, _interface: u32) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(99))
    }

    /// The device the socket is bound to: never one (see `bind_device`).
    pub fn device(&self) -> io::Result<Option<Vec<u8>>> {
        Ok(None)
    }

    /// `SO_BINDTODEVICE`: removing the binding (`None`) is what a socket
    /// already has; binding to a device is refused (unsupported.rs).
    #[track_caller]
    pub fn bind_device(&self, interface: Option<&[u8]>) -> io::Result<()> {
        let (why, instead) = super::socket::NO_DEVICES;
        match interface {
            None => Ok(()),
            Some(_) => Err(crate::simulation::unsupported::refuse(
                "UdpSocket::bind_device",
                why,
                instead,
            )),
        }
    }

    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        let id = self.id();
        Ok(with_net(|net, _, now| net.udp_take_error(id, now)))
    }
}

datagram_bufs!(
    UdpSocket,
    SocketAddr,
    poll: |id, cx, dst| poll_net(cx, id, Dir::Read, |net, now| net.udp_recv(id, dst, false, now)),
    try: |id, buf| with_net(|net, _, now| now_or_would_block(net.udp_recv(id, buf, false, now))),
);
refuse_std!(UdpSocket, std::net::UdpSocket, into);

fn now_or_would_block<T>(p: Progress<T>) -> io::Result<T> {
    match p {
        Progress::Ready(r) => r,
        Progress::Pending { .. } => Err(io::ErrorKind::WouldBlock.into()),
    }
}

fn readable(net: &mut sim_net::Net, id: sim_net::SocketId, now: u64) -> (Option<()>, Option<u64>) {
    match net.udp_readiness(id, now) {
        (true, _) => (Some(()), None),
        (false, at) => (None, at),
    }
}
