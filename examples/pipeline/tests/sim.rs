//! The pipeline under simulation (seed 003's demo, over TCP): a seeded
//! batch of jobs, workers of seeded speeds, one worker crashed and another
//! cut off from the dispatcher at seeded moments, then the liveness phase:
//! the harness heals everything (`sim::heal_after`) and the ledger must
//! hold every job within a bound (`sim::eventually`). Every job ends up in
//! the ledger exactly once, with its result.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

use pipeline::{work, Conn, DISPATCHER_PORT, LEDGER_PORT, WORKER_PORT};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::sleep;

const JOBS: u64 = 30;
const WORKERS: usize = 3;
/// Virtual time the pipeline has to drain after the heal.
const DRAIN_BOUND: Duration = Duration::from_secs(30);

/// The test's own random stream (splitmix64) from a labelled fork of the
/// run's seed.
struct Plan(u64);

impl Plan {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }

    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo))
    }
}

#[sim::test(seeds = 0..100)]
async fn every_job_is_recorded_exactly_once() {
    let mut plan = Plan(sim::fork_seed("plan"));
    sim::node("ledger").start(pipeline::ledger);
    let names: Vec<String> = (1..=WORKERS).map(|i| format!("worker{i}")).collect();
    let workers: Vec<sim::Node> = names
        .iter()
        .map(|name| {
            let (name, work_time) = (name.clone(), plan.ms(5, 60));
            let ledger = format!("ledger:{LEDGER_PORT}");
            sim::node(name.clone())
                .start(move || pipeline::worker(name.clone(), ledger.clone(), work_time))
        })
        .collect();
    let addrs: Vec<String> = names.iter().map(|n| format!("{n}:{WORKER_PORT}")).collect();
    sim::node("dispatcher").start(move || pipeline::dispatcher(addrs.clone()));

    // One worker crashes (losing the job in hand); another (or the same)
    // is cut off from the dispatcher. Both last until the heal, which
    // restarts the worker and heals the link.
    let victim = workers[plan.below(WORKERS as u64) as usize].clone();
    let crash_at = plan.ms(0, 600);
    sim::at(crash_at, move || victim.crash());
    let cut = workers[plan.below(WORKERS as u64) as usize]
        .name()
        .to_string();
    let cut_at = plan.ms(0, 600);
    sim::at(cut_at, move || {
        sim::net::partition("dispatcher", cut.as_str())
    });
    sim::heal_after(plan.ms(600, 3_600));

    let batch: BTreeMap<u64, u64> = (0..JOBS).map(|id| (id, plan.below(1_000))).collect();
    // Wait until the dispatcher listens (a fixed sleep races its start-up:
    // with early timers, the clock may move before the service ran).
    let addr = format!("dispatcher:{DISPATCHER_PORT}");
    let mut attempts = 0;
    let mut dispatcher = loop {
        match Conn::connect(&addr).await {
            Ok(c) => break c,
            Err(e) if attempts < 100 => {
                attempts += 1;
                let _ = e;
                sleep(Duration::from_millis(1)).await;
            }
            Err(e) => panic!("the dispatcher never came up: {e}"),
        }
    };
    for (id, n) in &batch {
        let reply = dispatcher.call(&format!("SUBMIT {id} {n}\n")).await;
        assert_eq!(reply.expect("the dispatcher answers"), "QUEUED");
    }

    // Once the harness has healed everything, the ledger has every job
    // within the bound.
    let ledger = format!("ledger:{LEDGER_PORT}");
    sim::eventually("every job reaches the ledger", DRAIN_BOUND, || {
        let ledger = ledger.clone();
        async move {
            match Conn::connect(&ledger).await {
                Ok(mut l) => l.list().await.is_ok_and(|e| e.len() as u64 >= JOBS),
                Err(_) => false,
            }
        }
    })
    .await;
    let entries = Conn::connect(&ledger)
        .await
        .expect("the ledger is up")
        .list()
        .await
        .expect("the ledger answers");

    let mut times_recorded: BTreeMap<u64, usize> = BTreeMap::new();
    for e in &entries {
        *times_recorded.entry(e.job).or_default() += 1;
        let n = batch.get(&e.job);
        assert!(
            n.is_some(),
            "the ledger records job {} nobody submitted",
            e.job
        );
        assert_eq!(e.result, work(*n.unwrap()), "job {}'s result", e.job);
        assert!(
            names.contains(&e.worker),
            "job {} recorded by {:?}",
            e.job,
            e.worker
        );
    }
    for id in batch.keys() {
        let times = times_recorded.get(id).copied().unwrap_or(0);
        assert_eq!(
            times,
            1,
            "job {id} is recorded {times} times (by {:?})",
            sim::elapsed()
        );
    }
}
