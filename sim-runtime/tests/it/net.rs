//! The simulated network across nodes: names and routes, per-link latency,
//! backpressure, how connections end, partitions, clogs, process and machine
//! death, the fault calls, UDP, determinism, and bad input. These are the
//! semantics the single-host conformance suite (tests/net) cannot show: they
//! need two or more hosts, faults, or virtual time.

use crate::run;
use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{lookup_host, TcpListener, TcpStream, UdpSocket};
use sim_runtime::sim::{self, net as simnet};
use sim_runtime::time::{self, Duration};
use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;

const EACCES: i32 = 13;
const EINVAL: i32 = 22;
const EPIPE: i32 = 32;
const EMSGSIZE: i32 = 90;
const EADDRNOTAVAIL: i32 = 99;
const ECONNRESET: i32 = 104;
const ETIMEDOUT: i32 = 110;
const ECONNREFUSED: i32 = 111;

/// Linux's connect timeout with `tcp_syn_retries = 6`: SYNs at 0, 1, 3, 7,
/// 15, 31 and 63 s, failure 64 s after the last one.
const SYN_TIMEOUT: Duration = Duration::from_secs(127);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[track_caller]
fn assert_os(err: &io::Error, kind: io::ErrorKind, errno: i32) {
    assert_eq!(err.kind(), kind, "kind of {err:?}");
    assert_eq!(err.raw_os_error(), Some(errno), "errno of {err:?}");
}

#[track_caller]
fn expect_err<T: std::fmt::Debug>(r: io::Result<T>) -> io::Error {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e,
    }
}

/// Byte `i` of a test stream (period 251, prime, so no size lines up).
fn pattern(start: usize, len: usize) -> Vec<u8> {
    (start..start + len).map(|i| (i % 251) as u8).collect()
}

/// Runs `f` as a task of `node` and returns its output.
async fn on<F>(node: sim::Node, f: F) -> F::Output
where
    F: Future + 'static,
    F::Output: 'static,
{
    sim::spawn_on(node, f)
        .await
        .expect("the task on the node ran")
}

/// A listener on `node`, on every address, at `port`.
async fn listen(node: sim::Node, port: u16) -> TcpListener {
    on(node, TcpListener::bind(("0.0.0.0", port)))
        .await
        .unwrap()
}

/// A connection from the current node to `server` by name: (client end,
/// the server's accepted end, a socket of `server`).
async fn pair(server: sim::Node, port: u16) -> (TcpStream, TcpStream) {
    let listener = listen(server, port).await;
    let client = TcpStream::connect(format!("{}:{port}", sim::node_name(server)))
        .await
        .unwrap();
    let (accepted, from) = listener.accept().await.unwrap();
    assert_eq!(from, client.local_addr().unwrap());
    (client, accepted)
}

/// Serves an echo on `node`:`port`: every connection gets back what it
/// sends until EOF, then a FIN.
fn echo_server(node: sim::Node, port: u16) -> sim_runtime::task::JoinHandle<()> {
    sim::spawn_on(node, async move {
        let listener = TcpListener::bind(("0.0.0.0", port)).await.unwrap();
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            sim_runtime::spawn(async move {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
    })
}

/// Reads exactly `n` bytes or fails.
async fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    s.read_exact(&mut v).await.unwrap();
    v
}

/// Whether a read on `s` stays pending for `d` of virtual time.
async fn read_stays_pending(s: &mut TcpStream, d: Duration) -> bool {
    let mut b = [0u8; 1];
    time::timeout(d, s.read(&mut b)).await.is_err()
}

// ----- names and routes ------------------------------------------------------

#[test]
fn connect_by_name_and_by_ip_across_nodes() {
    run(1, async {
        let server = sim::node("server").build();
        let custom = sim::node("custom")
            .ip("192.168.7.9".parse().unwrap())
            .build();
        assert_eq!(
            sim::node_ip(sim::current_node()),
            Some("198.18.0.1".parse().unwrap())
        );
        let server_ip: IpAddr = "198.18.0.2".parse().unwrap();
        assert_eq!(sim::node_ip(server), Some(server_ip));
        echo_server(server, 80);
        echo_server(custom, 80);
        time::sleep(ms(1)).await;

        // By name.
        let mut c = TcpStream::connect("server:80").await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), SocketAddr::new(server_ip, 80));
        assert_eq!(
            c.local_addr().unwrap().ip(),
            "198.18.0.1".parse::<IpAddr>().unwrap()
        );
        c.write_all(b"by name").await.unwrap();
        assert_eq!(read_n(&mut c, 7).await, b"by name");

        // By IP, and by (name, port), and a node with a given IP.
        let mut c = TcpStream::connect(SocketAddr::new(server_ip, 80))
            .await
            .unwrap();
        c.write_all(b"by ip").await.unwrap();
        assert_eq!(read_n(&mut c, 5).await, b"by ip");
        let mut c = TcpStream::connect(("custom", 80)).await.unwrap();
        assert_eq!(
            c.peer_addr().unwrap(),
            "192.168.7.9:80".parse::<SocketAddr>().unwrap()
        );
        c.write_all(b"custom").await.unwrap();
        assert_eq!(read_n(&mut c, 6).await, b"custom");

        // The server sees the client's node IP.
        let l = listen(server, 81).await;
        let c = TcpStream::connect("server:81").await.unwrap();
        let (_s, from) = l.accept().await.unwrap();
        assert_eq!(from, c.local_addr().unwrap());
        assert_eq!(from.ip(), "198.18.0.1".parse::<IpAddr>().unwrap());

        // lookup_host resolves node names (case-insensitively, as DNS).
        let addrs: Vec<SocketAddr> = lookup_host("server:80").await.unwrap().collect();
        assert_eq!(addrs, vec![SocketAddr::new(server_ip, 80)]);
        let addrs: Vec<SocketAddr> = lookup_host("SERVER:443").await.unwrap().collect();
        assert_eq!(addrs, vec![SocketAddr::new(server_ip, 443)]);
    });
}

