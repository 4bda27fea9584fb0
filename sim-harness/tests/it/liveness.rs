//! The liveness phase: `sim::heal_after` ends the chaos with a heal (nodes
//! restarted and resumed, links healed, port, datagram and disk faults
//! cleared, fault plans stopped), `sim::eventually` counts its bound from
//! the heal, and a fault in the quiet phase fails the run.

#![cfg(simulation)]

use crate::common::{options, report};
use sim::__private::Seeds;
use sim::faults::{self, Envelope};
use sim_runtime::net::{TcpListener, TcpStream, UdpSocket};
use sim_runtime::time::{sleep, timeout};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

const SECS: fn(u64) -> Duration = Duration::from_secs;

async fn listen() {
    let l = TcpListener::bind("0.0.0.0:80").await.unwrap();
    loop {
        let _ = l.accept().await;
    }
}

/// Whether `to`'s port 80 accepts a connection from the caller's node
/// within a second.
async fn reachable(to: &str) -> bool {
    matches!(
        timeout(SECS(1), TcpStream::connect(format!("{to}:80"))).await,
        Ok(Ok(_))
    )
}

#[sim::test(seeds = 0..8, claims = ["net.heal", "fs.heal"])]
async fn the_heal_restarts_resumes_heals_and_clears() {
    let a = sim::node("a").start(listen);
    let b = sim::node("b").start(listen);
    let c = sim::node("c").start(listen);
    let probe = sim::node("probe").build();
    sleep(SECS(1)).await;
    a.crash();
    b.pause();
    sim::net::partition("probe", "c");
    sim::net::refuse_connects("c", 81);
    sim::net::set_udp_faults("probe", "c", 1_000_000, 0);
    sim::fs::fail_syncs("c", 1_000);
    let heal = sim::heal_after(SECS(5));
    assert_eq!(heal, SECS(6));
    assert_eq!(sim::heal_at(), Some(SECS(6)));
    sleep(SECS(4)).await;
    assert!(!sim::healed());
    assert!(!a.is_alive());
    let p = probe.clone();
    assert!(!p.spawn(async { reachable("c").await }).await.unwrap());

    sleep(SECS(2)).await;
    assert!(sim::healed());
    assert!(a.is_alive(), "the crashed node was restarted");
    assert!(!sim_runtime::sim::is_paused(b.id()), "the paused node runs");
    for to in ["a", "b", "c"] {
        assert!(
            probe.spawn(reachable(to)).await.unwrap(),
            "{to} is reachable after the heal"
        );
    }
    // The port fault and the datagram loss are gone.
    let refused = probe
        .spawn(async { TcpStream::connect("c:81").await.unwrap_err().kind() })
        .await
        .unwrap();
    assert_eq!(
        refused,
        std::io::ErrorKind::ConnectionRefused,
        "no listener, no fault"
    );
    let got = Rc::new(Cell::new(false));
    let seen = got.clone();
    c.spawn(async move {
        let s = UdpSocket::bind("0.0.0.0:9").await.unwrap();
        let mut buf = [0; 8];
        s.recv_from(&mut buf).await.unwrap();
        seen.set(true);
    });
    // Once c's socket is bound.
    sleep(Duration::from_millis(100)).await;
    probe
        .spawn(async {
            let s = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            s.send_to(b"x", "c:9").await.unwrap();
        })
        .await
        .unwrap();
    sleep(SECS(1)).await;
    assert!(got.get(), "datagrams reach c again");
    // c's disk syncs again.
    let synced = c
        .spawn(async {
            let mut f = sim_runtime::fs::File::create("/tmp/x").await.unwrap();
            sim_runtime::io::AsyncWriteExt::write_all(&mut f, b"x")
                .await
                .unwrap();
            f.sync_all().await
        })
        .await
        .unwrap();
    assert!(synced.is_ok(), "{synced:?}");
}

#[sim::test(seeds = 0..4)]
async fn eventually_counts_its_bound_from_the_heal() {
    let a = sim::node("a").start(listen);
    sleep(SECS(1)).await;
    a.crash();
    sim::heal_after(SECS(20));
    // Called long before the heal, with a bound far shorter than the wait:
    // it passes because it waits for the heal first.
    let node = a.clone();
    sim::eventually("a is back", SECS(1), move || {
        let alive = node.is_alive();
        async move { alive }
    })
    .await;
    assert!(sim::elapsed() >= SECS(21), "{:?}", sim::elapsed());
    assert!(sim::elapsed() <= SECS(22), "{:?}", sim::elapsed());
}

