//! Model-level tests of sim-net's normative semantics: driven directly with
//! explicit times, no executor.

use sim_net::{Config, ConnFault, HostId, Net, NetEvent, Progress, SocketId, Wakes};
use std::net::SocketAddr;

/// Names the failure-mode rows (the table in the crate docs) a test checks;
/// `cargo xtask tidy` reads the claims from the source.
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}

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

/// A connection from A to B's port 80 at time 0, established and accepted;
/// returns (client, server, the time both are usable).
fn connected(n: &mut Net) -> (SocketId, SocketId, u64) {
    let l = n.tcp_bind(B, addr("0.0.0.0:80"), true, 0).unwrap();
    n.tcp_listen(l, 16).unwrap();
    let c = n.tcp_connect(A, None, addr("10.0.0.2:80"), 0).unwrap();
    let t = pending(n.tcp_poll_connect(c, 0)).unwrap();
    ready(n.tcp_poll_connect(c, t)).unwrap();
    let t2 = pending(n.tcp_accept(l, t)).unwrap();
    let (s, peer) = ready(n.tcp_accept(l, t2)).unwrap();
    assert_eq!(peer, n.local_addr(c).unwrap());
    (c, s, t2)
}

#[test]
fn handshake_takes_a_round_trip_and_accept_one_more_leg() {
    let mut n = net(fixed(10 * MS));
    let l = n.tcp_bind(B, addr("0.0.0.0:80"), true, 0).unwrap();
    n.tcp_listen(l, 16).unwrap();
    let c = n.tcp_connect(A, None, addr("10.0.0.2:80"), 0).unwrap();
    assert_eq!(pending(n.tcp_poll_connect(c, 0)), Some(20 * MS));
    assert_eq!(pending(n.tcp_accept(l, 20 * MS)), Some(30 * MS));
    ready(n.tcp_poll_connect(c, 20 * MS)).unwrap();
    ready(n.tcp_accept(l, 30 * MS)).unwrap();
    n.check_invariants();
}

#[test]
fn bytes_arrive_after_the_link_delay_in_order() {
    let mut n = net(Config {
        latency_ns: 5 * MS,
        jitter_ns: 3 * MS,
        ..Config::default()
    });
    let (c, s, t) = connected(&mut n);
    let mut sent = Vec::new();
    for i in 0..50u32 {
        let chunk: Vec<u8> = (0..(i % 7 + 1) as u8)
            .map(|b| b.wrapping_add(i as u8))
            .collect();
        assert_eq!(
            ready(n.tcp_write(c, &chunk, t + u64::from(i))).unwrap(),
            chunk.len()
        );
        sent.extend(chunk);
    }
    // Nothing has arrived before the latency.
    let mut buf = [0u8; 1024];
    assert!(pending(n.tcp_read(s, &mut buf, false, t + MS)).is_some());
    let mut got = Vec::new();
    let mut now = t + MS;
    while got.len() < sent.len() {
        match n.tcp_read(s, &mut buf, false, now) {
            Progress::Ready(r) => got.extend_from_slice(&buf[..r.unwrap()]),
            Progress::Pending { wake_at } => now = wake_at.expect("more bytes are scheduled"),
        }
        n.check_invariants();
    }
    assert_eq!(got, sent, "in order, none lost, none duplicated");
    assert!(now >= t + 5 * MS);
}

