//! `TcpSocket`: a socket configured before it connects or listens.

use super::listener::TcpListener;
use super::stream::{finish_connect, TcpStream};
use super::{with_net, Handle};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

#[derive(Debug)]
struct State {
    v6: bool,
    bound: Option<Handle>,
    reuseaddr: bool,
    reuseport: bool,
    keepalive: bool,
    nodelay: bool,
    linger: Option<Duration>,
    send_buffer: u32,
    recv_buffer: u32,
    tos: u32,
    tclass: u32,
}

/// A TCP socket that has not yet been converted to a `TcpStream` or
/// `TcpListener`.
pub struct TcpSocket {
    state: Mutex<State>,
    /// Its live descriptor, once asked for (net/fd.rs).
    fd: OnceLock<i32>,
}

impl fmt::Debug for TcpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpSocket").finish_non_exhaustive()
    }
}

impl TcpSocket {
    fn new(v6: bool) -> io::Result<TcpSocket> {
        // As in Tokio, a socket is created (and configured) without a
        // runtime; binding, connecting and listening need the simulation.
        Ok(TcpSocket {
            state: Mutex::new(State {
                v6,
                bound: None,
                reuseaddr: false,
                reuseport: false,
                keepalive: false,
                nodelay: false,
                linger: None,
                send_buffer: 16_384,
                recv_buffer: 131_072,
                tos: 0,
                tclass: 0,
            }),
            fd: OnceLock::new(),
        })
    }

    pub fn new_v4() -> io::Result<TcpSocket> {
        TcpSocket::new(false)
    }

    pub fn new_v6() -> io::Result<TcpSocket> {
        TcpSocket::new(true)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_keepalive(&self, keepalive: bool) -> io::Result<()> {
        self.state().keepalive = keepalive;
        Ok(())
    }

    pub fn keepalive(&self) -> io::Result<bool> {
        Ok(self.state().keepalive)
    }

    pub fn set_reuseaddr(&self, reuseaddr: bool) -> io::Result<()> {
        self.state().reuseaddr = reuseaddr;
        Ok(())
    }

    pub fn reuseaddr(&self) -> io::Result<bool> {
        Ok(self.state().reuseaddr)
    }

    pub fn set_reuseport(&self, reuseport: bool) -> io::Result<()> {
        self.state().reuseport = reuseport;
        Ok(())
    }

    pub fn reuseport(&self) -> io::Result<bool> {
        Ok(self.state().reuseport)
    }

    pub fn set_send_buffer_size(&self, size: u32) -> io::Result<()> {
        // Linux doubles the value for bookkeeping, with a floor.
        self.state().send_buffer = size.saturating_mul(2).max(4608);
        Ok(())
    }

    pub fn send_buffer_size(&self) -> io::Result<u32> {
        Ok(self.state().send_buffer)
    }

    pub fn set_recv_buffer_size(&self, size: u32) -> io::Result<()> {
        self.state().recv_buffer = size.saturating_mul(2).max(2304);
        Ok(())
    }

    pub fn recv_buffer_size(&self) -> io::Result<u32> {
        Ok(self.state().recv_buffer)
    }

    pub fn set_linger(&self, dur: Option<Duration>) -> io::Result<()> {
        self.state().linger = dur;
        Ok(())
    }

    pub fn set_zero_linger(&self) -> io::Result<()> {
        self.set_linger(Some(Duration::ZERO))
    }

    pub fn linger(&self) -> io::Result<Option<Duration>> {
        Ok(self.state().linger)
    }

    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.state().nodelay = nodelay;
        Ok(())
    }

    pub fn nodelay(&self) -> io::Result<bool> {
        Ok(self.state().nodelay)
    }

    pub fn tclass_v6(&self) -> io::Result<u32> {
        Ok(self.state().tclass)
    }

    pub fn set_tclass_v6(&self, tclass: u32) -> io::Result<()> {
        self.state().tclass = tclass;
        Ok(())
    }

    pub fn tos_v4(&self) -> io::Result<u32> {
        Ok(self.state().tos)
    }