#[test]
fn a_miss_after_the_heal_is_a_liveness_failure_naming_the_heal() {
    let r = report(
        options("liveness::miss", file!(), Seeds::One(4)),
        || async {
            let a = sim::node("a").start(listen);
            sleep(SECS(1)).await;
            a.crash();
            sim::heal_after(SECS(3));
            sim::eventually("the store converges", SECS(2), || async { false }).await;
        },
    );
    assert!(r.contains("class: liveness"), "{r}");
    assert!(
        r.contains("the store converges: no progress within 2s"),
        "{r}"
    );
    assert!(r.contains("the heal at 4s"), "{r}");
    assert!(r.contains("restarted: a"), "{r}");
}

#[test]
fn a_fault_in_the_quiet_phase_fails_the_run() {
    let r = report(
        options("liveness::quiet_fault", file!(), Seeds::One(5)),
        || async {
            let a = sim::node("a").start(listen);
            sim::heal_after(SECS(1));
            sleep(SECS(2)).await;
            a.crash();
        },
    );
    assert!(r.contains("crash of node 'a'"), "{r}");
    assert!(r.contains("is a fault in the quiet phase"), "{r}");
    assert!(r.contains("the heal at 1s"), "{r}");
}

#[test]
fn a_fault_made_through_the_runtime_directly_is_refused_too() {
    // The harness re-exports the runtime's control API and watches it
    // through the runtime's observer: no call goes around the guard.
    let r = report(
        options("liveness::direct_fault", file!(), Seeds::One(5)),
        || async {
            let a = sim::node("a").start(listen);
            sim::heal_after(SECS(1));
            sleep(SECS(2)).await;
            sim::runtime::sim::net::partition_oneway(a.id(), sim::runtime::sim::Node::MAIN);
        },
    );
    assert!(r.contains("partition one way from=a to=main"), "{r}");
    assert!(r.contains("is a fault in the quiet phase"), "{r}");
}

#[test]
fn the_heal_is_set_once() {
    let r = report(
        options("liveness::twice", file!(), Seeds::One(6)),
        || async {
            sim::heal_after(SECS(1));
            sim::heal_after(SECS(2));
        },
    );
    assert!(r.contains("sim::heal_after called twice"), "{r}");
}

fn busy() -> Envelope {
    Envelope {
        crashes: 2..=3,
        kills: 0..=1,
        partitions: 1..=2,
        clogs: 0..=1,
        window: SECS(20),
        min_gap: Duration::from_millis(200),
        max_down: SECS(8),
        max_cut: SECS(8),
        ..Envelope::default()
    }
}

#[sim::test(seeds = 0..16)]
async fn a_plan_drawn_after_the_heal_is_set_ends_by_the_heal() {
    let nodes: Vec<sim::Node> = ["n0", "n1", "n2"]
        .iter()
        .map(|n| sim::node(*n).start(listen))
        .collect();
    sleep(SECS(1)).await;
    let heal = sim::heal_after(SECS(6));
    let plan = faults::schedule(&nodes, &busy());
    // The same draws as without the heal, cut at it.
    let uncut = faults::draw(sim::fork_seed("faults"), &["n0", "n1", "n2"], &busy());
    let kept: Vec<_> = uncut
        .faults
        .iter()
        .filter(|f| plan.origin + f.at < heal)
        .collect();
    assert_eq!(plan.faults.len(), kept.len());
    for (f, u) in plan.faults.iter().zip(kept) {
        assert_eq!((f.at, &f.kind), (u.at, &u.kind));
        assert_eq!(f.lasts, u.lasts.min(heal - plan.origin - u.at));
    }
    assert!(plan.quiet_at() <= heal, "{plan}");
    sleep(heal - sim::elapsed() + Duration::from_millis(1)).await;
    for n in &nodes {
        assert!(n.is_alive(), "{} is up after the heal", n.name());
    }
}

#[sim::test(seeds = 0..16)]
async fn a_plan_drawn_before_the_heal_stops_at_it() {
    let nodes: Vec<sim::Node> = ["n0", "n1", "n2"]
        .iter()
        .map(|n| sim::node(*n).start(listen))
        .collect();
    // Drawn first: it knows nothing of the heal, and its faults run past it.
    let plan = faults::schedule(&nodes, &busy());
    let heal = sim::heal_after(SECS(3));
    let starts_after = plan.faults.iter().filter(|f| f.at >= heal).count();
    sleep(heal + Duration::from_millis(1)).await;
    // From the heal to the end of every drawn fault, every node stays up:
    // later starts never happen and the ends of cut faults do nothing.
    let end = plan.origin + plan.faults.iter().map(|f| f.at + f.lasts).max().unwrap();
    while sim::elapsed() <= end + SECS(1) {
        for n in &nodes {
            assert!(
                n.is_alive(),
                "{} is up at {:?} after the heal at {heal:?} ({starts_after} faults would \
                 have started after it)",
                n.name(),
                sim::elapsed()
            );
        }
        sleep(Duration::from_millis(50)).await;
    }
}
