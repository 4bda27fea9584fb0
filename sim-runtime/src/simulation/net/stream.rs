//! `TcpStream`: one end of a simulated TCP connection.

use super::addr::{resolve, ToSocketAddrs};
use super::shared::{
    debug_addrs, fill, poll_interest, ready_from, refuse_std, stream_io, NetStream,
};
use super::{poll_net, try_net, with_net, Cache, Dir, Handle};
use crate::io::{Interest, ReadBuf, Ready};
use sim_net::SocketId;
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// Socket options a real socket would remember.
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub nodelay: bool,
    pub linger: Option<Option<Duration>>,
    pub ttl: Option<u32>,
    pub quickack: bool,
}

/// The shared part of a stream: its socket and options.
#[derive(Debug)]
pub(crate) struct Inner {
    pub handle: Handle,
    pub options: Mutex<Options>,
}

impl Inner {
    pub(crate) fn id(&self) -> SocketId {
        self.handle.id
    }
}

/// A TCP stream between a local and a remote socket, on the simulated
/// network.
pub struct TcpStream {
    pub(crate) inner: Arc<Inner>,
}

debug_addrs!(TcpStream, local: local_addr, peer: peer_addr);

/// Connects a socket that the model already started connecting.
pub(crate) async fn finish_connect(handle: Handle, to: SocketAddr) -> io::Result<TcpStream> {
    let id = handle.id;
    poll_fn(|cx| poll_net(cx, id, Dir::Write, |net, now| net.tcp_poll_connect(id, now)))
        .await
        .inspect_err(|e| {
            if e.kind() == io::ErrorKind::ConnectionRefused {
                refused(to);
            }
        })?;
    // Connected: writable (the connect waited for that), not yet readable.
    Ok(TcpStream::from_handle(handle, [false, true]))
}

/// Says in the trace why a connect was refused: which node has the address
/// and listens on no such port yet, and whether this seed's early timers
/// may have let the client's sleep end before that node's first steps (a
/// fixed sleep before connecting is a race on a real machine too).
fn refused(to: SocketAddr) {
    let exec = super::super::core::executor::expect_current();
    let core = exec.core();
    let early = core.config().early_timers;
    let node = match core.nodes().with_ip(to.ip()) {
        Some(n) => format!("node '{}'", n.name),
        None => "no node".to_string(),
    };
    tracing::info!(
        target: "sim::net",
        "connect to {to} refused: {node} has no listener on port {} yet{}",
        to.port(),
        if early {
            " (this seed has early timers: a node's first steps can come after a client's \
             short sleep; wait until it accepts, e.g. retry the connect)"
        } else {
            ""
        }
    );
}

impl TcpStream {
    pub(crate) fn from_handle(handle: Handle, ready: [bool; 2]) -> TcpStream {
        super::new_stream_ready(handle.id, ready);
        TcpStream {
            inner: Arc::new(Inner {
                handle,
                options: Mutex::new(Options::default()),
            }),
        }
    }

    pub(crate) fn id(&self) -> SocketId {
        self.inner.id()
    }

    /// Opens a TCP connection to a remote host; each resolved address is
    /// tried in turn until one connects.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        super::check_running()?;
        let addrs = resolve(&addr)?;
        let mut last = None;
        for addr in addrs {
            let started = with_net(|net, host, now| net.tcp_connect(host, None, addr, now));
            match started {
                Ok(id) => match finish_connect(Handle::new(id), addr).await {
                    Ok(s) => return Ok(s),
                    Err(e) => last = Some(e),
                },
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

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with_net(|net, _, _| net.local_addr(id))
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        let id = self.id();
        with_net(|net, _, _| net.peer_addr(id))
    }

    /// The socket's pending error (`SO_ERROR`); the simulation reports
    /// errors on the next read or write instead, so this is `None`.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        Ok(None)
    }

    /// Receives data without removing it from the queue.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let id = self.id();
        poll_fn(|cx| {
            poll_net(cx, id, Dir::Read, |net, now| {
                net.tcp_read(id, buf, true, now)
            })
        })
        .await
    }

    pub fn poll_peek(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        let id = self.id();
        fill(buf, |dst| {
            poll_net(cx, id, Dir::Read, |net, now| {
                net.tcp_read(id, dst, true, now)
            })
            .map(|r| r.map(|n| (n, n)))
        })
    }

    pub fn nodelay(&self) -> io::Result<bool> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .nodelay)
    }

    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .nodelay = nodelay;
        Ok(())
    }

    pub fn linger(&self) -> io::Result<Option<Duration>> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .linger
            .flatten())
    }

    pub fn quickack(&self) -> io::Result<bool> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .quickack)
    }

    pub fn set_quickack(&self, quickack: bool) -> io::Result<()> {
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .quickack = quickack;
        Ok(())
    }

    #[deprecated = "`SO_LINGER` causes the socket to block the thread on drop"]
    pub fn set_linger(&self, dur: Option<Duration>) -> io::Result<()> {
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .linger = Some(dur);
        // A zero linger makes close send a RST instead of a FIN.
        self.inner.handle.abort_on_close.store(
            dur == Some(Duration::ZERO),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(())
    }

    /// Sets `SO_LINGER` to zero: closing the socket resets the connection.
    pub fn set_zero_linger(&self) -> io::Result<()> {
        #[allow(deprecated)]
        self.set_linger(Some(Duration::ZERO))
    }

    pub fn ttl(&self) -> io::Result<u32> {
        Ok(self
            .inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ttl
            .unwrap_or(64))
    }

    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        if ttl == 0 || ttl > 255 {
            return Err(io::Error::from_raw_os_error(22));
        }
        self.inner
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ttl = Some(ttl);
        Ok(())
    }
}

impl NetStream for TcpStream {
    fn sock(&self) -> SocketId {
        self.id()
    }

    fn poll_ready_id(id: SocketId, cx: &mut Context<'_>, interest: Interest) -> Poll<Ready> {
        poll_interest(cx, id, interest, |net, now, sticky| {
            ready_from(net.tcp_readiness(id, now), interest, sticky, Cache::Follow)
        })
    }

    fn poll_read_id(id: SocketId, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>> {
        // A fault point of the runtime's own may make the read short (as
        // TCP may): see `poll_net_read`.
        super::poll_net_read(cx, id, dst.len(), |net, now, limit| {
            net.tcp_read(id, &mut dst[..limit], false, now)
        })
    }

    fn poll_write_id(id: SocketId, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        // A fault point of the runtime's own may slow this write's delivery.
        let r = super::slow_delivery(id, data, cx);
        if let Poll::Ready(Ok(n)) = &r {
            tracing::trace!(target: "sim::net", socket = id.as_u64(), bytes = n, "sent");
        }
        r
    }

    fn try_read_id(id: SocketId, buf: &mut [u8]) -> io::Result<usize> {
        try_net(id, Dir::Read, |net, now| net.tcp_read(id, buf, false, now))
    }

    fn try_write_id(id: SocketId, data: &[u8]) -> io::Result<usize> {
        try_net(id, Dir::Write, |net, now| net.tcp_write(id, data, now))
    }

    fn shutdown_id(id: SocketId, how: Shutdown) -> io::Result<()> {
        let (r, w) = match how {
            Shutdown::Read => (true, false),
            Shutdown::Write => (false, true),
            Shutdown::Both => (true, true),
        };
        with_net(|net, _, now| net.tcp_shutdown(id, r, w, now))
    }
}

stream_io!(TcpStream);
refuse_std!(TcpStream, std::net::TcpStream);
