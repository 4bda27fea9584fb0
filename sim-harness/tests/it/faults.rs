//! Seeded generators: fault plans drawn within an envelope (deterministic,
//! bounded, one stream per dimension), applied at their virtual times; and
//! rollouts behind a routed name.

#![cfg(simulation)]

use sim::faults::{self, Envelope, FaultKind, Plan};
use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{TcpListener, TcpStream};
use sim_runtime::signal::unix::{signal, SignalKind};
use sim_runtime::sim::incarnation;
use sim_runtime::time::{sleep, timeout};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);
const NAMES: [&str; 5] = ["n0", "n1", "n2", "n3", "n4"];

fn busy() -> Envelope {
    Envelope {
        crashes: 0..=3,
        kills: 1..=2,
        partitions: 0..=2,
        clogs: 0..=1,
        window: Duration::from_secs(20),
        min_gap: Duration::from_millis(500),
        min_down: Duration::from_millis(100),
        max_down: Duration::from_secs(2),
        min_cut: Duration::from_millis(200),
        max_cut: Duration::from_secs(3),
    }
}

// ----- drawing ----------------------------------------------------------------

#[test]
fn a_plan_is_a_function_of_seed_nodes_and_envelope() {
    for seed in 0..50 {
        assert_eq!(
            faults::draw(seed, &NAMES, &busy()),
            faults::draw(seed, &NAMES, &busy())
        );
    }
    let plans: BTreeSet<String> = (0..50)
        .map(|s| format!("{:?}", faults::draw(s, &NAMES, &busy())))
        .collect();
    assert!(
        plans.len() >= 45,
        "seeds draw different plans: {} of 50 distinct",
        plans.len()
    );
    assert_ne!(
        faults::draw(1, &NAMES, &busy()),
        faults::draw(2, &NAMES, &busy())
    );
}

#[test]
fn plans_stay_inside_the_envelope() {
    let env = busy();
    let mut counts_seen = [
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
    ];
    let mut minority_sizes = BTreeSet::new();
    for seed in 0..500 {
        let plan = faults::draw(seed, &NAMES, &env);
        assert_eq!(plan.origin, Duration::ZERO);
        let counts = [
            plan.crashes().count() as u32,
            plan.kills().count() as u32,
            plan.partitions().count() as u32,
            plan.clogs().count() as u32,
        ];
        assert!(env.crashes.contains(&counts[0]), "seed {seed}: {plan:?}");
        assert!(env.kills.contains(&counts[1]), "seed {seed}: {plan:?}");
        assert!(env.partitions.contains(&counts[2]), "seed {seed}: {plan:?}");
        assert!(env.clogs.contains(&counts[3]), "seed {seed}: {plan:?}");
        for (seen, c) in counts_seen.iter_mut().zip(counts) {
            seen.insert(c);
        }
        assert_eq!(plan.len(), counts.iter().sum::<u32>() as usize);
        // In start order.
        assert!(
            plan.faults.windows(2).all(|w| w[0].at <= w[1].at),
            "seed {seed}: {plan:?}"
        );
        for f in &plan.faults {
            assert!(
                f.at < env.window,
                "seed {seed}: starts inside the window: {f:?}"
            );
            assert_eq!(f.at.subsec_nanos() % 1_000_000, 0, "whole ms: {f:?}");
            assert_eq!(f.lasts.subsec_nanos() % 1_000_000, 0, "whole ms: {f:?}");
            match &f.kind {
                FaultKind::Crash { node } | FaultKind::Kill { node } => {
                    assert!(NAMES.contains(&node.as_str()), "{f:?}");
                    assert!(f.lasts >= env.min_down, "{f:?}");
                    assert!(f.lasts <= env.max_down, "{f:?}");
                }
                FaultKind::Partition { minority, majority } => {
                    assert!(f.lasts >= env.min_cut, "{f:?}");
                    assert!(f.lasts <= env.max_cut, "{f:?}");
                    assert!(!minority.is_empty(), "{f:?}");
                    assert!(minority.len() <= NAMES.len() / 2, "{f:?}");
                    minority_sizes.insert(minority.len());
                    let mut all: Vec<&str> = minority
                        .iter()
                        .chain(majority)
                        .map(|s| s.as_str())
                        .collect();
                    all.sort_unstable();
                    assert_eq!(all, NAMES.to_vec(), "the sides split the nodes: {f:?}");
                }
                FaultKind::Clog { a, b } => {
                    assert!(f.lasts >= env.min_cut, "{f:?}");
                    assert!(f.lasts <= env.max_cut, "{f:?}");
                    assert_ne!(a, b, "{f:?}");
                    assert!(NAMES.contains(&a.as_str()), "{f:?}");
                    assert!(NAMES.contains(&b.as_str()), "{f:?}");
                }
            }
        }
        // Faults of one dimension start at least min_gap apart.
        for dim in [
            plan.crashes().collect::<Vec<_>>(),
            plan.kills().collect(),
            plan.partitions().collect(),
            plan.clogs().collect(),
        ] {
            for w in dim.windows(2) {
                assert!(w[1].at - w[0].at >= env.min_gap, "seed {seed}: {w:?}");
            }
        }
        assert!(plan.quiet_at() < env.window + env.max_cut.max(env.max_down));
    }
    // Every count the ranges allow is drawn somewhere, zero included.
    assert_eq!(counts_seen[0], (0..=3).collect());
    assert_eq!(counts_seen[1], (1..=2).collect());
    assert_eq!(counts_seen[2], (0..=2).collect());
    assert_eq!(counts_seen[3], (0..=1).collect());
    assert_eq!(
        minority_sizes,
        [1, 2].into_iter().collect(),
        "minorities of 1 and 2 of 5"
    );
}

