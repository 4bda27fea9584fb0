//! `tokio::net` under simulation, bound to the `sim_net` model (TCP, UDP
//! and Unix sockets alike).
//!
//! The model answers every socket call at once, given the virtual time:
//! ready with a result, or pending until a time or a notification. This
//! module is where those answers meet wakers: a pending poll leaves its
//! waker in the socket's waiter list (one list for reading, one for
//! writing) and, when the model names a time, a timer for it; each call's
//! notifications wake the waiters of the sockets they name, now or through
//! a timer at their time. A spurious wake-up only costs a poll; a missing
//! one would hang, so every pending answer names either a time or a
//! notification that will come.

mod addr;
pub mod control;
pub(crate) mod fd;
mod listener;
mod shared;
mod socket;
mod split;
mod stream;
mod udp;
pub mod unix;

pub(crate) use addr::resolve_for_libc;
pub use addr::{lookup_host, ToSocketAddrs};
pub use listener::TcpListener;
pub use socket::TcpSocket;
pub use stream::TcpStream;
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixSocket, UnixStream};

/// TCP utility types, as in `tokio::net::tcp`.
pub mod tcp {
    pub use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
}

use super::core::executor::{expect_current, Core, Death, Driver, Wait};
use super::core::node::NodeId;
use super::core::timer::TimerKey;
use sim_net::{HostId, Net, Notification, Progress, SocketId};
use std::cell::Cell;
use std::io;
use std::task::{Context, Poll, Waker};

/// Which of a socket's waiter lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read = 0,
    Write = 1,
}

struct Waiter {
    waker: Waker,
    timer: Option<(TimerKey, u64)>,
}

#[derive(Default)]
struct SockWaiters {
    id: Option<SocketId>,
    dirs: [Vec<Waiter>; 2],
    /// Tokio's cached readiness per direction: set when an operation
    /// succeeds (and for a new stream), cleared when one finds nothing. A
    /// readiness check reports ready while it is set, as Tokio's
    /// edge-triggered driver does, even if the model has nothing now.
    sticky: [bool; 2],
}

/// The socket's waiter slot, reset if the slot belonged to a closed socket.
fn slot<'a>(net: &'a mut Network, core: &mut Core, sock: SocketId) -> &'a mut SockWaiters {
    let i = sock.index();
    if net.waiters.len() <= i {
        net.waiters.resize_with(i + 1, SockWaiters::default);
    }
    if net.waiters[i].id != Some(sock) {
        // A reused slot: whatever waited there waited on a closed socket.
        for list in &mut net.waiters[i].dirs {
            for old in list.drain(..) {
                if let Some((k, _)) = old.timer {
                    drop(core.timers_mut().remove(k));
                }
            }
        }
        net.waiters[i].id = Some(sock);
        net.waiters[i].sticky = [false; 2];
    }
    &mut net.waiters[i]
}

/// The run's network driver.
#[inline]
pub(crate) fn network(core: &mut Core) -> &mut Network {
    core.driver::<Network>()
}

/// A new stream's cached readiness (read, write): Tokio assumes an
/// accepted socket readable and writable, a connected one writable, until
/// an operation finds otherwise.
pub(crate) fn new_stream_ready(sock: SocketId, ready: [bool; 2]) {
    let exec = expect_current();
    let mut core = exec.core_mut();
    core.with_driver(|net: &mut Network, core| slot(net, core, sock).sticky = ready);
}

/// How an answer updates its direction's cached readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cache {
    /// Set when ready, cleared when pending (TCP, UDP).
    Follow,
    /// Cleared when pending, kept when ready (Unix sockets, whose
    /// readiness checks also set it: `shared::ready_from`).
    ClearOnWait,
}

fn set_sticky<T>(
    net: &mut Network,
    core: &mut Core,
    sock: SocketId,
    dir: Dir,
    cache: Cache,
    r: &Progress<T>,
) {
    let ready = matches!(r, Progress::Ready(_));
    if cache == Cache::ClearOnWait && ready {
        return;
    }
    slot(net, core, sock).sticky[dir as usize] = ready;
}