    #[deprecated = "Use `TcpSocket::tos_v4()` instead"]
    pub fn tos(&self) -> io::Result<u32> {
        self.tos_v4()
    }

    pub fn set_tos_v4(&self, tos: u32) -> io::Result<()> {
        self.state().tos = tos;
        Ok(())
    }

    #[deprecated = "Use `TcpSocket::set_tos_v4()` instead"]
    pub fn set_tos(&self, tos: u32) -> io::Result<()> {
        self.set_tos_v4(tos)
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.state().bound {
            Some(h) => {
                let id = h.id;
                with_net(|net, _, _| net.local_addr(id))
            }
            None => Ok(if self.state().v6 {
                "[::]:0".parse().expect("literal")
            } else {
                "0.0.0.0:0".parse().expect("literal")
            }),
        }
    }

    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        Ok(None)
    }

    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        let mut st = self.state();
        if st.bound.is_some() {
            return Err(io::Error::from_raw_os_error(22));
        }
        if addr.is_ipv6() != st.v6 {
            return Err(io::Error::from_raw_os_error(22));
        }
        let reuse = st.reuseaddr || st.reuseport;
        let id = with_net(|net, host, now| net.tcp_bind(host, addr, reuse, now))?;
        st.bound = Some(Handle::new(id));
        Ok(())
    }

    pub async fn connect(self, addr: SocketAddr) -> io::Result<TcpStream> {
        super::check_running()?;
        let (bound, linger, nodelay) = {
            let mut st = self.state();
            (st.bound.take(), st.linger, st.nodelay)
        };
        let bound_id = bound.as_ref().map(|h| h.id);
        let id = with_net(|net, host, now| net.tcp_connect(host, bound_id, addr, now))?;
        // The bound socket became the connecting one: one handle owns it.
        let handle = match bound {
            Some(h) => h,
            None => Handle::new(id),
        };
        let stream = finish_connect(handle, addr).await?;
        stream.set_nodelay(nodelay)?;
        if linger.is_some() {
            #[allow(deprecated)]
            stream.set_linger(linger)?;
        }
        Ok(stream)
    }

    pub fn listen(self, backlog: u32) -> io::Result<TcpListener> {
        let bound = self.state().bound.take();
        let handle = match bound {
            Some(h) => h,
            None => {
                let v6 = self.state().v6;
                let any: SocketAddr = if v6 { "[::]:0" } else { "0.0.0.0:0" }
                    .parse()
                    .expect("literal");
                Handle::new(with_net(|net, host, now| {
                    net.tcp_bind(host, any, false, now)
                })?)
            }
        };
        let id = handle.id;
        with_net(|net, _, _| net.tcp_listen(id, backlog))?;
        Ok(TcpListener::from_handle(handle))
    }

    /// A socket made inside the simulation with `socket(2)` (socket2, as
    /// hyper-util's `HttpConnector` does), with the options and the address
    /// its calls recorded (net/fd.rs). A real OS socket is refused.
    #[track_caller]
    pub fn from_std_stream(std_stream: std::net::TcpStream) -> TcpSocket {
        use std::os::fd::IntoRawFd;
        let fd = std_stream.into_raw_fd();
        let Some(stub) = crate::simulation::net::fd::take(fd) else {
            super::close_real(fd);
            super::refuse_std("TcpSocket::from_std_stream")
        };
        if !stub.stream || stub.listening.is_some() {
            super::refuse_std("TcpSocket::from_std_stream of a datagram or listening socket")
        }
        let socket = TcpSocket::new(stub.v6).expect("a new socket needs no simulation");
        {
            let mut st = socket.state();
            st.reuseaddr = stub.reuseaddr;
            st.reuseport = stub.reuseport;
            st.keepalive = stub.keepalive;
            st.nodelay = stub.nodelay;
            st.linger = stub.linger;
            st.send_buffer = stub.send_buffer;
            st.recv_buffer = stub.recv_buffer;
        }
        if let Some(addr) = stub.bound {
            // Linux bound it at `bind(2)`; here the simulated network does
            // it now, and a refusal (the address in use) is the caller's
            // `bind` error arriving late: a clear panic, not a silent
            // unbound socket.
            if let Err(e) = socket.bind(addr) {
                panic!("sim: binding the socket made with socket(2) to {addr} failed: {e}");
            }
        }
        socket
    }

    /// A listener made inside the simulation with `socket(2)`, `bind` and
    /// `listen` (`std::net::TcpListener::bind`): the same, bound and
    /// listening on the simulated network.
    pub(crate) fn listener_from_stub(
        stub: crate::simulation::net::fd::Stub,
    ) -> io::Result<TcpListener> {
        let socket = TcpSocket::new(stub.v6)?;
        {
            let mut st = socket.state();
            st.reuseaddr = stub.reuseaddr;
            st.reuseport = stub.reuseport;
        }
        let any = if stub.v6 { "[::]:0" } else { "0.0.0.0:0" };
        socket.bind(stub.bound.unwrap_or_else(|| any.parse().expect("literal")))?;
        socket.listen(stub.listening.unwrap_or(1024))
    }
}

