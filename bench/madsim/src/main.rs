//! The workloads of `sim-runtime/benches/executor.rs` (and the scenario of
//! `sim-harness/benches/harness.rs`), written against madsim's own API, so
//! `cargo xtask bench` can put madsim beside sim, turmoil and real Tokio.
//!
//! ```text
//! cd bench/madsim
//! RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=../../target/bench-madsim \
//!     cargo run --release -- [--runs N] [--warmup N] [--seeds N] [--only NAME]...
//! ```
//!
//! A crate of its own, outside sim's workspace: madsim interposes libc's
//! clock and randomness functions as sim does, so the two cannot share a
//! binary, and a normal build of sim never compiles madsim.

#[cfg(not(madsim))]
fn main() {
    eprintln!(
        "bench-madsim: build with RUSTFLAGS=\"--cfg madsim\" (madsim is real Tokio otherwise)"
    );
    std::process::exit(2);
}

#[cfg(madsim)]
#[path = "../../common.rs"]
mod common;

#[cfg(madsim)]
fn main() {
    bench::main()
}

#[cfg(madsim)]
mod bench {
    use super::common::{
        clock_check, parse_args, per_round_trip, report, report_cluster, resident,
        ClusterSample, CLUSTER_NODES,
    };
    use madsim::net::{NetSim, TcpListener, TcpStream, UdpSocket};
    use madsim::runtime::{Handle, Runtime};
    use madsim::time::{sleep, Duration, Instant};
    use madsim::Config;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const MODE: &str = "madsim";
    const WORKLOADS: &[&str] = &[
        "spawn_yield",
        "sleep",
        "sleepers",
        "seeds",
        "net_rt",
        "net_idle_2",
        "net_idle_100",
        "net_idle_1000",
        "heartbeats",
        "scenario",
        "cluster_2",
        "cluster_10",
        "cluster_100",
        "cluster_1000",
        "cluster_10000",
    ];

    /// Round trips per run of a `cluster_<N>` workload.
    const CLUSTER_ROUND_TRIPS: usize = 10_000;

