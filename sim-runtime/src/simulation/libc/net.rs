//! The socket-level libc calls made on stub descriptors (net/fd.rs), and
//! name resolution (`getaddrinfo`) inside a simulation.
//!
//! Every function here first asks whether its descriptor is a stub (a
//! number from 2^30 up, so one comparison for every real descriptor) or
//! whether the thread is inside a simulation; otherwise it calls glibc's
//! definition unchanged. On a stub:
//!
//! | call | answer |
//! |---|---|
//! | `close` | the stub is gone |
//! | `fcntl` `F_GETFL`/`F_SETFL`/`F_GETFD`/`F_SETFD`, `ioctl` `FIONBIO`/`FIOCLEX` | the recorded `O_NONBLOCK`, close-on-exec always on |
//! | `setsockopt`/`getsockopt` | recorded: `SO_REUSEADDR`, `SO_REUSEPORT`, `SO_KEEPALIVE`, `SO_LINGER`, `SO_SNDBUF`, `SO_RCVBUF`, `TCP_NODELAY`, `IPV6_V6ONLY`; accepted and not modelled: keep-alive timing, `TCP_USER_TIMEOUT`, `SO_MARK`, `IP_TOS`, `IPV6_TCLASS`, `SO_BINDTODEVICE`; `SO_ERROR` is 0, `SO_TYPE` and `SO_DOMAIN` what the socket is; anything else `ENOPROTOOPT` |
//! | `bind`, `listen`, `getsockname` | recorded and reported; Tokio's `from_std` binds and listens on the simulated network |
//! | `connect`, `accept`, `send*`, `recv*`, `shutdown`, `getpeername`, `dup` | refused (`EACCES`): the run fails as a forbidden operation, with a line that names the call |
//!
//! A simulated Tokio socket's own descriptor (`AsRawFd`/`AsFd`,
//! `sockfd::FD_LIVE` up) takes option calls (accepted, not applied: Tokio's
//! setters are what the simulated network models), `fcntl`/`ioctl`
//! non-blocking queries, and a `close` that does nothing (the socket owns
//! it); I/O through it is refused like a stub's.
//!
//! `getaddrinfo`, inside a simulation, answers from the simulated network's
//! names, as `tokio::net::lookup_host` does (`EAI_NONAME` for a name no node
//! or route has); its lists are this module's, freed by `freeaddrinfo`
//! here and only here.

#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
mod linux {
    use super::super::fs::{fcntl_sim, int};
    use super::super::sys::{set_errno, Real};
    use crate::simulation::core::hooks;
    use crate::simulation::fs::fd as filefd;
    use crate::simulation::net::fd as sockfd;
    use crate::simulation::net::fd::{Stub, FD_BASE, FD_LIVE};
    use libc::{c_char, c_int, c_long, c_void, size_t, sockaddr, socklen_t, ssize_t};
    use std::collections::BTreeSet;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
    use std::sync::Mutex;
    use std::time::Duration;

    static REAL_CLOSE: Real = Real::new(c"close");
    static REAL_FCNTL: Real = Real::new(c"fcntl");
    static REAL_IOCTL: Real = Real::new(c"ioctl");
    static REAL_SETSOCKOPT: Real = Real::new(c"setsockopt");
    static REAL_GETSOCKOPT: Real = Real::new(c"getsockopt");
    static REAL_BIND: Real = Real::new(c"bind");
    static REAL_LISTEN: Real = Real::new(c"listen");
    static REAL_GETSOCKNAME: Real = Real::new(c"getsockname");
    static REAL_GETPEERNAME: Real = Real::new(c"getpeername");
    static REAL_CONNECT: Real = Real::new(c"connect");
    static REAL_ACCEPT: Real = Real::new(c"accept");
    static REAL_ACCEPT4: Real = Real::new(c"accept4");
    static REAL_SEND: Real = Real::new(c"send");
    static REAL_SENDTO: Real = Real::new(c"sendto");
    static REAL_SENDMSG: Real = Real::new(c"sendmsg");
    static REAL_RECV: Real = Real::new(c"recv");
    static REAL_RECVFROM: Real = Real::new(c"recvfrom");
    static REAL_RECVMSG: Real = Real::new(c"recvmsg");
    static REAL_SHUTDOWN: Real = Real::new(c"shutdown");
    static REAL_GETADDRINFO: Real = Real::new(c"getaddrinfo");
    static REAL_FREEADDRINFO: Real = Real::new(c"freeaddrinfo");

