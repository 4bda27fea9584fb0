//! Socket descriptors that simulated code makes with `socket(2)` itself.
//!
//! Some crates build a socket below Tokio's API and hand it over: hyper-util's
//! `HttpConnector` (under reqwest and tonic's `Endpoint::connect`) makes its
//! socket with socket2, sets options by descriptor and calls
//! `TcpSocket::from_std_stream`; a service may bind a `std::net::TcpListener`
//! and pass it to `TcpListener::from_std`. Inside a simulation such a socket
//! is a *stub*: a descriptor number from a range the kernel never hands out
//! (from 2^30, past any `RLIMIT_NOFILE`), with what the calls made on it
//! said (address family, options, the bound address, `listen`). Tokio's
//! `from_std` functions turn a stub into a simulated socket with those
//! settings. A stub does no I/O: `connect`, `accept`, `send`, `recv` and
//! the like on it fail the run as a forbidden operation with a message that
//! names the call (libc/net.rs), since a blocking std socket cannot
//! join the simulated network.
//!
//! The table is the simulation thread's, emptied when a simulation starts
//! (`hooks::activate`); a descriptor number is never reused within a run.

use crate::simulation::core::hooks;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// The first stub descriptor. Linux caps descriptors at `nr_open`
/// (1,048,576 by default, 2^30 at most minus a little), so the kernel's and
/// the simulation's numbers never meet.
pub(crate) const FD_BASE: i32 = 1 << 30;

/// The first *live* descriptor: the number a simulated Tokio socket (TCP,
/// UDP or Unix) shows through `AsRawFd`/`AsFd` (tonic's server sets TCP
/// keep-alive through `socket2::SockRef::from(&stream)`), `FD_LIVE` + the
/// socket's index in the network model. No table: the number names the
/// socket. Option calls on it are accepted (libc/net.rs); I/O through
/// it is refused.
pub(crate) const FD_LIVE: i32 = FD_BASE + (1 << 29);

/// The live descriptors of sockets not made yet (a `TcpSocket`, a stream
/// `UnixSocket` before `connect` or `listen`), numbered per thread when
/// first asked for.
const FD_LIVE_UNMADE: i32 = FD_LIVE + (1 << 28) + (1 << 27);

/// The live descriptor of the simulated socket at `index`.
pub(crate) fn live_fd(index: usize) -> i32 {
    assert!(
        index < (1 << 28),
        "sim: more than 2^28 sockets in one simulation"
    );
    FD_LIVE + index as i32
}

/// A new live descriptor for a socket not made yet.
pub(crate) fn live_unmade_fd() -> i32 {
    let n = NEXT_UNMADE.with(|n| {
        let v = n.get();
        n.set(v + 1);
        v
    });
    assert!(
        n < (1 << 27),
        "sim: more than 2^27 unmade sockets asked for a descriptor on one thread"
    );
    FD_LIVE_UNMADE + n
}

/// `AsRawFd` and `AsFd` for a simulated socket type, whose live descriptor
/// `$fd` gives: option calls through it are accepted, I/O through it is
/// refused (libc/net.rs).
macro_rules! live_descriptor {
    ($ty:ty, |$s:ident| $fd:expr) => {
        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                let $s = self;
                $fd
            }
        }
        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                // SAFETY: the number is never -1 and never a kernel
                // descriptor: every libc call made on it inside the
                // simulation is answered by the interposers, and it names
                // this socket for as long as the borrow lasts.
                unsafe {
                    std::os::fd::BorrowedFd::borrow_raw(std::os::fd::AsRawFd::as_raw_fd(self))
                }
            }
        }
    };
}
pub(crate) use live_descriptor;

