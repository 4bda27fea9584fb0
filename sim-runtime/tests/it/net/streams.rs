//! A TCP stream across nodes: per-link latency, order under jitter,
//! backpressure, and how a connection ends (half close, reset, broken pipe).

use super::*;

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

/// A close that resets discards the closer's send queue, as Linux's does:
/// of the 192 KiB the server's kernel took (64 KiB of send buffer, 128 KiB
/// of the client's receive buffer), the client, reading slowly, gets the
/// first 128 KiB, then the reset once, then EOF. A kill closes the same
/// way. (On loopback: 113,152 of 3 MB.)
#[test]
fn a_resetting_close_or_kill_discards_what_the_peers_buffer_had_not_taken() {
    claims!("net.close.reset-discards");
    const KIB: usize = 1024;
    for kill in [false, true] {
        run(8, async move {
            let server = sim::node("server").build();
            let (tx, rx) = sim_runtime::sync::oneshot::channel();
            sim::spawn_on(server, async move {
                let l = TcpListener::bind("0.0.0.0:80").await.unwrap();
                let (s, _) = l.accept().await.unwrap();
                // Wait until the client's bytes are here, never to be read.
                let mut b = [0u8; 1];
                s.peek(&mut b).await.unwrap();
                let mut written = 0;
                loop {
                    match s.try_write(&pattern(written, 64 * KIB)) {
                        Ok(n) => written += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => panic!("try_write: {e:?}"),
                    }
                }
                tx.send(written).unwrap();
                if kill {
                    let _keep = (l, s);
                    std::future::pending::<()>().await;
                }
            });
            time::sleep(ms(1)).await;
            let mut c = TcpStream::connect("server:80").await.unwrap();
            c.write_all(b"never read").await.unwrap();
            assert_eq!(rx.await.unwrap(), 192 * KIB);
            if kill {
                sim::kill(server);
            }
            let mut got = Vec::new();
            let mut buf = [0u8; 4 * KIB];
            let err = loop {
                time::sleep(ms(1)).await;
                match c.read(&mut buf).await {
                    Ok(0) => panic!("EOF after {} bytes, before the reset", got.len()),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) => break e,
                }
            };
            assert_os(&err, io::ErrorKind::ConnectionReset, ECONNRESET);
            assert_eq!(got.len(), 128 * KIB, "kill: {kill}");
            assert!(got == pattern(0, 128 * KIB), "the stream's start");
            assert_eq!(c.read(&mut buf).await.unwrap(), 0);
        });
    }
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

/// A task waiting to read is woken by bytes toward it (or the end of the
/// stream), not because its peer read what it wrote: Tokio wakes a waiter
/// for its own readiness only. The client's read is polled twice: once to
/// wait, once when the reply arrives, though the server read its request
/// 50 ms before replying.
#[test]
fn a_reader_is_not_woken_when_its_peer_reads() {
    run(5, async {
        let server = sim::node("server").build();
        sim::spawn_on(server, async {
            let l = TcpListener::bind("0.0.0.0:80").await.unwrap();
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).await.unwrap();
            time::sleep(ms(50)).await;
            s.write_all(b"pong").await.unwrap();
            time::sleep(secs(1)).await;
        });
        time::sleep(ms(1)).await;
        let mut c = TcpStream::connect("server:80").await.unwrap();
        c.write_all(b"ping").await.unwrap();
        let polls = std::cell::Cell::new(0);
        let mut buf = [0u8; 4];
        let mut read = std::pin::pin!(c.read_exact(&mut buf));
        std::future::poll_fn(|cx| {
            polls.set(polls.get() + 1);
            read.as_mut().poll(cx)
        })
        .await
        .unwrap();
        assert_eq!(&buf, b"pong");
        assert_eq!(polls.get(), 2, "polled to wait, then once for the reply");
    });
}
