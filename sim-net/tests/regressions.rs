//! Model-level regressions found by the multi-node tests in
//! `sim-runtime/tests/it/net/`, each pinned here without an executor.

use sim_net::{Config, ConnFault, HostId, Net, Progress, SocketId};
use std::net::SocketAddr;

const A: HostId = HostId(0);
const B: HostId = HostId(1);
const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;

fn net(config: Config) -> Net {
    let mut n = Net::new(config);
    n.add_host(A, "10.0.0.1".parse().unwrap());
    n.add_host(B, "10.0.0.2".parse().unwrap());
    n
}

fn fixed(latency_ns: u64) -> Config {
    Config {
        latency_ns,
        jitter_ns: 0,
        ..Config::default()
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn ready<T: std::fmt::Debug>(p: Progress<T>) -> std::io::Result<T> {
    match p {
        Progress::Ready(r) => r,
        Progress::Pending { wake_at } => panic!("pending (wake at {wake_at:?})"),
    }
}

fn pending<T: std::fmt::Debug>(p: Progress<T>) -> Option<u64> {
    match p {
        Progress::Pending { wake_at } => wake_at,
        Progress::Ready(r) => panic!("expected pending, got {r:?}"),
    }
}

/// A connection from A to B's port 80, established and accepted; returns
/// (client, server, the time both are usable).
fn connected(n: &mut Net) -> (SocketId, SocketId, u64) {
    let l = n.tcp_bind(B, addr("0.0.0.0:80"), true, 0).unwrap();
    n.tcp_listen(l, 16).unwrap();
    let c = n.tcp_connect(A, None, addr("10.0.0.2:80"), 0).unwrap();
    let t = pending(n.tcp_poll_connect(c, 0)).unwrap();
    ready(n.tcp_poll_connect(c, t)).unwrap();
    let t2 = pending(n.tcp_accept(l, t)).unwrap();
    let (s, _) = ready(n.tcp_accept(l, t2)).unwrap();
    (c, s, t2)
}

/// `partial_write_then_reset`: the bytes the partial write accepted reach
/// the peer before the reset, even when the failing write comes at the same
/// instant (they are still in flight). It used to reset the connection at
/// once, as a middlebox, losing them.
#[test]
fn partial_write_then_reset_delivers_the_partial_bytes_before_the_rst() {
    let mut n = net(fixed(10 * MS));
    let (c, s, t) = connected(&mut n);
    let client = n.local_addr(c).unwrap();
    let fault = ConnFault {
        partial_write_then_reset: Some(4),
        ..ConnFault::default()
    };
    assert_eq!(n.set_conn_fault(t, |i| i.local == client, fault), 1);
    assert_eq!(ready(n.tcp_write(c, b"0123456789", t)).unwrap(), 4);
    let e = ready(n.tcp_write(c, b"456789", t)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(104));
    let mut buf = [0u8; 16];
    let at = pending(n.tcp_read(s, &mut buf, false, t)).unwrap();
    assert_eq!(at, t + 10 * MS);
    assert_eq!(ready(n.tcp_read(s, &mut buf, false, at)).unwrap(), 4);
    assert_eq!(&buf[..4], b"0123");
    let e = ready(n.tcp_read(s, &mut buf, false, at)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(104));
    // The failed end is done: reads see EOF, writes a broken pipe.
    assert_eq!(ready(n.tcp_read(c, &mut buf, false, at)).unwrap(), 0);
    let e = ready(n.tcp_write(c, b"x", at)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(32));
    n.check_invariants();
}

/// A sender that timed out across a partition has no connection left: a
/// later heal does not deliver its held bytes (nothing retransmits them),
/// and the peer's next segment is answered with a RST. Before the fix the
/// heal resurrected the bytes of the dead connection.
#[test]
fn a_timed_out_sender_retransmits_nothing_after_the_heal() {
    let mut n = net(Config {
        retransmit_timeout_ns: 5 * SECOND,
        ..fixed(MS)
    });
    let (c, s, t) = connected(&mut n);
    n.partition(A, B, false, t);
    ready(n.tcp_write(c, b"lost", t)).unwrap();
    let mut buf = [0u8; 8];
    let deadline = pending(n.tcp_read(c, &mut buf, false, t)).unwrap();
    assert_eq!(deadline, t + 5 * SECOND);
    let e = ready(n.tcp_read(c, &mut buf, false, deadline)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(110));

    let healed = deadline + SECOND;
    n.heal(A, B, healed);
    assert_eq!(pending(n.tcp_read(s, &mut buf, false, healed)), None);
    assert_eq!(
        pending(n.tcp_read(s, &mut buf, false, healed + 60 * SECOND)),
        None
    );
    n.check_invariants();

    // The peer sends: the dead end's kernel answers with a RST.
    let now = healed + 60 * SECOND;
    ready(n.tcp_write(s, b"hello?", now)).unwrap();
    let at = pending(n.tcp_read(s, &mut buf, false, now)).unwrap();
    assert_eq!(at, now + 2 * MS);
    let e = ready(n.tcp_read(s, &mut buf, false, at)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(104));
    n.check_invariants();
}

/// The same when nobody asked the timed-out sender in time: the heal comes
/// after its deadline, and the deadline alone decides.
#[test]
fn a_heal_after_the_deadline_finds_the_sender_timed_out_even_unasked() {
    let mut n = net(Config {
        retransmit_timeout_ns: 5 * SECOND,
        ..fixed(MS)
    });
    let (c, s, t) = connected(&mut n);
    n.partition(A, B, false, t);
    ready(n.tcp_write(c, b"lost", t)).unwrap();
    n.heal(A, B, t + 6 * SECOND);
    let mut buf = [0u8; 8];
    assert_eq!(
        pending(n.tcp_read(s, &mut buf, false, t + 7 * SECOND)),
        None
    );
    let e = ready(n.tcp_read(c, &mut buf, false, t + 7 * SECOND)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(110));
    // A heal before the deadline still delivers.
    let (c2, s2, t2) = {
        let l = n
            .tcp_bind(B, addr("0.0.0.0:81"), true, t + 8 * SECOND)
            .unwrap();
        n.tcp_listen(l, 16).unwrap();
        let now = t + 8 * SECOND;
        let c = n.tcp_connect(A, None, addr("10.0.0.2:81"), now).unwrap();
        let at = pending(n.tcp_poll_connect(c, now)).unwrap();
        ready(n.tcp_poll_connect(c, at)).unwrap();
        let at2 = pending(n.tcp_accept(l, at)).unwrap();
        let (s, _) = ready(n.tcp_accept(l, at2)).unwrap();
        (c, s, at2)
    };
    n.partition(A, B, false, t2);
    ready(n.tcp_write(c2, b"kept", t2)).unwrap();
    n.heal(A, B, t2 + 4 * SECOND);
    let at = pending(n.tcp_read(s2, &mut buf, false, t2 + 4 * SECOND)).unwrap();
    assert_eq!(ready(n.tcp_read(s2, &mut buf, false, at)).unwrap(), 4);
    n.check_invariants();
}

/// Writing to a closed peer across a partition: the RST cannot come back
/// until the partition heals (it used to arrive one round trip later,
/// straight through the partition).
#[test]
fn a_closed_peers_rst_waits_for_the_heal() {
    let mut n = net(fixed(MS));
    let (c, s, t) = connected(&mut n);
    n.partition(A, B, false, t);
    n.close(c, t);
    ready(n.tcp_write(s, b"reply", t)).unwrap();
    let mut buf = [0u8; 8];
    // Only the retransmission timeout (Linux's default) can end the wait.
    assert_eq!(
        pending(n.tcp_read(s, &mut buf, false, t + 10 * SECOND)),
        Some(t + 924_600 * MS)
    );
    assert_eq!(
        ready(n.tcp_write(s, b"more", t + 10 * SECOND)).unwrap(),
        4,
        "no RST yet"
    );
    let healed = t + 20 * SECOND;
    n.heal(A, B, healed);
    let at = pending(n.tcp_read(s, &mut buf, false, healed)).unwrap();
    assert_eq!(at, healed + MS);
    // The FIN came first: reads see EOF, the next write the broken pipe.
    assert_eq!(ready(n.tcp_read(s, &mut buf, false, at)).unwrap(), 0);
    let e = ready(n.tcp_write(s, b"x", at)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(32));
    n.check_invariants();
}

/// A RST that arrives after the peer's FIN (Linux's `CLOSE_WAIT` case):
/// reads keep seeing EOF (`SOCK_DONE` is checked before `sk_err`), and the
/// reset goes to the next write as `EPIPE`. The read used to report `EPIPE`.
#[test]
fn a_read_after_fin_then_rst_is_eof_and_the_write_gets_epipe() {
    let mut n = net(fixed(MS));
    let (c, s, t) = connected(&mut n);
    n.close(c, t);
    let fin = t + MS;
    ready(n.tcp_write(s, b"first", fin)).unwrap();
    let rst = fin + 2 * MS;
    let mut buf = [0u8; 8];
    assert_eq!(ready(n.tcp_read(s, &mut buf, false, rst)).unwrap(), 0);
    assert_eq!(ready(n.tcp_read(s, &mut buf, false, rst)).unwrap(), 0);
    let e = ready(n.tcp_write(s, b"again", rst)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(32));
    n.check_invariants();
}

/// Bytes in flight toward a machine that crashes were never acknowledged:
/// the sender retransmits into the silence and times out, even if it only
/// reads. It used to wait forever.
#[test]
fn bytes_in_flight_to_a_crashing_host_time_the_sender_out() {
    let mut n = net(Config {
        retransmit_timeout_ns: 5 * SECOND,
        ..fixed(10 * MS)
    });
    let (c, _s, t) = connected(&mut n);
    ready(n.tcp_write(c, b"unacked", t)).unwrap();
    n.host_crash(B, t + MS);
    let mut buf = [0u8; 8];
    let deadline = pending(n.tcp_read(c, &mut buf, false, t + MS)).unwrap();
    assert_eq!(deadline, t + MS + 5 * SECOND);
    let e = ready(n.tcp_read(c, &mut buf, false, deadline)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(110));
    n.check_invariants();

    // Bytes that had arrived (acknowledged) before the crash: no timeout.
    let mut n = net(fixed(10 * MS));
    let (c, _s, t) = connected(&mut n);
    ready(n.tcp_write(c, b"acked", t)).unwrap();
    n.host_crash(B, t + 20 * MS);
    assert_eq!(pending(n.tcp_read(c, &mut buf, false, t + 20 * MS)), None);
}

/// Writing to a closed peer across a partition that lasts: the writer's
/// bytes are retransmitted and time out like any others; a heal in time
/// brings the RST instead, with no timeout left running.
#[test]
fn a_writer_to_a_closed_peer_in_a_lasting_partition_times_out() {
    let config = Config {
        retransmit_timeout_ns: 5 * SECOND,
        ..fixed(MS)
    };
    let mut n = net(config.clone());
    let (c, s, t) = connected(&mut n);
    n.partition(A, B, false, t);
    n.close(c, t);
    ready(n.tcp_write(s, b"reply", t)).unwrap();
    let mut buf = [0u8; 8];
    let deadline = pending(n.tcp_read(s, &mut buf, false, t)).unwrap();
    assert_eq!(deadline, t + 5 * SECOND);
    let e = ready(n.tcp_read(s, &mut buf, false, deadline)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(110));
    n.check_invariants();

    let mut n = net(config);
    let (c, s, t) = connected(&mut n);
    n.partition(A, B, false, t);
    n.close(c, t);
    ready(n.tcp_write(s, b"reply", t)).unwrap();
    n.heal(A, B, t + SECOND);
    let at = pending(n.tcp_read(s, &mut buf, false, t + SECOND)).unwrap();
    assert_eq!(ready(n.tcp_read(s, &mut buf, false, at)).unwrap(), 0);
    // Long after the old deadline: the RST, not a timeout.
    let later = t + 60 * SECOND;
    let e = ready(n.tcp_write(s, b"x", later)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(32));
    n.check_invariants();
}
