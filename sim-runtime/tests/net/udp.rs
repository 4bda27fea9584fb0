//! UDP: datagrams keep their boundaries, connected sockets filter, and
//! errors are Linux's.

use std::io;
use std::net::SocketAddr;

use sim_runtime::net::UdpSocket;

use crate::errno::{ECONNREFUSED, EDESTADDRREQ, EINVAL, EMSGSIZE, ENOTCONN};
use crate::{assert_os_error, bounded, expect_err, run, uncategorized};

async fn socket() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").await.unwrap()
}

fn addr(s: &UdpSocket) -> SocketAddr {
    s.local_addr().unwrap()
}

#[test]
fn bind_picks_a_port_and_send_to_returns_the_count() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        assert_ne!(addr(&a).port(), 0);
        assert_ne!(addr(&a).port(), addr(&b).port());
        assert_eq!(a.send_to(b"hello", addr(&b)).await.unwrap(), 5);

        let mut buf = [0u8; 64];
        let (n, from) = bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(from, addr(&a));
    });
}

#[test]
fn datagram_boundaries_are_preserved() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        a.send_to(b"one", addr(&b)).await.unwrap();
        a.send_to(b"two!", addr(&b)).await.unwrap();

        // Two datagrams are read as two, never merged, however large the
        // buffer. (UDP does not promise order, so compare as a set.)
        let mut got = Vec::new();
        for _ in 0..2 {
            let mut buf = [0u8; 64];
            let (n, from) = bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
            assert_eq!(from, addr(&a));
            got.push(buf[..n].to_vec());
        }
        got.sort();
        assert_eq!(got, vec![b"one".to_vec(), b"two!".to_vec()]);
    });
}

#[test]
fn datagram_larger_than_buffer_is_truncated() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        let big: Vec<u8> = (0..100u8).collect();
        a.send_to(&big, addr(&b)).await.unwrap();

        // The buffer gets the datagram's first bytes; the rest is discarded,
        // not left for the next read.
        let mut buf = [0u8; 10];
        let (n, _) = bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
        assert_eq!(n, 10);
        assert_eq!(&buf, &big[..10]);
        let err = expect_err(b.try_recv_from(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);

        a.send_to(b"next", addr(&b)).await.unwrap();
        let (n, _) = bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"next");
    });
}

#[test]
fn peek_on_a_connected_socket_does_not_consume() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        a.connect(addr(&b)).await.unwrap();
        b.send_to(b"look", addr(&a)).await.unwrap();

        let mut buf = [0u8; 16];
        let n = bounded("peek", a.peek(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"look");
        assert_eq!(a.try_peek(&mut buf).unwrap(), 4);
        let mut read = sim_runtime::io::ReadBuf::new(&mut buf);
        std::future::poll_fn(|cx| a.poll_peek(cx, &mut read))
            .await
            .unwrap();
        assert_eq!(read.filled(), b"look");

        let n = a.recv(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"look");
        let err = expect_err(a.try_peek(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    });
}

#[test]
fn no_device_is_bound_and_unbinding_is_a_no_op() {
    run(async {
        let a = socket().await;
        assert_eq!(a.device().unwrap(), None);
        a.bind_device(None).unwrap();
        assert_eq!(a.device().unwrap(), None);
    });
}

#[test]
fn peek_from_does_not_consume() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        a.send_to(b"look", addr(&b)).await.unwrap();

        let mut buf = [0u8; 16];
        let (n, from) = bounded("peek_from", b.peek_from(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"look");
        assert_eq!(from, addr(&a));
        let (n, from) = b.peek_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"look");
        assert_eq!(from, addr(&a));

        let (n, from) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"look");
        assert_eq!(from, addr(&a));
        let err = expect_err(b.try_recv_from(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    });
}

#[test]
fn connected_sockets_send_and_recv() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        a.connect(addr(&b)).await.unwrap();
        b.connect(addr(&a)).await.unwrap();
        assert_eq!(a.peer_addr().unwrap(), addr(&b));

        assert_eq!(a.send(b"ping").await.unwrap(), 4);
        let mut buf = [0u8; 16];
        let n = bounded("recv", b.recv(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"ping");
        assert_eq!(b.send(b"pong").await.unwrap(), 4);
        let n = bounded("recv", a.recv(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"pong");
    });
}

