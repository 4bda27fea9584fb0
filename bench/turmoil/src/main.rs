//! The workloads of `sim-runtime/benches/executor.rs` (and the scenario of
//! `sim-harness/benches/harness.rs`), written against turmoil's own API, so
//! `cargo xtask bench` can put turmoil beside sim, madsim and real Tokio.
//!
//! ```text
//! cd bench/turmoil
//! CARGO_TARGET_DIR=../../target/bench-turmoil \
//!     cargo run --release -- [--runs N] [--warmup N] [--seeds N] [--only NAME]...
//! ```
//!
//! A crate of its own, outside sim's workspace, so a normal build of sim
//! never compiles turmoil.
//!
//! Turmoil runs each host on its own real Tokio current-thread runtime with
//! a paused clock and moves every host's clock by one tick per step
//! (`Builder::tick_duration`, 1 ms by default), polling every running host
//! at each step. Single-node workloads run as one `Sim::client`.

#[path = "../../common.rs"]
mod common;

use common::{
    clock_check, parse_args, per_round_trip, report, report_cluster, resident, ClusterSample,
    CLUSTER_NODES,
};
use std::cell::Cell;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{sleep, Instant};
use turmoil::net::{TcpListener, TcpStream, UdpSocket};
use turmoil::{Builder, Sim};

const MODE: &str = "turmoil";
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

/// Round trips per run of a `cluster_<N>` workload (fewer than sim's and
/// madsim's 10,000: every step polls every host; the figure is per round
/// trip).
const CLUSTER_ROUND_TRIPS: usize = 1_000;

/// Round trips measured with idle hosts present (the figure is per round
/// trip). Every step polls every host and the network's per-step work grows
/// with the hosts: with 1,000 idle hosts one round trip took about 7 s of
/// wall time here (20 round trips, one run), so `cargo xtask bench` does not
/// run `net_idle_1000` on turmoil; `--only net_idle_1000` still does.
const IDLE_ROUND_TRIPS: usize = 500;

/// Seeds of the crash-and-partition scenario per run (the figure is per
/// second).
const SCENARIO_SEEDS: u64 = 50;

/// The tick of the heartbeat workload: 24 simulated hours at turmoil's
/// default 1 ms tick are 86.4 million steps of ten hosts (hours of wall
/// time), so this workload steps by the heartbeat's own period.
const HEARTBEAT_TICK: Duration = Duration::from_secs(1);

fn main() {
    let opts = parse_args("bench-turmoil", WORKLOADS);
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
                || round_trips(IDLE_ROUND_TRIPS, idle),
                |d| per_round_trip(d, IDLE_ROUND_TRIPS, || round_trips(0, idle)),
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
        report(
            MODE,
            "scenario",
            "seeds/s",
            &opts,
            || scenarios(SCENARIO_SEEDS),
            |d| SCENARIO_SEEDS as f64 / d.as_secs_f64(),
        );
    }
}

/// A simulation that may run `secs` of virtual time.
fn builder(seed: u64, secs: u64) -> Builder {
    let mut b = Builder::new();
    b.rng_seed(seed)
        .simulation_duration(Duration::from_secs(secs));
    b
}

/// Runs `client` as the only host of a simulation.
fn alone<F>(seed: u64, secs: u64, client: F)
where
    F: std::future::Future<Output = turmoil::Result> + 'static,
{
    let mut sim = builder(seed, secs).build();
    sim.client("client", client);
    sim.run().unwrap();
}

/// The runtime's clock moved at least `d` since `start`.
fn slept_at_least(start: Instant, d: Duration) {
    let slept = start.elapsed();
    assert!(slept >= d, "the clock moved {slept:?}, less than {d:?}");
}