#[test]
fn unknown_names_are_errors_not_panics() {
    run(2, async {
        let _server = sim::node("server").build();
        let e = expect_err(lookup_host("nosuch:80").await.map(|a| a.count()));
        assert!(e.raw_os_error().is_none(), "a resolver error: {e:?}");
        assert!(e.to_string().contains("nosuch"), "{e}");
        let e = expect_err(TcpStream::connect("nosuch:80").await);
        assert_eq!(e.kind(), io::Error::from_raw_os_error(89).kind());
        let e = expect_err(
            UdpSocket::bind("0.0.0.0:0")
                .await
                .unwrap()
                .connect("nosuch:53")
                .await,
        );
        assert!(e.to_string().contains("nosuch"), "{e}");
        let e = expect_err(TcpListener::bind("nosuch:80").await);
        assert!(e.to_string().contains("nosuch"), "{e}");
        // Resolution takes no virtual time.
        assert_eq!(sim::elapsed(), Duration::ZERO);
    });
}

/// Which backend each of `n` connections to the routed name reached.
fn routed_run(seed: u64, n: usize) -> (Vec<String>, Vec<usize>) {
    run(seed, async move {
        let backends: Vec<sim::Node> = ["a", "b", "c"]
            .iter()
            .map(|name| sim::node(*name).build())
            .collect();
        let accepted = Rc::new(RefCell::new(vec![0usize; 3]));
        for (i, &b) in backends.iter().enumerate() {
            let accepted = accepted.clone();
            sim::spawn_on(b, async move {
                let l = TcpListener::bind("0.0.0.0:80").await.unwrap();
                loop {
                    let (mut s, _) = l.accept().await.unwrap();
                    accepted.borrow_mut()[i] += 1;
                    let me = sim::node_name(sim::current_node());
                    s.write_all(me.as_bytes()).await.unwrap();
                    // Dropping `s` sends a FIN after the name.
                }
            });
        }
        simnet::route("svc", &backends);
        time::sleep(ms(1)).await;
        let all: Vec<SocketAddr> = lookup_host("svc:80").await.unwrap().collect();
        let mut ips: Vec<IpAddr> = all.iter().map(|a| a.ip()).collect();
        ips.sort();
        let mut want: Vec<IpAddr> = backends.iter().map(|&b| sim::node_ip(b).unwrap()).collect();
        want.sort();
        assert_eq!(ips, want, "a routed name resolves to every backend");

        let mut reached = Vec::new();
        for _ in 0..n {
            let mut c = TcpStream::connect("svc:80").await.unwrap();
            let mut reply = String::new();
            c.read_to_string(&mut reply).await.unwrap();
            // One connection, one backend: exactly one name, then EOF.
            assert!(["a", "b", "c"].contains(&reply.as_str()), "{reply:?}");
            let peer = c.peer_addr().unwrap().ip();
            let node = sim::lookup_node(&reply).unwrap();
            assert_eq!(Some(peer), sim::node_ip(node));
            reached.push(reply);
        }
        let counts = accepted.borrow().clone();
        (reached, counts)
    })
}

#[test]
fn routed_name_spreads_connections_one_backend_each_deterministically() {
    let (reached, counts) = routed_run(7, 30);
    assert_eq!(
        counts.iter().sum::<usize>(),
        30,
        "each connection reached one backend"
    );
    assert!(
        counts.iter().filter(|&&c| c > 0).count() > 1,
        "more than one backend reached: {counts:?}"
    );
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        assert_eq!(reached.iter().filter(|r| r == name).count(), counts[i]);
    }
    assert_eq!(
        routed_run(7, 30),
        (reached.clone(), counts),
        "same seed, same choices"
    );
    assert_ne!(routed_run(8, 30).0, reached, "another seed, other choices");
}

// ----- latency, order, buffers ---------------------------------------------

