//! The executor benchmark: the same workloads, written once against
//! `sim_runtime::` paths, measure the simulation (built with
//! `RUSTFLAGS="--cfg simulation"`) and real Tokio's current-thread runtime (a
//! normal build with `--features full,test-util`).
//!
//! ```text
//! cargo xtask bench                      # both modes, alternately; writes docs/bench.md
//! cargo bench -p sim-runtime --bench executor --features full,test-util   # Tokio only
//! RUSTFLAGS="--cfg simulation" CARGO_TARGET_DIR=target/sim \
//!     cargo bench -p sim-runtime --bench executor                         # simulation only
//! ```
//!
//! Options (after `--`): `--runs N` (measured runs per workload, default 5),
//! `--warmup N` (unmeasured runs first, default 1), `--seeds N` (seeds of the
//! `seeds` workload, default 20000), `--only NAME` (one workload: `spawn_yield`,
//! `sleep`, `sleepers`, `seeds`, `net_rt`, `net_idle_2`, `net_idle_100`,
//! `net_idle_1000`, `heartbeats`; repeatable), `--skip-clock-check`.
//! `cluster_2`, `cluster_10`, `cluster_100`, `cluster_1000` and
//! `cluster_10000` (simulation only: `executor/clusters.rs`) run only when
//! named; so do `fs_tokio` and `fs_std` (4 KiB writes through `tokio::fs`
//! and `std::fs`: the simulated disk, or a real temporary directory with
//! Tokio; `cargo xtask bench --only fs`), and `threads_pingpong`,
//! `threads_spawn` and `thread_soak` (OS threads: `executor/threads.rs`;
//! `cargo xtask bench --only threads` and `--only thread-soak`).
//!
//! The same workloads, written against madsim's and turmoil's own APIs, are
//! in `bench/madsim` and `bench/turmoil` (outside the workspace), with the
//! same options and output lines; `cargo xtask bench` runs all four.
//!
//! Wall time is read with `std::time::Instant` *outside* any `block_on`:
//! under simulation the interposers make `Instant::now()` virtual only while
//! a simulation runs on the thread. The clock check at start-up proves it
//! (a real 20 ms `thread::sleep`, measured after a runtime was built and
//! run, must read as about 20 ms).
//!
//! Each workload prints one machine-readable line, which `cargo xtask bench`
//! parses:
//!
//! ```text
//! BENCH <mode> <workload> <unit> <median> <sample,sample,...>
//! ```

use std::time::{Duration, Instant};

#[cfg(simulation)]
#[path = "executor/clusters.rs"]
mod clusters;

#[cfg(any(simulation, all(feature = "rt", feature = "time")))]
#[path = "executor/threads.rs"]
mod threads;

/// Counts the heap bytes a cluster's set-up holds (on only while it runs).
#[cfg(simulation)]
#[global_allocator]
static ALLOC: clusters::Counting = clusters::Counting;

#[cfg(simulation)]
const MODE: &str = "sim";
#[cfg(not(simulation))]
const MODE: &str = "tokio";

/// Whether this build can run the workloads: the simulation always can; a
/// production build needs Tokio's `rt` and `time`.
const RUNNABLE: bool = cfg!(any(simulation, all(feature = "rt", feature = "time")));

/// Whether the network workloads can run (production needs Tokio's `net`
/// and `io-util`).
const NET: bool = cfg!(any(simulation, all(feature = "net", feature = "io-util")));

/// Whether the timer workloads run on a paused (auto-advancing) clock: always
/// in simulation, and in production only with Tokio's `test-util`.
const PAUSED_CLOCK: bool = cfg!(any(simulation, feature = "test-util"));

struct Opts {
    runs: usize,
    warmup: usize,
    seeds: u64,
    only: Vec<String>,
    clock_check: bool,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        runs: 5,
        warmup: 1,
        seeds: 20_000,
        only: Vec::new(),
        clock_check: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> Result<String, String> {
            args.next().ok_or_else(|| format!("{name} needs a value"))
        };
        let number = |name: &str, v: String| -> Result<u64, String> {
            v.replace('_', "")
                .parse()
                .map_err(|_| format!("{name} {v:?} is not a number"))
        };
        match a.as_str() {
            "--runs" => o.runs = number("--runs", value("--runs")?)?.max(1) as usize,
            "--warmup" => o.warmup = number("--warmup", value("--warmup")?)? as usize,
            "--seeds" => o.seeds = number("--seeds", value("--seeds")?)?.max(1),
            "--only" => o.only.push(value("--only")?),
            "--skip-clock-check" => o.clock_check = false,
            // `cargo bench` passes `--bench`; a filter may follow it.
            "--bench" => {}
            "-h" | "--help" => {
                return Err("usage: executor [--runs N] [--warmup N] [--seeds N] \
                            [--only spawn_yield|sleep|sleepers|seeds|net_rt|net_idle_2|\
                            net_idle_100|net_idle_1000|heartbeats|cluster_N|fs_tokio|fs_std|\
                            threads_pingpong|threads_spawn|thread_soak]... \
                            [--skip-clock-check]"
                    .into())
            }
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            filter => o.only.push(filter.to_string()),
        }
    }
    Ok(o)
}