/// A stream's bytes concern one direction's waiters: a write notifies the
/// peer's readers at the bytes' arrival, and a read that frees room in a
/// full direction the writer's writers, never a task waiting to read on the
/// writer's side (Tokio wakes a waiter for its own readiness only). A read
/// from a direction with room to spare notifies no one: no writer waits.
#[test]
fn a_write_concerns_the_peers_readers_and_a_read_the_writers_writers() {
    let mut n = net(Config {
        send_buffer: 4,
        recv_buffer: 4,
        ..fixed(5 * MS)
    });
    let (c, s, t) = connected(&mut n);
    let mut notes = Vec::new();
    n.take_notifications(&mut notes);
    notes.clear();
    let mut take = |n: &mut Net| {
        n.take_notifications(&mut notes);
        let out: Vec<_> = notes.iter().map(|x| (x.socket, x.at, x.wakes)).collect();
        notes.clear();
        out
    };
    assert_eq!(ready(n.tcp_write(c, b"ping", t)).unwrap(), 4);
    assert_eq!(take(&mut n), vec![(s, t + 5 * MS, Wakes::Readers)]);
    let mut buf = [0u8; 8];
    let read = n.tcp_read(s, &mut buf, false, t + 5 * MS);
    assert_eq!(ready(read).unwrap(), 4);
    assert_eq!(take(&mut n), vec![], "the direction had room to spare");
    // Filled to its 8 bytes, the direction makes its writer wait; the read
    // that frees room concerns the writers.
    assert_eq!(ready(n.tcp_write(c, b"12345678", t + 5 * MS)).unwrap(), 8);
    assert!(pending(n.tcp_write(c, b"9", t + 5 * MS)).is_none());
    take(&mut n);
    let read = n.tcp_read(s, &mut buf[..2], false, t + 10 * MS);
    assert_eq!(ready(read).unwrap(), 2);
    assert_eq!(take(&mut n), vec![(c, t + 10 * MS, Wakes::Writers)]);
    // A peek takes nothing, so it notifies no one.
    assert_eq!(ready(n.tcp_write(s, b"pong", t + 10 * MS)).unwrap(), 4);
    take(&mut n);
    let peek = n.tcp_read(c, &mut buf, true, t + 15 * MS);
    assert_eq!(ready(peek).unwrap(), 4);
    assert_eq!(take(&mut n), vec![]);
}

#[test]
fn full_buffer_makes_writes_wait_until_the_reader_drains() {
    let config = fixed(MS);
    let cap = config.send_buffer + config.recv_buffer;
    let mut n = net(config);
    let (c, s, t) = connected(&mut n);
    let big = vec![1u8; cap + 10];
    assert_eq!(ready(n.tcp_write(c, &big, t)).unwrap(), cap);
    assert_eq!(
        pending(n.tcp_write(c, &[1], t)),
        None,
        "waits for a notification"
    );
    let mut buf = vec![0u8; 100];
    assert_eq!(ready(n.tcp_read(s, &mut buf, false, t + MS)).unwrap(), 100);
    assert_eq!(ready(n.tcp_write(c, &big, t + MS)).unwrap(), 100);
    n.check_invariants();
}

#[test]
fn close_with_unread_data_resets_after_what_was_sent() {
    let mut n = net(fixed(MS));
    let (c, s, t) = connected(&mut n);
    ready(n.tcp_write(s, b"hello", t)).unwrap();
    ready(n.tcp_write(c, b"unread", t)).unwrap();
    // The server closes with the client's bytes arrived but unread.
    n.close(s, t + 2 * MS);
    let mut buf = [0u8; 16];
    assert_eq!(
        ready(n.tcp_read(c, &mut buf, false, t + 3 * MS)).unwrap(),
        5
    );
    let e = ready(n.tcp_read(c, &mut buf, false, t + 3 * MS)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(104));
    assert_eq!(
        ready(n.tcp_read(c, &mut buf, false, t + 3 * MS)).unwrap(),
        0
    );
    let e = ready(n.tcp_write(c, b"x", t + 3 * MS)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(32));
    n.check_invariants();
}

