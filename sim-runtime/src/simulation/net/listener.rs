//! `TcpListener`: accepts simulated connections.

use super::addr::{resolve, ToSocketAddrs};
use super::shared::{debug_addrs, refuse_std};
use super::stream::TcpStream;
use super::{poll_net, with_net, Dir, Handle};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};

/// A TCP socket server, listening for connections on the simulated network.
pub struct TcpListener {
    handle: Handle,
    ttl: AtomicU32,
}

debug_addrs!(TcpListener, local: local_addr);

impl TcpListener {
    pub(crate) fn id(&self) -> sim_net::SocketId {
        self.handle.id
    }

    pub(crate) fn from_handle(handle: Handle) -> TcpListener {
        TcpListener {
            handle,
            ttl: AtomicU32::new(64),
        }
    }

    /// Binds to each resolved address in turn until one works, then
    /// listens (with `SO_REUSEADDR` and a backlog of 1024, as Tokio does).
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        super::check_running()?;
        let addrs = resolve(&addr)?;
        let mut last = None;
        for addr in addrs {
            let r = with_net(|net, host, now| {
                let id = net.tcp_bind(host, addr, true, now)?;
                match net.tcp_listen(id, 1024) {
                    Ok(()) => Ok(id),
                    Err(e) => {
                        net.close(id, 0);
                        Err(e)
                    }
                }
            });
            match r {
                Ok(id) => return Ok(TcpListener::from_handle(Handle::new(id))),
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

    /// Accepts a new incoming connection.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// Polls to accept a new incoming connection.
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let id = self.handle.id;
        poll_net(cx, id, Dir::Read, |net, now| net.tcp_accept(id, now)).map(|r| {
            r.map(|(s, peer)| (TcpStream::from_handle(Handle::new(s), [true, true]), peer))
        })
    }

    /// A listener bound (and listening) inside the simulation with std
    /// (`std::net::TcpListener::bind`, whose `socket(2)` made a stub:
    /// net/fd.rs), now on the simulated network. A real OS socket is
    /// refused.
    #[track_caller]
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        use std::os::fd::IntoRawFd;
        let fd = listener.into_raw_fd();
        match crate::simulation::net::fd::take(fd) {
            Some(stub) if stub.stream && stub.listening.is_some() => {
                super::socket::TcpSocket::listener_from_stub(stub)
            }
            Some(_) => super::refuse_std("TcpListener::from_std of a socket that is not listening"),
            None => {
                super::close_real(fd);
                super::refuse_std("TcpListener::from_std")
            }
        }
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let id = self.handle.id;
        with_net(|net, _, _| net.local_addr(id))
    }

    pub fn ttl(&self) -> io::Result<u32> {
        Ok(self.ttl.load(Ordering::Relaxed))
    }

    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        if ttl == 0 || ttl > 255 {
            return Err(io::Error::from_raw_os_error(22));
        }
        self.ttl.store(ttl, Ordering::Relaxed);
        Ok(())
    }

    /// The listener's socket in the model (for `sim::net` faults).
    pub(crate) fn socket_id(&self) -> sim_net::SocketId {
        self.handle.id
    }
}

refuse_std!(TcpListener, std::net::TcpListener, into);