/// Why `SO_BINDTODEVICE` is refused, and what instead.
pub(crate) const NO_DEVICES: (&str, &str) = (
    "a simulated host has one address and loopback, and no named network device to bind to",
    "Bind to the node's address instead",
);

impl TcpSocket {
    /// The device the socket is bound to: never one (see `bind_device`).
    pub fn device(&self) -> io::Result<Option<Vec<u8>>> {
        Ok(None)
    }

    /// `SO_BINDTODEVICE`: removing the binding (`None`) is what a socket
    /// already has; binding to a device is refused (unsupported.rs).
    #[track_caller]
    pub fn bind_device(&self, interface: Option<&[u8]>) -> io::Result<()> {
        match interface {
            None => Ok(()),
            Some(_) => Err(crate::simulation::unsupported::refuse(
                "TcpSocket::bind_device",
                NO_DEVICES.0,
                NO_DEVICES.1,
            )),
        }
    }
}

// Not made in the simulated network until `connect` or `listen`: a number
// of its own (net/fd.rs).
crate::simulation::net::fd::live_descriptor!(TcpSocket, |s| {
    *s.fd.get_or_init(crate::simulation::net::fd::live_unmade_fd)
});

impl std::os::fd::FromRawFd for TcpSocket {
    /// A socket made with `socket(2)` inside the simulation (a stub), as
    /// `from_std_stream` takes it; a real OS socket is refused.
    #[track_caller]
    unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> TcpSocket {
        // SAFETY: the caller's contract: `fd` is an open socket it owns,
        // whose ownership passes to the `std` stream.
        TcpSocket::from_std_stream(unsafe {
            <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd)
        })
    }
}

impl std::os::fd::IntoRawFd for TcpSocket {
    /// An unbound socket becomes a stub descriptor with its options (what
    /// `from_raw_fd` takes back); a bound one is refused, since its address
    /// is held by the simulated network, which a descriptor cannot carry.
    #[track_caller]
    fn into_raw_fd(self) -> std::os::fd::RawFd {
        let st = self.state();
        if st.bound.is_some() {
            crate::simulation::unsupported::refuse_panic(
                "TcpSocket::into_raw_fd of a bound socket",
                "its address is held by the simulated network, which a descriptor cannot carry",
                "Convert it before bind, or keep the TcpSocket",
            )
        }
        let fd = crate::simulation::net::fd::open(st.v6, true, true)
            .expect("sim: the stub descriptor range is used up");
        crate::simulation::net::fd::with(fd, |s| {
            s.reuseaddr = st.reuseaddr;
            s.reuseport = st.reuseport;
            s.keepalive = st.keepalive;
            s.nodelay = st.nodelay;
            s.linger = st.linger;
            s.send_buffer = st.send_buffer;
            s.recv_buffer = st.recv_buffer;
        })
        .expect("a stub just made");
        fd
    }
}
