//! Sockets made below Tokio's API inside a simulation: with std
//! (`std::net::TcpListener::bind`, `UdpSocket::bind`) or with `socket(2)`
//! and options set by descriptor (what socket2, under hyper-util's
//! `HttpConnector`, does), then handed to Tokio's `from_std` functions; and
//! names resolved through `getaddrinfo` (`std::net::ToSocketAddrs`, what
//! hyper-util's resolver calls). Each becomes part of the simulated network.
//! A std socket used for I/O itself still fails the run, naming the call.

// In a production build the bodies of `#[sim::test]`s are not compiled, so
// their helpers are unused there.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{TcpListener, TcpSocket, TcpStream, UdpSocket};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// An echo server whose listener was bound with std.
async fn echo_from_std() {
    let std_listener = std::net::TcpListener::bind("0.0.0.0:7000").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let l = TcpListener::from_std(std_listener).unwrap();
    assert_eq!(l.local_addr().unwrap().port(), 7000);
    loop {
        let (mut s, _) = l.accept().await.unwrap();
        sim_runtime::spawn(async move {
            let mut b = [0u8; 5];
            if s.read_exact(&mut b).await.is_ok() {
                let _ = s.write_all(&b).await;
            }
        });
    }
}

async fn until_up() {
    while TcpStream::connect("server:7000").await.is_err() {
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
    }
}

#[sim::test(seeds = 0..20)]
async fn a_std_listener_handed_to_tokio_serves_the_simulated_network() {
    sim::node("server").start(echo_from_std);
    until_up().await;
    let mut c = TcpStream::connect("server:7000").await.unwrap();
    c.write_all(b"hello").await.unwrap();
    let mut b = [0u8; 5];
    c.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"hello");
}

#[sim::test(seeds = 0..20)]
async fn names_resolve_through_getaddrinfo() {
    sim::node("server").start(echo_from_std);
    until_up().await;
    let by_tokio: Vec<SocketAddr> = sim_runtime::net::lookup_host("server:7000")
        .await
        .unwrap()
        .collect();
    let by_std: Vec<SocketAddr> = ("server", 7000).to_socket_addrs().unwrap().collect();
    assert_eq!(by_std, by_tokio);
    assert!(by_std[0].ip().to_string().starts_with("198.18.") || by_std[0].ip().is_ipv4());
    let e = ("no-such-node", 80).to_socket_addrs().unwrap_err();
    assert!(e.to_string().contains("failed to lookup address"), "{e}");
    // Literal addresses and `localhost` resolve without a node.
    let lit: Vec<SocketAddr> = ("10.1.2.3", 9).to_socket_addrs().unwrap().collect();
    assert_eq!(lit, ["10.1.2.3:9".parse::<SocketAddr>().unwrap()]);
}

/// A socket made as socket2 makes it: `socket(2)`, `O_NONBLOCK` with
/// `fcntl`, `TCP_NODELAY` with `setsockopt`, then `from_std_stream` and a
/// simulated `connect`.
#[sim::test(seeds = 0..20)]
async fn a_socket_made_with_socket2s_calls_connects_through_tokio() {
    use std::os::fd::FromRawFd;
    sim::node("server").start(echo_from_std);
    until_up().await;
    // SAFETY: plain libc calls with valid arguments; the descriptor is
    // owned by the std stream made from it below.
    let std_stream = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(
            fd >= 0,
            "socket(2) inside a simulation: {}",
            std::io::Error::last_os_error()
        );
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK), 0);
        assert_ne!(libc::fcntl(fd, libc::F_GETFL) & libc::O_NONBLOCK, 0);
        let one: libc::c_int = 1;
        let r = libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&raw const one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        assert_eq!(r, 0);
        std::net::TcpStream::from_raw_fd(fd)
    };
    let socket = TcpSocket::from_std_stream(std_stream);
    assert!(
        socket.nodelay().unwrap(),
        "the option set by descriptor is kept"
    );
    let server = sim_runtime::net::lookup_host("server:7000")
        .await
        .unwrap()
        .next()
        .unwrap();
    let mut s = socket.connect(server).await.unwrap();
    s.write_all(b"abcde").await.unwrap();
    let mut b = [0u8; 5];
    s.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"abcde");
}

#[sim::test(seeds = 0..20)]
async fn a_std_udp_socket_handed_to_tokio_joins_the_simulated_network() {
    sim::node("peer").start(|| async {
        let s = UdpSocket::from_std(std::net::UdpSocket::bind("0.0.0.0:5000").unwrap()).unwrap();
        let mut b = [0u8; 16];
        loop {
            let (n, from) = s.recv_from(&mut b).await.unwrap();
            s.send_to(&b[..n], from).await.unwrap();
        }
    });
    let me = UdpSocket::from_std(std::net::UdpSocket::bind("0.0.0.0:0").unwrap()).unwrap();
    let mut b = [0u8; 16];
    let n = loop {
        me.send_to(b"ping", "peer:5000").await.unwrap();
        match sim_runtime::time::timeout(Duration::from_millis(50), me.recv_from(&mut b)).await {
            Ok(r) => break r.unwrap().0,
            Err(_) => continue,
        }
    };
    assert_eq!(&b[..n], b"ping");
}

#[cfg(simulation)]
#[test]
fn a_std_socket_doing_its_own_io_fails_the_run_naming_the_call() {
    use sim::__private::{run, Options, Seeds};
    let opts = Options {
        name: "std_sockets::connect",
        file: file!(),
        package: env!("CARGO_PKG_NAME"),
        crate_name: env!("CARGO_CRATE_NAME"),
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds: Seeds::Range(0, 2),
        ..Options::default()
    };
    let r = std::panic::catch_unwind(|| {
        run(opts, || async {
            sim::node("server").start(echo_from_std);
            until_up().await;
            let _ = std::net::TcpStream::connect("server:7000");
        })
    })
    .expect_err("a blocking std connect cannot run in a simulation");
    let r = r.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(r.contains("class: forbidden operation"), "{r}");
}