/// 1. `tasks` tasks that each yield `yields` times, then all joined.
fn spawn_yield(tasks: usize, yields: usize) {
    alone(0, 10, async move {
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                tokio::spawn(async move {
                    for _ in 0..yields {
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        Ok(())
    });
}

/// 2. `tasks` tasks × `n` sequential 1 ms sleeps.
fn sleeps(tasks: usize, n: usize) {
    alone(0, 1 + 3 * n as u64 / 1_000, async move {
        let start = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                tokio::spawn(async move {
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
        Ok(())
    });
}

/// 3. Task `i` of `tasks` sleeps `i + 1` ms once; all joined.
fn sleepers(tasks: u64) {
    alone(0, 2 + 2 * tasks / 1_000, async move {
        let start = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                tokio::spawn(async move {
                    sleep(Duration::from_millis(i + 1)).await;
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        slept_at_least(start, Duration::from_millis(tasks));
        Ok(())
    });
}

/// 4. One tiny simulation per seed: one host whose one task does ten 1 ms
///    sleeps, joined.
fn seeds(seeds: u64) {
    for seed in 0..seeds {
        alone(seed, 10, async {
            let start = Instant::now();
            tokio::spawn(async {
                for _ in 0..10 {
                    sleep(Duration::from_millis(1)).await;
                }
            })
            .await
            .unwrap();
            slept_at_least(start, Duration::from_millis(10));
            Ok(())
        });
    }
}

/// Workloads 5 and 6: `n` round trips of 64 bytes over one TCP connection between a
/// client host and a server host (no message latency), with `idle` more
/// hosts each waiting in `accept`.
fn round_trips(n: usize, idle: usize) {
    let mut b = builder(0, 3_600);
    b.min_message_latency(Duration::ZERO)
        .max_message_latency(Duration::ZERO);
    let mut sim = b.build();
    for i in 0..idle {
        sim.host(format!("idle{i}"), || async {
            let l = TcpListener::bind("0.0.0.0:9000").await?;
            let _ = l.accept().await;
            Ok(())
        });
    }
    sim.host("server", || async {
        let l = TcpListener::bind("0.0.0.0:7000").await?;
        let (mut s, _) = l.accept().await?;
        let mut buf = [0u8; 64];
        while s.read_exact(&mut buf).await.is_ok() {
            s.write_all(&buf).await?;
        }
        Ok(())
    });
    sim.client("client", async move {
        let mut c = TcpStream::connect("server:7000").await?;
        let msg = [7u8; 64];
        let mut buf = [0u8; 64];
        for _ in 0..n {
            c.write_all(&msg).await?;
            c.read_exact(&mut buf).await?;
            assert_eq!(buf, msg);
        }
        Ok(())
    });
    sim.run().unwrap();
}

/// Large clusters (issue 26 item 3): `nodes` hosts, each with a listener
/// on port 9000 waiting in `accept` and a task sleeping one hour; host n1
/// (a client, so the run ends with it) connects to n0 (whose listener
/// echoes) and, after the set-up, does `n` round trips of 64 bytes (no
/// message latency). The set-up is stepped until n1 is connected; the
/// stopwatch then times the steps until n1 is done.
fn cluster(nodes: usize, n: usize) -> ClusterSample {
    use tokio::sync::oneshot;
    let before = resident();
    let start = std::time::Instant::now();
    let mut b = builder(0, 3_600);
    b.min_message_latency(Duration::ZERO)
        .max_message_latency(Duration::ZERO);
    let mut sim = b.build();
    let bound = Rc::new(Cell::new(0usize));
    let connected = Rc::new(Cell::new(false));
    for i in (0..nodes).filter(|&i| i != 1) {
        let bound = bound.clone();
        sim.host(format!("n{i}"), move || {
            let bound = bound.clone();
            async move {
                let l = TcpListener::bind("0.0.0.0:9000").await?;
                tokio::spawn(sleep(Duration::from_secs(3_600)));
                bound.set(bound.get() + 1);
                let (mut s, _) = l.accept().await?;
                let mut buf = [0u8; 64];
                while s.read_exact(&mut buf).await.is_ok() {
                    s.write_all(&buf).await?;
                }
                Ok(())
            }
        });
    }
    let (go, go_rx) = oneshot::channel::<()>();
    let (all_bound, up) = (bound.clone(), connected.clone());
    sim.client("n1", async move {
        let l = TcpListener::bind("0.0.0.0:9000").await?;
        tokio::spawn(sleep(Duration::from_secs(3_600)));
        tokio::spawn(async move {
            let _ = l.accept().await;
        });
        all_bound.set(all_bound.get() + 1);
        while all_bound.get() < nodes {
            tokio::task::yield_now().await;
        }
        let mut c = TcpStream::connect("n0:9000").await?;
        up.set(true);
        go_rx.await?;
        let msg = [7u8; 64];
        let mut buf = [0u8; 64];
        for _ in 0..n {
            c.write_all(&msg).await?;
            c.read_exact(&mut buf).await?;
            assert_eq!(buf, msg);
        }
        Ok(())
    });
    while !connected.get() {
        assert!(!sim.step().unwrap(), "n1 finished before connecting");
    }
    let setup = start.elapsed();
    let resident = resident().saturating_sub(before);
    let start = std::time::Instant::now();
    go.send(()).unwrap();
    while !sim.step().unwrap() {}
    let round_trips = start.elapsed();
    ClusterSample {
        setup,
        round_trips,
        n,
        resident,
    }
}

/// Workload 7: `nodes` hosts, each sending a 16-byte UDP heartbeat to every other
/// host once per simulated second for `secs` seconds (turmoil's default
/// latency, ticks of `HEARTBEAT_TICK`); every host counts what it
/// receives. The hosts are clients, so the run ends when all have sent.
fn heartbeats(nodes: usize, secs: u64) {
    let mut b = builder(0, secs + 10);
    b.tick_duration(HEARTBEAT_TICK);
    let mut sim = b.build();
    let received = Rc::new(Cell::new(0u64));
    for i in 0..nodes {
        let received = received.clone();
        sim.client(format!("hb{i}"), async move {
            let sock = Rc::new(UdpSocket::bind("0.0.0.0:9000").await?);
            let peers: Vec<SocketAddr> = (0..nodes)
                .filter(|&j| j != i)
                .map(|j| SocketAddr::new(turmoil::lookup(format!("hb{j}")), 9000))
                .collect();
            let rsock = sock.clone();
            tokio::task::spawn_local(async move {
                let mut buf = [0u8; 64];
                while rsock.recv_from(&mut buf).await.is_ok() {
                    received.set(received.get() + 1);
                }
            });
            let start = Instant::now();
            let beat = [1u8; 16];
            for _ in 0..secs {
                sleep(Duration::from_secs(1)).await;
                for p in &peers {
                    sock.send_to(&beat, p).await?;
                }
            }
            slept_at_least(start, Duration::from_secs(secs));
            Ok(())
        });
    }
    sim.run().unwrap();
    let sent = secs * (nodes * (nodes - 1)) as u64;
    let got = received.get();
    assert!(
        got + (nodes * nodes) as u64 >= sent && got <= sent,
        "{got} of {sent} heartbeats received"
    );
}

/// An echo server on port 7: a task per connection.
async fn echo() -> turmoil::Result {
    let l = TcpListener::bind("0.0.0.0:7").await?;
    loop {
        let (mut s, _) = l.accept().await?;
        tokio::spawn(async move {
            let mut buf = [0u8; 64];
            while s.read_exact(&mut buf).await.is_ok() {
                if s.write_all(&buf).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Workload 8: The harness bench's scenario, once per seed: three echo hosts (a,
/// b, c); a client sends 100 requests to a, and after the 51st, b crashes
/// (`Sim::crash`, from the stepping loop at the next step: a host cannot
/// crash another) and a and c are partitioned. Turmoil's default network
/// (latency 0–100 ms, exponentially distributed) and tick (1 ms).
fn scenarios(seeds: u64) {
    for seed in 0..seeds {
        let mut sim: Sim = builder(seed, 600).build();
        for name in ["a", "b", "c"] {
            sim.host(name, echo);
        }
        let halfway = Rc::new(Cell::new(false));
        let flag = halfway.clone();
        sim.client("client", async move {
            sleep(Duration::from_millis(1)).await;
            let a: IpAddr = turmoil::lookup("a");
            let mut conn = TcpStream::connect((a, 7)).await?;
            let msg = [7u8; 64];
            let mut buf = [0u8; 64];
            for i in 0..100 {
                conn.write_all(&msg).await?;
                conn.read_exact(&mut buf).await?;
                if i == 50 {
                    flag.set(true);
                }
            }
            Ok(())
        });
        let mut faulted = false;
        while !sim.step().unwrap() {
            if halfway.get() && !faulted {
                sim.crash("b");
                sim.partition("a", "c");
                faulted = true;
            }
        }
        assert!(faulted);
    }
}