/// Byte `i` of a test stream (period 251, prime, so no size lines up).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Reads `s` until it ends, from `now`, waiting for each arrival: the
/// bytes, then what ended the stream (`Err(errno)` once, then `Ok(0)`), with
/// the time of the error.
fn read_to_the_end(
    n: &mut Net,
    s: SocketId,
    mut now: u64,
) -> (Vec<u8>, Vec<Result<usize, i32>>, u64) {
    let mut got = Vec::new();
    let mut ends = Vec::new();
    let mut error_at = 0;
    let mut buf = vec![0u8; 16 * 1024];
    while ends.len() < 3 {
        match n.tcp_read(s, &mut buf, false, now) {
            Progress::Ready(Ok(0)) => ends.push(Ok(0)),
            Progress::Ready(Ok(k)) => {
                assert!(ends.is_empty(), "bytes after the end");
                got.extend_from_slice(&buf[..k]);
            }
            Progress::Ready(Err(e)) => {
                error_at = now;
                ends.push(Err(e.raw_os_error().unwrap()));
            }
            Progress::Pending { wake_at } => now = wake_at.expect("the end is scheduled"),
        }
        n.check_invariants();
    }
    (got, ends, error_at)
}

/// Linux's close with unread data sends a RST and discards the closer's
/// send queue: the peer reads what its receive buffer took, the earliest
/// `recv_buffer` bytes, then `ECONNRESET` once, then EOF. (On loopback, a
/// server that wrote 3 MB, all accepted, and closed with the client's bytes
/// unread: the client read 113,152 bytes, its receive buffer's worth, then
/// the reset.)
#[test]
fn a_close_that_resets_discards_the_closers_send_queue() {
    claims!("net.close.reset-discards");
    let mut n = net(fixed(MS));
    n.record_traffic();
    let (c, s, t, sent, rcvbuf) = unread_and_full(&mut n);
    n.close(s, t + 2 * MS);
    n.check_invariants();
    let (got, ends, _) = read_to_the_end(&mut n, c, t + 2 * MS);
    assert_eq!(got.len(), rcvbuf, "what the client's receive buffer took");
    assert!(got == sent[..rcvbuf], "the earliest bytes, in order");
    assert_eq!(ends, [Err(104), Ok(0), Ok(0)]);
    let log = n.take_traffic();
    assert!(
        log.iter().any(
            |e| matches!(e, NetEvent::Discard { dir: 1, offset, .. } if *offset == rcvbuf as u64)
        ),
        "the log says which bytes never left"
    );
}

/// A process's death closes its sockets the same way.
#[test]
fn a_kill_with_unread_data_discards_the_send_queue_too() {
    let mut n = net(fixed(MS));
    let (c, _, t, sent, rcvbuf) = unread_and_full(&mut n);
    n.host_kill(B, t + 2 * MS);
    let (got, ends, _) = read_to_the_end(&mut n, c, t + 2 * MS);
    assert_eq!(got.len(), rcvbuf);
    assert!(got == sent[..rcvbuf]);
    assert_eq!(ends, [Err(104), Ok(0), Ok(0)]);
}

/// Bytes in flight at the close are among those the peer's window let out:
/// they arrive, and the RST follows them one link delay after the close,
/// not at the discarded bytes' arrival.
#[test]
fn bytes_in_flight_at_a_resetting_close_arrive_and_the_reset_follows() {
    let config = fixed(10 * MS);
    let (sndbuf, rcvbuf) = (config.send_buffer, config.recv_buffer);
    let mut n = net(config);
    let (c, s, t) = connected(&mut n);
    ready(n.tcp_write(c, b"unread", t)).unwrap();
    // A window's worth leaves at t + 20 ms and arrives at t + 30 ms; a slow
    // chunk queued behind it would arrive a second later.
    let first = pattern(rcvbuf);
    assert_eq!(ready(n.tcp_write(s, &first, t + 20 * MS)).unwrap(), rcvbuf);
    let slow = vec![7u8; sndbuf];
    let k = ready(n.tcp_write_slow(s, &slow, t + 20 * MS, SECOND)).unwrap();
    assert_eq!(k, sndbuf);
    // The client's bytes arrived at t + 10 ms, unread: the close resets.
    n.close(s, t + 25 * MS);
    let (got, ends, error_at) = read_to_the_end(&mut n, c, t + 25 * MS);
    assert_eq!(got.len(), rcvbuf, "in flight within the window: delivered");
    assert!(got == first);
    assert_eq!(ends, [Err(104), Ok(0), Ok(0)]);
    assert_eq!(error_at, t + 35 * MS, "the RST left at the close");
}

