//! `sim::Workload`: weighted operations from clients on their own nodes,
//! with counts and think times drawn from the swarm, seeded per client.

#![cfg(simulation)]

use sim::Workload;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// (client, index, op name, node, a draw from the op's stream), per op.
type Log = Rc<RefCell<Vec<(u32, u64, &'static str, String, u64)>>>;

fn logged(log: &Log, name: &'static str) -> impl Fn(sim::Op) -> std::future::Ready<()> {
    let log = log.clone();
    move |mut op: sim::Op| {
        assert_eq!(op.name(), name);
        let node = sim_runtime::sim::node_name(sim_runtime::sim::current_node());
        let draw = op.rng().next_u64();
        log.borrow_mut()
            .push((op.client(), op.index(), name, node, draw));
        std::future::ready(())
    }
}

fn workload(log: &Log, clients: std::ops::RangeInclusive<u64>) -> Workload {
    Workload::new("w")
        .clients(clients)
        .ops(10..=30)
        .think_ms(0..=5)
        .op("read", 3, logged(log, "read"))
        .op("write", 1, logged(log, "write"))
}

#[sim::test(seeds = 0..20, check_determinism)]
async fn clients_run_their_drawn_ops_on_their_own_nodes() {
    let log: Log = Rc::default();
    let summary = workload(&log, 2..=4).run().await;
    let drawn: BTreeMap<String, String> = sim::swarm::drawn().into_iter().collect();
    let clients: usize = drawn["w.clients"].parse().unwrap();
    let ops: u64 = drawn["w.ops"].parse().unwrap();
    assert!((2..=4).contains(&clients));
    assert!((10..=30).contains(&ops));
    assert_eq!(summary.clients.len(), clients);
    assert_eq!(summary.total(), clients as u64 * ops);
    assert_eq!(summary.cut_short, 0);
    let log = log.borrow();
    assert_eq!(log.len() as u64, summary.total());
    for (client, _, _, node, _) in log.iter() {
        assert_eq!(
            node,
            &format!("w-client-{client}"),
            "each client on its own node"
        );
    }
    for c in 0..clients as u32 {
        let indexes: Vec<u64> = log.iter().filter(|e| e.0 == c).map(|e| e.1).collect();
        assert_eq!(indexes, (0..ops).collect::<Vec<_>>(), "client {c} in order");
    }
}

#[sim::test(seed = 5)]
async fn weights_shape_the_mix() {
    let log: Log = Rc::default();
    let summary = Workload::new("mix")
        .ops(2_000..=2_000)
        .op("read", 3, logged(&log, "read"))
        .op("write", 1, logged(&log, "write"))
        .run()
        .await;
    let reads = summary.started["read"];
    let writes = summary.started["write"];
    assert_eq!(reads + writes, 2_000);
    // 3:1 expected; far from it only if the weights were ignored.
    assert!(
        (1_350..=1_650).contains(&reads),
        "{reads} reads, {writes} writes"
    );
}

/// Client 0's operations, in a fresh world of `seed` with `clients`.
fn client_zero(seed: u64, clients: u64) -> Vec<(u64, &'static str, u64)> {
    let log: Log = Rc::default();
    let mut world = sim::World::new(seed);
    let l = log.clone();
    world.block_on(async move {
        workload(&l, clients..=clients).run().await;
    });
    let log = log.borrow();
    log.iter()
        .filter(|e| e.0 == 0)
        .map(|e| (e.1, e.2, e.4))
        .collect()
}

#[test]
fn a_clients_ops_do_not_depend_on_how_many_other_clients_there_are() {
    for seed in 0..5 {
        let one = client_zero(seed, 1);
        let five = client_zero(seed, 5);
        // The op count is one swarm draw whatever the client count is.
        assert_eq!(one, five, "seed {seed}");
        assert!(!one.is_empty());
    }
    assert_ne!(client_zero(1, 2), client_zero(2, 2), "seeds differ");
}

#[sim::test(seeds = 0..8)]
async fn duration_stops_new_ops() {
    let log: Log = Rc::default();
    let l = log.clone();
    let slow = move |op: sim::Op| {
        let l = l.clone();
        async move {
            sim_runtime::time::sleep(Duration::from_millis(100)).await;
            l.borrow_mut()
                .push((op.client(), op.index(), "slow", String::new(), 0));
        }
    };
    let summary = Workload::new("d")
        .clients(2..=2)
        .ops(1_000..=1_000)
        .duration(Duration::from_secs(1))
        .op("slow", 1, slow)
        .run()
        .await;
    // Ops start before 1 s and each takes 100 ms: about ten per client.
    assert!(summary.total() <= 22, "{summary:?}");
    assert!(summary.total() >= 18, "{summary:?}");
    assert!(sim::elapsed() < Duration::from_millis(1_200));
}

#[sim::test(seeds = 0..8)]
async fn a_crashed_client_is_cut_short() {
    let slow = |_op: sim::Op| sim_runtime::time::sleep(Duration::from_millis(100));
    let crash = sim::after(Duration::from_millis(250), || {
        // The workload made the node; crash it by name.
        let id = sim_runtime::sim::lookup_node("c-client-1").expect("the client's node");
        sim_runtime::sim::crash(id);
    });
    let summary = Workload::new("c")
        .clients(2..=2)
        .ops(10..=10)
        .op("slow", 1, slow)
        .run()
        .await;
    crash.await.unwrap();
    assert_eq!(summary.cut_short, 1, "{summary:?}");
    assert!(summary.total() < 20, "{summary:?}");
}