/// The simulated network.
#[derive(Default)]
pub(crate) struct Network {
    model: Option<Net>,
    hosts: usize,
    waiters: Vec<SockWaiters>,
    notes: Vec<Notification>,
    /// Connection attempts to routed names, numbered for the route draw.
    route_draws: u64,
    /// Settings to use when the model is created.
    pub(crate) config: Option<sim_net::Config>,
}

impl Network {
    /// Whether no TCP or UDP socket was made yet (settings may still
    /// change; Unix sockets take none of them).
    pub(crate) fn model_is_unused(&self) -> bool {
        self.model
            .as_ref()
            .is_none_or(|m| m.open_sockets() == m.open_unix_sockets())
    }

    /// The number of the next route draw (a connection attempt to a routed
    /// name).
    pub(crate) fn next_route_draw(&mut self) -> u64 {
        self.route_draws += 1;
        self.route_draws - 1
    }

    /// Drops an unused model so the next use builds it from new settings;
    /// returns it (its Unix sockets are to move into the new one).
    pub(crate) fn reset_model(&mut self) -> Option<Net> {
        self.hosts = 0;
        self.model.take()
    }
}

impl Network {
    /// The model, made now if the run has none yet, knowing every node as
    /// a host.
    fn host_model(&mut self, core: &Core) -> &mut Net {
        if self.model.is_none() {
            let mut config = self.config.take().unwrap_or_default();
            config.seed = crate::simulation::core::seed::decide(core.seed(), "net");
            let mut net = Net::new(config);
            if crate::simulation::core::config::recording() {
                net.record_traffic();
            }
            self.model = Some(net);
        }
        let net = self.model.as_mut().expect("made above");
        while self.hosts < core.nodes().len() {
            let node = &core.nodes()[self.hosts];
            let ip = node.ip.expect("every node has an IP");
            net.add_host(HostId(self.hosts as u32), ip);
            net.set_name(&node.name, vec![ip]);
            self.hosts += 1;
        }
        if net.records_traffic() {
            // The recorder notes which task made each call (run/record.rs).
            net.set_actor(super::core::executor::current().and_then(|e| e.current_task()));
        }
        net
    }
}

/// Makes sure the model exists and knows every node as a host.
#[inline]
pub(crate) fn model(core: &mut Core) -> &mut Net {
    let nodes = core.nodes().len();
    let n = network(core);
    if n.model.is_none() || n.hosts < nodes || n.model.as_ref().is_some_and(Net::records_traffic) {
        core.with_driver(|n: &mut Network, core| {
            n.host_model(core);
        });
    }
    network(core).model.as_mut().expect("made above")
}

/// The traffic log of a recorded run (run/record.rs); empty otherwise.
pub(crate) fn take_traffic(core: &mut Core) -> Vec<sim_net::NetEvent> {
    network(core)
        .model
        .as_mut()
        .map(Net::take_traffic)
        .unwrap_or_default()
}

/// The task behind each event of the traffic log (take it first).
pub(crate) fn take_traffic_actors(core: &mut Core) -> Vec<Option<u64>> {
    network(core)
        .model
        .as_mut()
        .map(Net::take_traffic_actors)
        .unwrap_or_default()
}

/// Events past the traffic log's bound.
pub(crate) fn traffic_dropped(core: &mut Core) -> u64 {
    core.driver_if_used::<Network>()
        .and_then(|n| n.model.as_ref())
        .map_or(0, Net::traffic_dropped)
}

/// Routes the model's notifications to waiters; returns wakers to wake once
/// the core is released.
pub(crate) fn route_notes(core: &mut Core, wake: &mut Vec<Waker>) {
    let Some(net) = core.driver_if_used::<Network>() else {
        return;
    };
    if net.model.is_none() {
        return;
    }
    core.with_driver(|n: &mut Network, core| route(n, core, wake));
}