/// Only a reset discards: a FIN (nothing unread) and `shutdown(Write)`
/// deliver every byte written, then EOF.
#[test]
fn a_fin_and_a_shutdown_deliver_every_byte() {
    let config = fixed(MS);
    let cap = config.send_buffer + config.recv_buffer;
    let mut n = net(config);
    let (c, s, t) = connected(&mut n);
    let sent = pattern(cap);
    assert_eq!(ready(n.tcp_write(s, &sent, t)).unwrap(), cap);
    n.close(s, t + 2 * MS);
    let (got, ends, _) = read_to_the_end(&mut n, c, t + 2 * MS);
    assert_eq!(got.len(), cap);
    assert!(got == sent);
    assert_eq!(ends, [Ok(0), Ok(0), Ok(0)]);

    let (c, s, t) = connected_again(&mut n, t + 2 * MS);
    ready(n.tcp_write(c, b"unread", t)).unwrap();
    assert_eq!(ready(n.tcp_write(s, &sent, t)).unwrap(), cap);
    n.tcp_shutdown(s, false, true, t + 2 * MS).unwrap();
    let (got, ends, _) = read_to_the_end(&mut n, c, t + 2 * MS);
    assert_eq!(got.len(), cap);
    assert!(got == sent);
    assert_eq!(ends, [Ok(0), Ok(0), Ok(0)]);
    n.check_invariants();
}

/// A FIN that `shutdown(Write)` queued behind bytes the close discards is
/// discarded with them: the peer reads what its buffer took, then the
/// reset (on loopback: 113,152 of 3 MB, then `ECONNRESET`).
#[test]
fn a_fin_queued_behind_discarded_bytes_goes_with_them() {
    let mut n = net(fixed(MS));
    let (c, s, t, sent, rcvbuf) = unread_and_full(&mut n);
    n.tcp_shutdown(s, false, true, t).unwrap();
    n.close(s, t + 2 * MS);
    let (got, ends, _) = read_to_the_end(&mut n, c, t + 2 * MS);
    assert_eq!(got.len(), rcvbuf);
    assert!(got == sent[..rcvbuf]);
    assert_eq!(ends, [Err(104), Ok(0), Ok(0)]);
}

/// A connection whose client C sent bytes the server S never read, and
/// whose server then wrote as much as both buffers hold (all accepted):
/// (c, s, when, the server's bytes, the receive buffer's size).
fn unread_and_full(n: &mut Net) -> (SocketId, SocketId, u64, Vec<u8>, usize) {
    let (sndbuf, rcvbuf) = (n.config().send_buffer, n.config().recv_buffer);
    let (c, s, t) = connected(n);
    ready(n.tcp_write(c, b"unread", t)).unwrap();
    let sent = pattern(sndbuf + rcvbuf);
    assert_eq!(ready(n.tcp_write(s, &sent, t)).unwrap(), sent.len());
    (c, s, t, sent, rcvbuf)
}

/// Another connection from A to B's listener on port 80 (made by
/// [`connected`]), established and accepted from `now`.
fn connected_again(n: &mut Net, now: u64) -> (SocketId, SocketId, u64) {
    let l = n.tcp_bind(B, addr("0.0.0.0:81"), true, now).unwrap();
    n.tcp_listen(l, 16).unwrap();
    let c = n.tcp_connect(A, None, addr("10.0.0.2:81"), now).unwrap();
    let t = pending(n.tcp_poll_connect(c, now)).unwrap();
    ready(n.tcp_poll_connect(c, t)).unwrap();
    let t2 = pending(n.tcp_accept(l, t)).unwrap();
    let (s, _) = ready(n.tcp_accept(l, t2)).unwrap();
    (c, s, t2)
}

