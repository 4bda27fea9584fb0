//! Large clusters (issue 26 item 3): `cluster_<N>` runs N nodes, each with
//! a TCP listener on port 9000 waiting in `accept` and a timer (a task
//! sleeping one hour), and measures three things separately:
//!
//! - the set-up: building the runtime, the N nodes and their tasks, every
//!   listener bound, and node 1's connection to node 0 (whose listener
//!   echoes) established;
//! - the round trips: 64 bytes from node 1 to node 0 and back, zero
//!   latency, [`ROUND_TRIPS`] of them, after the set-up (a second
//!   `block_on` on the same runtime, so the stopwatch reads real time
//!   between the two);
//! - the memory the set-up holds: the process's resident set after the
//!   set-up minus before it (`/proc/self/statm`; the executor's task memory
//!   is mapped by `mem.rs`, outside the global allocator), and, of it, the
//!   bytes live through the global allocator (a counting allocator, on only
//!   while this workload runs).
//!
//! Prints, besides the `BENCH` lines of the round trip (`us/rt`) and the
//! set-up (`cluster_<N>_setup`, ms):
//!
//! ```text
//! MEM sim cluster_<N> <resident bytes> <heap bytes>
//! ```
//!
//! taken on the process's first run (later runs reuse memory the first
//! freed), so `cargo xtask bench --only clusters` starts a fresh process
//! per run and per node count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Round trips measured per run.
pub const ROUND_TRIPS: usize = 10_000;

/// The node counts `cargo xtask bench --only clusters` measures.
pub const NODES: [usize; 5] = [2, 10, 100, 1_000, 10_000];

/// The global allocator, counting live bytes while [`COUNTING`] is on.
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is
// only arithmetic beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Relaxed);
        }
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Relaxed);
        }
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Relaxed);
        }
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            LIVE.fetch_add(new as isize - layout.size() as isize, Relaxed);
        }
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

/// The process's resident set, in bytes.
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: `sysconf` reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page
}

/// One run: the set-up's time, the round trips' time, and the memory the
/// set-up holds (resident, heap).
pub struct Sample {
    pub setup: Duration,
    pub round_trips: Duration,
    pub resident: u64,
    pub heap: i64,
}

/// One run with `nodes` nodes (at least two) and `n` round trips.
// The set-up's `block_on` returns the client's `JoinHandle` on purpose: the
// second `block_on` awaits it, with the stopwatch read between the two.
#[allow(clippy::async_yields_async)]
pub fn cluster(nodes: usize, n: usize) -> Sample {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    use sim_runtime::net::{TcpListener, TcpStream};
    use sim_runtime::sim;
    use sim_runtime::sync::oneshot;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    assert!(nodes >= 2, "a cluster needs two nodes to talk");
    let resident_before = resident();
    COUNTING.store(true, Relaxed);
    let heap_before = LIVE.load(Relaxed);
    let start = Instant::now();
    let rt = super::workloads::runtime(0, true);
    let (go, go_rx) = oneshot::channel::<()>();
    let client = rt.block_on(async move {
        sim::net::configure(sim::net::Config {
            latency_ns: 0,
            jitter_ns: 0,
            ..Default::default()
        });
        let bound = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::with_capacity(nodes);
        for i in 0..nodes {
            let id = sim::node(format!("n{i}")).build();
            let bound = bound.clone();
            sim::spawn_on(id, async move {
                let l = TcpListener::bind("0.0.0.0:9000").await.unwrap();
                sim_runtime::spawn(sim_runtime::time::sleep(Duration::from_secs(3_600)));
                bound.fetch_add(1, Relaxed);
                let Ok((mut s, _)) = l.accept().await else {
                    return;
                };
                let mut buf = [0u8; 64];
                while s.read_exact(&mut buf).await.is_ok() {
                    s.write_all(&buf).await.unwrap();
                }
            });
            ids.push(id);
        }
        // Binding is immediate: every node's task has run once the clock
        // moves.
        while bound.load(Relaxed) < nodes {
            sim_runtime::time::sleep(Duration::from_millis(1)).await;
        }
        let (connected, up) = oneshot::channel();
        let client = sim::spawn_on(ids[1], async move {
            let mut c = TcpStream::connect("n0:9000").await.unwrap();
            c.set_nodelay(true).unwrap();
            let _ = connected.send(());
            go_rx.await.unwrap();
            let msg = [7u8; 64];
            let mut buf = [0u8; 64];
            for _ in 0..n {
                c.write_all(&msg).await.unwrap();
                c.read_exact(&mut buf).await.unwrap();
                assert_eq!(buf, msg);
            }
        });
        up.await.unwrap();
        client
    });
    let setup = start.elapsed();
    let heap = (LIVE.load(Relaxed) - heap_before) as i64;
    COUNTING.store(false, Relaxed);
    let resident = resident().saturating_sub(resident_before);
    let start = Instant::now();
    rt.block_on(async move {
        go.send(()).unwrap();
        client.await.unwrap();
    });
    let round_trips = start.elapsed();
    drop(rt);
    Sample {
        setup,
        round_trips,
        resident,
        heap,
    }
}

/// `--only cluster_<N>`: `warmup + runs` runs, the `BENCH` lines of the
/// measured ones, and the `MEM` line of the first.
pub fn report(nodes: usize, warmup: usize, runs: usize) {
    let name = format!("cluster_{nodes}");
    let mut memory = None;
    let mut per_rt = Vec::new();
    let mut setup = Vec::new();
    for run in 0..warmup + runs {
        let s = cluster(nodes, ROUND_TRIPS);
        memory.get_or_insert((s.resident, s.heap));
        if run >= warmup {
            per_rt.push(s.round_trips.as_secs_f64() * 1e6 / ROUND_TRIPS as f64);
            setup.push(s.setup.as_secs_f64() * 1e3);
        }
    }
    line(&name, "us/rt", &mut per_rt);
    line(&format!("{name}_setup"), "ms", &mut setup);
    let (resident, heap) = memory.expect("at least one run");
    eprintln!("    sim {name:<14} set-up holds {resident} B resident, {heap} B of heap");
    println!("MEM sim {name} {resident} {heap}");
}

fn line(name: &str, unit: &str, samples: &mut [f64]) {
    let list = samples
        .iter()
        .map(|s| format!("{s:.3}"))
        .collect::<Vec<_>>()
        .join(",");
    samples.sort_by(f64::total_cmp);
    let m = samples[samples.len() / 2];
    eprintln!("    sim {name:<14} {m:>10.3} {unit}");
    println!("BENCH sim {name} {unit} {m:.3} {list}");
}
