//! TCP on an open connection: establishment, addresses, the byte stream,
//! readiness, splitting, socket options and `TcpSocket`.

use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::time::Duration;

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt, Interest};
use sim_runtime::net::{TcpListener, TcpSocket, TcpStream};

use crate::{bounded, listener, pair, pattern, run};

#[test]
fn connect_completes_before_accept() {
    run(async {
        let listener = listener().await;
        let addr = listener.local_addr().unwrap();
        // Both connects return while nobody has called accept: the
        // handshake completes in the listener's backlog.
        let first = bounded("connect", TcpStream::connect(addr)).await.unwrap();
        let second = bounded("connect", TcpStream::connect(addr)).await.unwrap();
        // Bytes written before the accept wait in the accepted socket.
        first.try_write(b"early").unwrap();

        // The backlog is first in, first out.
        let (a, from) = listener.accept().await.unwrap();
        assert_eq!(from, first.local_addr().unwrap());
        assert_eq!(a.peer_addr().unwrap(), first.local_addr().unwrap());
        assert_eq!(a.local_addr().unwrap(), first.peer_addr().unwrap());
        let (b, from) = listener.accept().await.unwrap();
        assert_eq!(from, second.local_addr().unwrap());
        assert_eq!(b.peer_addr().unwrap(), second.local_addr().unwrap());

        let mut a = a;
        let mut buf = [0u8; 5];
        bounded("read", a.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"early");
    });
}

#[test]
fn local_and_peer_addrs_pair_up() {
    run(async {
        // A listener on the wildcard address accepts on the address the
        // client dialled, and reports that address as the accepted socket's
        // local address.
        let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
        let bound = listener.local_addr().unwrap();
        assert_eq!(bound.ip(), Ipv4Addr::UNSPECIFIED);
        let dialled = SocketAddr::from((Ipv4Addr::LOCALHOST, bound.port()));

        let client = TcpStream::connect(dialled).await.unwrap();
        let (server, from) = listener.accept().await.unwrap();

        assert_eq!(client.peer_addr().unwrap(), dialled);
        assert_eq!(server.local_addr().unwrap(), dialled);
        assert_eq!(server.peer_addr().unwrap(), client.local_addr().unwrap());
        assert_eq!(from, client.local_addr().unwrap());
        assert_eq!(client.local_addr().unwrap().ip(), Ipv4Addr::LOCALHOST);
        assert_ne!(client.local_addr().unwrap().port(), 0);
        assert_ne!(client.local_addr().unwrap().port(), bound.port());
    });
}

/// Linux's ephemeral port range.
fn ephemeral_range() -> RangeInclusive<u16> {
    if cfg!(simulation) {
        // Exception `ephemeral_range_is_host_config`: the simulation uses
        // Linux's default range.
        return 32768..=60999;
    }
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let mut bounds = text.split_whitespace().map(|n| n.parse::<u16>().unwrap());
    let low = bounds.next().unwrap();
    let high = bounds.next().unwrap();
    low..=high
}

#[test]
fn port_zero_picks_distinct_ephemeral_ports() {
    run(async {
        let range = ephemeral_range();
        let a = listener().await;
        let b = listener().await;
        let a_port = a.local_addr().unwrap().port();
        let b_port = b.local_addr().unwrap().port();
        assert!(range.contains(&a_port), "{a_port} not in {range:?}");
        assert!(range.contains(&b_port), "{b_port} not in {range:?}");
        assert_ne!(a_port, b_port);

        // A connecting socket gets its local port from the same range.
        let client = TcpStream::connect(a.local_addr().unwrap()).await.unwrap();
        let c_port = client.local_addr().unwrap().port();
        assert!(range.contains(&c_port), "{c_port} not in {range:?}");
        assert_ne!(c_port, a_port);
        assert_ne!(c_port, b_port);
    });
}

#[test]
fn large_transfer_arrives_intact_and_in_order() {
    const TOTAL: usize = 1 << 20;
    // Odd, mismatched write and read sizes, so that no chunk boundary
    // lines up with another or with the pattern's period.
    const WRITES: [usize; 6] = [1, 7, 1000, 4093, 65537, 3];
    run(async {
        let (mut client, mut server) = pair().await;
        let writer = sim_runtime::spawn(async move {
            let mut sent = 0;
            let mut i = 0;
            while sent < TOTAL {
                let len = WRITES[i % WRITES.len()].min(TOTAL - sent);
                client.write_all(&pattern(sent, len)).await.unwrap();
                sent += len;
                i += 1;
            }
            client.shutdown().await.unwrap();
            sent
        });

        let mut received = Vec::with_capacity(TOTAL);
        let mut buf = vec![0u8; 5003];
        loop {
            let n = bounded("read", server.read(&mut buf)).await.unwrap();
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
            assert!(received.len() <= TOTAL, "more bytes than were sent");
        }
        assert_eq!(writer.await.unwrap(), TOTAL);
        assert_eq!(received.len(), TOTAL);
        assert!(
            received == pattern(0, TOTAL),
            "bytes differ from what was sent"
        );
    });
}