    /// Refuses `call` on a stub: the run fails as a forbidden operation.
    fn refuse(call: &str) -> c_int {
        hooks::note_real_socket_attempt();
        let msg = format!(
            "sim: a simulated task called {call} on a socket it made with socket(2) (std::net, \
             socket2): such a socket does no I/O in a simulation until tokio::net takes it \
             (TcpSocket::from_std_stream, TcpListener::from_std, UdpSocket::from_std). Use \
             tokio::net instead; see docs/breakage.md.\n"
        );
        // SAFETY: `msg` is a valid byte slice for its whole length.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        set_errno(libc::EACCES);
        -1
    }

    #[inline]
    fn stub(fd: c_int) -> bool {
        (FD_BASE..filefd::FD_FILE).contains(&fd) && sockfd::is_stub(fd)
    }

    /// A simulated Tokio socket's descriptor (sockfd::FD_LIVE).
    #[inline]
    fn live(fd: c_int) -> bool {
        fd >= FD_LIVE && hooks::active()
    }

    /// # Safety
    ///
    /// The C contract of `close`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn close(fd: c_int) -> c_int {
        if filefd::in_range(fd) && filefd::is_open(fd) {
            return int(filefd::close(fd));
        }
        if fd >= FD_BASE && sockfd::take(fd).is_some() {
            return 0;
        }
        if live(fd) {
            // A Tokio socket's descriptor is borrowed (`AsFd`); the socket
            // owns it and closes with its drop.
            return 0;
        }
        // SAFETY: glibc's `close`, the argument passes through.
        unsafe { real!(REAL_CLOSE as fn(c_int) -> c_int)(fd) }
    }

    /// `fcntl`, declared with one integer argument: on x86_64 a variadic
    /// caller passes its third argument in the same register, and every
    /// command takes an integer or a pointer there.
    ///
    /// # Safety
    ///
    /// The C contract of `fcntl`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
        if filefd::in_range(fd) && filefd::is_open(fd) {
            return fcntl_sim(fd, cmd, arg);
        }
        if live(fd) {
            return match cmd {
                libc::F_GETFL => libc::O_RDWR | libc::O_NONBLOCK,
                libc::F_SETFL | libc::F_SETFD => 0,
                libc::F_GETFD => libc::FD_CLOEXEC,
                libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => refuse("dup (fcntl F_DUPFD)"),
                _ => {
                    set_errno(libc::EINVAL);
                    -1
                }
            };
        }
        if stub(fd) {
            return match cmd {
                libc::F_GETFL => sockfd::with(fd, |s| {
                    libc::O_RDWR | if s.nonblocking { libc::O_NONBLOCK } else { 0 }
                })
                .unwrap_or(-1),
                libc::F_SETFL => {
                    let nb = arg as c_int & libc::O_NONBLOCK != 0;
                    sockfd::with(fd, |s| s.nonblocking = nb);
                    0
                }
                libc::F_GETFD => libc::FD_CLOEXEC,
                libc::F_SETFD => 0,
                libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => refuse("dup (fcntl F_DUPFD)"),
                _ => {
                    set_errno(libc::EINVAL);
                    -1
                }
            };
        }
        // SAFETY: glibc's `fcntl`, the arguments pass through.
        unsafe { real!(REAL_FCNTL as fn(c_int, c_int, c_long) -> c_int)(fd, cmd, arg) }
    }

    /// `fcntl64`, what C built with 64-bit offsets calls (SQLite): as
    /// [`fcntl`].
    ///
    /// # Safety
    ///
    /// The C contract of `fcntl`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
        // SAFETY: the same contract.
        unsafe { fcntl(fd, cmd, arg) }
    }

    /// `ioctl`, declared with one pointer argument (see `fcntl`): std's
    /// `set_nonblocking` is `ioctl(FIONBIO)`.
    ///
    /// # Safety
    ///
    /// The C contract of `ioctl`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn ioctl(fd: c_int, request: libc::c_ulong, arg: *mut c_void) -> c_int {
        if filefd::in_range(fd) && filefd::is_open(fd) {
            return match request {
                libc::FIOCLEX => int(filefd::set_cloexec(fd, true)),
                libc::FIONCLEX => int(filefd::set_cloexec(fd, false)),
                _ => int(Err(libc::ENOTTY)),
            };
        }
        if live(fd) && matches!(request, libc::FIONBIO | libc::FIOCLEX | libc::FIONCLEX) {
            return 0;
        }
        if stub(fd) {
            return match request {
                libc::FIONBIO if !arg.is_null() => {
                    // SAFETY: FIONBIO's argument is a pointer to an int.
                    let nb = unsafe { std::ptr::read_unaligned(arg.cast::<c_int>()) } != 0;
                    sockfd::with(fd, |s| s.nonblocking = nb);
                    0
                }
                libc::FIOCLEX | libc::FIONCLEX => 0,
                _ => {
                    set_errno(libc::ENOTTY);
                    -1
                }
            };
        }
        // SAFETY: glibc's `ioctl`, the arguments pass through.
        unsafe {
            real!(REAL_IOCTL as fn(c_int, libc::c_ulong, *mut c_void) -> c_int)(fd, request, arg)
        }
    }

    /// Reads an `int` option value.
    ///
    /// # Safety
    ///
    /// `val` is valid for reading `len` bytes.
    unsafe fn int_value(val: *const c_void, len: socklen_t) -> Option<c_int> {
        if val.is_null() || (len as usize) < std::mem::size_of::<c_int>() {
            return None;
        }
        // SAFETY: checked above; the caller's buffer may be unaligned.
        Some(unsafe { std::ptr::read_unaligned(val.cast::<c_int>()) })
    }

    /// # Safety
    ///
    /// The C contract of `setsockopt`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn setsockopt(
        fd: c_int,
        level: c_int,
        name: c_int,
        val: *const c_void,
        len: socklen_t,
    ) -> c_int {
        if live(fd) {
            // Accepted, not applied: the options a crate sets by descriptor
            // on a Tokio socket (keep-alive, no-delay, buffer sizes) have no
            // effect the simulated network models beyond Tokio's own
            // setters.
            return 0;
        }
        if !stub(fd) {
            // SAFETY: glibc's `setsockopt`, the arguments pass through.
            return unsafe {
                real!(REAL_SETSOCKOPT as fn(c_int, c_int, c_int, *const c_void, socklen_t) -> c_int)(
                    fd, level, name, val, len,
                )
            };
        }
        if level == libc::SOL_SOCKET && name == libc::SO_LINGER {
            if val.is_null() || (len as usize) < std::mem::size_of::<libc::linger>() {
                set_errno(libc::EINVAL);
                return -1;
            }
            // SAFETY: checked above.
            let l = unsafe { std::ptr::read_unaligned(val.cast::<libc::linger>()) };
            let linger = (l.l_onoff != 0).then(|| Duration::from_secs(l.l_linger.max(0) as u64));
            sockfd::with(fd, |s| s.linger = linger);
            return 0;
        }
        // SAFETY: the caller's contract.
        let Some(v) = (unsafe { int_value(val, len) }) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        let on = v != 0;
        let known = sockfd::with(fd, |s: &mut Stub| match (level, name) {
            (libc::SOL_SOCKET, libc::SO_REUSEADDR) => {
                s.reuseaddr = on;
                true
            }
            (libc::SOL_SOCKET, libc::SO_REUSEPORT) => {
                s.reuseport = on;
                true
            }
            (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => {
                s.keepalive = on;
                true
            }
            (libc::SOL_SOCKET, libc::SO_SNDBUF) => {
                s.send_buffer = v.max(0) as u32;
                true
            }
            (libc::SOL_SOCKET, libc::SO_RCVBUF) => {
                s.recv_buffer = v.max(0) as u32;
                true
            }
            (libc::IPPROTO_TCP, libc::TCP_NODELAY) => {
                s.nodelay = on;
                true
            }
            (libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) => {
                s.only_v6 = on;
                true
            }
            // Accepted, not modelled: the simulated network has no
            // keep-alive probes, marks, classes of service or devices.
            (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE)
            | (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL)
            | (libc::IPPROTO_TCP, libc::TCP_KEEPCNT)
            | (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT)
            | (libc::SOL_SOCKET, libc::SO_MARK)
            | (libc::SOL_SOCKET, libc::SO_BINDTODEVICE)
            | (libc::IPPROTO_IP, libc::IP_TOS)
            | (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => true,
            _ => false,
        });
        if known == Some(true) {
            0
        } else {
            set_errno(libc::ENOPROTOOPT);
            -1
        }
    }

    /// # Safety
    ///
    /// The C contract of `getsockopt`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn getsockopt(
        fd: c_int,
        level: c_int,
        name: c_int,
        val: *mut c_void,
        len: *mut socklen_t,
    ) -> c_int {
        if live(fd)
            && (level, name) == (libc::SOL_SOCKET, libc::SO_ERROR)
            && !val.is_null()
            && !len.is_null()
        {
            // SAFETY: the caller's contract.
            unsafe {
                std::ptr::write_unaligned(val.cast::<c_int>(), 0);
                *len = std::mem::size_of::<c_int>() as socklen_t;
            }
            return 0;
        }
        if live(fd) {
            set_errno(libc::ENOPROTOOPT);
            return -1;
        }
        if !stub(fd) {
            // SAFETY: glibc's `getsockopt`, the arguments pass through.
            return unsafe {
                real!(
                    REAL_GETSOCKOPT
                        as fn(c_int, c_int, c_int, *mut c_void, *mut socklen_t) -> c_int
                )(fd, level, name, val, len)
            };
        }
        let v = sockfd::with(fd, |s| match (level, name) {
            (libc::SOL_SOCKET, libc::SO_ERROR) => Some(0),
            (libc::SOL_SOCKET, libc::SO_TYPE) => Some(if s.stream {
                libc::SOCK_STREAM
            } else {
                libc::SOCK_DGRAM
            }),
            (libc::SOL_SOCKET, libc::SO_DOMAIN) => {
                Some(if s.v6 { libc::AF_INET6 } else { libc::AF_INET })
            }
            (libc::SOL_SOCKET, libc::SO_REUSEADDR) => Some(c_int::from(s.reuseaddr)),
            (libc::SOL_SOCKET, libc::SO_REUSEPORT) => Some(c_int::from(s.reuseport)),
            (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => Some(c_int::from(s.keepalive)),
            (libc::SOL_SOCKET, libc::SO_SNDBUF) => Some(s.send_buffer as c_int),
            (libc::SOL_SOCKET, libc::SO_RCVBUF) => Some(s.recv_buffer as c_int),
            (libc::SOL_SOCKET, libc::SO_ACCEPTCONN) => Some(c_int::from(s.listening.is_some())),
            (libc::IPPROTO_TCP, libc::TCP_NODELAY) => Some(c_int::from(s.nodelay)),
            (libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) => Some(c_int::from(s.only_v6)),
            _ => None,
        })
        .flatten();
        let Some(v) = v else {
            set_errno(libc::ENOPROTOOPT);
            return -1;
        };
        // SAFETY: the caller's contract: `len` points at the buffer's size,
        // `val` is valid for that many bytes.
        unsafe {
            if len.is_null() || val.is_null() || (*len as usize) < std::mem::size_of::<c_int>() {
                set_errno(libc::EINVAL);
                return -1;
            }
            std::ptr::write_unaligned(val.cast::<c_int>(), v);
            *len = std::mem::size_of::<c_int>() as socklen_t;
        }
        0
    }

    /// Reads a `sockaddr_in`/`sockaddr_in6`.
    ///
    /// # Safety
    ///
    /// `addr` is valid for reading `len` bytes.
    unsafe fn read_addr(addr: *const sockaddr, len: socklen_t) -> Option<SocketAddr> {
        if addr.is_null() || (len as usize) < std::mem::size_of::<libc::sa_family_t>() {
            return None;
        }
        // SAFETY: at least the family is readable (checked above).
        let family =
            c_int::from(unsafe { std::ptr::read_unaligned(addr.cast::<libc::sa_family_t>()) });
        match family {
            libc::AF_INET if len as usize >= std::mem::size_of::<libc::sockaddr_in>() => {
                // SAFETY: the length covers a `sockaddr_in`.
                let a = unsafe { std::ptr::read_unaligned(addr.cast::<libc::sockaddr_in>()) };
                Some(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                )))
            }
            libc::AF_INET6 if len as usize >= std::mem::size_of::<libc::sockaddr_in6>() => {
                // SAFETY: the length covers a `sockaddr_in6`.
                let a = unsafe { std::ptr::read_unaligned(addr.cast::<libc::sockaddr_in6>()) };
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }

    /// Writes `a` as the C API does (truncated to the caller's buffer,
    /// `*len` set to the full size).
    ///
    /// # Safety
    ///
    /// `out` is valid for writing `*len` bytes; `len` is valid.
    unsafe fn write_addr(a: SocketAddr, out: *mut sockaddr, len: *mut socklen_t) {
        let (bytes, full): (Vec<u8>, usize) = match a {
            SocketAddr::V4(v4) => {
                // SAFETY: all-zero is a valid `sockaddr_in`.
                let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                s.sin_family = libc::AF_INET as libc::sa_family_t;
                s.sin_port = v4.port().to_be();
                s.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                let n = std::mem::size_of::<libc::sockaddr_in>();
                // SAFETY: `s` is a plain value of `n` bytes.
                (
                    unsafe { std::slice::from_raw_parts((&raw const s).cast::<u8>(), n) }.to_vec(),
                    n,
                )
            }
            SocketAddr::V6(v6) => {
                // SAFETY: all-zero is a valid `sockaddr_in6`.
                let mut s: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                s.sin6_port = v6.port().to_be();
                s.sin6_addr.s6_addr = v6.ip().octets();
                s.sin6_flowinfo = v6.flowinfo();
                s.sin6_scope_id = v6.scope_id();
                let n = std::mem::size_of::<libc::sockaddr_in6>();
                // SAFETY: `s` is a plain value of `n` bytes.
                (
                    unsafe { std::slice::from_raw_parts((&raw const s).cast::<u8>(), n) }.to_vec(),
                    n,
                )
            }
        };
        // SAFETY: the caller's contract.
        unsafe {
            let room = (*len as usize).min(full);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), room);
            *len = full as socklen_t;
        }
    }

    /// # Safety
    ///
    /// The C contract of `bind`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
        if !stub(fd) {
            // SAFETY: glibc's `bind`, the arguments pass through.
            return unsafe {
                real!(REAL_BIND as fn(c_int, *const sockaddr, socklen_t) -> c_int)(fd, addr, len)
            };
        }
        // SAFETY: the caller's contract.
        let Some(a) = (unsafe { read_addr(addr, len) }) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        let r = sockfd::with(fd, |s| {
            if s.bound.is_some() || a.is_ipv6() != s.v6 {
                Err(libc::EINVAL)
            } else {
                s.bound = Some(a);
                Ok(())
            }
        });
        match r {
            Some(Ok(())) => 0,
            Some(Err(e)) => {
                set_errno(e);
                -1
            }
            None => {
                set_errno(libc::EBADF);
                -1
            }
        }
    }

    /// # Safety
    ///
    /// The C contract of `listen`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn listen(fd: c_int, backlog: c_int) -> c_int {
        if !stub(fd) {
            // SAFETY: glibc's `listen`, the arguments pass through.
            return unsafe { real!(REAL_LISTEN as fn(c_int, c_int) -> c_int)(fd, backlog) };
        }
        let ok = sockfd::with(fd, |s| {
            if !s.stream {
                return false;
            }
            // As Linux: listening on an unbound socket binds an ephemeral
            // port; the simulated network picks it when Tokio takes over.
            s.listening = Some(backlog.clamp(1, 4096) as u32);
            true
        });
        if ok == Some(true) {
            0
        } else {
            set_errno(libc::EOPNOTSUPP);
            -1
        }
    }

    /// # Safety
    ///
    /// The C contract of `getsockname`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn getsockname(
        fd: c_int,
        addr: *mut sockaddr,
        len: *mut socklen_t,
    ) -> c_int {
        if live(fd) {
            // Tokio's `local_addr` answers for a Tokio socket.
            set_errno(libc::EOPNOTSUPP);
            return -1;
        }
        if !stub(fd) {
            // SAFETY: glibc's `getsockname`, the arguments pass through.
            return unsafe {
                real!(REAL_GETSOCKNAME as fn(c_int, *mut sockaddr, *mut socklen_t) -> c_int)(
                    fd, addr, len,
                )
            };
        }
        let a = sockfd::with(fd, |s| {
            s.bound.unwrap_or_else(|| {
                if s.v6 {
                    SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0)
                } else {
                    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)
                }
            })
        });
        match a {
            Some(a) if !addr.is_null() && !len.is_null() => {
                // SAFETY: the caller's contract.
                unsafe { write_addr(a, addr, len) };
                0
            }
            _ => {
                set_errno(libc::EINVAL);
                -1
            }
        }
    }

    /// Calls that would do I/O on a stub: refused (see the module docs).
    macro_rules! refused_on_stubs {
        ($($(#[$doc:meta])* fn $name:ident / $real:ident ($fd:ident: c_int $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {$(
            $(#[$doc])*
            ///
            /// # Safety
            ///
            /// The C contract of the function of this name.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($fd: c_int $(, $arg: $ty)*) -> $ret {
                if stub($fd) || live($fd) {
                    return refuse(stringify!($name)) as $ret;
                }
                // SAFETY: glibc's function of this name, the arguments pass
                // through.
                unsafe { real!($real as fn(c_int $(, $ty)*) -> $ret)($fd $(, $arg)*) }
            }
        )*};
    }

    refused_on_stubs! {
        fn connect / REAL_CONNECT (fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
        fn accept / REAL_ACCEPT (fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
        fn accept4 / REAL_ACCEPT4 (fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
        fn getpeername / REAL_GETPEERNAME (fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
        fn shutdown / REAL_SHUTDOWN (fd: c_int, how: c_int) -> c_int;
        fn send / REAL_SEND (fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t;
        fn sendto / REAL_SENDTO (fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t;
        fn sendmsg / REAL_SENDMSG (fd: c_int, msg: *const libc::msghdr, flags: c_int) -> ssize_t;
        fn recv / REAL_RECV (fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
        fn recvfrom / REAL_RECVFROM (fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
        fn recvmsg / REAL_RECVMSG (fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> ssize_t;
    }

    // ----------------------------------------------------------------------
    // Names.
    // ----------------------------------------------------------------------

    /// The heads of the lists `getaddrinfo` made here, so `freeaddrinfo`
    /// frees exactly those itself and passes every other list to glibc.
    static OURS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

    fn ours() -> std::sync::MutexGuard<'static, BTreeSet<usize>> {
        OURS.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A service name or number as a port.
    fn port_of(service: &str) -> Option<u16> {
        if let Ok(p) = service.parse() {
            return Some(p);
        }
        // The few names services pass; others fail as an unknown service.
        match service {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        }
    }

    /// `getaddrinfo(3)`: inside a simulation, from the simulated network's
    /// names; outside, glibc's.
    ///
    /// # Safety
    ///
    /// The C contract of `getaddrinfo`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn getaddrinfo(
        node: *const c_char,
        service: *const c_char,
        hints: *const libc::addrinfo,
        res: *mut *mut libc::addrinfo,
    ) -> c_int {
        if !hooks::active() {
            // SAFETY: glibc's `getaddrinfo`, the arguments pass through.
            return unsafe {
                real!(
                    REAL_GETADDRINFO
                        as fn(
                            *const c_char,
                            *const c_char,
                            *const libc::addrinfo,
                            *mut *mut libc::addrinfo,
                        ) -> c_int
                )(node, service, hints, res)
            };
        }
        if res.is_null() || (node.is_null() && service.is_null()) {
            return libc::EAI_NONAME;
        }
        // SAFETY: the caller's contract: NUL-terminated strings or null,
        // `hints` null or valid.
        let (node, service, hints) = unsafe {
            (
                (!node.is_null()).then(|| {
                    std::ffi::CStr::from_ptr(node)
                        .to_string_lossy()
                        .into_owned()
                }),
                (!service.is_null()).then(|| {
                    std::ffi::CStr::from_ptr(service)
                        .to_string_lossy()
                        .into_owned()
                }),
                (!hints.is_null()).then(|| *hints),
            )
        };
        let (family, mut socktype, mut protocol, flags) = hints
            .map_or((libc::AF_UNSPEC, 0, 0, 0), |h| {
                (h.ai_family, h.ai_socktype, h.ai_protocol, h.ai_flags)
            });
        let port = match &service {
            None => 0,
            Some(s) => match port_of(s) {
                Some(p) => p,
                None => return libc::EAI_SERVICE,
            },
        };
        let ips = match &node {
            None if flags & libc::AI_PASSIVE != 0 => vec![IpAddr::V4(Ipv4Addr::UNSPECIFIED)],
            None => vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            Some(n) if flags & libc::AI_NUMERICHOST != 0 => match n.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => return libc::EAI_NONAME,
            },
            Some(n) => match crate::simulation::net::resolve_for_libc(n) {
                Some(ips) => ips,
                None => return libc::EAI_NONAME,
            },
        };
        let ips: Vec<IpAddr> = ips
            .into_iter()
            .filter(|ip| match family {
                libc::AF_INET => ip.is_ipv4(),
                libc::AF_INET6 => ip.is_ipv6(),
                _ => true,
            })
            .collect();
        if ips.is_empty() {
            return libc::EAI_NONAME;
        }
        if socktype == 0 {
            socktype = libc::SOCK_STREAM;
        }
        if protocol == 0 {
            protocol = if socktype == libc::SOCK_DGRAM {
                libc::IPPROTO_UDP
            } else {
                libc::IPPROTO_TCP
            };
        }
        // One allocation per entry: the `addrinfo`, then room for the
        // largest address it can hold.
        let size =
            std::mem::size_of::<libc::addrinfo>() + std::mem::size_of::<libc::sockaddr_in6>();
        let mut head: *mut libc::addrinfo = std::ptr::null_mut();
        for ip in ips.iter().rev() {
            // SAFETY: `calloc` returns null or `size` zeroed bytes, aligned
            // for any type.
            let e = unsafe { libc::calloc(1, size) }.cast::<libc::addrinfo>();
            if e.is_null() {
                // SAFETY: `head` is a list made here above.
                unsafe { free_list(head) };
                return libc::EAI_MEMORY;
            }
            // SAFETY: `e` is `size` writable bytes; the address goes right
            // after the `addrinfo`, within them.
            unsafe {
                let addr = e
                    .cast::<u8>()
                    .add(std::mem::size_of::<libc::addrinfo>())
                    .cast::<sockaddr>();
                let mut len = std::mem::size_of::<libc::sockaddr_in6>() as socklen_t;
                write_addr(SocketAddr::new(*ip, port), addr, &mut len);
                (*e).ai_family = if ip.is_ipv6() {
                    libc::AF_INET6
                } else {
                    libc::AF_INET
                };
                (*e).ai_socktype = socktype;
                (*e).ai_protocol = protocol;
                (*e).ai_addrlen = len;
                (*e).ai_addr = addr;
                (*e).ai_next = head;
            }
            head = e;
        }
        ours().insert(head as usize);
        // SAFETY: `res` is valid for writing (checked non-null above).
        unsafe { *res = head };
        0
    }

    /// Frees a list made by `getaddrinfo` above.
    ///
    /// # Safety
    ///
    /// `head` is null or a list made there, not yet freed.
    unsafe fn free_list(mut head: *mut libc::addrinfo) {
        while !head.is_null() {
            // SAFETY: each entry is one `calloc` allocation.
            unsafe {
                let next = (*head).ai_next;
                libc::free(head.cast());
                head = next;
            }
        }
    }

    /// # Safety
    ///
    /// The C contract of `freeaddrinfo`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn freeaddrinfo(res: *mut libc::addrinfo) {
        if !res.is_null() && ours().remove(&(res as usize)) {
            // SAFETY: made by `getaddrinfo` here, now forgotten by `OURS`.
            unsafe { free_list(res) };
            return;
        }
        // SAFETY: glibc's `freeaddrinfo` for glibc's list.
        unsafe { real!(REAL_FREEADDRINFO as fn(*mut libc::addrinfo) -> ())(res) }
    }
}