    pub fn main() {
        let opts = parse_args("bench-madsim", WORKLOADS);
        if opts.clock_check {
            clock_check(MODE, || seeds(1));
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        if opts.wanted("spawn_yield") {
            report(
                MODE,
                "spawn_yield",
                "ms",
                &opts,
                || spawn_yield(100_000, 10),
                ms,
            );
        }
        if opts.wanted("sleep") {
            report(MODE, "sleep", "ms", &opts, || sleeps(1_000, 1_000), ms);
        }
        if opts.wanted("sleepers") {
            report(MODE, "sleepers", "ms", &opts, || sleepers(30_000), ms);
        }
        if opts.wanted("net_rt") {
            report(MODE, "net_rt", "ms", &opts, || round_trips(10_000, 0), ms);
        }
        for idle in [2usize, 100, 1_000] {
            let name = format!("net_idle_{idle}");
            if opts.wanted(&name) {
                report(
                    MODE,
                    &name,
                    "us/rt",
                    &opts,
                    || round_trips(10_000, idle),
                    |d| per_round_trip(d, 10_000, || round_trips(0, idle)),
                );
            }
        }
        if opts.wanted("heartbeats") {
            report(
                MODE,
                "heartbeats",
                "ms",
                &opts,
                || heartbeats(10, 24 * 3_600),
                ms,
            );
        }
        // Large clusters: only when named.
        for n in CLUSTER_NODES {
            if opts.only.iter().any(|o| *o == format!("cluster_{n}")) {
                report_cluster(MODE, n, &opts, || cluster(n, CLUSTER_ROUND_TRIPS));
            }
        }
        if opts.wanted("seeds") {
            let n = opts.seeds;
            report(
                MODE,
                "seeds",
                "us/seed",
                &opts,
                || seeds(n),
                |d| d.as_secs_f64() * 1e6 / n as f64,
            );
        }
        if opts.wanted("scenario") {
            let n = 2_000;
            report(
                MODE,
                "scenario",
                "seeds/s",
                &opts,
                || scenarios(n),
                |d| n as f64 / d.as_secs_f64(),
            );
        }
    }

    fn runtime(seed: u64) -> Runtime {
        Runtime::with_seed_and_config(seed, Config::default())
    }

    /// A network without latency (madsim draws each message's latency from
    /// a range; a range of one nanosecond is zero).
    fn zero_latency() -> Config {
        let mut c = Config::default();
        c.net.send_latency = Duration::ZERO..Duration::from_nanos(1);
        c
    }

    /// The virtual clock moved at least `d` since `start`.
    fn slept_at_least(start: Instant, d: Duration) {
        let slept = start.elapsed();
        assert!(slept >= d, "the clock moved {slept:?}, less than {d:?}");
    }

    fn ip(a: u8, b: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, a, b))
    }

    /// 1. `tasks` tasks that each yield `yields` times, then all joined.
    fn spawn_yield(tasks: usize, yields: usize) {
        runtime(0).block_on(async move {
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    madsim::task::spawn(async move {
                        for _ in 0..yields {
                            madsim::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        });
    }

    /// 2. `tasks` tasks × `n` sequential 1 ms sleeps.
    fn sleeps(tasks: usize, n: usize) {
        runtime(0).block_on(async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    madsim::task::spawn(async move {
                        for _ in 0..n {
                            sleep(Duration::from_millis(1)).await;
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            slept_at_least(start, Duration::from_millis(n as u64));
        });
    }

    /// 3. Task `i` of `tasks` sleeps `i + 1` ms once; all joined.
    fn sleepers(tasks: u64) {
        runtime(0).block_on(async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..tasks)
                .map(|i| {
                    madsim::task::spawn(async move {
                        sleep(Duration::from_millis(i + 1)).await;
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            slept_at_least(start, Duration::from_millis(tasks));
        });
    }

    /// 4. One tiny simulation per seed: a runtime, one task doing ten 1 ms
    ///    sleeps, joined.
    fn seeds(seeds: u64) {
        for seed in 0..seeds {
            runtime(seed).block_on(async {
                let start = Instant::now();
                madsim::task::spawn(async {
                    for _ in 0..10 {
                        sleep(Duration::from_millis(1)).await;
                    }
                })
                .await
                .unwrap();
                slept_at_least(start, Duration::from_millis(10));
            });
        }
    }

    /// Workloads 5 and 6: `n` round trips of 64 bytes over one TCP connection between a
    /// client node and a server node, with `idle` more nodes each waiting
    /// in `accept`. madsim's supervisor (the `block_on` future) has no
    /// address, so the client is a node of its own. A madsim `TcpStream`
    /// sends what was written on `flush`, so each message is flushed.
    fn round_trips(n: usize, idle: usize) {
        let rt = Runtime::with_seed_and_config(0, zero_latency());
        for i in 0..idle {
            let node = rt
                .create_node()
                .name(format!("idle{i}"))
                .ip(ip(1 + (i / 250) as u8, 1 + (i % 250) as u8))
                .build();
            node.spawn(async {
                let l = TcpListener::bind("0.0.0.0:9000").await.unwrap();
                let _ = l.accept().await;
            });
        }
        let server = rt.create_node().name("server").ip(ip(0, 2)).build();
        let client = rt.create_node().name("client").ip(ip(0, 1)).build();
        rt.block_on(async move {
            let serve = server.spawn(async {
                let l = TcpListener::bind("0.0.0.0:7000").await.unwrap();
                let (mut s, _) = l.accept().await.unwrap();
                let mut buf = [0u8; 64];
                while s.read_exact(&mut buf).await.is_ok() {
                    s.write_all(&buf).await.unwrap();
                    s.flush().await.unwrap();
                }
            });
            client
                .spawn(async move {
                    madsim::task::yield_now().await;
                    let target = SocketAddr::new(ip(0, 2), 7000);
                    let mut c = loop {
                        match TcpStream::connect(target).await {
                            Ok(c) => break c,
                            Err(_) => madsim::task::yield_now().await,
                        }
                    };
                    c.set_nodelay(true).unwrap();
                    let msg = [7u8; 64];
                    let mut buf = [0u8; 64];
                    for _ in 0..n {
                        c.write_all(&msg).await.unwrap();
                        c.flush().await.unwrap();
                        c.read_exact(&mut buf).await.unwrap();
                        assert_eq!(buf, msg);
                    }
                })
                .await
                .unwrap();
            drop(serve);
        });
    }

    /// Large clusters (issue 26 item 3): `nodes` nodes, each with a
    /// listener on port 9000 waiting in `accept` and a task sleeping one
    /// hour; node 1 connects to node 0 (whose listener echoes) and, after
    /// the set-up, does `n` round trips of 64 bytes (zero latency). The
    /// stopwatch (`std::time::Instant`) is read outside `block_on`, where
    /// madsim's clock is real: the set-up is one `block_on`, the round
    /// trips a second on the same runtime.
    fn cluster(nodes: usize, n: usize) -> ClusterSample {
        use std::sync::atomic::AtomicUsize;
        use tokio::sync::oneshot;
        let before = resident();
        let start = std::time::Instant::now();
        let rt = Runtime::with_seed_and_config(0, zero_latency());
        let addr = |i: usize| ip(1 + (i / 250) as u8, 1 + (i % 250) as u8);
        let handles: Vec<_> = (0..nodes)
            .map(|i| rt.create_node().name(format!("n{i}")).ip(addr(i)).build())
            .collect();
        let (go, go_rx) = oneshot::channel::<()>();
        let (client, handles) = rt.block_on(async move {
            let bound = Arc::new(AtomicUsize::new(0));
            for h in &handles {
                let bound = bound.clone();
                h.spawn(async move {
                    let l = TcpListener::bind("0.0.0.0:9000").await.unwrap();
                    madsim::task::spawn(sleep(Duration::from_secs(3_600)));
                    bound.fetch_add(1, Relaxed);
                    let Ok((mut s, _)) = l.accept().await else {
                        return;
                    };
                    let mut buf = [0u8; 64];
                    while s.read_exact(&mut buf).await.is_ok() {
                        s.write_all(&buf).await.unwrap();
                        s.flush().await.unwrap();
                    }
                });
            }
            while bound.load(Relaxed) < nodes {
                sleep(Duration::from_millis(1)).await;
            }
            let (connected, up) = oneshot::channel();
            let target = SocketAddr::new(addr(0), 9000);
            let client = handles[1].spawn(async move {
                let mut c = TcpStream::connect(target).await.unwrap();
                c.set_nodelay(true).unwrap();
                let _ = connected.send(());
                go_rx.await.unwrap();
                let msg = [7u8; 64];
                let mut buf = [0u8; 64];
                for _ in 0..n {
                    c.write_all(&msg).await.unwrap();
                    c.flush().await.unwrap();
                    c.read_exact(&mut buf).await.unwrap();
                    assert_eq!(buf, msg);
                }
            });
            up.await.unwrap();
            (client, handles)
        });
        let setup = start.elapsed();
        let resident = resident().saturating_sub(before);
        let start = std::time::Instant::now();
        rt.block_on(async move {
            go.send(()).unwrap();
            client.await.unwrap();
        });
        let round_trips = start.elapsed();
        drop(handles);
        ClusterSample {
            setup,
            round_trips,
            n,
            resident,
        }
    }

    /// Workload 7: `nodes` nodes, each sending a 16-byte UDP heartbeat to every other
    /// node once per simulated second for `secs` seconds (madsim's default
    /// latency); every node counts what it receives.
    fn heartbeats(nodes: usize, secs: u64) {
        let rt = runtime(0);
        let received = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..nodes)
            .map(|i| {
                rt.create_node()
                    .name(format!("hb{i}"))
                    .ip(ip(0, 1 + i as u8))
                    .build()
            })
            .collect();
        let got = received.clone();
        rt.block_on(async move {
            let start = Instant::now();
            let senders: Vec<_> = handles
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let received = received.clone();
                    node.spawn(async move {
                        let sock = Arc::new(UdpSocket::bind("0.0.0.0:9000").await.unwrap());
                        let peers: Vec<SocketAddr> = (0..nodes)
                            .filter(|&j| j != i)
                            .map(|j| SocketAddr::new(ip(0, 1 + j as u8), 9000))
                            .collect();
                        let rsock = sock.clone();
                        madsim::task::spawn(async move {
                            let mut buf = [0u8; 64];
                            while rsock.recv_from(&mut buf).await.is_ok() {
                                received.fetch_add(1, Relaxed);
                            }
                        });
                        let beat = [1u8; 16];
                        for _ in 0..secs {
                            sleep(Duration::from_secs(1)).await;
                            for p in &peers {
                                sock.send_to(p, &beat).await.unwrap();
                            }
                        }
                    })
                })
                .collect();
            for s in senders {
                s.await.unwrap();
            }
            slept_at_least(start, Duration::from_secs(secs));
        });
        let sent = secs * (nodes * (nodes - 1)) as u64;
        let got = got.load(Relaxed);
        assert!(
            got + (nodes * nodes) as u64 >= sent && got <= sent,
            "{got} of {sent} heartbeats received"
        );
    }

    /// An echo server on port 7: a task per connection.
    async fn echo() {
        let l = TcpListener::bind("0.0.0.0:7").await.unwrap();
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            madsim::task::spawn(async move {
                let mut buf = [0u8; 64];
                while s.read_exact(&mut buf).await.is_ok() {
                    if s.write_all(&buf).await.is_err() || s.flush().await.is_err() {
                        return;
                    }
                }
            });
        }
    }

    /// Workload 8: The harness bench's scenario, once per seed: three echo nodes
    /// (a, b, c); a client sends 100 requests to a, and after the 51st b
    /// is killed and a and c are partitioned (both directions clogged).
    /// madsim's default network (latency 1–10 ms per message).
    fn scenarios(seeds: u64) {
        for seed in 0..seeds {
            let rt = runtime(seed);
            let a = rt.create_node().name("a").ip(ip(0, 1)).init(echo).build();
            let b = rt.create_node().name("b").ip(ip(0, 2)).init(echo).build();
            let c = rt.create_node().name("c").ip(ip(0, 3)).init(echo).build();
            let client = rt.create_node().name("client").ip(ip(0, 9)).build();
            rt.block_on(async move {
                client
                    .spawn(async move {
                        sleep(Duration::from_millis(1)).await;
                        let mut conn = TcpStream::connect(SocketAddr::new(ip(0, 1), 7))
                            .await
                            .unwrap();
                        let msg = [7u8; 64];
                        let mut buf = [0u8; 64];
                        for i in 0..100 {
                            conn.write_all(&msg).await.unwrap();
                            conn.flush().await.unwrap();
                            conn.read_exact(&mut buf).await.unwrap();
                            if i == 50 {
                                Handle::current().kill(b.id());
                                let net = NetSim::current();
                                net.clog_link(a.id(), c.id());
                                net.clog_link(c.id(), a.id());
                            }
                        }
                    })
                    .await
                    .unwrap();
            });
        }
    }
}