#[test]
fn writer_stalls_while_peer_does_not_read_then_drains() {
    /// Far above what any default socket buffers hold, so exceeding it
    /// means the send side is not bounded at all.
    const BUFFERED_MAX: usize = 64 << 20;
    const CHUNK: usize = 64 << 10;
    run(async {
        let (client, mut server) = pair().await;

        // Fill: the peer reads nothing, so writes are eventually refused.
        let mut total = 0;
        loop {
            match client.try_write(&pattern(total, CHUNK)) {
                Ok(n) => {
                    assert!(n > 0);
                    total += n;
                    assert!(
                        total < BUFFERED_MAX,
                        "{total} bytes accepted without a reader"
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("try_write: {e:?}"),
            }
        }
        assert!(total > 0);
        // Still stalled: nothing has drained.
        let err = crate::expect_err(client.try_write(b"x"));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);

        // The peer drains everything, and it is exactly what was written.
        let mut received = vec![0u8; total];
        bounded("drain", server.read_exact(&mut received))
            .await
            .unwrap();
        assert!(received == pattern(0, total), "drained bytes differ");

        // The writer may write again.
        bounded("writable", client.writable()).await.unwrap();
        let n = client.try_write(&pattern(total, CHUNK)).unwrap();
        assert!(n > 0);
        let mut more = vec![0u8; n];
        bounded("read", server.read_exact(&mut more)).await.unwrap();
        assert!(more == pattern(total, n));
    });
}

#[test]
fn peek_does_not_consume() {
    run(async {
        let (mut client, mut server) = pair().await;
        client.write_all(b"hello world").await.unwrap();

        let mut peeked = [0u8; 64];
        let n = bounded("peek", server.peek(&mut peeked)).await.unwrap();
        assert!(n > 0);
        assert!(n <= 11);
        assert_eq!(&peeked[..n], &b"hello world"[..n]);

        // What was peeked is read again, from the start.
        let mut read = [0u8; 11];
        bounded("read", server.read_exact(&mut read)).await.unwrap();
        assert_eq!(&read, b"hello world");
    });
}

#[test]
fn try_read_would_block_until_data_arrives() {
    run(async {
        let (mut client, server) = pair().await;
        let mut buf = [0u8; 16];
        let err = crate::expect_err(server.try_read(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);

        client.write_all(b"ping").await.unwrap();
        let mut got = Vec::new();
        while got.len() < 4 {
            bounded("readable", server.readable()).await.unwrap();
            match server.try_read(&mut buf) {
                Ok(n) => {
                    assert!(n > 0, "EOF on an open connection");
                    got.extend_from_slice(&buf[..n]);
                }
                // Readiness may be stale: the contract is to wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("try_read: {e:?}"),
            }
        }
        assert_eq!(got, b"ping");
        let err = crate::expect_err(server.try_read(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    });
}

#[test]
fn ready_reports_readable_and_writable() {
    run(async {
        let (mut client, mut server) = pair().await;
        // A fresh connection with nothing sent is writable. Tokio allows a
        // false-positive readable (real Tokio reports one on an accepted
        // stream's first `ready`); if reported, there must be nothing to
        // read.
        let ready = bounded(
            "ready",
            server.ready(Interest::READABLE | Interest::WRITABLE),
        )
        .await
        .unwrap();
        assert!(ready.is_writable());
        assert!(!ready.is_read_closed());
        assert!(!ready.is_write_closed());
        if ready.is_readable() {
            let mut buf = [0u8; 4];
            let err = crate::expect_err(server.try_read(&mut buf));
            assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        }

        client.write_all(b"data").await.unwrap();
        let mut got = Vec::new();
        while got.len() < 4 {
            let ready = bounded("ready", server.ready(Interest::READABLE))
                .await
                .unwrap();
            assert!(ready.is_readable());
            assert!(!ready.is_writable(), "interest was READABLE only");
            let mut buf = [0u8; 4];
            match server.try_read(&mut buf) {
                Ok(n) => {
                    assert!(n > 0, "EOF on an open connection");
                    got.extend_from_slice(&buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("try_read: {e:?}"),
            }
        }
        assert_eq!(got, b"data");
        server.write_all(b"back").await.unwrap();
        let mut buf = [0u8; 4];
        bounded("read", client.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"back");
    });
}

#[test]
fn split_halves_work_on_one_stream() {
    run(async {
        let (mut client, mut server) = pair().await;
        let (mut reader, mut writer) = server.split();
        writer.write_all(b"from server").await.unwrap();
        client.write_all(b"from client").await.unwrap();

        let mut buf = [0u8; 11];
        bounded("read half", reader.read_exact(&mut buf))
            .await
            .unwrap();
        assert_eq!(&buf, b"from client");
        assert_eq!(reader.peer_addr().unwrap(), client.local_addr().unwrap());
        assert_eq!(writer.local_addr().unwrap(), client.peer_addr().unwrap());

        bounded("client read", client.read_exact(&mut buf))
            .await
            .unwrap();
        assert_eq!(&buf, b"from server");
    });
}

#[test]
fn read_halves_try_read_into_a_buffers_spare_capacity() {
    run(async {
        let (mut client, mut server) = pair().await;
        client.write_all(b"borrowed").await.unwrap();
        let (reader, _writer) = server.split();
        bounded("readable", reader.readable()).await.unwrap();
        let mut buf = Vec::with_capacity(32);
        assert_eq!(reader.try_read_buf(&mut buf).unwrap(), 8);
        assert_eq!(buf, b"borrowed");

        client.write_all(b"owned").await.unwrap();
        let (reader, _writer) = server.into_split();
        bounded("readable", reader.readable()).await.unwrap();
        assert_eq!(reader.try_read_buf(&mut buf).unwrap(), 5);
        assert_eq!(buf, b"borrowedowned");
        let err = reader.try_read_buf(&mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    });
}

#[test]
fn into_split_halves_move_to_tasks_and_reunite() {
    run(async {
        let (mut client, server) = pair().await;
        let server_local = server.local_addr().unwrap();
        let (mut reader, mut writer) = server.into_split();

        // An echo across two tasks: one reads, the other writes.
        let (tx, mut rx) = sim_runtime::sync::mpsc::channel::<Vec<u8>>(4);
        let read_task = sim_runtime::spawn(async move {
            let mut buf = [0u8; 3];
            reader.read_exact(&mut buf).await.unwrap();
            tx.send(buf.to_vec()).await.unwrap();
            reader
        });
        let write_task = sim_runtime::spawn(async move {
            let msg = rx.recv().await.unwrap();
            writer.write_all(&msg).await.unwrap();
            writer
        });

        client.write_all(b"abc").await.unwrap();
        let mut echoed = [0u8; 3];
        bounded("echo", client.read_exact(&mut echoed))
            .await
            .unwrap();
        assert_eq!(&echoed, b"abc");

        let reader = read_task.await.unwrap();
        let writer = write_task.await.unwrap();
        let mut server = reader.reunite(writer).unwrap();
        assert_eq!(server.local_addr().unwrap(), server_local);
        server.write_all(b"whole").await.unwrap();
        let mut buf = [0u8; 5];
        bounded("read", client.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"whole");
    });
}

#[test]
fn reunite_of_halves_from_different_streams_fails() {
    run(async {
        let (_c1, s1) = pair().await;
        let (_c2, s2) = pair().await;
        let s1_addr = s1.peer_addr().unwrap();
        let s2_addr = s2.peer_addr().unwrap();
        let (r1, w1) = s1.into_split();
        let (r2, w2) = s2.into_split();

        let err = r1.reunite(w2).unwrap_err();
        // The error gives both halves back, unchanged.
        let sim_runtime::net::tcp::ReuniteError(r1, w2) = err;
        assert_eq!(r1.peer_addr().unwrap(), s1_addr);
        assert_eq!(w2.peer_addr().unwrap(), s2_addr);

        // Matching halves still reunite.
        let s1 = r1.reunite(w1).unwrap();
        let s2 = r2.reunite(w2).unwrap();
        assert_eq!(s1.peer_addr().unwrap(), s1_addr);
        assert_eq!(s2.peer_addr().unwrap(), s2_addr);
    });
}

#[test]
fn dropping_owned_write_half_shuts_down_writing_only() {
    run(async {
        let (mut client, server) = pair().await;
        let (mut reader, writer) = server.into_split();
        drop(writer);

        // The peer sees EOF...
        let mut buf = [0u8; 8];
        let n = bounded("read", client.read(&mut buf)).await.unwrap();
        assert_eq!(n, 0);
        // ...and can still send on its half, which the read half receives.
        client.write_all(b"after").await.unwrap();
        let mut got = [0u8; 5];
        bounded("read half", reader.read_exact(&mut got))
            .await
            .unwrap();
        assert_eq!(&got, b"after");
    });
}

#[test]
fn vectored_writes_concatenate_slices() {
    run(async {
        let (client, mut server) = pair().await;
        let slices = [
            IoSlice::new(b"one,"),
            IoSlice::new(b""),
            IoSlice::new(b"two,"),
        ];
        // A small write into an empty send buffer is taken whole.
        bounded("writable", client.writable()).await.unwrap();
        let n = client.try_write_vectored(&slices).unwrap();
        assert_eq!(n, 8);

        let mut client = client;
        let slices = [IoSlice::new(b"three,"), IoSlice::new(b"four")];
        let mut written = 0;
        while written < 10 {
            // write_vectored may take a prefix; this writes the rest.
            let rest: Vec<u8> = slices.iter().flat_map(|s| s.iter().copied()).collect();
            written += client
                .write_vectored(&[IoSlice::new(&rest[written..])])
                .await
                .unwrap();
        }
        let mut buf = [0u8; 18];
        bounded("read", server.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"one,two,three,four");
    });
}

#[test]
fn socket_options_round_trip() {
    run(async {
        let (client, _server) = pair().await;

        // Linux's defaults: Nagle on, no linger.
        assert!(!client.nodelay().unwrap());
        client.set_nodelay(true).unwrap();
        assert!(client.nodelay().unwrap());
        client.set_nodelay(false).unwrap();
        assert!(!client.nodelay().unwrap());

        client.set_ttl(42).unwrap();
        assert_eq!(client.ttl().unwrap(), 42);

        assert_eq!(client.linger().unwrap(), None);
        #[allow(deprecated)]
        {
            client.set_linger(Some(Duration::from_secs(3))).unwrap();
            assert_eq!(client.linger().unwrap(), Some(Duration::from_secs(3)));
            client.set_linger(None).unwrap();
        }
        assert_eq!(client.linger().unwrap(), None);
        client.set_zero_linger().unwrap();
        assert_eq!(client.linger().unwrap(), Some(Duration::ZERO));
    });
}

#[test]
fn tcp_socket_binds_listens_and_connects() {
    run(async {
        let server = TcpSocket::new_v4().unwrap();
        server.set_reuseaddr(true).unwrap();
        assert!(server.reuseaddr().unwrap());
        server.set_nodelay(true).unwrap();
        assert!(server.nodelay().unwrap());
        server.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = server.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        let listener = server.listen(1024).unwrap();
        assert_eq!(listener.local_addr().unwrap(), addr);

        // A client bound first connects from the address it bound.
        let client = TcpSocket::new_v4().unwrap();
        assert!(!client.reuseaddr().unwrap());
        client.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let client_addr = client.local_addr().unwrap();
        let mut stream = bounded("connect", client.connect(addr)).await.unwrap();
        assert_eq!(stream.local_addr().unwrap(), client_addr);
        assert_eq!(stream.peer_addr().unwrap(), addr);

        let (mut accepted, from) = listener.accept().await.unwrap();
        assert_eq!(from, client_addr);
        stream.write_all(b"hi").await.unwrap();
        let mut buf = [0u8; 2];
        bounded("read", accepted.read_exact(&mut buf))
            .await
            .unwrap();
        assert_eq!(&buf, b"hi");
    });
}

#[test]
fn reuseaddr_rebinds_the_port_of_a_closed_connection() {
    run(async {
        let listener = listener().await;
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();

        // The server closes first, so its side of the connection lingers
        // (FIN_WAIT/TIME_WAIT) on the listener's port after everything is
        // dropped.
        drop(server);
        let mut buf = [0u8; 1];
        assert_eq!(bounded("eof", client.read(&mut buf)).await.unwrap(), 0);
        drop(client);
        drop(listener);

        // With SO_REUSEADDR (which TcpListener::bind sets) the port is
        // bindable again at once.
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket.bind(addr).unwrap();
        let again = socket.listen(16).unwrap();
        assert_eq!(again.local_addr().unwrap(), addr);
        drop(again);
        let again = TcpListener::bind(addr).await.unwrap();
        assert_eq!(again.local_addr().unwrap(), addr);
    });
}