#[test]
fn partition_holds_bytes_until_heal_and_times_out_past_the_limit() {
    let mut n = net(Config {
        retransmit_timeout_ns: 60 * SECOND,
        ..fixed(MS)
    });
    let (c, s, t) = connected(&mut n);
    n.partition(A, B, false, t);
    ready(n.tcp_write(c, b"held", t)).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(
        pending(n.tcp_read(s, &mut buf, false, t + 10 * SECOND)),
        None
    );
    n.heal(A, B, t + 10 * SECOND);
    let at = pending(n.tcp_read(s, &mut buf, false, t + 10 * SECOND)).unwrap();
    assert_eq!(at, t + 10 * SECOND + MS);
    assert_eq!(ready(n.tcp_read(s, &mut buf, false, at)).unwrap(), 4);

    n.partition(A, B, false, at);
    ready(n.tcp_write(c, b"lost?", at)).unwrap();
    let deadline = pending(n.tcp_read(c, &mut buf, false, at)).unwrap();
    assert_eq!(deadline, at + 60 * SECOND);
    let e = ready(n.tcp_read(c, &mut buf, false, deadline)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(110));
    n.check_invariants();
}

#[test]
fn connect_across_a_partition_times_out_after_the_syn_retries() {
    let mut n = net(fixed(MS));
    let l = n.tcp_bind(B, addr("0.0.0.0:80"), true, 0).unwrap();
    n.tcp_listen(l, 16).unwrap();
    n.partition(A, B, false, 0);
    let c = n.tcp_connect(A, None, addr("10.0.0.2:80"), 0).unwrap();
    let mut now = 0;
    loop {
        match n.tcp_poll_connect(c, now) {
            Progress::Pending { wake_at } => now = wake_at.unwrap(),
            Progress::Ready(r) => {
                assert_eq!(r.unwrap_err().raw_os_error(), Some(110));
                break;
            }
        }
    }
    assert_eq!(
        now,
        127 * SECOND,
        "1+2+4+8+16+32+64 s, as Linux's 6 retries"
    );
}

#[test]
fn crash_is_silent_and_revive_resets_old_connections() {
    let mut n = net(fixed(MS));
    let (c, _s, t) = connected(&mut n);
    n.host_crash(B, t);
    let mut buf = [0u8; 8];
    assert_eq!(
        pending(n.tcp_read(c, &mut buf, false, t + SECOND)),
        None,
        "no FIN, no RST"
    );
    ready(n.tcp_write(c, b"anyone?", t + SECOND)).unwrap();
    n.host_revive(B, t + 2 * SECOND);
    let at = pending(n.tcp_read(c, &mut buf, false, t + 2 * SECOND)).unwrap();
    let e = ready(n.tcp_read(c, &mut buf, false, at)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(104));
    n.check_invariants();
}

#[test]
fn hold_after_n_bytes_delivers_the_prefix_only() {
    let mut n = net(fixed(MS));
    let (c, s, t) = connected(&mut n);
    let client = n.local_addr(c).unwrap();
    let hit = n.set_conn_fault(
        t,
        |i| i.local == client,
        ConnFault {
            hold_after_bytes: Some(3),
            ..ConnFault::default()
        },
    );
    assert_eq!(hit, 1);
    ready(n.tcp_write(s, b"response", t)).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(ready(n.tcp_read(c, &mut buf, false, t + MS)).unwrap(), 3);
    assert_eq!(&buf[..3], b"res");
    assert!(matches!(
        n.tcp_read(c, &mut buf, false, t + 100 * SECOND),
        Progress::Pending { .. }
    ));
    n.check_invariants();
}