fn main() {
    let opts = parse_args().unwrap_or_else(|e| {
        eprintln!("executor bench: {e}");
        std::process::exit(2)
    });
    if !RUNNABLE {
        eprintln!(
            "executor bench: a production build needs Tokio's runtime and timers: \
             cargo bench -p sim-runtime --bench executor --features full,test-util"
        );
        std::process::exit(2);
    }
    let wanted = |name: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == name);
    if opts.clock_check {
        clock_check();
    }
    if wanted("spawn_yield") {
        report(
            "spawn_yield",
            "ms",
            &opts,
            || workloads::spawn_yield(100_000, 10),
            |d| d.as_secs_f64() * 1e3,
        );
    }
    if wanted("sleep") {
        if PAUSED_CLOCK {
            report(
                "sleep",
                "ms",
                &opts,
                || workloads::sleeps(1_000, 1_000),
                |d| d.as_secs_f64() * 1e3,
            );
        } else {
            eprintln!(
                "executor bench: `sleep` skipped: Tokio's paused clock needs --features test-util"
            );
        }
    }
    if wanted("sleepers") {
        if PAUSED_CLOCK {
            report(
                "sleepers",
                "ms",
                &opts,
                || workloads::sleepers(30_000),
                |d| d.as_secs_f64() * 1e3,
            );
        } else {
            eprintln!(
                "executor bench: `sleepers` skipped: Tokio's paused clock needs --features test-util"
            );
        }
    }
    if wanted("net_rt") {
        if NET {
            report(
                "net_rt",
                "ms",
                &opts,
                || workloads::round_trips(10_000, 0),
                |d| d.as_secs_f64() * 1e3,
            );
        } else {
            eprintln!("executor bench: `net_rt` skipped: a production build needs --features full");
        }
    }
    // The cost of one round trip with `idle` nodes present: a run of
    // 10,000 round trips minus a run of none (same set-up), per round trip.
    for idle in [2usize, 100, 1_000] {
        let name = format!("net_idle_{idle}");
        if wanted(&name) && cfg!(simulation) {
            report(
                &name,
                "us/rt",
                &opts,
                || workloads::round_trips(10_000, idle),
                |d| {
                    let start = Instant::now();
                    workloads::round_trips(0, idle);
                    let setup = start.elapsed();
                    d.saturating_sub(setup).as_secs_f64() * 1e6 / 10_000.0
                },
            );
        }
    }
    // Several nodes: the simulation only (real Tokio has one host).
    if wanted("heartbeats") && cfg!(simulation) {
        report(
            "heartbeats",
            "ms",
            &opts,
            || workloads::heartbeats(10, 24 * 3_600),
            |d| d.as_secs_f64() * 1e3,
        );
    }
    // Large clusters: only when named (simulation only).
    #[cfg(simulation)]
    for n in clusters::NODES {
        if opts.only.iter().any(|o| *o == format!("cluster_{n}")) {
            clusters::report(n, opts.warmup, opts.runs);
        }
    }
    // The cost of a 4 KiB write through `tokio::fs` and through `std::fs`:
    // only when named. Per write: a run of FS_WRITES writes minus a run of
    // none (the runtime, the file's creation and an empty sync), so the one
    // final sync of the data is counted, spread over the writes.
    #[cfg(any(simulation, all(feature = "fs", feature = "io-util")))]
    for (name, std_fs) in [("fs_tokio", false), ("fs_std", true)] {
        if opts.only.iter().any(|o| o == name) {
            // A real directory with Tokio; the node's disk in simulation.
            #[cfg(not(simulation))]
            let tmp = tempfile::tempdir().expect("a temporary directory");
            #[cfg(not(simulation))]
            let dir = tmp.path().to_path_buf();
            #[cfg(simulation)]
            let dir = std::path::PathBuf::from("/tmp");
            report(
                name,
                "us/write",
                &opts,
                || workloads::fs_writes(&dir, FS_WRITES, std_fs),
                |d| {
                    let start = Instant::now();
                    workloads::fs_writes(&dir, 0, std_fs);
                    let setup = start.elapsed();
                    d.saturating_sub(setup).as_secs_f64() * 1e6 / FS_WRITES as f64
                },
            );
        }
    }
    // OS threads: only when named.
    #[cfg(any(simulation, all(feature = "rt", feature = "time")))]
    threads::report(&opts);
    if wanted("seeds") {
        if PAUSED_CLOCK {
            let seeds = opts.seeds;
            report(
                "seeds",
                "us/seed",
                &opts,
                || workloads::seeds(seeds),
                |d| d.as_secs_f64() * 1e6 / seeds as f64,
            );
        } else {
            eprintln!(
                "executor bench: `seeds` skipped: Tokio's paused clock needs --features test-util"
            );
        }
    }
}