/// What the calls made on a stub said.
#[derive(Clone, Debug)]
pub(crate) struct Stub {
    pub v6: bool,
    /// `SOCK_STREAM` (else `SOCK_DGRAM`).
    pub stream: bool,
    pub nonblocking: bool,
    pub reuseaddr: bool,
    pub reuseport: bool,
    pub keepalive: bool,
    pub nodelay: bool,
    pub only_v6: bool,
    pub linger: Option<Duration>,
    pub send_buffer: u32,
    pub recv_buffer: u32,
    pub bound: Option<SocketAddr>,
    /// `listen`'s backlog, once called.
    pub listening: Option<u32>,
}

thread_local! {
    static TABLE: RefCell<BTreeMap<i32, Stub>> = const { RefCell::new(BTreeMap::new()) };
    static NEXT: Cell<i32> = const { Cell::new(FD_BASE) };
    static NEXT_UNMADE: Cell<i32> = const { Cell::new(0) };
}

hooks::carried!(
    TABLE_CARRIED: (BTreeMap<i32, Stub>, i32, i32),
    take: || (
        TABLE.with(|t| std::mem::take(&mut *t.borrow_mut())),
        NEXT.with(Cell::get),
        NEXT_UNMADE.with(Cell::get),
    ),
    put: |(t, n, u): (BTreeMap<i32, Stub>, i32, i32)| {
        TABLE.with(|c| *c.borrow_mut() = t);
        NEXT.with(|c| c.set(n));
        NEXT_UNMADE.with(|c| c.set(u));
    },
);

#[linkme::distributed_slice(hooks::INTERPOSERS)]
static TABLE_PER_SIMULATION: hooks::Interposer = hooks::Interposer {
    start: reset,
    stop: hooks::Interposer::nothing,
};

/// Empties the table: a new simulation starts with no stubs.
fn reset() {
    let _ = TABLE.try_with(|t| t.borrow_mut().clear());
    let _ = NEXT.try_with(|n| n.set(FD_BASE));
    let _ = NEXT_UNMADE.try_with(|n| n.set(0));
}

/// A new stub; `None` when the range is used up (a run that made a
/// billion sockets), which the caller reports as `EMFILE`.
pub(crate) fn open(v6: bool, stream: bool, nonblocking: bool) -> Option<i32> {
    let fd = NEXT.try_with(|n| {
        let fd = n.get();
        if fd >= crate::simulation::fs::fd::FD_FILE {
            return None;
        }
        n.set(fd + 1);
        Some(fd)
    });
    let fd = fd.ok().flatten()?;
    TABLE
        .try_with(|t| {
            t.borrow_mut().insert(
                fd,
                Stub {
                    v6,
                    stream,
                    nonblocking,
                    reuseaddr: false,
                    reuseport: false,
                    keepalive: false,
                    nodelay: false,
                    only_v6: false,
                    linger: None,
                    // Linux's defaults for a new TCP socket.
                    send_buffer: 16_384,
                    recv_buffer: 131_072,
                    bound: None,
                    listening: None,
                },
            )
        })
        .ok()?;
    Some(fd)
}

/// Whether `fd` is a stub of this thread's simulation (cheap for every
/// real descriptor: one comparison).
#[inline]
pub(crate) fn is_stub(fd: i32) -> bool {
    fd >= FD_BASE
        && TABLE
            .try_with(|t| t.try_borrow().is_ok_and(|t| t.contains_key(&fd)))
            .unwrap_or(false)
}

/// Runs `f` on the stub `fd`; `None` if there is none.
pub(crate) fn with<R>(fd: i32, f: impl FnOnce(&mut Stub) -> R) -> Option<R> {
    if fd < FD_BASE {
        return None;
    }
    TABLE
        .try_with(|t| {
            let mut t = t.try_borrow_mut().ok()?;
            t.get_mut(&fd).map(f)
        })
        .ok()
        .flatten()
}

/// Takes the stub `fd` out of the table (Tokio takes it over, or it is
/// closed).
pub(crate) fn take(fd: i32) -> Option<Stub> {
    if fd < FD_BASE {
        return None;
    }
    TABLE
        .try_with(|t| t.try_borrow_mut().ok()?.remove(&fd))
        .ok()
        .flatten()
}