#[test]
fn per_link_latency_sets_the_round_trip_in_virtual_time() {
    run(3, async {
        let server = sim::node("server").build();
        let me = sim::current_node();
        echo_server(server, 80);
        simnet::set_latency(me, server, ms(50), Duration::ZERO);
        simnet::set_latency(server, me, ms(50), Duration::ZERO);
        time::sleep(ms(1)).await;

        let t0 = sim::elapsed();
        let mut c = TcpStream::connect("server:80").await.unwrap();
        assert_eq!(
            sim::elapsed() - t0,
            ms(100),
            "the handshake is one round trip"
        );
        let t1 = sim::elapsed();
        c.write_all(b"ping").await.unwrap();
        assert_eq!(read_n(&mut c, 4).await, b"ping");
        let rtt = sim::elapsed() - t1;
        assert!(rtt >= ms(100), "{rtt:?}");
        assert!(rtt < ms(101), "no more than the link asks: {rtt:?}");

        // The link is per pair: another node still has the default latency.
        let other = sim::node("other").build();
        echo_server(other, 80);
        time::sleep(ms(1)).await;
        let t2 = sim::elapsed();
        let mut c = TcpStream::connect("other:80").await.unwrap();
        c.write_all(b"x").await.unwrap();
        read_n(&mut c, 1).await;
        assert!(sim::elapsed() - t2 < ms(5), "{:?}", sim::elapsed() - t2);
    });
}

#[test]
fn bytes_arrive_in_order_under_jitter() {
    for seed in 0..4 {
        run(seed, async {
            let server = sim::node("server").build();
            let me = sim::current_node();
            simnet::set_latency(me, server, ms(1), ms(40));
            let (mut c, mut s) = pair(server, 80).await;
            let total = 200 * 37;
            let reader = sim_runtime::spawn(async move {
                let mut got = Vec::new();
                let mut arrivals = Vec::new();
                let mut buf = [0u8; 1000];
                while got.len() < total {
                    let n = s.read(&mut buf).await.unwrap();
                    assert!(n > 0);
                    got.extend_from_slice(&buf[..n]);
                    arrivals.push(sim::elapsed());
                }
                (got, arrivals)
            });
            // Many small writes, each its own chunk with its own jitter draw.
            for i in 0..200 {
                c.write_all(&pattern(i * 37, 37)).await.unwrap();
                if i % 3 == 0 {
                    time::sleep(Duration::from_micros(300)).await;
                }
            }
            let (got, arrivals) = reader.await.unwrap();
            assert_eq!(got, pattern(0, total), "intact and in order (seed {seed})");
            assert!(arrivals.windows(2).all(|w| w[0] <= w[1]));
            // The jitter was real: the reads spread over more than the latency.
            assert!(arrivals.len() > 1);
        });
    }
}

#[test]
fn a_writer_stalls_while_the_reader_across_nodes_does_not_read_then_drains() {
    run(4, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        // The writer fills the direction's buffer (send + receive buffers)
        // and then makes no progress, however long it waits.
        let data = pattern(0, 1 << 20);
        let mut written = 0;
        while let Ok(n) = time::timeout(secs(10), c.write(&data[written..])).await {
            written += n.unwrap();
        }
        assert_eq!(written, (64 + 128) * 1024, "send buffer + receive buffer");
        assert!(sim::elapsed() >= secs(10));

        // The reader drains; the writer finishes.
        let writer = sim_runtime::spawn(async move {
            c.write_all(&data[written..]).await.unwrap();
            c.shutdown().await.unwrap();
            c
        });
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, pattern(0, 1 << 20));
        writer.await.unwrap();
    });
}

// ----- how connections end -------------------------------------------------

#[test]
fn half_close_across_nodes() {
    run(5, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        c.write_all(b"request").await.unwrap();
        c.shutdown().await.unwrap();
        let mut req = Vec::new();
        s.read_to_end(&mut req).await.unwrap();
        assert_eq!(req, b"request");
        // The half-closed side still receives.
        s.write_all(b"response").await.unwrap();
        drop(s);
        let mut resp = Vec::new();
        c.read_to_end(&mut resp).await.unwrap();
        assert_eq!(resp, b"response");
    });
}