#[test]
fn connected_socket_filters_other_senders() {
    run(async {
        let a = socket().await;
        let peer = socket().await;
        let stranger = socket().await;
        a.connect(addr(&peer)).await.unwrap();

        stranger.send_to(b"stranger", addr(&a)).await.unwrap();
        peer.send_to(b"peer", addr(&a)).await.unwrap();

        let mut buf = [0u8; 16];
        let (n, from) = bounded("recv_from", a.recv_from(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"peer");
        assert_eq!(from, addr(&peer));
        // The stranger's datagram was dropped, not queued.
        let err = expect_err(a.try_recv(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    });
}

#[test]
fn try_send_and_try_recv() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        let mut buf = [0u8; 16];
        let err = expect_err(b.try_recv(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        let err = expect_err(b.try_recv_from(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);

        // An unconnected socket has no destination for try_send.
        bounded("writable", a.writable()).await.unwrap();
        let err = expect_err(a.try_send(b"nowhere"));
        assert_os_error(&err, uncategorized(), EDESTADDRREQ);
        let err = expect_err(a.send(b"nowhere").await);
        assert_os_error(&err, uncategorized(), EDESTADDRREQ);

        assert_eq!(a.try_send_to(b"to", addr(&b)).unwrap(), 2);
        a.connect(addr(&b)).await.unwrap();
        assert_eq!(a.try_send(b"conn").unwrap(), 4);

        let mut got = Vec::new();
        while got.len() < 2 {
            bounded("readable", b.readable()).await.unwrap();
            match b.try_recv_from(&mut buf) {
                Ok((n, from)) => {
                    assert_eq!(from, addr(&a));
                    got.push(buf[..n].to_vec());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("try_recv_from: {e:?}"),
            }
        }
        got.sort();
        assert_eq!(got, vec![b"conn".to_vec(), b"to".to_vec()]);
    });
}

#[test]
fn unconnected_socket_has_no_peer() {
    run(async {
        let a = socket().await;
        let err = expect_err(a.peer_addr());
        assert_os_error(&err, io::ErrorKind::NotConnected, ENOTCONN);
    });
}

#[test]
fn broadcast_option_round_trips() {
    run(async {
        let a = socket().await;
        assert!(!a.broadcast().unwrap());
        a.set_broadcast(true).unwrap();
        assert!(a.broadcast().unwrap());
        a.set_broadcast(false).unwrap();
        assert!(!a.broadcast().unwrap());
    });
}

#[test]
fn empty_datagram_is_a_datagram() {
    run(async {
        let a = socket().await;
        let b = socket().await;
        assert_eq!(a.send_to(&[], addr(&b)).await.unwrap(), 0);
        let mut buf = [0u8; 16];
        let (n, from) = bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
        assert_eq!(n, 0);
        assert_eq!(from, addr(&a));
    });
}

#[test]
fn largest_datagram_passes_and_one_byte_more_is_refused() {
    // 65535 (IPv4 total length) - 20 (IP header) - 8 (UDP header).
    const MAX_PAYLOAD: usize = 65507;
    run(async {
        let a = socket().await;
        let b = socket().await;
        let big = crate::pattern(0, MAX_PAYLOAD);
        assert_eq!(a.send_to(&big, addr(&b)).await.unwrap(), MAX_PAYLOAD);
        let mut buf = vec![0u8; MAX_PAYLOAD + 1];
        let (n, _) = bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
        assert_eq!(n, MAX_PAYLOAD);
        assert!(buf[..n] == big[..]);

        let too_big = vec![0u8; MAX_PAYLOAD + 1];
        let err = expect_err(a.send_to(&too_big, addr(&b)).await);
        assert_os_error(&err, uncategorized(), EMSGSIZE);
        // Nothing of the refused datagram arrives.
        let err = expect_err(b.try_recv_from(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    });
}

#[test]
fn connected_socket_learns_the_port_is_closed() {
    run(async {
        let a = socket().await;
        let closed = addr(&socket().await);
        a.connect(closed).await.unwrap();
        // The send itself succeeds; the ICMP port-unreachable that answers
        // it turns the socket's next receive into ECONNREFUSED.
        assert_eq!(a.send(b"anyone?").await.unwrap(), 7);
        let mut buf = [0u8; 16];
        let err = expect_err(bounded("recv", a.recv(&mut buf)).await);
        assert_os_error(&err, io::ErrorKind::ConnectionRefused, ECONNREFUSED);

        // The error is reported once; the next send provokes another one,
        // which the send after it reports.
        assert_eq!(a.send(b"again").await.unwrap(), 5);
        let mut tries = 0;
        let err = loop {
            match a.send(b"again").await {
                Ok(n) => assert_eq!(n, 5),
                Err(e) => break e,
            }
            tries += 1;
            assert!(tries < 500, "the refusal was never reported");
            sim_runtime::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        assert_os_error(&err, io::ErrorKind::ConnectionRefused, ECONNREFUSED);
    });
}

#[test]
fn unconnected_socket_is_not_told_the_port_is_closed() {
    claims!("net.udp.no-socket");
    run(async {
        let a = socket().await;
        let b = socket().await;
        let closed = addr(&socket().await);
        // Linux reports ICMP errors only to connected UDP sockets.
        assert_eq!(a.send_to(b"anyone?", closed).await.unwrap(), 7);
        a.send_to(b"marker", addr(&b)).await.unwrap();
        let mut buf = [0u8; 16];
        bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
        assert_eq!(a.send_to(b"still fine", addr(&b)).await.unwrap(), 10);
        let err = expect_err(a.try_recv_from(&mut buf));
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    });
}

#[test]
fn send_to_port_zero_is_invalid() {
    run(async {
        let a = socket().await;
        let err = expect_err(a.send_to(b"x", "127.0.0.1:0").await);
        assert_os_error(&err, io::ErrorKind::InvalidInput, EINVAL);
    });
}