/// Writes per run of `fs_tokio` and `fs_std` (4 KiB each: 8 MiB a run).
#[cfg(any(simulation, all(feature = "fs", feature = "io-util")))]
const FS_WRITES: usize = 2_000;

/// Runs `work` `warmup + runs` times, timing each run from outside, and
/// prints the samples and their median.
fn report(name: &str, unit: &str, opts: &Opts, work: impl Fn(), scale: impl Fn(Duration) -> f64) {
    for _ in 0..opts.warmup {
        work();
    }
    let mut samples: Vec<f64> = (0..opts.runs)
        .map(|_| {
            let start = Instant::now();
            work();
            scale(start.elapsed())
        })
        .collect();
    let list = samples
        .iter()
        .map(|s| format!("{s:.3}"))
        .collect::<Vec<_>>()
        .join(",");
    let m = median(&mut samples);
    eprintln!(
        "{MODE:>5} {name:<12} {m:>10.3} {unit}   (median of {})",
        opts.runs
    );
    println!("BENCH {MODE} {name} {unit} {m:.3} {list}");
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Proves that the stopwatch reads real time: a real 20 ms sleep, taken
/// after a runtime was built and has run (so the simulation's interposers
/// were on and off again), must measure as about 20 ms.
fn clock_check() {
    let real = Duration::from_millis(20);
    let measured = {
        // Alive, between two `block_on`s, as in the workloads.
        let _rt = workloads::warm_runtime();
        let start = Instant::now();
        std::thread::sleep(real);
        start.elapsed()
    };
    let ok = measured >= real && measured < real * 10;
    eprintln!(
        "{MODE:>5} clock check: a real {} ms sleep measured {:.3} ms{}",
        real.as_millis(),
        measured.as_secs_f64() * 1e3,
        if ok { "" } else { " -- NOT REAL TIME" }
    );
    println!(
        "CLOCK {MODE} {} {:.3}",
        real.as_millis(),
        measured.as_secs_f64() * 1e3
    );
    if !ok {
        eprintln!("executor bench: the stopwatch does not read real time; refusing to report");
        std::process::exit(1);
    }
}

#[cfg(any(simulation, all(feature = "rt", feature = "time")))]
mod workloads {
    use sim_runtime::runtime::{Builder, Runtime};
    use sim_runtime::time::Instant;
    use std::time::Duration;

    /// The workload really slept (on the runtime's clock: virtual in
    /// simulation, paused-and-auto-advancing in Tokio).
    fn slept_at_least(start: Instant, at_least: Duration) {
        let slept = start.elapsed();
        assert!(
            slept >= at_least,
            "the runtime's clock moved {slept:?}, less than the {at_least:?} slept"
        );
    }

    /// A current-thread runtime. `seed` is the simulation's seed (ignored by
    /// Tokio); `paused` starts Tokio's clock paused so that sleeps
    /// auto-advance as the simulation's clock does.
    pub fn runtime(seed: u64, paused: bool) -> Runtime {
        let mut b = Builder::new_current_thread();
        b.enable_all();
        #[cfg(simulation)]
        b.sim_seed(seed);
        #[cfg(not(simulation))]
        let _ = seed;
        #[cfg(any(simulation, feature = "test-util"))]
        b.start_paused(paused);
        #[cfg(not(any(simulation, feature = "test-util")))]
        let _ = paused;
        b.build().expect("runtime builds")
    }

    /// A runtime that has run one task (for the clock check).
    pub fn warm_runtime() -> Runtime {
        let rt = runtime(0, false);
        rt.block_on(async {
            sim_runtime::spawn(async {}).await.unwrap();
        });
        rt
    }

    /// 1. `tasks` tasks that each yield `yields` times, then all joined.
    pub fn spawn_yield(tasks: usize, yields: usize) {
        runtime(0, false).block_on(async move {
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    sim_runtime::spawn(async move {
                        for _ in 0..yields {
                            sim_runtime::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        });
    }

    /// 2. `tasks` tasks × `sleeps` sequential 1 ms sleeps.
    pub fn sleeps(tasks: usize, sleeps: usize) {
        runtime(0, true).block_on(async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    sim_runtime::spawn(async move {
                        for _ in 0..sleeps {
                            sim_runtime::time::sleep(Duration::from_millis(1)).await;
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            slept_at_least(start, Duration::from_millis(sleeps as u64));
        });
    }

    /// 3. `tasks` sleepers with distinct deadlines: task `i` sleeps
    ///    `i + 1` ms once; all joined.
    pub fn sleepers(tasks: u64) {
        runtime(0, true).block_on(async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..tasks)
                .map(|i| {
                    sim_runtime::spawn(async move {
                        sim_runtime::time::sleep(Duration::from_millis(i + 1)).await;
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            slept_at_least(start, Duration::from_millis(tasks));
        });
    }

    /// 7. `nodes` nodes, each sending a 16-byte UDP heartbeat to every other
    ///    node once per simulated second, for `secs` seconds (the network's
    ///    default latency and jitter); every node counts what it receives.
    #[cfg(simulation)]
    pub fn heartbeats(nodes: usize, secs: u64) {
        use sim_runtime::net::UdpSocket;
        use sim_runtime::sim;
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        use std::sync::Arc;
        runtime(0, true).block_on(async move {
            let start = Instant::now();
            let ids: Vec<_> = (0..nodes)
                .map(|i| sim::node(format!("hb{i}")).build())
                .collect();
            let received = Arc::new(AtomicU64::new(0));
            let senders: Vec<_> = ids
                .iter()
                .enumerate()
                .map(|(i, &id)| {
                    let received = received.clone();
                    sim::spawn_on(id, async move {
                        let sock = Arc::new(UdpSocket::bind("0.0.0.0:9000").await.unwrap());
                        let mut peers = Vec::new();
                        for j in (0..nodes).filter(|&j| j != i) {
                            let name = format!("hb{j}:9000");
                            peers.extend(sim_runtime::net::lookup_host(name).await.unwrap());
                        }
                        let rsock = sock.clone();
                        sim_runtime::spawn(async move {
                            let mut buf = [0u8; 64];
                            while rsock.recv_from(&mut buf).await.is_ok() {
                                received.fetch_add(1, Relaxed);
                            }
                        });
                        let beat = [1u8; 16];
                        for _ in 0..secs {
                            sim_runtime::time::sleep(Duration::from_secs(1)).await;
                            for p in &peers {
                                sock.send_to(&beat, p).await.unwrap();
                            }
                        }
                    })
                })
                .collect();
            for s in senders {
                s.await.unwrap();
            }
            slept_at_least(start, Duration::from_secs(secs));
            // All but the last second's datagrams may have arrived.
            let sent = secs * (nodes * (nodes - 1)) as u64;
            let got = received.load(Relaxed);
            assert!(
                got + (nodes * nodes) as u64 >= sent && got <= sent,
                "{got} of {sent} heartbeats received"
            );
        });
    }

    #[cfg(not(simulation))]
    pub fn heartbeats(_: usize, _: u64) {}

    /// 5. `n` request/response round trips of 64 bytes over one TCP
    ///    connection, between two nodes (simulation, zero latency) or over
    ///    loopback (Tokio), with `idle` more nodes present, each with a
    ///    listener waiting in `accept` (simulation only).
    #[cfg(any(simulation, all(feature = "net", feature = "io-util")))]
    pub fn round_trips(n: usize, idle: usize) {
        use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
        use sim_runtime::net::{TcpListener, TcpStream};
        runtime(0, true).block_on(async move {
            #[cfg(simulation)]
            let (server_node, target) = {
                use sim_runtime::sim;
                sim::net::configure(sim::net::Config {
                    latency_ns: 0,
                    jitter_ns: 0,
                    ..Default::default()
                });
                for i in 0..idle {
                    let node = sim::node(format!("idle{i}")).build();
                    sim::spawn_on(node, async {
                        let l = TcpListener::bind("0.0.0.0:9000").await.unwrap();
                        let _ = l.accept().await;
                    });
                }
                (Some(sim::node("server").build()), "server:7000")
            };
            #[cfg(not(simulation))]
            let (server_node, target) = {
                let _ = idle;
                (None::<()>, "127.0.0.1:7000")
            };
            let serve = async move {
                let l = TcpListener::bind("0.0.0.0:7000").await.unwrap();
                let (mut s, _) = l.accept().await.unwrap();
                let mut buf = [0u8; 64];
                loop {
                    if s.read_exact(&mut buf).await.is_err() {
                        break;
                    }
                    s.write_all(&buf).await.unwrap();
                }
            };
            #[cfg(simulation)]
            let server = sim_runtime::sim::spawn_on(server_node.unwrap(), serve);
            #[cfg(not(simulation))]
            let server = {
                let _ = server_node;
                sim_runtime::spawn(serve)
            };
            // Let the server bind first.
            sim_runtime::task::yield_now().await;
            let mut c = loop {
                match TcpStream::connect(target).await {
                    Ok(c) => break c,
                    Err(_) => sim_runtime::task::yield_now().await,
                }
            };
            c.set_nodelay(true).unwrap();
            let msg = [7u8; 64];
            let mut buf = [0u8; 64];
            for _ in 0..n {
                c.write_all(&msg).await.unwrap();
                c.read_exact(&mut buf).await.unwrap();
                assert_eq!(buf, msg);
            }
            drop(c);
            server.await.unwrap();
        });
    }

    #[cfg(not(any(simulation, all(feature = "net", feature = "io-util"))))]
    pub fn round_trips(_: usize, _: usize) {}

    /// 6. `writes` writes of 4 KiB to a new file in `dir`, then one
    ///    `sync_all`, inside a runtime's `block_on`: through
    ///    `tokio::fs::File` (`std_fs` false) or `std::fs::File` (true). In
    ///    simulation both reach the node's simulated disk (std through the
    ///    libc interposers); with Tokio, a real file.
    #[cfg(any(simulation, all(feature = "fs", feature = "io-util")))]
    pub fn fs_writes(dir: &std::path::Path, writes: usize, std_fs: bool) {
        use sim_runtime::io::AsyncWriteExt;
        use std::io::Write;
        const BLOCK: [u8; 4096] = [0x5a; 4096];
        let path = dir.join(if std_fs { "fs_std" } else { "fs_tokio" });
        let len = runtime(0, false).block_on(async move {
            if std_fs {
                let mut f = std::fs::File::create(&path).unwrap();
                for _ in 0..writes {
                    f.write_all(&BLOCK).unwrap();
                }
                f.sync_all().unwrap();
                f.metadata().unwrap().len()
            } else {
                let mut f = sim_runtime::fs::File::create(&path).await.unwrap();
                for _ in 0..writes {
                    f.write_all(&BLOCK).await.unwrap();
                }
                f.sync_all().await.unwrap();
                f.metadata().await.unwrap().len()
            }
        });
        assert_eq!(len, 4096 * writes as u64, "every write reached the file");
    }

    /// 4. One tiny simulation per seed: a fresh runtime, one task doing ten
    ///    1 ms sleeps, joined.
    pub fn seeds(seeds: u64) {
        for seed in 0..seeds {
            runtime(seed, true).block_on(async {
                let start = Instant::now();
                sim_runtime::spawn(async {
                    for _ in 0..10 {
                        sim_runtime::time::sleep(Duration::from_millis(1)).await;
                    }
                })
                .await
                .unwrap();
                slept_at_least(start, Duration::from_millis(10));
            });
        }
    }
}

/// A production build without Tokio's runtime: `main` explains and exits
/// before any of these is reached.
#[cfg(not(any(simulation, all(feature = "rt", feature = "time"))))]
mod workloads {
    pub struct NoRuntime;
    pub fn warm_runtime() -> NoRuntime {
        NoRuntime
    }
    pub fn spawn_yield(_: usize, _: usize) {}
    pub fn sleeps(_: usize, _: usize) {}
    pub fn sleepers(_: u64) {}
    pub fn heartbeats(_: usize, _: u64) {}
    pub fn seeds(_: u64) {}
    pub fn round_trips(_: usize, _: usize) {}
}
