//! The harness benchmark: seeds per second of a 3-node scenario (start,
//! 100 requests, one crash, one partition), through `#[sim::test]`'s runner
//! and, for the harness's own overhead, through the bare runtime.
//!
//! ```text
//! RUSTFLAGS="--cfg simulation" CARGO_TARGET_DIR=target/sim \
//!     cargo bench -p sim-harness --bench harness -- [--seeds N] [--runs N] [--warmup N]
//! ```
//!
//! Prints `BENCH sim <workload> <unit> <median> <samples>` lines, as the
//! executor bench does. One job (`SIM_JOBS=1`): the figure is per core.
//! `scenario` (seeds per second through the harness) is workload 8 of
//! `cargo xtask bench`; `bench/madsim` and `bench/turmoil` run the same
//! scenario on madsim and turmoil under that name. `--only scenario` is
//! accepted (this bench has one workload) so the CLI matches theirs.

#[cfg(not(simulation))]
fn main() {
    eprintln!(
        "harness bench: the harness runs only in simulation builds: RUSTFLAGS=\"--cfg simulation\" \
         CARGO_TARGET_DIR=target/sim cargo bench -p sim-harness --bench harness"
    );
}

#[cfg(simulation)]
fn main() {
    bench::main()
}

#[cfg(simulation)]
mod bench {
    use sim::__private::{run, Options, Seeds};
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    use sim_runtime::net::{TcpListener, TcpStream};
    use sim_runtime::time::{sleep, Duration};
    use std::time::Instant;

    async fn echo() {
        let l = TcpListener::bind("0.0.0.0:7").await.unwrap();
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            sim_runtime::spawn(async move {
                let mut buf = [0u8; 64];
                while s.read_exact(&mut buf).await.is_ok() {
                    if s.write_all(&buf).await.is_err() {
                        return;
                    }
                }
            });
        }
    }

    /// Three nodes; 100 requests to the first; one crash; one partition.
    async fn scenario() {
        let a = sim::node("a").start(echo);
        let b = sim::node("b").start(echo);
        let _c = sim::node("c").start(echo);
        sleep(Duration::from_millis(1)).await;
        let mut conn = TcpStream::connect("a:7").await.unwrap();
        let msg = [7u8; 64];
        let mut buf = [0u8; 64];
        for i in 0..100 {
            conn.write_all(&msg).await.unwrap();
            conn.read_exact(&mut buf).await.unwrap();
            if i == 50 {
                b.crash();
                sim::net::partition("a", "c");
            }
        }
        drop(a);
    }

    fn options(seeds: u64) -> Options {
        Options {
            name: "bench::scenario",
            file: file!(),
            package: env!("CARGO_PKG_NAME"),
            crate_name: env!("CARGO_CRATE_NAME"),
            manifest_dir: env!("CARGO_MANIFEST_DIR"),
            seeds: Seeds::Range(0, seeds),
            time_limit_ms: None,
            step_limit: None,
            strict: false,
            check_determinism: false,
            schedule: None,
            coverage: false,
            early_timers: None,
            explore: None,
        }
    }

    fn one_runtime(seed: u64) {
        sim_runtime::runtime::Builder::new_current_thread()
            .enable_all()
            .sim_seed(seed)
            .build()
            .unwrap()
            .block_on(scenario());
    }

    /// The runtime's own way to run seeds (`#[tokio::test]` under
    /// simulation): a fresh OS thread and runtime per seed, no harness (no
    /// trace collector, no report, no replay line).
    fn runtime_runner(seeds: u64) {
        for seed in 0..seeds {
            std::thread::spawn(move || one_runtime(seed))
                .join()
                .unwrap();
        }
    }

    /// The scenario alone: one runtime per seed on this thread.
    fn bare(seeds: u64) {
        for seed in 0..seeds {
            one_runtime(seed);
        }
    }

    fn median(v: &mut [f64]) -> f64 {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    }

    fn report(name: &str, unit: &str, samples: &mut [f64]) {
        let list: Vec<String> = samples.iter().map(|s| format!("{s:.3}")).collect();
        println!(
            "BENCH sim {name} {unit} {:.3} {}",
            median(samples),
            list.join(",")
        );
    }

    pub fn main() {
        let mut seeds = 2_000u64;
        let mut runs = 5usize;
        let mut warmup = 0usize;
        let mut jobs = 1usize;
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--seeds" => seeds = args.next().and_then(|v| v.parse().ok()).expect("--seeds N"),
                "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
                "--warmup" => {
                    warmup = args
                        .next()
                        .and_then(|v| v.parse().ok())
                        .expect("--warmup N")
                }
                "--jobs" => jobs = args.next().and_then(|v| v.parse().ok()).expect("--jobs N"),
                "--only" => {
                    let w = args.next().expect("--only NAME");
                    assert!(
                        w == "scenario" || w.starts_with("harness"),
                        "harness bench: unknown workload {w:?} (it has one: scenario)"
                    );
                }
                _ => {}
            }
        }
        // Per core, and quiet: the runner's replay line per seed goes to
        // stderr, which the bench does not measure.
        // SAFETY: set before any other thread of this process exists.
        std::env::set_var("SIM_JOBS", jobs.to_string());
        // The same strategy for the harness and the bare runtime (uniform
        // random, no early timers, no fault points), so the difference is
        // the harness's own work.
        std::env::set_var("SIM_SCHEDULE", "random");
        std::env::set_var("SIM_EARLY_TIMERS", "off");
        std::env::set_var("SIM_BUGGIFY", "off");
        let mut per_seed_harness = Vec::new();
        let mut per_seed_runner = Vec::new();
        let mut per_seed_bare = Vec::new();
        bare(50);
        for _ in 0..warmup {
            run(options(seeds), scenario);
        }
        let per_seed = |t: Instant| t.elapsed().as_secs_f64() * 1e6 / seeds as f64;
        for _ in 0..runs {
            let t = Instant::now();
            run(options(seeds), scenario);
            per_seed_harness.push(per_seed(t));
            let t = Instant::now();
            runtime_runner(seeds);
            per_seed_runner.push(per_seed(t));
            let t = Instant::now();
            bare(seeds);
            per_seed_bare.push(per_seed(t));
        }
        let mut rate: Vec<f64> = per_seed_harness.iter().map(|us| 1e6 / us).collect();
        // The harness's own work: a seed through the runner against the same
        // seed's runtime alone on this thread.
        let mut overhead: Vec<f64> = per_seed_harness
            .iter()
            .zip(&per_seed_bare)
            .map(|(h, b)| h - b)
            .collect();
        report("scenario", "seeds/s", &mut rate.clone());
        report("harness_seeds_per_s", "seeds/s", &mut rate);
        report("harness_us_per_seed", "us/seed", &mut per_seed_harness);
        report(
            "runtime_runner_us_per_seed",
            "us/seed",
            &mut per_seed_runner,
        );
        report("scenario_us_per_seed", "us/seed", &mut per_seed_bare);
        report("harness_overhead", "us/seed", &mut overhead);
    }
}
