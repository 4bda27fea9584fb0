//! UDP across nodes: datagram boundaries, link faults, reordering by
//! jitter, broadcast.

use super::*;

/// Datagrams that arrive at `s` within `d`.
async fn drain(s: &UdpSocket, d: Duration) -> Vec<(Vec<u8>, SocketAddr)> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 70_000];
    while let Ok(r) = time::timeout(d, s.recv_from(&mut buf)).await {
        let (n, from) = r.unwrap();
        out.push((buf[..n].to_vec(), from));
    }
    out
}

#[test]
fn udp_across_nodes_keeps_datagram_boundaries() {
    run(27, async {
        let b = sim::node("b").build();
        let rx = udp_on(b, 5000).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        let sizes = [1usize, 100, 1400, 9000, 65_507];
        for (i, &n) in sizes.iter().enumerate() {
            assert_eq!(tx.send_to(&pattern(i, n), "b:5000").await.unwrap(), n);
            time::sleep(ms(5)).await;
        }
        let got = drain(&rx, ms(50)).await;
        let me = SocketAddr::new(
            "198.18.0.1".parse().unwrap(),
            tx.local_addr().unwrap().port(),
        );
        assert_eq!(got.len(), sizes.len());
        for (i, (data, from)) in got.iter().enumerate() {
            assert_eq!(*data, pattern(i, sizes[i]));
            assert_eq!(*from, me);
        }
    });
}

#[test]
fn udp_link_faults_lose_or_duplicate_every_datagram() {
    claims!("net.udp.loss-dup");
    run(28, async {
        let me = sim::current_node();
        let b = sim::node("b").build();
        let c = sim::node("c").build();
        let rb = udp_on(b, 5000).await;
        let rc = udp_on(c, 5000).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        simnet::set_udp_faults(me, b, 1_000_000, 0);
        simnet::set_udp_faults(me, c, 0, 1_000_000);
        for i in 0..50u32 {
            tx.send_to(&i.to_be_bytes(), "b:5000").await.unwrap();
            tx.send_to(&i.to_be_bytes(), "c:5000").await.unwrap();
        }
        assert!(drain(&rb, ms(100)).await.is_empty(), "all lost");
        let mut got: Vec<u32> = drain(&rc, ms(100))
            .await
            .iter()
            .map(|(d, _)| u32::from_be_bytes(d[..4].try_into().unwrap()))
            .collect();
        got.sort();
        let want: Vec<u32> = (0..50).flat_map(|i| [i, i]).collect();
        assert_eq!(got, want, "each exactly twice");
        // A partition loses datagrams too; so does a crashed machine.
        let d = sim::node("d").build();
        let rd = udp_on(d, 5000).await;
        simnet::partition(me, d);
        tx.send_to(b"cut", "d:5000").await.unwrap();
        assert!(drain(&rd, ms(100)).await.is_empty());
        simnet::heal(me, d);
        tx.send_to(b"healed", "d:5000").await.unwrap();
        assert_eq!(drain(&rd, ms(100)).await.len(), 1);
        sim::crash(d);
        tx.send_to(b"down", "d:5000").await.unwrap();
        sim::revive(d);
        let rd = udp_on(d, 5000).await;
        assert!(drain(&rd, ms(100)).await.is_empty());
        // Faults are per direction: b can still reach us.
        let back = on(b, async {
            let s = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            s.send_to(b"back", "198.18.0.1:6000").await.unwrap();
        });
        let rx = UdpSocket::bind("0.0.0.0:6000").await.unwrap();
        back.await;
        let got = drain(&rx, ms(10)).await;
        assert_eq!(got.len(), 1);
    });
}

/// The order in which 20 back-to-back datagrams arrive over a jittery link.
fn udp_order(seed: u64, jitter: Duration) -> Vec<u32> {
    run(seed, async move {
        let me = sim::current_node();
        let b = sim::node("b").build();
        simnet::set_latency(me, b, ms(1), jitter);
        let rx = udp_on(b, 5000).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        for i in 0..20u32 {
            tx.send_to(&i.to_be_bytes(), "b:5000").await.unwrap();
        }
        drain(&rx, ms(200))
            .await
            .iter()
            .map(|(d, _)| u32::from_be_bytes(d[..4].try_into().unwrap()))
            .collect()
    })
}

#[test]
fn udp_jitter_may_reorder_deterministically() {
    let in_order: Vec<u32> = (0..20).collect();
    for seed in 0..5 {
        assert_eq!(
            udp_order(seed, Duration::ZERO),
            in_order,
            "no jitter, no reorder"
        );
    }
    let seed = (0..20)
        .find(|&s| udp_order(s, ms(50)) != in_order)
        .expect("some seed reorders with 50 ms of jitter");
    let order = udp_order(seed, ms(50));
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, in_order, "reordered, none lost or duplicated");
    assert_eq!(
        udp_order(seed, ms(50)),
        order,
        "the same seed, the same order"
    );
}

#[test]
fn udp_broadcast_needs_so_broadcast_and_reaches_every_node_on_the_port() {
    run(29, async {
        let nodes: Vec<sim::Node> = ["b", "c", "d"]
            .iter()
            .map(|n| sim::node(*n).build())
            .collect();
        let mut rxs = Vec::new();
        for &n in &nodes {
            rxs.push(udp_on(n, 6000).await);
        }
        let elsewhere = udp_on(nodes[0], 6001).await;
        let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        assert_os(
            &expect_err(tx.send_to(b"hello all", "255.255.255.255:6000").await),
            io::ErrorKind::PermissionDenied,
            EACCES,
        );
        tx.set_broadcast(true).unwrap();
        assert_eq!(
            tx.send_to(b"hello all", "255.255.255.255:6000")
                .await
                .unwrap(),
            9
        );
        for rx in &rxs {
            let got = drain(rx, ms(10)).await;
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].0, b"hello all");
            assert_eq!(got[0].1.ip(), "198.18.0.1".parse::<IpAddr>().unwrap());
        }
        assert!(drain(&elsewhere, ms(10)).await.is_empty());
    });
}