#[test]
fn closing_with_unread_data_resets_the_peer_across_nodes() {
    run(6, async {
        let server = sim::node("server").build();
        let (mut c, mut s) = pair(server, 80).await;
        s.write_all(b"unread").await.unwrap();
        // Wait until it has arrived at the client, unread.
        let mut b = [0u8; 1];
        assert_eq!(c.peek(&mut b).await.unwrap(), 1);
        c.write_all(b"last words").await.unwrap();
        drop(c);
        // The server reads what was sent before the RST, then the reset once.
        assert_eq!(read_n(&mut s, 10).await, b"last words");
        let mut buf = [0u8; 16];
        assert_os(
            &expect_err(s.read(&mut buf).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        assert_eq!(s.read(&mut buf).await.unwrap(), 0);
    });
}

#[test]
fn after_the_peer_closed_the_first_write_succeeds_the_next_is_a_broken_pipe() {
    run(7, async {
        let server = sim::node("server").build();
        simnet::set_latency(sim::current_node(), server, ms(20), Duration::ZERO);
        simnet::set_latency(server, sim::current_node(), ms(20), Duration::ZERO);
        let (mut c, s) = pair(server, 80).await;
        drop(s);
        let mut b = [0u8; 1];
        assert_eq!(c.read(&mut b).await.unwrap(), 0, "the FIN");
        c.write_all(b"into the void").await.unwrap();
        // The RST answers a round trip later.
        time::sleep(ms(40)).await;
        assert_os(
            &expect_err(c.write_all(b"again").await),
            io::ErrorKind::BrokenPipe,
            EPIPE,
        );
    });
}

// ----- partitions -----------------------------------------------------------

#[test]
fn connect_across_a_partition_times_out_after_the_syn_retries() {
    claims!("net.partition.connect");
    run(8, async {
        let server = sim::node("server").build();
        let me = sim::current_node();
        let _l = listen(server, 80).await;
        simnet::partition(me, server);
        let t0 = sim::elapsed();
        let e = expect_err(TcpStream::connect("server:80").await);
        assert_os(&e, io::ErrorKind::TimedOut, ETIMEDOUT);
        assert_eq!(sim::elapsed() - t0, SYN_TIMEOUT, "not refused: timed out");

        // A partition lifted during the retries: the next SYN gets through.
        let t1 = sim::elapsed();
        sim::at(t1 + secs(2), move || simnet::heal(me, server));
        let c = TcpStream::connect("server:80").await.unwrap();
        let took = sim::elapsed() - t1;
        assert!(
            took >= secs(3) && took < secs(3) + ms(2),
            "the SYN at 3 s: {took:?}"
        );
        drop(c);
    });
}

#[test]
fn an_established_connection_stalls_in_a_partition_and_resumes_on_heal() {
    claims!("net.partition.stream");
    run(9, async {
        let server = sim::node("server").build();
        let me = sim::current_node();
        let (mut c, mut s) = pair(server, 80).await;
        c.write_all(&pattern(0, 1000)).await.unwrap();
        assert_eq!(read_n(&mut s, 1000).await, pattern(0, 1000));

        simnet::partition(me, server);
        for i in 1..10 {
            c.write_all(&pattern(i * 1000, 1000)).await.unwrap();
            s.write_all(&pattern(i * 1000, 1000)).await.unwrap();
        }
        assert!(read_stays_pending(&mut s, secs(60)).await);
        assert!(read_stays_pending(&mut c, secs(1)).await);
        simnet::heal(me, server);
        c.write_all(&pattern(10_000, 1000)).await.unwrap();
        assert_eq!(read_n(&mut s, 10_000).await, pattern(1000, 10_000));
        assert_eq!(read_n(&mut c, 9000).await, pattern(1000, 9000));
        // Held bytes leave at the heal: one link delay, no retransmission wait.
        assert!(sim::elapsed() < secs(61) + ms(5));
    });
}

#[test]
fn a_partition_longer_than_the_retransmission_limit_fails_the_writer() {
    claims!("net.partition.retransmit-limit");
    run(10, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        let me = sim::current_node();
        let (mut c, mut s) = pair(server, 80).await;
        simnet::partition(me, server);
        let t0 = sim::elapsed();
        c.write_all(b"lost?").await.unwrap();
        let mut b = [0u8; 8];
        let e = expect_err(c.read(&mut b).await);
        assert_os(&e, io::ErrorKind::TimedOut, ETIMEDOUT);
        assert_eq!(sim::elapsed() - t0, secs(5));
        // The error is reported once; the connection is dead after it.
        assert!(c.write_all(b"more").await.is_err());
        // The writer gave up on the connection: its bytes are never
        // retransmitted, so after the heal the reader still has nothing and
        // was never told.
        simnet::heal(me, server);
        assert!(read_stays_pending(&mut s, secs(30)).await);
        // When the reader sends, the writer's kernel no longer knows the
        // connection and answers with a RST.
        s.write_all(b"hello?").await.unwrap();
        assert_os(
            &expect_err(s.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
    });
}

#[test]
fn a_one_way_partition_cuts_one_direction() {
    claims!("net.partition.one-way");
    run(11, async {
        let server = sim::node("server").build();
        let me = sim::current_node();
        let (mut c, mut s) = pair(server, 80).await;
        simnet::partition_oneway(me, server);
        s.write_all(b"server to client").await.unwrap();
        assert_eq!(read_n(&mut c, 16).await, b"server to client");
        c.write_all(b"client to server").await.unwrap();
        assert!(read_stays_pending(&mut s, secs(30)).await);

        // A handshake needs both directions: connects either way time out.
        let _l = listen(server, 81).await;
        let t0 = sim::elapsed();
        let e = expect_err(TcpStream::connect("server:81").await);
        assert_os(&e, io::ErrorKind::TimedOut, ETIMEDOUT);
        assert_eq!(sim::elapsed() - t0, SYN_TIMEOUT);
        let main_l = TcpListener::bind("0.0.0.0:82").await.unwrap();
        let e = expect_err(on(server, TcpStream::connect("198.18.0.1:82")).await);
        assert_os(&e, io::ErrorKind::TimedOut, ETIMEDOUT);
        drop(main_l);

        simnet::heal(me, server);
        assert_eq!(read_n(&mut s, 16).await, b"client to server");
    });
}

// ----- clogs ----------------------------------------------------------------

#[test]
fn a_clog_queues_bytes_and_releases_them_intact_without_timing_out() {
    claims!("net.clog");
    run(12, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        let me = sim::current_node();
        let (mut c, mut s) = pair(server, 80).await;
        simnet::clog(me, server);
        for i in 0..20 {
            c.write_all(&pattern(i * 500, 500)).await.unwrap();
        }
        // Far past the retransmission limit: a clog holds, it does not cut.
        assert!(read_stays_pending(&mut s, secs(60)).await);
        simnet::heal(me, server);
        assert_eq!(read_n(&mut s, 10_000).await, pattern(0, 10_000));
        c.write_all(b"after").await.unwrap();
        assert_eq!(read_n(&mut s, 5).await, b"after");
    });
}

#[test]
fn clog_node_holds_every_link_of_the_node() {
    claims!("net.clog.node");
    run(13, async {
        let server = sim::node("server").build();
        let other = sim::node("other").build();
        let (mut c1, mut s1) = pair(server, 80).await;
        let l = listen(server, 81).await;
        let mut c2 = on(other, TcpStream::connect("server:81")).await.unwrap();
        let (mut s2, _) = l.accept().await.unwrap();
        simnet::clog_node(server);
        c1.write_all(b"from main").await.unwrap();
        c2.write_all(b"from other").await.unwrap();
        s1.write_all(b"to main").await.unwrap();
        assert!(read_stays_pending(&mut s1, secs(10)).await);
        assert!(read_stays_pending(&mut s2, secs(1)).await);
        assert!(read_stays_pending(&mut c1, secs(1)).await);
        // Links not touching the node still flow.
        let (mut c3, mut s3) = pair(other, 82).await;
        c3.write_all(b"fine").await.unwrap();
        assert_eq!(read_n(&mut s3, 4).await, b"fine");
        simnet::unclog_node(server);
        assert_eq!(read_n(&mut s1, 9).await, b"from main");
        assert_eq!(read_n(&mut s2, 10).await, b"from other");
        assert_eq!(read_n(&mut c1, 7).await, b"to main");
    });
}

// ----- process death and machine death -------------------------------------

#[test]
fn kill_closes_the_nodes_sockets_fin_or_rst_and_its_listener_refuses() {
    claims!("net.kill");
    run(14, async {
        let server = sim::node("server").build();
        let (tx, rx) = sim_runtime::sync::oneshot::channel();
        sim::spawn_on(server, async move {
            let l = TcpListener::bind("0.0.0.0:80").await.unwrap();
            let (quiet, _) = l.accept().await.unwrap();
            let (busy, _) = l.accept().await.unwrap();
            // Wait until `busy` has data it will never read.
            let mut b = [0u8; 1];
            busy.peek(&mut b).await.unwrap();
            tx.send(()).unwrap();
            let _keep = (l, quiet, busy);
            std::future::pending::<()>().await;
        });
        time::sleep(ms(1)).await;
        let mut quiet = TcpStream::connect("server:80").await.unwrap();
        let mut busy = TcpStream::connect("server:80").await.unwrap();
        busy.write_all(b"never read").await.unwrap();
        rx.await.unwrap();

        sim::kill(server);
        let mut b = [0u8; 8];
        assert_eq!(quiet.read(&mut b).await.unwrap(), 0, "FIN");
        assert_os(
            &expect_err(busy.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        let t0 = sim::elapsed();
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::ConnectionRefused,
            ECONNREFUSED,
        );
        assert!(sim::elapsed() - t0 < ms(5), "refused in a round trip");

        // A restarted process binds its port again and serves.
        sim::revive(server);
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut c = TcpStream::connect("server:80").await.unwrap();
        c.write_all(b"again").await.unwrap();
        assert_eq!(read_n(&mut c, 5).await, b"again");
    });
}

#[test]
fn kill_resets_connections_queued_but_not_accepted() {
    claims!("net.kill.backlog");
    run(15, async {
        let server = sim::node("server").build();
        let _l = sim::spawn_on(server, async {
            let _l = TcpListener::bind("0.0.0.0:80").await.unwrap();
            std::future::pending::<()>().await
        });
        time::sleep(ms(1)).await;
        // Completed in the backlog; the process never accepts.
        let mut c = TcpStream::connect("server:80").await.unwrap();
        time::sleep(ms(5)).await;
        sim::kill(server);
        let mut b = [0u8; 1];
        assert_os(
            &expect_err(c.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
    });
}

#[test]
fn a_crashed_machine_goes_silent() {
    claims!("net.crash");
    run(16, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut reader = TcpStream::connect("server:80").await.unwrap();
        let mut writer = TcpStream::connect("server:80").await.unwrap();
        time::sleep(ms(5)).await;

        sim::crash(server);
        // No FIN, no RST: a read stays pending.
        assert!(read_stays_pending(&mut reader, secs(60)).await);
        // Writes are accepted, held, and time out.
        let t0 = sim::elapsed();
        writer.write_all(b"hello?").await.unwrap();
        let mut b = [0u8; 8];
        assert_os(
            &expect_err(writer.read(&mut b).await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
        assert_eq!(sim::elapsed() - t0, secs(5));
        // Connects go unanswered and time out.
        let t1 = sim::elapsed();
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
        assert_eq!(sim::elapsed() - t1, SYN_TIMEOUT);
        // Still nothing for the idle reader.
        assert!(read_stays_pending(&mut reader, secs(1)).await);
    });
}

#[test]
fn after_a_crash_and_restart_old_connections_get_a_reset_and_the_port_binds_again() {
    claims!("net.restart");
    run(17, async {
        let server = sim::node("server").build();
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut idle = TcpStream::connect("server:80").await.unwrap();
        let mut sent = TcpStream::connect("server:80").await.unwrap();
        idle.write_all(b"hi").await.unwrap();
        assert_eq!(read_n(&mut idle, 2).await, b"hi");

        sim::crash(server);
        // Bytes sent while the machine is down are held (retransmitted).
        sent.write_all(b"while down").await.unwrap();
        time::sleep(secs(10)).await;
        sim::revive(server);
        // The machine is up, the service not yet: connects are refused.
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::ConnectionRefused,
            ECONNREFUSED,
        );
        echo_server(server, 80);
        time::sleep(ms(1)).await;

        // The retransmission reaches a kernel that does not know the
        // connection: RST.
        let mut b = [0u8; 16];
        assert_os(
            &expect_err(sent.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        // The idle one learns only when it next sends.
        assert!(read_stays_pending(&mut idle, secs(5)).await);
        idle.write_all(b"anyone?").await.unwrap();
        assert_os(
            &expect_err(idle.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        // The restarted service bound port 80 again and serves.
        let mut c = TcpStream::connect("server:80").await.unwrap();
        c.write_all(b"new").await.unwrap();
        assert_eq!(read_n(&mut c, 3).await, b"new");
    });
}

// ----- the fault calls ------------------------------------------------------

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

// ----- UDP --------------------------------------------------------------------

async fn udp_on(node: sim::Node, port: u16) -> UdpSocket {
    on(node, UdpSocket::bind(("0.0.0.0", port))).await.unwrap()
}

/// Datagrams that arrive at `s` within `d`.
async fn drain(s: &UdpSocket, d: Duration) -> Vec<(Vec<u8>, SocketAddr)> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 70_000];
    while let Ok(r) = time::timeout(d, s.recv_from(&mut buf)).await {
        let (n, from) = r.unwrap();
        out.push((buf[..n].to_vec(), from));
    }
    out
}

#[test]
fn udp_across_nodes_keeps_datagram_boundaries() {
    run(27, async {
        let b = sim::node("b").build();
        let rx = udp_on(b, 5000).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        let sizes = [1usize, 100, 1400, 9000, 65_507];
        for (i, &n) in sizes.iter().enumerate() {
            assert_eq!(tx.send_to(&pattern(i, n), "b:5000").await.unwrap(), n);
            time::sleep(ms(5)).await;
        }
        let got = drain(&rx, ms(50)).await;
        let me = SocketAddr::new(
            "198.18.0.1".parse().unwrap(),
            tx.local_addr().unwrap().port(),
        );
        assert_eq!(got.len(), sizes.len());
        for (i, (data, from)) in got.iter().enumerate() {
            assert_eq!(*data, pattern(i, sizes[i]));
            assert_eq!(*from, me);
        }
    });
}

#[test]
fn udp_link_faults_lose_or_duplicate_every_datagram() {
    claims!("net.udp.loss-dup");
    run(28, async {
        let me = sim::current_node();
        let b = sim::node("b").build();
        let c = sim::node("c").build();
        let rb = udp_on(b, 5000).await;
        let rc = udp_on(c, 5000).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        simnet::set_udp_faults(me, b, 1_000_000, 0);
        simnet::set_udp_faults(me, c, 0, 1_000_000);
        for i in 0..50u32 {
            tx.send_to(&i.to_be_bytes(), "b:5000").await.unwrap();
            tx.send_to(&i.to_be_bytes(), "c:5000").await.unwrap();
        }
        assert!(drain(&rb, ms(100)).await.is_empty(), "all lost");
        let mut got: Vec<u32> = drain(&rc, ms(100))
            .await
            .iter()
            .map(|(d, _)| u32::from_be_bytes(d[..4].try_into().unwrap()))
            .collect();
        got.sort();
        let want: Vec<u32> = (0..50).flat_map(|i| [i, i]).collect();
        assert_eq!(got, want, "each exactly twice");
        // A partition loses datagrams too; so does a crashed machine.
        let d = sim::node("d").build();
        let rd = udp_on(d, 5000).await;
        simnet::partition(me, d);
        tx.send_to(b"cut", "d:5000").await.unwrap();
        assert!(drain(&rd, ms(100)).await.is_empty());
        simnet::heal(me, d);
        tx.send_to(b"healed", "d:5000").await.unwrap();
        assert_eq!(drain(&rd, ms(100)).await.len(), 1);
        sim::crash(d);
        tx.send_to(b"down", "d:5000").await.unwrap();
        sim::revive(d);
        let rd = udp_on(d, 5000).await;
        assert!(drain(&rd, ms(100)).await.is_empty());
        // Faults are per direction: b can still reach us.
        let back = on(b, async {
            let s = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            s.send_to(b"back", "198.18.0.1:6000").await.unwrap();
        });
        let rx = UdpSocket::bind("0.0.0.0:6000").await.unwrap();
        back.await;
        let got = drain(&rx, ms(10)).await;
        assert_eq!(got.len(), 1);
    });
}

/// The order in which 20 back-to-back datagrams arrive over a jittery link.
fn udp_order(seed: u64, jitter: Duration) -> Vec<u32> {
    run(seed, async move {
        let me = sim::current_node();
        let b = sim::node("b").build();
        simnet::set_latency(me, b, ms(1), jitter);
        let rx = udp_on(b, 5000).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        for i in 0..20u32 {
            tx.send_to(&i.to_be_bytes(), "b:5000").await.unwrap();
        }
        drain(&rx, ms(200))
            .await
            .iter()
            .map(|(d, _)| u32::from_be_bytes(d[..4].try_into().unwrap()))
            .collect()
    })
}

#[test]
fn udp_jitter_may_reorder_deterministically() {
    let in_order: Vec<u32> = (0..20).collect();
    for seed in 0..5 {
        assert_eq!(
            udp_order(seed, Duration::ZERO),
            in_order,
            "no jitter, no reorder"
        );
    }
    let seed = (0..20)
        .find(|&s| udp_order(s, ms(50)) != in_order)
        .expect("some seed reorders with 50 ms of jitter");
    let order = udp_order(seed, ms(50));
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, in_order, "reordered, none lost or duplicated");
    assert_eq!(
        udp_order(seed, ms(50)),
        order,
        "the same seed, the same order"
    );
}

#[test]
fn udp_broadcast_needs_so_broadcast_and_reaches_every_node_on_the_port() {
    run(29, async {
        let nodes: Vec<sim::Node> = ["b", "c", "d"]
            .iter()
            .map(|n| sim::node(*n).build())
            .collect();
        let mut rxs = Vec::new();
        for &n in &nodes {
            rxs.push(udp_on(n, 6000).await);
        }
        let elsewhere = udp_on(nodes[0], 6001).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        assert_os(
            &expect_err(tx.send_to(b"hello all", "255.255.255.255:6000").await),
            io::ErrorKind::PermissionDenied,
            EACCES,
        );
        tx.set_broadcast(true).unwrap();
        assert_eq!(
            tx.send_to(b"hello all", "255.255.255.255:6000")
                .await
                .unwrap(),
            9
        );
        for rx in &rxs {
            let got = drain(rx, ms(10)).await;
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].0, b"hello all");
            assert_eq!(got[0].1.ip(), "198.18.0.1".parse::<IpAddr>().unwrap());
        }
        assert!(drain(&elsewhere, ms(10)).await.is_empty());
    });
}

// ----- determinism ------------------------------------------------------------

/// A small two-node echo workload with jitter: its fingerprint and the
/// virtual times at which the replies arrived.
fn echo_workload(seed: u64) -> (u64, Vec<Duration>) {
    run(seed, async {
        let me = sim::current_node();
        let server = sim::node("server").build();
        simnet::set_latency(me, server, ms(2), ms(3));
        simnet::set_latency(server, me, ms(2), ms(3));
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut c = TcpStream::connect("server:80").await.unwrap();
        let mut times = Vec::new();
        for i in 0..20 {
            c.write_all(&pattern(i * 10, 10)).await.unwrap();
            assert_eq!(read_n(&mut c, 10).await, pattern(i * 10, 10));
            times.push(sim::elapsed());
        }
        (sim::fingerprint(), times)
    })
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let a = echo_workload(42);
    let b = echo_workload(42);
    assert_eq!(a, b);
    let c = echo_workload(43);
    assert_ne!(a.1, c.1, "jitter draws follow the seed");
    assert_ne!(a.0, c.0, "and so does the fingerprint");
}

// ----- bad input --------------------------------------------------------------

#[test]
fn sockets_of_a_dead_node_give_io_errors_not_panics() {
    for crash in [false, true] {
        run(30, async move {
            let server = sim::node("server").build();
            let (mut c, mut s) = pair(server, 80).await;
            let l = listen(server, 81).await;
            let u = udp_on(server, 5000).await;
            if crash {
                sim::crash(server);
            } else {
                sim::kill(server);
            }
            let mut b = [0u8; 8];
            assert!(s.write_all(b"x").await.is_err());
            assert!(s.read(&mut b).await.is_err());
            assert!(s.peek(&mut b).await.is_err());
            assert!(s.try_read(&mut b).is_err());
            assert!(s.local_addr().is_err());
            assert!(s.peer_addr().is_err());
            assert!(s.shutdown().await.is_err());
            assert!(l.accept().await.is_err());
            assert!(l.local_addr().is_err());
            assert!(u.send_to(b"x", "198.18.0.1:9").await.is_err());
            assert!(u.recv_from(&mut b).await.is_err());
            assert!(u.local_addr().is_err());
            // A revived node reuses the slots; the stale handles stay dead
            // and dropping them does not close the new sockets.
            sim::revive(server);
            let (mut c2, mut s2) = pair(server, 80).await;
            let u2 = udp_on(server, 5000).await;
            assert!(s.write_all(b"x").await.is_err());
            drop((s, l, u));
            c2.write_all(b"ok").await.unwrap();
            assert_eq!(read_n(&mut s2, 2).await, b"ok");
            u2.local_addr().unwrap();
            drop(c.write_all(b"x").await);
        });
    }
}

#[test]
fn invalid_addresses_are_errors() {
    run(31, async {
        let server = sim::node("server").build();
        let _l = listen(server, 80).await;
        for bad in ["server", "server:", "server:99999", "server:http", ""] {
            let e = expect_err(TcpStream::connect(bad).await);
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}: {e:?}");
        }
        // Another node's IP is not ours to bind.
        assert_os(
            &expect_err(TcpListener::bind("198.18.0.2:0").await),
            io::ErrorKind::AddrNotAvailable,
            EADDRNOTAVAIL,
        );
        assert_os(
            &expect_err(UdpSocket::bind("198.18.0.2:0").await),
            io::ErrorKind::AddrNotAvailable,
            EADDRNOTAVAIL,
        );
        let u = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        assert_os(
            &expect_err(u.send_to(b"x", "server:0").await),
            io::ErrorKind::InvalidInput,
            EINVAL,
        );
        assert_os(
            &expect_err(u.send_to(&vec![0u8; 65_508], "server:9").await),
            io::Error::from_raw_os_error(EMSGSIZE).kind(),
            EMSGSIZE,
        );
        // An address no host owns: nobody answers the SYN.
        let t0 = sim::elapsed();
        assert_os(
            &expect_err(TcpStream::connect("10.9.9.9:80").await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
        assert_eq!(sim::elapsed() - t0, SYN_TIMEOUT);
    });
}

#[test]
fn a_closed_peers_rst_waits_for_the_partition_to_heal() {
    claims!("net.partition.closed-peer");
    run(40, async {
        let server = sim::node("server").build();
        let me = sim::current_node();
        let (c, mut s) = pair(server, 80).await;
        simnet::partition(me, server);
        drop(c); // FIN held by the partition
        s.write_all(b"reply").await.unwrap();
        // Nothing can come back across the partition: no FIN, no RST.
        assert!(
            read_stays_pending(&mut s, secs(30)).await,
            "a RST crossed the partition"
        );
        simnet::heal(me, server);
        let mut b = [0u8; 8];
        assert_eq!(s.read(&mut b).await.unwrap(), 0, "the FIN first");
        // The reply reaches a closed socket once the link heals: RST.
        time::sleep(ms(5)).await;
        assert_eq!(s.read(&mut b).await.unwrap(), 0, "EOF stays");
        assert_os(
            &expect_err(s.write_all(b"again").await),
            io::ErrorKind::BrokenPipe,
            EPIPE,
        );
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

#[test]
fn bytes_in_flight_to_a_crashing_machine_time_the_sender_out() {
    claims!("net.crash.in-flight");
    run(42, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        let (mut c, _s) = pair(server, 80).await;
        // Still in flight (unacknowledged) when the machine dies.
        c.write_all(b"unacked").await.unwrap();
        sim::crash(server);
        let t0 = sim::elapsed();
        let mut b = [0u8; 8];
        let r = time::timeout(secs(60), c.read(&mut b)).await;
        let e = expect_err(r.expect("the sender must time out, not wait forever"));
        assert_os(&e, io::ErrorKind::TimedOut, ETIMEDOUT);
        assert_eq!(sim::elapsed() - t0, secs(5));
    });
}

#[test]
fn a_writer_to_a_closed_peer_in_a_lasting_partition_times_out() {
    claims!("net.partition.closed-peer");
    run(43, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        let me = sim::current_node();
        let (c, mut s) = pair(server, 80).await;
        simnet::partition(me, server);
        drop(c);
        let t0 = sim::elapsed();
        s.write_all(b"reply").await.unwrap();
        let mut b = [0u8; 8];
        let r = time::timeout(secs(60), s.read(&mut b)).await;
        let e = expect_err(r.expect("the sender must time out, not wait forever"));
        assert_os(&e, io::ErrorKind::TimedOut, ETIMEDOUT);
        assert_eq!(sim::elapsed() - t0, secs(5));
    });
}