#[test]
fn udp_loss_and_duplication_are_seeded_by_identity() {
    let run = |seed: u64| {
        let mut n = net(Config { seed, ..fixed(MS) });
        n.set_udp_faults(A, B, 500_000, 0);
        let rx = n.udp_bind(B, addr("0.0.0.0:53")).unwrap();
        let tx = n.udp_bind(A, addr("0.0.0.0:0")).unwrap();
        for i in 0..200u8 {
            n.udp_send(tx, &[i], Some(addr("10.0.0.2:53")), 0).unwrap();
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 4];
        while let Progress::Ready(r) = n.udp_recv(rx, &mut buf, false, MS) {
            r.unwrap();
            got.push(buf[0]);
        }
        got
    };
    let a = run(1);
    assert!(
        a.len() > 50 && a.len() < 150,
        "about half lost: {}",
        a.len()
    );
    assert_eq!(a, run(1), "same seed, same losses");
    assert_ne!(a, run(2), "another seed, other losses");
}

/// A random mix of operations on a few connections keeps every invariant,
/// and each stream reads exactly the bytes written to it, in order.
#[test]
fn random_operations_keep_the_invariants() {
    for seed in 0..20u64 {
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut n = net(Config {
            seed,
            latency_ns: MS,
            jitter_ns: MS,
            ..Config::default()
        });
        let (c, s, t) = connected(&mut n);
        let ends = [c, s];
        let mut written: [Vec<u8>; 2] = Default::default();
        let mut read: [Vec<u8>; 2] = Default::default();
        let mut now = t;
        let mut counter = 0u8;
        for _ in 0..400 {
            now += next(3 * MS);
            match next(6) {
                0 | 1 => {
                    let e = next(2) as usize;
                    let len = next(3000) as usize + 1;
                    let data: Vec<u8> = (0..len)
                        .map(|_| {
                            counter = counter.wrapping_add(1);
                            counter
                        })
                        .collect();
                    if let Progress::Ready(Ok(k)) = n.tcp_write(ends[e], &data, now) {
                        written[e].extend_from_slice(&data[..k]);
                    }
                }
                2 | 3 => {
                    let e = next(2) as usize;
                    let mut buf = vec![0u8; next(4000) as usize + 1];
                    if let Progress::Ready(Ok(k)) = n.tcp_read(ends[e], &mut buf, false, now) {
                        read[e].extend_from_slice(&buf[..k]);
                    }
                }
                4 => n.partition(A, B, next(2) == 0, now),
                _ => n.heal(A, B, now),
            }
            n.check_invariants();
        }
        n.heal_all(now);
        // Drain both directions.
        for e in 0..2 {
            let mut buf = vec![0u8; 4096];
            loop {
                match n.tcp_read(ends[e], &mut buf, false, now) {
                    Progress::Ready(Ok(0)) => break,
                    Progress::Ready(Ok(k)) => read[e].extend_from_slice(&buf[..k]),
                    Progress::Ready(Err(err)) => panic!("seed {seed}: {err}"),
                    Progress::Pending { wake_at: Some(at) } => now = at,
                    Progress::Pending { wake_at: None } => break,
                }
            }
            n.check_invariants();
        }
        assert_eq!(
            read[1], written[0],
            "seed {seed}: client→server stream intact"
        );
        assert_eq!(
            read[0], written[1],
            "seed {seed}: server→client stream intact"
        );
    }
}

#[test]
fn a_slow_write_arrives_late_and_later_bytes_wait_for_it() {
    let mut n = net(fixed(MS));
    let (c, s, t) = connected(&mut n);
    ready(n.tcp_write_slow(c, b"slow", t, 30 * MS)).unwrap();
    ready(n.tcp_write(c, b"fast", t)).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(
        pending(n.tcp_read(s, &mut buf, false, t + MS)),
        Some(t + 31 * MS)
    );
    let k = ready(n.tcp_read(s, &mut buf, false, t + 31 * MS)).unwrap();
    assert_eq!(&buf[..k], b"slowfast", "in order: the fast bytes waited");
    n.check_invariants();
}
