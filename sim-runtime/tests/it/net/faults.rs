//! The fault calls: resets by predicate, short reads, throttling, held and
//! released bytes, partial writes, silent connections, refused and
//! black-holed connects, a paused listener.

use super::*;

#[test]
fn reset_connections_matching_a_predicate() {
    claims!("net.reset");
    run(18, async {
        let server = sim::node("server").build();
        let (mut c80, mut s80) = pair(server, 80).await;
        let (mut c81, mut s81) = pair(server, 81).await;
        s80.write_all(b"arrived").await.unwrap();
        let mut b = [0u8; 1];
        c80.peek(&mut b).await.unwrap();
        let n = simnet::reset_connections(|i| i.peer.port() == 80);
        assert_eq!(n, 1);
        // Both ends read what had arrived, then the reset.
        assert_eq!(read_n(&mut c80, 7).await, b"arrived");
        let mut buf = [0u8; 8];
        assert_os(
            &expect_err(c80.read(&mut buf).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        assert_os(
            &expect_err(s80.read(&mut buf).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        // The other connection is untouched.
        c81.write_all(b"fine").await.unwrap();
        assert_eq!(read_n(&mut s81, 4).await, b"fine");
    });
}

#[test]
fn short_reads_return_at_most_n_bytes_and_lose_nothing() {
    claims!("net.conn.short-reads");
    run(19, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        let client_addr = c.local_addr().unwrap();
        let n = simnet::set_conn_fault(
            |i| i.local == client_addr,
            simnet::ConnFault {
                short_reads: Some(3),
                ..Default::default()
            },
        );
        assert_eq!(n, 1, "one end");
        s.write_all(&pattern(0, 1000)).await.unwrap();
        drop(s);
        let mut got = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            let n = c.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            assert!(n <= 3, "{n}");
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, pattern(0, 1000));
    });
}

#[test]
fn a_throttled_reader_receives_at_the_throttled_rate() {
    claims!("net.conn.throttle");
    run(20, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        let client_addr = c.local_addr().unwrap();
        simnet::set_conn_fault(
            |i| i.local == client_addr,
            simnet::ConnFault {
                throttle_bytes_per_sec: Some(1000),
                ..Default::default()
            },
        );
        let t0 = sim::elapsed();
        for i in 0..5 {
            s.write_all(&pattern(i * 1000, 1000)).await.unwrap();
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 10_000];
        while got.len() < 5000 {
            let n = c.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
            let t = (sim::elapsed() - t0).as_secs_f64();
            // Never faster than 1000 B/s (one chunk of slack).
            assert!(
                got.len() as f64 <= 1000.0 * t + 1000.0,
                "{} by {t}",
                got.len()
            );
        }
        assert_eq!(got, pattern(0, 5000));
        assert!(sim::elapsed() - t0 >= ms(4990), "{:?}", sim::elapsed() - t0);
    });
}

#[test]
fn hold_after_bytes_delivers_the_request_and_loses_the_response() {
    claims!("net.conn.hold-after");
    run(21, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        let client_addr = c.local_addr().unwrap();
        simnet::set_conn_fault(
            |i| i.local == client_addr,
            simnet::ConnFault {
                hold_after_bytes: Some(5),
                ..Default::default()
            },
        );
        c.write_all(b"request").await.unwrap();
        assert_eq!(read_n(&mut s, 7).await, b"request", "the request arrives");
        s.write_all(b"hello, world").await.unwrap();
        // The client gets the first 5 bytes and then waits.
        assert_eq!(read_n(&mut c, 5).await, b"hello");
        let waited = time::timeout(secs(3), read_n(&mut c, 1)).await;
        assert!(waited.is_err(), "the rest of the response is lost");
        // The server's retransmissions run out: it times out.
        let mut b = [0u8; 1];
        assert_os(
            &expect_err(s.read(&mut b).await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
    });
}

#[test]
fn clearing_hold_after_bytes_releases_the_held_response() {
    run(32, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        let client_addr = c.local_addr().unwrap();
        let at_client = move |i: &simnet::ConnInfo| i.local == client_addr;
        simnet::set_conn_fault(
            at_client,
            simnet::ConnFault {
                hold_after_bytes: Some(0),
                ..Default::default()
            },
        );
        s.write_all(b"response").await.unwrap();
        assert!(read_stays_pending(&mut c, secs(10)).await);
        simnet::set_conn_fault(at_client, simnet::ConnFault::default());
        assert_eq!(read_n(&mut c, 8).await, b"response");
    });
}

#[test]
fn partial_write_then_reset() {
    claims!("net.conn.partial-write");
    run(22, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        let client_addr = c.local_addr().unwrap();
        simnet::set_conn_fault(
            |i| i.local == client_addr,
            simnet::ConnFault {
                partial_write_then_reset: Some(4),
                ..Default::default()
            },
        );
        assert_eq!(c.write(b"0123456789").await.unwrap(), 4);
        assert_os(
            &expect_err(c.write(b"456789").await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        assert_eq!(read_n(&mut s, 4).await, b"0123");
        let mut b = [0u8; 8];
        assert_os(
            &expect_err(s.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
    });
}

#[test]
fn a_silent_connection_loses_bytes_until_cleared_then_retransmits() {
    claims!("net.conn.silent");
    run(23, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        let server_end = s.local_addr().unwrap();
        let client_end = c.local_addr().unwrap();
        let pred = move |i: &simnet::ConnInfo| i.local == server_end && i.peer == client_end;
        assert_eq!(
            simnet::set_conn_fault(
                pred,
                simnet::ConnFault {
                    silent: true,
                    ..Default::default()
                }
            ),
            1
        );
        c.write_all(b"anyone there?").await.unwrap();
        assert!(read_stays_pending(&mut s, secs(30)).await);
        // The other direction is not silenced.
        s.write_all(b"yes").await.unwrap();
        assert_eq!(read_n(&mut c, 3).await, b"yes");
        simnet::set_conn_fault(pred, simnet::ConnFault::default());
        assert_eq!(read_n(&mut s, 13).await, b"anyone there?");
    });
}

#[test]
fn a_silent_connection_times_the_sender_out() {
    claims!("net.conn.silent");
    run(24, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        let (mut c, _s) = pair(server, 80).await;
        let server_ip = sim::node_ip(server).unwrap();
        simnet::set_conn_fault(
            move |i| i.local.ip() == server_ip,
            simnet::ConnFault {
                silent: true,
                ..Default::default()
            },
        );
        let t0 = sim::elapsed();
        c.write_all(b"x").await.unwrap();
        let mut b = [0u8; 1];
        assert_os(
            &expect_err(c.read(&mut b).await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
        assert_eq!(sim::elapsed() - t0, secs(5));
    });
}

#[test]
fn refused_and_black_holed_connects() {
    claims!("net.port.refuse", "net.port.blackhole");
    run(25, async {
        let server = sim::node("server").build();
        let l = listen(server, 80).await;
        simnet::refuse_connects(server, 80);
        let t0 = sim::elapsed();
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::ConnectionRefused,
            ECONNREFUSED,
        );
        assert!(sim::elapsed() - t0 < ms(5));

        simnet::blackhole_connects(server, 80);
        let t1 = sim::elapsed();
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
        assert_eq!(sim::elapsed() - t1, SYN_TIMEOUT);
        // Black-holed even with nobody listening (a firewall drop), where
        // the host would otherwise refuse.
        drop(l);
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );

        simnet::clear_port_fault(server, 80);
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::ConnectionRefused,
            ECONNREFUSED,
        );
        let _l = listen(server, 80).await;
        TcpStream::connect("server:80").await.unwrap();
    });
}

#[test]
fn a_paused_listener_completes_connects_but_accept_waits() {
    claims!("net.listener.paused");
    run(26, async {
        let server = sim::node("server").build();
        let l = listen(server, 80).await;
        simnet::pause_listener(&l);
        let mut c = TcpStream::connect("server:80").await.unwrap();
        c.write_all(b"queued").await.unwrap();
        assert!(time::timeout(secs(30), l.accept()).await.is_err());
        simnet::resume_listener(&l);
        let (mut s, _) = time::timeout(ms(1), l.accept()).await.unwrap().unwrap();
        assert_eq!(read_n(&mut s, 6).await, b"queued");
    });
}

/// A fault predicate runs with the simulation released, so it may ask the
/// simulation about nodes.
#[test]
fn a_fault_predicate_may_call_sim_functions() {
    run(41, async {
        let server = sim::node("server").build();
        let (mut c, _s) = pair(server, 80).await;
        let hit = simnet::set_conn_fault(
            |i| Some(i.peer.ip()) == sim::node_ip(server),
            simnet::ConnFault {
                short_reads: Some(1),
                ..Default::default()
            },
        );
        assert_eq!(hit, 1, "the client's end only");
        let n = simnet::reset_connections(|i| Some(i.peer.ip()) == sim::node_ip(server));
        assert_eq!(n, 1);
        let mut b = [0u8; 4];
        assert_os(
            &expect_err(c.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
    });
}
