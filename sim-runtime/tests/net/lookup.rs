//! Name resolution: `lookup_host` and names in `connect`/`bind`.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{lookup_host, TcpListener, TcpStream, UdpSocket};

use crate::{bounded, expect_err, listener, run, uncategorized};

/// How long a name lookup may take. Names that are not literals and not in
/// the host's `/etc/hosts` go to its DNS server on real hosts, which now and
/// then takes seconds to answer "no such name" (glibc retries); the bound
/// only turns a hang into a failure.
const RESOLVER_BOUND: Duration = Duration::from_secs(60);

/// Awaits a future that resolves a name, within [`RESOLVER_BOUND`].
async fn resolving<F: std::future::Future>(f: F) -> F::Output {
    match sim_runtime::time::timeout(RESOLVER_BOUND, f).await {
        Ok(out) => out,
        Err(_) => panic!("name resolution did not finish within {RESOLVER_BOUND:?}"),
    }
}

/// `lookup_host`, collected.
async fn lookup(host: impl sim_runtime::net::ToSocketAddrs) -> io::Result<Vec<SocketAddr>> {
    Ok(resolving(lookup_host(host)).await?.collect())
}

#[test]
fn lookup_host_localhost() {
    run(async {
        let port = 4321;
        let addrs = lookup(format!("localhost:{port}")).await.unwrap();
        let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        if cfg!(simulation) {
            // Exception `localhost_resolves_to_ipv6_too`: no host file.
            assert_eq!(addrs, vec![v4]);
        } else {
            assert!(addrs.contains(&v4), "{addrs:?}");
            for a in &addrs {
                assert!(a.ip().is_loopback(), "{a}");
                assert_eq!(a.port(), port);
            }
        }
    });
}

#[test]
fn lookup_host_of_literals_is_the_literal() {
    run(async {
        let addrs = lookup("192.0.2.7:80").await.unwrap();
        assert_eq!(addrs, vec![SocketAddr::from(([192, 0, 2, 7], 80))]);
        let addrs = lookup((IpAddr::from([10, 1, 2, 3]), 9)).await.unwrap();
        assert_eq!(addrs, vec![SocketAddr::from(([10, 1, 2, 3], 9))]);
    });
}

#[test]
fn lookup_host_without_port_is_invalid_input() {
    run(async {
        let err = expect_err(lookup("no-port").await);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err:?}");
        assert_eq!(err.raw_os_error(), None);
        let err = expect_err(lookup("localhost:notaport").await);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err:?}");
        let err = expect_err(lookup("localhost:99999").await);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err:?}");
        let err = expect_err(lookup("").await);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err:?}");
        // The same input is refused by connect and bind, not resolved.
        let err = expect_err(bounded("connect", TcpStream::connect("no-port")).await);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err:?}");
        let err = expect_err(UdpSocket::bind("no-port").await);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err:?}");
    });
}

/// A name the resolver does not know: std's resolver error, which has no
/// errno.
#[track_caller]
fn assert_unresolved(err: &io::Error) {
    assert_eq!(err.kind(), uncategorized(), "{err:?}");
    assert_eq!(err.raw_os_error(), None, "{err:?}");
    assert!(
        err.to_string()
            .starts_with("failed to lookup address information"),
        "{err}"
    );
}

#[test]
fn unresolvable_names_are_errors() {
    run(async {
        // Concurrently, so that a slow DNS server is waited for once.
        let (literal, unknown, connect, bind) = sim_runtime::join!(
            // Not an IPv4 literal (999 > 255), so it is looked up as a name.
            lookup("999.1.1.1:80"),
            lookup("no-such-host.invalid:80"),
            // Connecting to or binding such a name fails the same way.
            resolving(TcpStream::connect("999.1.1.1:80")),
            resolving(UdpSocket::bind("no-such-host.invalid:0")),
        );
        assert_unresolved(&expect_err(literal));
        assert_unresolved(&expect_err(unknown));
        assert_unresolved(&expect_err(connect));
        assert_unresolved(&expect_err(bind));
    });
}

#[test]
fn connect_and_bind_by_name() {
    run(async {
        let listener = listener().await;
        let port = listener.local_addr().unwrap().port();
        let mut client = resolving(TcpStream::connect(format!("localhost:{port}")))
            .await
            .unwrap();
        assert_eq!(
            client.peer_addr().unwrap(),
            SocketAddr::from((Ipv4Addr::LOCALHOST, port))
        );
        let (mut server, _) = listener.accept().await.unwrap();
        client.write_all(b"named").await.unwrap();
        let mut buf = [0u8; 5];
        bounded("read", server.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"named");

        let by_name = TcpListener::bind("localhost:0").await.unwrap();
        assert!(by_name.local_addr().unwrap().ip().is_loopback());
        let udp = UdpSocket::bind(("localhost", 0)).await.unwrap();
        assert!(udp.local_addr().unwrap().ip().is_loopback());
    });
}
