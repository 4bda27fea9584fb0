//! The errors of connecting and binding, with Linux's kinds and errno, and
//! what the simulation refuses.

use std::io;
use std::net::SocketAddr;

use sim_runtime::io::AsyncReadExt;
use sim_runtime::net::{TcpListener, TcpSocket, TcpStream, UdpSocket};

use crate::errno::{EADDRINUSE, EADDRNOTAVAIL, ECONNREFUSED};
use crate::{assert_os_error, bounded, expect_err, listener, run, unused_port};

/// An address from TEST-NET-1 (RFC 5737), which no host owns.
const NOT_OURS: &str = "192.0.2.1:0";

#[test]
fn connect_to_port_nobody_listens_on_is_refused() {
    run(async {
        let addr = unused_port().await;
        let err = expect_err(bounded("connect", TcpStream::connect(addr)).await);
        assert_os_error(&err, io::ErrorKind::ConnectionRefused, ECONNREFUSED);

        let socket = TcpSocket::new_v4().unwrap();
        let err = expect_err(bounded("connect", socket.connect(addr)).await);
        assert_os_error(&err, io::ErrorKind::ConnectionRefused, ECONNREFUSED);
    });
}

#[test]
fn connect_after_listener_dropped_is_refused() {
    run(async {
        let listener = listener().await;
        let addr = listener.local_addr().unwrap();
        let _accepted_later = TcpStream::connect(addr).await.unwrap();
        drop(listener);
        let err = expect_err(bounded("connect", TcpStream::connect(addr)).await);
        assert_os_error(&err, io::ErrorKind::ConnectionRefused, ECONNREFUSED);
    });
}

#[test]
fn connect_to_port_zero_is_refused() {
    run(async {
        let err = expect_err(bounded("connect", TcpStream::connect("127.0.0.1:0")).await);
        assert_os_error(&err, io::ErrorKind::ConnectionRefused, ECONNREFUSED);
    });
}

#[test]
fn connect_to_wildcard_address_reaches_this_host() {
    run(async {
        // A common pattern: bind 0.0.0.0:0, then connect to local_addr().
        // Linux treats a connect to 0.0.0.0 as one to 127.0.0.1.
        let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
        let bound = listener.local_addr().unwrap();
        let client = bounded("connect", TcpStream::connect(bound)).await.unwrap();
        let loopback: SocketAddr = ([127, 0, 0, 1], bound.port()).into();
        assert_eq!(client.peer_addr().unwrap(), loopback);
        assert_eq!(client.local_addr().unwrap().ip(), loopback.ip());
        let (server, from) = listener.accept().await.unwrap();
        assert_eq!(from, client.local_addr().unwrap());
        assert_eq!(server.local_addr().unwrap(), loopback);
    });
}

#[test]
fn bind_of_address_in_use() {
    run(async {
        let first = listener().await;
        let addr = first.local_addr().unwrap();
        let err = expect_err(TcpListener::bind(addr).await);
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);

        // The wildcard address overlaps every address of the host.
        let wildcard: SocketAddr = ([0, 0, 0, 0], addr.port()).into();
        let err = expect_err(TcpListener::bind(wildcard).await);
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);

        // A TcpSocket reports it at bind, even with SO_REUSEADDR, because
        // the port has a listener.
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        let err = expect_err(socket.bind(addr));
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);

        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let err = expect_err(UdpSocket::bind(udp.local_addr().unwrap()).await);
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);
    });
}

#[test]
fn bind_of_a_specific_address_under_a_wildcard_listener_is_in_use() {
    run(async {
        let wildcard = TcpListener::bind("0.0.0.0:0").await.unwrap();
        let port = wildcard.local_addr().unwrap().port();
        let err = expect_err(TcpListener::bind(("127.0.0.1", port)).await);
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);

        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let port = udp.local_addr().unwrap().port();
        let err = expect_err(UdpSocket::bind(("0.0.0.0", port)).await);
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);
    });
}

#[test]
fn reuseaddr_shares_a_bind_but_not_a_listen() {
    run(async {
        let a = TcpSocket::new_v4().unwrap();
        a.set_reuseaddr(true).unwrap();
        a.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = a.local_addr().unwrap();
        // Two SO_REUSEADDR sockets may bind one port while neither listens...
        let b = TcpSocket::new_v4().unwrap();
        b.set_reuseaddr(true).unwrap();
        b.bind(addr).unwrap();
        // ...but only one of them may listen on it.
        let _listening = a.listen(8).unwrap();
        let err = expect_err(b.listen(8));
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);
    });
}

#[test]
fn closed_connection_holds_its_port_without_reuseaddr() {
    run(async {
        let listener = listener().await;
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        // The side that closes first keeps the connection (FIN_WAIT_2, then
        // TIME_WAIT for 60 s on Linux) on the listener's port.
        drop(server);
        let mut buf = [0u8; 1];
        assert_eq!(bounded("eof", client.read(&mut buf)).await.unwrap(), 0);
        drop(client);
        drop(listener);

        let socket = TcpSocket::new_v4().unwrap();
        assert!(!socket.reuseaddr().unwrap());
        let err = expect_err(socket.bind(addr));
        assert_os_error(&err, io::ErrorKind::AddrInUse, EADDRINUSE);
        // `tcp::reuseaddr_rebinds_the_port_of_a_closed_connection` is the
        // other half: with SO_REUSEADDR the bind succeeds.
    });
}

#[test]
fn tcp_and_udp_ports_are_separate() {
    run(async {
        let tcp = listener().await;
        let addr = tcp.local_addr().unwrap();
        let udp = UdpSocket::bind(addr).await.unwrap();
        assert_eq!(udp.local_addr().unwrap(), addr);
    });
}

#[test]
fn bind_of_address_the_host_does_not_own() {
    run(async {
        let err = expect_err(TcpListener::bind(NOT_OURS).await);
        assert_os_error(&err, io::ErrorKind::AddrNotAvailable, EADDRNOTAVAIL);

        let err = expect_err(UdpSocket::bind(NOT_OURS).await);
        assert_os_error(&err, io::ErrorKind::AddrNotAvailable, EADDRNOTAVAIL);

        let socket = TcpSocket::new_v4().unwrap();
        let err = expect_err(socket.bind(NOT_OURS.parse().unwrap()));
        assert_os_error(&err, io::ErrorKind::AddrNotAvailable, EADDRNOTAVAIL);
    });
}

// `from_std` wraps a socket the OS created, which the simulation cannot
// adopt. The signatures are Tokio's in both modes; in production that is all
// this suite checks (the conversion itself is Tokio's).
const _: fn(std::net::TcpListener) -> io::Result<TcpListener> = TcpListener::from_std;
const _: fn(std::net::TcpStream) -> io::Result<TcpStream> = TcpStream::from_std;
const _: fn(std::net::UdpSocket) -> io::Result<UdpSocket> = UdpSocket::from_std;

#[cfg(simulation)]
#[test]
#[should_panic(expected = "simulation")]
fn tcp_listener_from_std_is_refused() {
    let std = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    run(async move {
        let _ = TcpListener::from_std(std);
    });
}

#[cfg(simulation)]
#[test]
#[should_panic(expected = "simulation")]
fn tcp_stream_from_std_is_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let std = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    run(async move {
        let _ = TcpStream::from_std(std);
    });
}

#[cfg(simulation)]
#[test]
#[should_panic(expected = "simulation")]
fn udp_socket_from_std_is_refused() {
    let std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    run(async move {
        let _ = UdpSocket::from_std(std);
    });
}