#[test]
fn zero_bounds_draw_nothing() {
    for seed in 0..200 {
        let plan = faults::draw(seed, &NAMES, &Envelope::default());
        assert!(plan.is_empty(), "seed {seed}: {plan:?}");
        assert_eq!(plan.quiet_at(), Duration::ZERO);
        assert_eq!(plan.to_string(), "no faults");
    }
    // Link faults that may be zero are not drawn for a single node.
    let env = Envelope {
        partitions: 0..=3,
        clogs: 0..=3,
        ..Envelope::default()
    };
    for seed in 0..200 {
        assert!(faults::draw(seed, &["solo"], &env).is_empty());
    }
}

#[test]
fn changing_one_bound_leaves_the_other_dimensions_draws_alone() {
    for seed in 0..200 {
        let base = faults::draw(seed, &NAMES, &busy());
        let more_partitions = faults::draw(
            seed,
            &NAMES,
            &Envelope {
                partitions: 0..=9,
                ..busy()
            },
        );
        let no_clogs = faults::draw(
            seed,
            &NAMES,
            &Envelope {
                clogs: 0..=0,
                ..busy()
            },
        );
        let crashes = |p: &Plan| p.crashes().cloned().collect::<Vec<_>>();
        let kills = |p: &Plan| p.kills().cloned().collect::<Vec<_>>();
        let clogs = |p: &Plan| p.clogs().cloned().collect::<Vec<_>>();
        let partitions = |p: &Plan| p.partitions().cloned().collect::<Vec<_>>();
        assert_eq!(crashes(&base), crashes(&more_partitions), "seed {seed}");
        assert_eq!(kills(&base), kills(&more_partitions), "seed {seed}");
        assert_eq!(clogs(&base), clogs(&more_partitions), "seed {seed}");
        assert_eq!(crashes(&base), crashes(&no_clogs), "seed {seed}");
        assert_eq!(partitions(&base), partitions(&no_clogs), "seed {seed}");
    }
}

