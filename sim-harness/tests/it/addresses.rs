//! Node addresses: an explicit address is the node's, whatever it is (10.0.0.1
//! included, the first one anyone picks); nodes built without one get an
//! implicit address from 198.18.0.0/15; two nodes on one address fail the
//! run with a message that names both.

// In a production build the bodies of `#[sim::test]`s are not compiled, so
// their helpers are unused there.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{TcpListener, TcpStream};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Whether `ip` lies in 198.18.0.0/15, where implicit addresses come from.
fn is_implicit_range(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => u32::from(v4) & 0xfffe_0000 == u32::from(Ipv4Addr::new(198, 18, 0, 0)),
        IpAddr::V6(_) => false,
    }
}

/// A service on `addr` that tells every client the address it saw the
/// client connect from and the address it accepted on ("peer local").
async fn tell_addresses(addr: &'static str) {
    let l = TcpListener::bind(addr).await.unwrap();
    loop {
        let (mut s, peer) = l.accept().await.unwrap();
        let local = s.local_addr().unwrap();
        sim_runtime::spawn(async move {
            let _ = s.write_all(format!("{peer} {local}").as_bytes()).await;
        });
    }
}

/// Connects to `to` and returns (our local address, what the server saw
/// as our address, the server's local address).
async fn ask(to: &str) -> std::io::Result<(SocketAddr, SocketAddr, SocketAddr)> {
    let mut c = TcpStream::connect(to).await?;
    let me = c.local_addr()?;
    let mut text = String::new();
    c.read_to_string(&mut text).await?;
    let (peer, local) = text
        .split_once(' ')
        .expect("the service sends two addresses");
    Ok((me, peer.parse().unwrap(), local.parse().unwrap()))
}

/// Waits until `to` accepts connections: a fixed sleep is a race (an early
/// timer can end it before the service's first step).
async fn until_listening(to: &str) {
    while TcpStream::connect(to).await.is_err() {
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
    }
}

#[sim::test(seeds = 0..20)]
async fn a_node_can_take_10_0_0_1_and_serve_on_it() {
    let server = sim::node("server")
        .ip("10.0.0.1")
        .start(|| tell_addresses("10.0.0.1:7"));
    let want: IpAddr = "10.0.0.1".parse().unwrap();
    assert_eq!(server.ip(), want);
    until_listening("server:7").await;
    for to in ["server:7", "10.0.0.1:7"] {
        let (me, seen, local) = ask(to).await.unwrap();
        assert_eq!(local, SocketAddr::new(want, 7), "connecting to {to}");
        assert_eq!(seen, me, "connecting to {to}");
    }
}

#[sim::test(seeds = 0..20)]
async fn the_main_node_address_is_implicit_from_198_18_0_0_15() {
    sim::node("server").start(|| tell_addresses("0.0.0.0:7"));
    until_listening("server:7").await;
    let (me, seen, local) = ask("server:7").await.unwrap();
    assert_eq!(seen, me);
    assert!(
        is_implicit_range(seen.ip()),
        "the main node's address {} is outside 198.18.0.0/15",
        seen.ip()
    );
    assert_eq!(seen.ip(), "198.18.0.1".parse::<IpAddr>().unwrap());
    // A node built without an address gets the next one.
    assert_eq!(local.ip(), "198.18.0.2".parse::<IpAddr>().unwrap());
}

/// Two nodes on one address: the run fails with a message that names both.
#[cfg(simulation)]
mod collisions {
    use crate::common::report;
    use sim::__private::{Options, Seeds};

    fn options(name: &'static str) -> Options {
        crate::common::options(name, file!(), Seeds::One(1))
    }

    #[test]
    fn two_explicit_nodes_on_one_address_name_both() {
        let r = report(options("addresses::two_explicit"), || async {
            sim::node("first").ip("10.0.0.7").build();
            sim::node("second").ip("10.0.0.7").build();
        });
        assert!(
            r.contains(
                "node \"second\" cannot have the IP 10.0.0.7: node \"first\" already has it, \
                 as its explicit address"
            ),
            "{r}"
        );
        assert!(r.contains("Pick another address for \"second\""), "{r}");
    }

    #[test]
    fn an_explicit_address_taken_implicitly_names_both_and_says_implicit() {
        let r = report(options("addresses::explicit_on_implicit"), || async {
            // Built without an address, it takes 198.18.0.2 (main has .1).
            sim::node("auto").build();
            sim::node("late").ip("198.18.0.2").build();
        });
        assert!(
            r.contains(
                "node \"late\" cannot have the IP 198.18.0.2: node \"auto\" already has it, \
                 as its implicit address"
            ),
            "{r}"
        );
        assert!(r.contains("Pick another address for \"late\""), "{r}");
        assert!(r.contains("outside 198.18.0.0/15"), "{r}");

        // The main node's implicit address is taken the same way.
        let r = report(options("addresses::explicit_on_main"), || async {
            sim::node("late").ip("198.18.0.1").build();
        });
        assert!(
            r.contains(
                "node \"late\" cannot have the IP 198.18.0.1: node \"main\" already has it, \
                 as its implicit address"
            ),
            "{r}"
        );
    }
}