fn route(network: &mut Network, core: &mut Core, wake: &mut Vec<Waker>) {
    let Some(net) = network.model.as_mut() else {
        return;
    };
    let mut notes = std::mem::take(&mut network.notes);
    net.take_notifications(&mut notes);
    let now = core.now();
    for n in notes.drain(..) {
        if network
            .waiters
            .get(n.socket.index())
            .is_none_or(|w| w.id != Some(n.socket))
        {
            continue;
        }
        let node = NodeId(
            network
                .model
                .as_ref()
                .and_then(|m| m.socket_host(n.socket))
                .map_or(0, |h| h.0),
        );
        for d in (0..2).filter(|&d| n.wakes.includes(d)) {
            let list = &mut network.waiters[n.socket.index()].dirs[d];
            if n.at <= now {
                for waiter in list.drain(..) {
                    if let Some((key, _)) = waiter.timer {
                        drop(core.timers_mut().remove(key));
                    }
                    wake.push(waiter.waker);
                }
            } else {
                let mut i = 0;
                while i < network.waiters[n.socket.index()].dirs[d].len() {
                    let (timer, waker) = {
                        let w = &network.waiters[n.socket.index()].dirs[d][i];
                        (w.timer, w.waker.clone())
                    };
                    let live = timer.filter(|(k, _)| !core.timers().is_fired(*k));
                    if live.is_none_or(|(_, at)| at > n.at) {
                        // A fired timer is freed too (its slot is kept
                        // until its key is let go of).
                        if let Some((k, _)) = timer {
                            drop(core.timers_mut().remove(k));
                        }
                        let waker = core.wake_ref(&waker);
                        let key = core.timers_mut().insert_unwatched(n.at, waker, node);
                        network.waiters[n.socket.index()].dirs[d][i].timer = Some((key, n.at));
                    }
                    i += 1;
                }
            }
        }
    }
    network.notes = notes;
}

/// Leaves `cx`'s waker on the socket's `dir` list, with a timer at
/// `wake_at` if given.
fn register(
    network: &mut Network,
    core: &mut Core,
    sock: SocketId,
    dir: Dir,
    cx: &Context<'_>,
    wake_at: Option<u64>,
) {
    let i = sock.index();
    slot(network, core, sock);
    let node = NodeId(
        network
            .model
            .as_ref()
            .and_then(|m| m.socket_host(sock))
            .map_or(0, |h| h.0),
    );
    let list = &network.waiters[i].dirs[dir as usize];
    let pos = list.iter().position(|w| w.waker.will_wake(cx.waker()));
    let pos = match pos {
        Some(p) => p,
        None => {
            network.waiters[i].dirs[dir as usize].push(Waiter {
                waker: cx.waker().clone(),
                timer: None,
            });
            network.waiters[i].dirs[dir as usize].len() - 1
        }
    };
    let timer = network.waiters[i].dirs[dir as usize][pos].timer;
    let live = timer.filter(|(k, _)| !core.timers().is_fired(*k));
    match (live, wake_at) {
        (Some((_, at)), Some(want)) if at == want => {}
        (_, want) => {
            // A fired timer is freed too (its slot is kept until its key is
            // let go of).
            if let Some((k, _)) = timer {
                drop(core.timers_mut().remove(k));
            }
            network.waiters[i].dirs[dir as usize][pos].timer = want.map(|at| {
                let waker = core.wake_ref(cx.waker());
                (core.timers_mut().insert_unwatched(at, waker, node), at)
            });
        }
    }
}

/// Forgets a closed socket's waiters.
fn unregister(core: &mut Core, sock: SocketId) -> Vec<Waker> {
    let mut out = Vec::new();
    core.with_driver(|network: &mut Network, core| {
        if let Some(w) = network.waiters.get_mut(sock.index()) {
            if w.id == Some(sock) {
                w.id = None;
                for list in &mut w.dirs {
                    for old in list.drain(..) {
                        // The timer's waker wakes the same task as the
                        // waiter's, which is woken below.
                        if let Some((k, _)) = old.timer {
                            drop(core.timers_mut().remove(k));
                        }
                        out.push(old.waker);
                    }
                }
            }
        }
    });
    out
}