#[test]
fn a_plan_prints_one_line_per_fault() {
    let plan = (0..)
        .map(|s| faults::draw(s, &NAMES, &busy()))
        .find(|p| p.partitions().count() > 0 && p.clogs().count() > 0 && p.crashes().count() > 0)
        .unwrap();
    let text = plan.to_string();
    assert_eq!(text.lines().count(), plan.len(), "{text}");
    assert!(text.contains("crash n"), "{text}");
    assert!(text.contains("partition "), "{text}");
    assert!(text.contains("clog "), "{text}");
}

#[test]
#[should_panic(expected = "min_down (2s) is above max_down (1s)")]
fn an_inconsistent_envelope_is_refused() {
    faults::draw(
        0,
        &NAMES,
        &Envelope {
            min_down: Duration::from_secs(2),
            max_down: Duration::from_secs(1),
            ..Envelope::default()
        },
    );
}

#[test]
#[should_panic(expected = "do not fit in a window")]
fn gaps_that_do_not_fit_the_window_are_refused() {
    faults::draw(
        0,
        &NAMES,
        &Envelope {
            crashes: 0..=5,
            min_gap: Duration::from_secs(1),
            window: Duration::from_secs(3),
            ..Envelope::default()
        },
    );
}

#[test]
#[should_panic(expected = "a link needs two nodes")]
fn a_required_partition_needs_two_nodes() {
    faults::draw(
        0,
        &["solo"],
        &Envelope {
            partitions: 1..=1,
            ..Envelope::default()
        },
    );
}

// ----- applying ---------------------------------------------------------------

