//! The simulated network as a synchronous, deterministic data structure.
//!
//! [`Net`] holds every host, socket, connection and link of one simulation.
//! It has no executor and no clock: every operation takes the current
//! virtual time `now` (nanoseconds since the start of the run) and answers
//! at once — [`Progress::Ready`] with a result, or [`Progress::Pending`] with
//! the time at which asking again may give another answer. After each call
//! the caller drains [`Net::take_notifications`]: the sockets whose answers
//! may have changed because of the call, and from when. The runtime
//! (`sim-runtime`) is the one place where these meet wakers and timers.
//!
//! ```
//! use sim_net::{Config, HostId, Net, Progress};
//! use std::net::SocketAddr;
//!
//! let mut net = Net::new(Config::default());
//! let (a, b) = (HostId(0), HostId(1));
//! net.add_host(a, "10.0.0.1".parse().unwrap());
//! net.add_host(b, "10.0.0.2".parse().unwrap());
//! let l = net.tcp_bind(b, "0.0.0.0:80".parse().unwrap(), false, 0).unwrap();
//! net.tcp_listen(l, 128).unwrap();
//! let c = net.tcp_connect(a, None, "10.0.0.2:80".parse().unwrap(), 0).unwrap();
//! // The handshake takes a round trip; nothing is established at time 0.
//! assert!(matches!(net.tcp_poll_connect(c, 0), Progress::Pending { .. }));
//! let rtt = 2 * net.config().latency_ns + 2 * net.config().jitter_ns;
//! assert!(matches!(net.tcp_poll_connect(c, rtt), Progress::Ready(Ok(()))));
//! ```
//!
//! # Semantics (normative)
//!
//! These are the rules the runtime and the conformance suite rely on. Each
//! one is a test in this crate or in `sim-runtime/tests/net` (Unix sockets:
//! `sim-runtime/tests/uds`).
//!
//! **Hosts and addresses.** A host has one IP address and a loopback
//! (`127.0.0.0/8`, `::1`). A socket may bind the unspecified address, a
//! loopback address, or the host's own IP; any other IP is
//! `AddrNotAvailable` (`EADDRNOTAVAIL`). A port already bound on an
//! overlapping address is `AddrInUse` (`EADDRINUSE`). Port 0 picks an
//! ephemeral port in `32768..=60999`, starting at a per-host point drawn from
//! the seed. Names resolve to host IPs; a routed name reaches a set of hosts,
//! one chosen per connection from the seed and the connection's number.
//!
//! **Links.** Every ordered pair of hosts is a link with a latency and a
//! jitter (a per-link setting, else the configured default); a host talks to
//! itself over loopback with `loopback_latency_ns`. The delay of a chunk is
//! `latency + h(seed, link, connection, chunk number) mod (jitter + 1)`: a
//! function of identities, never of call order.
//!
//! **TCP.** A connect sends a SYN. If the link is blocked (partition, clog)
//! or the destination host is crashed or unknown, the SYN is lost and
//! retried after 1 s, 2 s, 4 s, … (`syn_retries`, Linux's 6), then the
//! connect fails with `TimedOut` (`ETIMEDOUT`). If the destination has no
//! listener on the port, the answer is a RST: `ConnectionRefused`
//! (`ECONNREFUSED`) one round trip later. If the listener's accept queue is
//! full, the SYN is dropped and retried as above. Otherwise the connect
//! completes one round trip later and the connection is in the listener's
//! queue, ready to `accept`, one and a half round trips after the SYN
//! (before any data the client sends after connecting can arrive).
//!
//! Each direction of a connection is an ordered byte pipe. A write copies
//! as many bytes as fit in the direction's buffer (`send_buffer +
//! recv_buffer`, counting bytes in flight and bytes arrived but unread) and
//! schedules their arrival after the link's delay, never before the previous
//! chunk's arrival: bytes are never lost, duplicated, reordered or corrupted
//! inside a stream (one a reset ends is cut short: the peer reads a prefix).
//! A full buffer makes writes wait until the reader drains.
//! `shutdown(Write)` sends a FIN after the queued bytes: the peer reads them,
//! then EOF (0), and may still write back. Closing a socket sends a FIN
//! after the queued bytes: the peer reads every one, then EOF. If bytes it
//! never read were queued toward it, the close sends a RST instead and, as
//! Linux's does, discards its send queue: of the bytes it wrote and the peer
//! has not read, the earliest `recv_buffer` are the ones the peer's window
//! let out (arrived unread, in flight, or held by a blocked link) and still
//! arrive at their times; the rest, and a FIN an earlier `shutdown(Write)`
//! queued behind them, never leave. The RST follows the bytes kept, one
//! link delay after the close at the earliest. The peer reads those bytes,
//! then gets `ConnectionReset` (`ECONNRESET`) once, then EOF. An abort
//! (`SO_LINGER` of zero) resets the same way. (Linux counts its buffers'
//! overhead: on loopback, a 131,072-byte `SO_RCVBUF` took 113,152 bytes of
//! a closed peer's 3 MB before its reset.)
//! Writing to a connection whose peer has closed succeeds once (the bytes
//! are discarded by the peer's kernel, which answers with a RST one round
//! trip later, or one link delay after a blocked link clears); after the
//! RST arrived, writes fail with `BrokenPipe` (`EPIPE`), and reads, which
//! saw the peer's FIN first, keep reading EOF.
//!
//! A blocked link (partition, clog) holds chunks sent across it: they
//! arrive one link delay after the link clears. When a partition (not a
//! clog) holds a direction's bytes for `retransmit_timeout_ns` (Linux's
//! `tcp_retries2` ≈ 15 min by default), the sender's side fails with
//! `TimedOut` (`ETIMEDOUT`) on its next read or write; its kernel has
//! dropped the connection, so a later heal delivers none of its held bytes
//! and the peer's next write is answered with a RST.
//!
//! **Process death (kill).** The kernel closes the process's sockets as
//! above (FIN, or RST with unread data, discarding the send queue beyond
//! what the peer's receive buffer took); listeners stop and their queued,
//! unaccepted connections are reset. **Machine death (crash).** The host
//! goes silent: its sockets vanish without FIN or RST, chunks toward it are
//! held as across a partition (so peers time out), and connects to it time
//! out. **Restart.** The host answers again: chunks held toward a vanished
//! socket, and any sent later, are answered with a RST.
//!
//! **UDP.** A datagram keeps its boundaries, is at most 65,507 bytes
//! (`EMSGSIZE` beyond), arrives after the link delay (so jitter may reorder
//! datagrams), and is dropped silently when the link is blocked, when no
//! socket is bound to its destination, when the destination socket is
//! connected to another address, or when the receive queue
//! (`udp_recv_buffer` bytes) is full. Link faults may drop or duplicate
//! datagrams with an integer probability in parts per million. A read into a
//! buffer smaller than the datagram returns the buffer's length and drops
//! the rest. Sending to the broadcast address needs `SO_BROADCAST`
//! (`EACCES` otherwise) and reaches every host's socket bound to the port.
//!
//! **Unix sockets** are local IPC on one host, beside the network: in the
//! same socket table (ids, [`Net::close`], notifications) but on no link,
//! so no delay, fault or partition touches them and no time passes in
//! them: every answer is ready at once or pending (`wake_at` `None`) until
//! a notification. Errors are Linux's (`af_unix.c`).
//!
//! - A socket's address ([`UnixAddr`]) is what `local_addr` shows; what it
//!   holds in its host's namespace is a [`UnixName`]: a socket file's
//!   inode, or an abstract name. Each host has its own. The model never
//!   touches a file system: the caller makes the socket file on the host's
//!   disk when it binds a path, and resolves a path to its socket file's
//!   inode when it connects or sends (the disk's errors, such as `ENOENT`
//!   for a missing path and `EADDRINUSE` for a bind over an existing one,
//!   are the caller's). A socket binds once (`EINVAL`); an abstract name
//!   an open socket holds is `AddrInUse` (`EADDRINUSE`); binding the
//!   unnamed address autobinds an abstract name of five hex digits.
//!   Connecting to a name no open socket holds (a socket file whose socket
//!   closed, a missing abstract name) is `ConnectionRefused`
//!   (`ECONNREFUSED`). A closed socket's name is free at once: an abstract
//!   name goes with its socket, and its socket file, which stays on the
//!   disk until it is unlinked, names no socket.
//! - A connect completes at once: the server end waits in the listener's
//!   backlog, which holds [`UNIX_BACKLOG`]` + 1` connections; past it the
//!   connect is `WouldBlock` (`EAGAIN`), as a non-blocking one on Linux.
//!   Connecting to a datagram socket's name is `EPROTOTYPE`, to any other
//!   socket's `ECONNREFUSED`. The server end's address is the listener's;
//!   the client is unnamed unless bound first.
//! - A stream is two byte buffers of [`UNIX_SNDBUF`] bytes: a write takes
//!   what fits and is pending when nothing does. A writer that found no
//!   room stays blocked (not writable, its writes pending) until the reader
//!   has drained the buffer to a quarter of [`UNIX_SNDBUF`], when the writer
//!   is notified: Linux's `unix_writable`. (Linux also counts each write's
//!   overhead, so it takes fewer bytes.) `shutdown` mirrors onto the peer:
//!   writing after either side's shutdown is `BrokenPipe` (`EPIPE`), reading
//!   after it drains, then ends (0).
//! - Closing a socket shuts its peer down both ways; if the closed socket
//!   had unread bytes, or had never been accepted, the peer's next read
//!   that finds nothing fails once with `ConnectionReset` (`ECONNRESET`),
//!   also reported as the pending error. A listener's close closes the
//!   connections in its backlog.
//! - Datagrams keep their boundaries and are at most [`UNIX_SNDBUF`]` - 32`
//!   bytes (`EMSGSIZE` beyond); a short buffer takes a datagram's start and
//!   loses the rest. A receiver holds at most [`UNIX_MAX_DGRAM_QLEN`]` + 1`
//!   datagrams; a send to a full one is pending, and the sender joins the
//!   receiver's waiting senders (Linux's `peer_wait`), whose writers are
//!   notified, in the order they came, when a datagram is received or the
//!   receiver closes or shuts down. A socket connected to a full receiver
//!   is not writable, and waits with them. A socket connected elsewhere
//!   refuses a datagram (`EPERM`); a send to a connected peer that closed is
//!   `ECONNREFUSED` once, then `NotConnected` (`ENOTCONN`). After
//!   `shutdown(Read)` a datagram socket still gives out what it had queued,
//!   then reads pending (never 0) while readiness says read-closed; sends
//!   to it fail with `EPIPE`.
//! - A notification names whose waiters it concerns ([`Wakes`]): a write
//!   concerns the peer's readers, a read that leaves room the peer's
//!   writers, a close or shutdown everyone. TCP streams follow the same
//!   rule for their bytes, so a task waiting to read is not woken because
//!   its peer read (Tokio wakes a waiter only for its own readiness), and a
//!   TCP read concerns the writers only when it frees room in a full
//!   direction, the only time a writer waits (Linux wakes a writer for room
//!   only after a send found none).
//! - A host's death (kill or crash) closes every Unix socket made on it, in
//!   the order they were made, wherever its handle is: later calls on it
//!   fail with `EBADF`, and its readiness is everything at once.
//!
//! **Faults** are explicit calls, each recorded by the runtime: partitions
//! (both ways or one way), clogs (of a link or a whole host), link latency
//! and jitter, UDP loss and duplication, resets of matching connections,
//! silenced connections, refused or black-holed connects to a port, paused
//! listeners, throttled (slow) readers, short reads, a partial write then
//! an error (the end aborts: its RST follows the bytes it sent), and "hold
//! after N bytes". No fault ever loses, duplicates, reorders or corrupts
//! bytes inside a TCP stream.
//!
//! # Failure modes
//!
//! What happens if a fault strikes: each row is claimed by the test that
//! checks it (`cargo xtask failure-modes` lists them; `cargo xtask tidy`
//! fails on a row no test claims).
//!
//! | failure mode | what happens if | what the simulation does |
//! |---|---|---|
//! | `net.partition.connect` | a connect crosses a partition | the SYN is lost and retried after 1, 2, 4 … s; after `syn_retries` the connect fails with `TimedOut` |
//! | `net.partition.stream` | an established connection is partitioned | bytes are held, none lost; they arrive one link delay after the heal |
//! | `net.partition.retransmit-limit` | a partition outlasts `retransmit_timeout_ns` | the sender's next read or write fails with `TimedOut`; the heal delivers none of its held bytes |
//! | `net.partition.one-way` | only one direction is cut | the other direction keeps flowing |
//! | `net.partition.closed-peer` | a peer closes while partitioned | its RST waits for the heal; a writer in a lasting partition times out |
//! | `net.clog` | a link is clogged | bytes queue and are released intact at the unclog; nobody times out |
//! | `net.clog.node` | a whole host is clogged | every link of the host holds its bytes |
//! | `net.kill` | a process is killed | its sockets close (FIN, or RST with unread data); its ports refuse |
//! | `net.kill.backlog` | a listener's process dies with connections queued | the queued, unaccepted connections are reset |
//! | `net.close.reset-discards` | a socket closes, or its process dies, with unread bytes while more of its own bytes are queued than the peer's receive buffer holds | its RST discards its send queue: the peer reads the earliest `recv_buffer` bytes, then `ConnectionReset` once, then the end; the rest, and a FIN queued behind them, are lost |
//! | `net.crash` | a machine crashes | its sockets vanish silently; peers time out; connects to it time out |
//! | `net.crash.in-flight` | bytes are in flight to a crashing machine | the sender times out |
//! | `net.restart` | a crashed machine comes back | old connections get a RST; its ports bind again |
//! | `net.reset` | the test resets matching connections | both ends see `ConnectionReset` |
//! | `net.conn.short-reads` | reads are short | each read returns at most N bytes; nothing is lost |
//! | `net.conn.throttle` | a reader is slow | bytes arrive at the throttled rate |
//! | `net.conn.hold-after` | a response is lost after the request arrived | the first N bytes arrive, the rest are held until cleared |
//! | `net.conn.partial-write` | a write is cut and the connection aborts | the next write accepts part, the one after fails with `ConnectionReset` |
//! | `net.conn.silent` | a connection goes silent | bytes are lost and retransmitted until cleared; a lasting silence times the sender out |
//! | `net.port.refuse` | connects to a port are refused | `ConnectionRefused` one round trip later |
//! | `net.port.blackhole` | connects to a port are black-holed | the connect times out |
//! | `net.listener.paused` | a listener is paused | connects complete, `accept` waits |
//! | `net.udp.loss-dup` | a link loses or duplicates datagrams | each datagram is dropped or doubled with the set probability |
//! | `net.udp.no-socket` | a datagram reaches a port nobody bound | it is dropped; an unconnected sender is not told |
//! | `net.unix.death` | a process or machine dies with Unix sockets open | they close in the order they were made: peers read what was sent, then the end (or `ECONNRESET` once where bytes went unread); their names are free (abstract names vanish; socket files stay on the disk, refusing connects); later calls fail with `EBADF` |
//! | `net.unix.reset` | a Unix stream closes with unread bytes, or before it was accepted | the peer reads what was sent, then `ECONNRESET` once, then the end |
//! | `net.heal` | the harness heals (`sim::heal_after`) | partitions, clogs, connection, port and datagram faults end; crashed nodes restart |

mod config;
mod errno;
mod fault;
mod net;
mod record;
mod tcp;
mod udp;
mod unix;

pub use config::Config;
pub use fault::{ConnFault, ConnInfo};
pub use net::{HostId, Net, Notification, Progress, SocketId, SocketKind, Wakes};
pub use record::{NetEvent, SegmentKind, MAX_EVENTS, MAX_PAYLOAD_BYTES};
pub use tcp::Readiness;
pub use unix::{UnixAddr, UnixName, UNIX_BACKLOG, UNIX_MAX_DGRAM_QLEN, UNIX_SNDBUF};