/// Runs `f` with the network driver lent out of the core (one lookup for a
/// whole operation, which touches the model, the waiters and the timers),
/// then wakes what it woke once the core is released.
#[inline]
fn lend<R>(f: impl FnOnce(&mut Network, &mut Core, &mut Vec<Waker>) -> R) -> R {
    let exec = expect_current();
    // The list is kept for the thread's next operation: one allocation
    // less per read and write. A waker that reenters takes an empty list.
    let mut wake = SPARE_WAKE.with(Cell::take);
    let r = exec
        .core_mut()
        .with_driver(|net: &mut Network, core| f(net, core, &mut wake));
    for w in wake.drain(..) {
        w.wake();
    }
    SPARE_WAKE.with(|spare| spare.set(wake));
    r
}

thread_local! {
    /// [`lend`]'s wake list between operations (empty, its capacity kept).
    static SPARE_WAKE: Cell<Vec<Waker>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` on the model as the current node, now, then delivers the
/// notifications it left.
#[track_caller]
pub(crate) fn with_net<R>(f: impl FnOnce(&mut Net, HostId, u64) -> R) -> R {
    let node = expect_current().current_node();
    lend(|net, core, wake| {
        let r = f(net.host_model(core), HostId(node.0), core.now());
        route(net, core, wake);
        r
    })
}

/// Polls a model operation on `sock`: ready, or pending with the waker left
/// on the socket's `dir` list.
pub(crate) fn poll_net<T>(
    cx: &mut Context<'_>,
    sock: SocketId,
    dir: Dir,
    f: impl FnOnce(&mut Net, u64) -> Progress<T>,
) -> Poll<io::Result<T>> {
    poll_net_with(cx, sock, dir, Cache::Follow, f)
}

/// [`poll_net`] with the socket kind's cached-readiness rule.
pub(crate) fn poll_net_with<T>(
    cx: &mut Context<'_>,
    sock: SocketId,
    dir: Dir,
    cache: Cache,
    f: impl FnOnce(&mut Net, u64) -> Progress<T>,
) -> Poll<io::Result<T>> {
    poll_core(cx, sock, dir, cache, |net, core| {
        f(net.host_model(core), core.now())
    })
}

/// The one place a pending model answer meets a waker: runs `f` with the
/// core borrowed and the driver lent, updates the cached readiness, leaves
/// the waker (and a timer) when pending, routes the notifications, and
/// wakes after the borrow is released.
fn poll_core<T>(
    cx: &mut Context<'_>,
    sock: SocketId,
    dir: Dir,
    cache: Cache,
    f: impl FnOnce(&mut Network, &mut Core) -> Progress<T>,
) -> Poll<io::Result<T>> {
    // As Tokio's I/O: an operation spends a unit of the task's budget
    // (given back when it has to wait).
    let coop = std::task::ready!(crate::task::coop::poll_proceed(cx));
    let r = lend(|net, core, wake| {
        let r = f(net, core);
        set_sticky(net, core, sock, dir, cache, &r);
        let r = match r {
            Progress::Ready(v) => Poll::Ready(v),
            Progress::Pending { wake_at } => {
                register(net, core, sock, dir, cx, wake_at);
                Poll::Pending
            }
        };
        route(net, core, wake);
        r
    });
    if r.is_pending() {
        note_wait(sock, dir);
    }
    if r.is_ready() {
        crate::simulation::core::executor::progress(coop);
    }
    r
}

/// Notes, for the deadlock report, that the poll under way waits on
/// `sock`'s `dir` (core/executor/wait.rs; described by `describe_wait`).
fn note_wait(sock: SocketId, dir: Dir) {
    let what = match dir {
        Dir::Read => "a read of",
        Dir::Write => "a write to",
    };
    crate::simulation::core::executor::with_current(|e| {
        e.note_wait(Wait::Driver(what, sock.as_u64()))
    });
}

/// Spends a unit of the task's budget for an operation that never waits
/// (a datagram send), as Tokio's `async_io` does.
pub(crate) async fn spend_budget() {
    let coop = std::future::poll_fn(crate::task::coop::poll_proceed).await;
    crate::simulation::core::executor::progress(coop);
}

/// Runs a non-waiting operation (`try_*`) on `sock`: `WouldBlock` when the
/// model would wait; the cached readiness follows the outcome.
pub(crate) fn try_net<T>(
    sock: SocketId,
    dir: Dir,
    f: impl FnOnce(&mut Net, u64) -> Progress<T>,
) -> io::Result<T> {
    try_net_with(sock, dir, Cache::Follow, f)
}

/// [`try_net`] with the socket kind's cached-readiness rule.
pub(crate) fn try_net_with<T>(
    sock: SocketId,
    dir: Dir,
    cache: Cache,
    f: impl FnOnce(&mut Net, u64) -> Progress<T>,
) -> io::Result<T> {
    let r = lend(|net, core, wake| {
        let r = f(net.host_model(core), core.now());
        set_sticky(net, core, sock, dir, cache, &r);
        route(net, core, wake);
        r
    });
    match r {
        Progress::Ready(r) => r,
        Progress::Pending { .. } => Err(io::ErrorKind::WouldBlock.into()),
    }
}

/// Like [`poll_net`] for a read of at most `len` bytes: `f` gets the length
/// to read, which the runtime's `sim.net.short_read` fault point may cut to
/// half (only in runs with fault points on; decided inside the same borrow).
pub(crate) fn poll_net_read<T>(
    cx: &mut Context<'_>,
    sock: SocketId,
    len: usize,
    f: impl FnOnce(&mut Net, u64, usize) -> Progress<T>,
) -> Poll<io::Result<T>> {
    poll_core(cx, sock, Dir::Read, Cache::Follow, |net, core| {
        let short = len > 1 && core.fault_point("sim.net.short_read", 1, 4).is_some();
        let limit = if short { len / 2 } else { len };
        f(net.host_model(core), core.now(), limit)
    })
}

/// A write of `data` on `sock`, whose delivery the runtime's
/// `sim.net.slow_delivery` fault point may delay by 1–50 ms (only in runs
/// with fault points on).
pub(crate) fn slow_delivery(
    sock: SocketId,
    data: &[u8],
    cx: &mut Context<'_>,
) -> Poll<io::Result<usize>> {
    poll_core(cx, sock, Dir::Write, Cache::Follow, |net, core| {
        let extra = core
            .fault_point("sim.net.slow_delivery", 1, 4)
            .map_or(0, |draw| {
                (1 + crate::simulation::core::seed::splitmix(draw) % 50) * 1_000_000
            });
        net.host_model(core)
            .tcp_write_slow(sock, data, core.now(), extra)
    })
}

/// A readiness check: `f` gets the model, the time and the cached
/// readiness of both directions (which it may update), and answers
/// `(ready, wake_at)`; pending leaves the waker on `dir`'s list. A closed
/// socket's id keeps its hands off the waiter slot, which a new socket may
/// hold by now (its answer is ready anyway).
pub(crate) fn poll_ready_with<T>(
    cx: &mut Context<'_>,
    sock: SocketId,
    dir: Dir,
    f: impl FnOnce(&mut Net, u64, &mut [bool; 2]) -> (Option<T>, Option<u64>),
) -> Poll<T> {
    let r = lend(|net, core, wake| {
        let live = net.host_model(core).kind(sock).is_some();
        let mut sticky = if live {
            slot(net, core, sock).sticky
        } else {
            [false; 2]
        };
        let answer = f(net.host_model(core), core.now(), &mut sticky);
        if live {
            slot(net, core, sock).sticky = sticky;
        }
        let r = match answer {
            (Some(v), _) => Poll::Ready(v),
            (None, wake_at) => {
                register(net, core, sock, dir, cx, wake_at);
                Poll::Pending
            }
        };
        route(net, core, wake);
        r
    });
    if r.is_pending() {
        note_wait(sock, dir);
    }
    r
}

/// A socket of the model, closed when dropped (as `close(2)` on the last
/// file descriptor).
#[derive(Debug)]
pub(crate) struct Handle {
    pub(crate) id: SocketId,
    exec: u64,
    /// `SO_LINGER` of zero: close with a RST.
    pub(crate) abort_on_close: std::sync::atomic::AtomicBool,
}

impl Handle {
    pub(crate) fn new(id: SocketId) -> Handle {
        Handle {
            id,
            exec: expect_current().id,
            abort_on_close: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Outside its simulation (after the runtime is gone) there is
        // nothing left to close.
        let Some(exec) = super::core::executor::current() else {
            return;
        };
        if exec.id != self.exec {
            return;
        }
        let mut wake = Vec::new();
        {
            let mut core = exec.core_mut();
            let now = core.now();
            if let Some(net) = network(&mut core).model.as_mut() {
                if self
                    .abort_on_close
                    .load(std::sync::atomic::Ordering::Relaxed)
                {
                    net.abort(self.id, now);
                }
                net.close(self.id, now);
            }
            route_notes(&mut core, &mut wake);
            // Futures waiting on this socket are being dropped with it.
            drop(unregister(&mut core, self.id));
        }
        for w in wake {
            w.wake();
        }
    }
}

/// Tokio's I/O error after its runtime shut down: new sockets are refused
/// once the simulation's runtime was shut down (its main node is no longer
/// alive).
pub(crate) fn check_running() -> io::Result<()> {
    let exec = expect_current();
    let alive = exec.core().node(NodeId::MAIN).alive;
    if alive {
        Ok(())
    } else {
        Err(io::Error::other(
            crate::simulation::runtime::RUNTIME_SHUTTING_DOWN_ERROR,
        ))
    }
}

/// Closes a real descriptor that a `from_std` was handed before refusing it.
pub(crate) fn close_real(fd: i32) {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` came from `into_raw_fd` of an owned std socket, so this
    // is its only owner; dropping the `OwnedFd` closes it once.
    drop(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
}

/// The error for a socket handed in from outside the simulation.
#[track_caller]
pub(crate) fn refuse_std(what: &str) -> ! {
    // Tokio looks for its reactor first: outside any runtime, its panic.
    drop(expect_current());
    panic!(
        "sim: {what} is not supported in simulation: a std socket is a real OS socket and \
         cannot join the simulated network. Create it with tokio::net (bind / connect) instead."
    )
}

// ----- the driver: lifecycle hooks, called with the core borrowed ---------

impl Driver for Network {
    fn create(_: &Core) -> Network {
        Network::default()
    }

    /// A crashed machine goes silent before its tasks drop, so their
    /// sockets vanish without FIN or RST.
    fn node_dying(&mut self, core: &mut Core, node: NodeId, death: Death, wake: &mut Vec<Waker>) {
        if death == Death::Crash && self.model.is_some() {
            self.host_model(core).host_crash(HostId(node.0), core.now());
            route(self, core, wake);
        }
    }

    /// A killed process's kernel closes its sockets (FIN, or RST with
    /// unread data; its Unix sockets too).
    fn node_died(&mut self, core: &mut Core, node: NodeId, death: Death, wake: &mut Vec<Waker>) {
        if death == Death::Kill && self.model.is_some() {
            self.host_model(core).host_kill(HostId(node.0), core.now());
            route(self, core, wake);
        }
    }

    /// The node runs again on the same host.
    fn node_restarted(&mut self, core: &mut Core, node: NodeId, wake: &mut Vec<Waker>) {
        if self.model.is_some() {
            self.host_model(core)
                .host_revive(HostId(node.0), core.now());
            route(self, core, wake);
        }
    }

    /// A socket wait: the socket's kind and addresses.
    fn describe_wait(&mut self, _: &Core, what: &'static str, id: u64) -> Option<String> {
        if what != "a read of" && what != "a write to" {
            return None;
        }
        let model = self.model.as_ref()?;
        let sock = SocketId::from_u64(id);
        let Some(kind) = model.kind(sock) else {
            return Some(format!("{what} a socket closed since"));
        };
        let addr =
            |r: io::Result<std::net::SocketAddr>| r.map_or("-".to_string(), |a| a.to_string());
        Some(format!(
            "{what} {kind:?} socket {} (local {}, peer {})",
            sock.index(),
            addr(model.local_addr(sock)),
            addr(model.peer_addr(sock))
        ))
    }
}

/// Tokio's `TryFrom<std::net::…>` conversions exist (code that names them
/// compiles) and refuse, as `from_std` does.
macro_rules! refuse_try_from {
    ($($ours:ty => $std:ty, $what:literal;)*) => {$(
        impl TryFrom<$std> for $ours {
            type Error = io::Error;
            #[track_caller]
            fn try_from(value: $std) -> Result<Self, Self::Error> {
                drop(value);
                refuse_std($what)
            }
        }
    )*};
}

refuse_try_from! {
    TcpListener => std::net::TcpListener, "TcpListener::try_from(std::net::TcpListener)";
    TcpStream => std::net::TcpStream, "TcpStream::try_from(std::net::TcpStream)";
    UdpSocket => std::net::UdpSocket, "UdpSocket::try_from(std::net::UdpSocket)";
    UnixListener => std::os::unix::net::UnixListener, "UnixListener::try_from(std::os::unix::net::UnixListener)";
    UnixStream => std::os::unix::net::UnixStream, "UnixStream::try_from(std::os::unix::net::UnixStream)";
    UnixDatagram => std::os::unix::net::UnixDatagram, "UnixDatagram::try_from(std::os::unix::net::UnixDatagram)";
}

// `AsRawFd`/`AsFd` for the simulated sockets, as Tokio's have: the number
// is the socket's live descriptor (`sockfd::FD_LIVE` + its index), which
// the socket-level interposers answer (libc/net.rs). Crates set
// options through it (tonic's server: `socket2::SockRef::from(&stream)`).
use crate::simulation::net::fd::{live_descriptor, live_fd};
live_descriptor!(TcpStream, |s| live_fd(s.id().index()));
live_descriptor!(TcpListener, |s| live_fd(s.id().index()));
live_descriptor!(UdpSocket, |s| live_fd(s.id().index()));

crate::simulation::unsupported::raw_io!(TcpStream, "TcpStream");
crate::simulation::unsupported::raw_io!(UdpSocket, "UdpSocket");

impl AsRef<TcpStream> for TcpStream {
    fn as_ref(&self) -> &TcpStream {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::UdpSocket;
    use crate::simulation::core::config::Config;
    use crate::simulation::core::executor::Exec;

    /// A socket's wake-up timers are freed once they fired and the socket
    /// waits again, and, being unwatched, never hold back an early jump: a
    /// long run of deliveries keeps neither slots nor unseen timers.
    #[test]
    fn delivery_timers_do_not_pile_up() {
        let exec = Exec::new(Config::from_env(7));
        let _entered = exec.enter();
        exec.block_on(async {
            let a = UdpSocket::bind("127.0.0.1:1").await.unwrap();
            let b = UdpSocket::bind("127.0.0.1:2").await.unwrap();
            let mut buf = [0u8; 8];
            for i in 0..2_000u32 {
                a.send_to(&i.to_le_bytes(), "127.0.0.1:2").await.unwrap();
                let (n, _) = b.recv_from(&mut buf).await.unwrap();
                assert_eq!(n, 4);
            }
        });
        let slots = exec.core().timers().slots();
        assert!(slots < 16, "2,000 deliveries left {slots} timer slots");
        assert_eq!(exec.core().timers().unseen(), 0);
    }
}