async fn echo() {
    let l = TcpListener::bind("0.0.0.0:7").await.unwrap();
    loop {
        let (mut s, _) = l.accept().await.unwrap();
        sim_runtime::spawn(async move {
            let mut buf = [0u8; 64];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// Whether `to`'s echo answers within 200 ms.
async fn answers(to: &str) -> bool {
    let attempt = async {
        let mut c = TcpStream::connect(format!("{to}:7")).await?;
        c.write_all(b"hi").await?;
        let mut buf = [0u8; 2];
        c.read_exact(&mut buf).await?;
        std::io::Result::Ok(buf == *b"hi")
    };
    matches!(
        timeout(Duration::from_millis(200), attempt).await,
        Ok(Ok(true))
    )
}

/// `answers`, tried until it succeeds, at most 40 times: an early timer
/// may fire a probe's timeout mid-round-trip, but a run has at most 32
/// early jumps, so a node that is really up answers one of the attempts.
async fn answers_despite_early_timers(to: &str) -> bool {
    for _ in 0..40 {
        if answers(to).await {
            return true;
        }
    }
    false
}

/// The node's outages as the plan makes them: the union of its crashes
/// and kills, as global virtual time intervals (start, end). With
/// `merge_touching`, an outage that starts the instant another ends joins
/// it (whether the node restarts in between depends on the seeded order of
/// the two events at that instant).
fn outages(plan: &Plan, node: &str, merge_touching: bool) -> Vec<(Duration, Duration)> {
    let mut spans: Vec<(Duration, Duration)> = plan
        .faults
        .iter()
        .filter(|f| match &f.kind {
            FaultKind::Crash { node: n } | FaultKind::Kill { node: n } => n == node,
            _ => false,
        })
        .map(|f| (plan.origin + f.at, plan.origin + f.ends()))
        .collect();
    spans.sort();
    let mut merged: Vec<(Duration, Duration)> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s < last.1 || (merge_touching && s == last.1) => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

#[sim::test(seeds = 0..16)]
async fn scheduled_crashes_and_kills_happen_at_their_times() {
    let nodes: Vec<sim::Node> = ["db0", "db1", "db2"]
        .iter()
        .map(|n| sim::node(*n).start(echo))
        .collect();
    sleep(10 * MS).await;
    let plan = faults::schedule(
        &nodes,
        &Envelope {
            crashes: 1..=3,
            kills: 0..=2,
            window: Duration::from_secs(5),
            min_down: Duration::from_millis(50),
            max_down: Duration::from_secs(1),
            ..Envelope::default()
        },
    );
    assert_eq!(plan.origin, 10 * MS);
    assert!(plan.crashes().count() >= 1);
    // Sample every node's liveness each millisecond until the plan is
    // over, away from the instants where it changes.
    let end = plan.quiet_at() + 10 * MS;
    let expected: Vec<Vec<(Duration, Duration)>> = nodes
        .iter()
        .map(|n| outages(&plan, n.name(), true))
        .collect();
    let incarnations: Vec<u32> = nodes.iter().map(|n| incarnation(n.id())).collect();
    while sim::elapsed() < end {
        let now = sim::elapsed();
        for (n, spans) in nodes.iter().zip(&expected) {
            if spans.iter().any(|&(s, e)| now == s || now == e) {
                continue;
            }
            let down = spans.iter().any(|&(s, e)| s < now && now < e);
            assert_eq!(
                n.is_alive(),
                !down,
                "{} at {now:?}; plan:\n{plan}",
                n.name()
            );
        }
        sleep(MS).await;
    }
    for ((n, spans), before) in nodes.iter().zip(&expected).zip(incarnations) {
        // One death per outage (touching ones may or may not restart in
        // between), and the service runs again.
        let deaths = incarnation(n.id()) - before;
        let most = outages(&plan, n.name(), false).len() as u32;
        assert!(
            deaths >= spans.len() as u32,
            "{}: {deaths} deaths; plan:\n{plan}",
            n.name()
        );
        assert!(
            deaths <= most,
            "{}: {deaths} deaths; plan:\n{plan}",
            n.name()
        );
        assert!(n.is_alive());
        assert!(
            answers_despite_early_timers(n.name()).await,
            "{} answers after its restart",
            n.name()
        );
    }
}

// Its probes bound each round trip with a timeout: early timers (which may
// fire a timeout mid-round-trip, by design) would make a probe fail for a
// reason other than the partition under test.
#[sim::test(seeds = 0..16, early_timers = false)]
async fn scheduled_partitions_cut_links_until_they_heal() {
    let names = ["p0", "p1", "p2"];
    let nodes: Vec<sim::Node> = names.iter().map(|n| sim::node(*n).start(echo)).collect();
    // Probes run on the nodes themselves (the driver is not in the plan).
    sleep(10 * MS).await;
    let plan = faults::schedule(
        &nodes,
        &Envelope {
            partitions: 1..=2,
            window: Duration::from_secs(3),
            min_cut: Duration::from_millis(500),
            max_cut: Duration::from_secs(1),
            ..Envelope::default()
        },
    );
    let checks = Rc::new(RefCell::new(Vec::new()));
    for f in plan.partitions() {
        let FaultKind::Partition { minority, majority } = &f.kind else {
            unreachable!()
        };
        // 50 ms into the cut, from a minority node to each majority node
        // and back: nothing answers (the cut lasts at least 500 ms).
        let at = plan.origin + f.at + 50 * MS;
        for (from, to) in minority
            .iter()
            .flat_map(|m| majority.iter().map(move |o| [(m, o), (o, m)]))
            .flatten()
        {
            let node = nodes
                .iter()
                .find(|n| n.name() == from.as_str())
                .unwrap()
                .clone();
            let (to, checks) = (to.clone(), checks.clone());
            sim::at(at, move || {
                node.spawn(async move {
                    let ok = answers(&to).await;
                    checks.borrow_mut().push((sim::elapsed(), to, ok));
                });
            });
        }
    }
    let expected_checks: usize = plan
        .partitions()
        .map(|f| match &f.kind {
            FaultKind::Partition { minority, majority } => 2 * minority.len() * majority.len(),
            _ => 0,
        })
        .sum();
    sleep_until_global(plan.quiet_at() + 10 * MS).await;
    let checks = checks.borrow().clone();
    assert_eq!(checks.len(), expected_checks, "plan:\n{plan}");
    for (at, to, ok) in &checks {
        assert!(
            !ok,
            "{to} answered across a partition at {at:?}; plan:\n{plan}"
        );
    }
    // Every link healed: every node reaches every other.
    for from in &nodes {
        for to in names {
            let ok = from.spawn(async move { answers(to).await }).await.unwrap();
            assert!(
                ok,
                "{} reaches {to} after the heals; plan:\n{plan}",
                from.name()
            );
        }
    }
}

#[sim::test(seeds = 0..8)]
async fn overlapping_clogs_and_partitions_compose() {
    // Clogs and partitions over two nodes: a link is cut while any
    // partition covers it, clogged while any clog does, and whole again
    // once every fault has ended.
    let nodes: Vec<sim::Node> = ["c0", "c1"]
        .iter()
        .map(|n| sim::node(*n).start(echo))
        .collect();
    sleep(10 * MS).await;
    let plan = faults::schedule(
        &nodes,
        &Envelope {
            partitions: 2..=3,
            clogs: 2..=3,
            window: Duration::from_secs(2),
            min_cut: Duration::from_millis(300),
            max_cut: Duration::from_secs(1),
            ..Envelope::default()
        },
    );
    sleep_until_global(plan.quiet_at() + 10 * MS).await;
    let c0 = nodes[0].clone();
    let ok = c0
        .spawn(async { answers_despite_early_timers("c1").await })
        .await
        .unwrap();
    assert!(ok, "c0 reaches c1 once every fault ended; plan:\n{plan}");
}

#[sim::test(seed = 3)]
async fn a_second_plan_needs_its_own_label() {
    let nodes: Vec<sim::Node> = ["l0", "l1"].iter().map(|n| sim::node(*n).build()).collect();
    let env = Envelope {
        partitions: 3..=3,
        window: Duration::from_secs(100),
        max_cut: Duration::ZERO,
        min_cut: Duration::ZERO,
        ..Envelope::default()
    };
    let a = faults::schedule(&nodes, &env);
    let b = faults::schedule_as("faults.more", &nodes, &env);
    assert_ne!(a.faults, b.faults);
    assert_eq!(
        a,
        faults::draw(sim::fork_seed("faults"), &["l0", "l1"], &env)
    );
}

/// Spawns a task (which need not be `Send`) on the caller's node.
fn spawn_here<F: std::future::Future + 'static>(f: F) -> sim_runtime::task::JoinHandle<F::Output> {
    sim_runtime::sim::spawn_on(sim_runtime::sim::current_node(), f)
}

async fn sleep_until_global(t: Duration) {
    let now = sim::elapsed();
    if t > now {
        sleep(t - now).await;
    }
}

// ----- rollouts ---------------------------------------------------------------

/// Version `v` of a service that answers its version and stops accepting
/// on SIGTERM (connections it accepted still get their answer).
async fn versioned(v: &'static str) {
    let l = TcpListener::bind("0.0.0.0:80").await.unwrap();
    let mut term = signal(SignalKind::terminate()).unwrap();
    loop {
        sim_runtime::select! {
            r = l.accept() => {
                let (mut s, _) = r.unwrap();
                sim_runtime::spawn(async move {
                    let _ = s.write_all(v.as_bytes()).await;
                });
            }
            _ = term.recv() => return,
        }
    }
}

async fn version_of(addr: &str) -> std::io::Result<String> {
    let mut c = TcpStream::connect(addr).await?;
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).await?;
    Ok(String::from_utf8(buf).unwrap())
}

// The client bounds each request with a timeout; early timers (which may
// fire it mid-request, by design) are not what this test is about.
#[sim::test(seeds = 0..12, early_timers = false)]
async fn a_rollout_keeps_the_route_answering_and_ends_on_the_new_version() {
    let replicas: Vec<sim::Node> = (0..3)
        .map(|i| sim::node(format!("api-{i}")).start(|| versioned("v1")))
        .collect();
    sim::net::route("api", &replicas);
    sleep(10 * MS).await;
    assert_eq!(version_of("api:80").await.unwrap(), "v1");
    // A client asks through the route every 7 ms, all through the rollout.
    let seen = Rc::new(RefCell::new(Vec::new()));
    let stop = Rc::new(std::cell::Cell::new(false));
    let client = {
        let (seen, stop) = (seen.clone(), stop.clone());
        spawn_here(async move {
            while !stop.get() {
                let r = timeout(Duration::from_secs(1), version_of("api:80")).await;
                seen.borrow_mut().push((
                    sim::elapsed(),
                    r.map_err(|_| "timed out".to_string())
                        .and_then(|r| r.map_err(|e| e.to_string())),
                ));
                sleep(7 * MS).await;
            }
        })
    };
    let started = sim::elapsed();
    sim::rollout(
        &replicas,
        "api",
        || versioned("v2"),
        |node: sim::Node| async move {
            version_of(&format!("{}:80", node.name()))
                .await
                .is_ok_and(|v| v == "v2")
        },
    )
    .await;
    let finished = sim::elapsed();
    // Each replica: drain 100 ms + grace 1 s, then its readiness check.
    assert!(finished - started >= 3 * Duration::from_millis(1_100));
    sleep(100 * MS).await;
    stop.set(true);
    client.await.unwrap();
    let seen = seen.borrow().clone();
    // The client asked throughout: before the rollout began, after it
    // ended, and never more than a request's timeout apart (fault points
    // may make its timers late, so the count of requests varies).
    assert!(seen.len() > 20, "the client asked: {}", seen.len());
    assert!(
        seen.first().unwrap().0 - started <= Duration::from_millis(1_100),
        "asked from the start of the rollout"
    );
    assert!(
        seen.last().unwrap().0 >= finished,
        "asked after the rollout"
    );
    for w in seen.windows(2) {
        assert!(
            w[1].0 - w[0].0 <= Duration::from_millis(1_100),
            "a gap in the client's requests from {:?} to {:?}",
            w[0].0,
            w[1].0
        );
    }
    for (at, r) in seen.iter() {
        assert!(
            r.is_ok(),
            "a request through the route failed at {at:?}: {r:?}"
        );
    }
    let versions: Vec<&str> = seen.iter().map(|(_, r)| r.as_deref().unwrap()).collect();
    assert_eq!(versions[0], "v1");
    assert!(versions.contains(&"v2"));
    // Once the rollout is done, only v2 answers, directly and through the route.
    for (at, r) in seen.iter() {
        if *at > finished {
            assert_eq!(r.as_deref().unwrap(), "v2", "at {at:?}");
        }
    }
    for r in &replicas {
        assert_eq!(version_of(&format!("{}:80", r.name())).await.unwrap(), "v2");
    }
    // The new version is what later restarts start.
    replicas[1].crash();
    replicas[1].restart();
    sleep(10 * MS).await;
    assert_eq!(version_of("api-1:80").await.unwrap(), "v2");
}

#[sim::test(seed = 1)]
async fn a_replica_that_never_gets_ready_fails_the_rollout_clearly() {
    let replicas: Vec<sim::Node> = (0..2)
        .map(|i| sim::node(format!("web-{i}")).start(|| versioned("v1")))
        .collect();
    sim::net::route("web", &replicas);
    sleep(10 * MS).await;
    let rollout = spawn_here(sim::rollout_with(
        &replicas,
        "web",
        || versioned("v2"),
        |_node: sim::Node| async { false },
        sim::RolloutOptions {
            ready_timeout: Duration::from_secs(5),
            ..Default::default()
        },
    ));
    let err = rollout.await.expect_err("the rollout panics");
    let msg = err.into_panic();
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("\"web-0\" did not pass its readiness check within 5s"),
        "{msg}"
    );
}
