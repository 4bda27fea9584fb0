//! Bad input: sockets of a dead node and invalid addresses are errors, not
//! panics.

use super::*;

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
