//! Names and routes across nodes: connecting by name and by address, unknown
//! names, a routed name spreading connections over its backends.

use super::*;

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
