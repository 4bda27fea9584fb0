//! Partitions and clogs: connects that time out, streams that stall and
//! resume, retransmission limits, one-way cuts, held bytes released intact.

use super::*;

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
