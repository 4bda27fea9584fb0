//! The shop simulated, dependencies and all: `cargo sim test -p shop`.
//! tonic's server and channel, axum, hyper, reqwest, tokio-tungstenite,
//! tower's buffer worker and timeout, tokio-util's delay queue, task
//! tracker and join map, tokio-stream's interval and timeout, and the
//! inventory's `tokio::fs` log all run on the simulated Tokio, across
//! nodes `inventory`, `orders`, `shipping` and `clients`, through crashes,
//! restarts and partitions. Under the older `--cfg simulation` alone this
//! crate's `tokio` is real Tokio, which has no runtime inside a
//! simulation: the file is empty then.
//!
//! A longer sweep: `SIM_SEEDS=0..1000 cargo sim test -p shop --test sim`.
#![cfg(sim_graph)]

use shop::client::{Client, Placed};
use shop::{inventory, orders, shipping};
use sim::faults::Envelope;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;
use tokio::net::TcpListener;

const STOCK: [(&str, u32); 3] = [("apple", 14), ("pear", 8), ("probe", 1000)];
const ORDERS: &str = "http://orders:8080";
const SHIPPING: &str = "http://shipping:8081";

fn stock(sku: &str) -> u32 {
    STOCK.iter().find(|(s, _)| *s == sku).map_or(0, |(_, n)| *n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

async fn bind(port: u16) -> TcpListener {
    TcpListener::bind(("0.0.0.0", port)).await.unwrap()
}

/// The shop's three services, each on its node, started again on restart.
fn shop() -> [sim::Node; 3] {
    let inventory = sim::node("inventory").start(|| async {
        let config = inventory::Config::new("/var/lib/inventory", &STOCK);
        inventory::serve(bind(shop::INVENTORY_PORT).await, config)
            .await
            .unwrap();
    });
    let orders = sim::node("orders").start(|| async {
        let config = orders::Config::new("http://inventory:50051");
        let (api, feed) = (bind(shop::ORDERS_PORT).await, bind(shop::FEED_PORT).await);
        orders::serve(api, feed, config).await.unwrap();
    });
    let shipping = sim::node("shipping").start(|| async {
        let config = shipping::Config::new("ws://orders:9000/", ORDERS);
        shipping::serve(bind(shop::SHIPPING_PORT).await, config)
            .await
            .unwrap();
    });
    [inventory, orders, shipping]
}

/// One order a client placed, and the answer it kept.
#[derive(Clone, Debug)]
struct Placement {
    id: String,
    lines: String,
    placed: Placed,
    at: Duration,
}

/// Each client's orders, drawn from the seed: 1–2 lines of apples and
/// pears, a pause of up to 600 ms before each (so they spread over the
/// faults' 3 s window).
fn draw_orders(clients: usize, per_client: usize) -> Vec<Vec<(Duration, String, String)>> {
    let mut rng = sim::Rng::from_seed(sim::fork_seed("workload"));
    (0..clients)
        .map(|c| {
            (0..per_client)
                .map(|n| {
                    let pause = ms(rng.below(600));
                    let mut skus = ["apple", "pear"];
                    if rng.ratio(1, 2) {
                        skus.reverse();
                    }
                    let count = 1 + rng.below(2) as usize;
                    let lines: Vec<String> = skus[..count]
                        .iter()
                        .map(|sku| format!("{sku}:{}", rng.in_range(1..=3)))
                        .collect();
                    (pause, format!("c{c}-{n}"), lines.join(" "))
                })
                .collect()
        })
        .collect()
}

/// Runs the clients on node `clients` (so partitions can cut them off):
/// each places its orders in turn, retrying an unknown answer with the
/// same id, 8 attempts 100 ms apart.
async fn run_clients(
    node: &sim::Node,
    plans: Vec<Vec<(Duration, String, String)>>,
) -> Vec<Placement> {
    let tasks: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            node.spawn(async move {
                let client = Client::new(ORDERS);
                let mut done = Vec::new();
                for (pause, id, lines) in plan {
                    tokio::time::sleep(pause).await;
                    let placed = client.place(&id, &lines, 8, ms(100)).await;
                    done.push(Placement {
                        id,
                        lines,
                        placed,
                        at: sim::elapsed(),
                    });
                }
                done
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("a client task does not fail"));
    }
    all
}

/// Asks until the service answers (it may be restarting or recovering).
async fn answer<T, F, Fut>(what: &str, mut ask: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut last = String::new();
    for _ in 0..100 {
        match ask().await {
            Ok(v) => return v,
            Err(e) => last = e,
        }
        tokio::time::sleep(ms(50)).await;
    }
    panic!("{what}: no answer within 100 tries; last: {last}");
}

/// The liveness the shop promises once the network is whole and every node
/// is up: orders are answered again, and new ones reach shipping, within
/// 5 s. `probes` counts the probe orders placed, to check them afterwards.
async fn orders_flow_again(probes: &mut u32) {
    let client = Client::with_timeout(ORDERS, ms(500));
    let ship = Client::with_timeout(SHIPPING, ms(500));
    let mut probe = || {
        *probes += 1;
        format!("probe-{probes}")
    };
    sim::eventually(
        "a new order is confirmed after healing",
        Duration::from_secs(5),
        || {
            let id = probe();
            let client = client.clone();
            async move { client.place_once(&id, "probe:1").await == Placed::Confirmed }
        },
    )
    .await;
    // Each try places a new order: one confirmed while shipping was still
    // reconnecting is never published again (the feed is at most once).
    sim::eventually(
        "a new order reaches shipping after healing",
        Duration::from_secs(5),
        || {
            let id = probe();
            let (client, ship) = (client.clone(), ship.clone());
            async move {
                if client.place_once(&id, "probe:1").await != Placed::Confirmed {
                    return false;
                }
                for _ in 0..10 {
                    tokio::time::sleep(ms(50)).await;
                    if let Ok(shipped) = ship.shipments().await {
                        if shipped.iter().any(|(s, _)| *s == id) {
                            return true;
                        }
                    }
                }
                false
            }
        },
    )
    .await;
}

/// Everything the shop promises about its state, checked once the faults
/// are over: see the crate docs.
async fn check_promises(placements: &[Placement], probes: u32) -> String {
    let client = Client::new(ORDERS);
    let ship = Client::new(SHIPPING);
    let mut report = String::new();
    // Every order the clients and the probes placed, as inventory has it.
    let mut ids: Vec<String> = placements.iter().map(|p| p.id.clone()).collect();
    ids.extend((1..=probes).map(|n| format!("probe-{n}")));
    let mut sold: BTreeMap<String, String> = BTreeMap::new();
    for id in &ids {
        if let Some(lines) = answer("GET /orders", || client.order(id)).await {
            sold.insert(id.clone(), lines);
        }
    }
    // An answer is final: 201 is a sale with the lines asked for, 409 an
    // order that never sells (and is recorded as aborted).
    for p in placements {
        let expected = shop::format_lines(&shop::parse_lines(&p.lines).unwrap());
        match &p.placed {
            Placed::Confirmed => assert_eq!(
                sold.get(&p.id),
                Some(&expected),
                "{} was acknowledged at {:?} but inventory has {:?}",
                p.id,
                p.at,
                sold.get(&p.id)
            ),
            Placed::OutOfStock => {
                let path = format!("/orders/{}", p.id);
                let (status, _) = answer("GET /orders", || client.get(&path)).await;
                assert_eq!(
                    status, 410,
                    "{} was refused at {:?} but is not aborted",
                    p.id, p.at
                );
            }
            Placed::Unknown(_) => {}
        }
        writeln!(
            report,
            "{:>9.3?} {} {} -> {:?}",
            p.at, p.id, p.lines, p.placed
        )
        .unwrap();
    }
    // Never oversold, nothing lost or made up: inventory's count of each
    // SKU is the stock, and what it sold is exactly the sold orders' lines.
    for (sku, stock) in STOCK {
        let (available, held, sold_units) = answer("GET /stock", || client.stock(sku)).await;
        assert_eq!(
            available + held + sold_units,
            stock,
            "{sku}: {available} + {held} + {sold_units}"
        );
        let in_orders: u32 = sold
            .values()
            .flat_map(|lines| shop::parse_lines(lines).unwrap())
            .filter(|l| l.sku == sku)
            .map(|l| l.qty)
            .sum();
        assert_eq!(
            sold_units, in_orders,
            "{sku}: inventory sold {sold_units}, the sold orders hold {in_orders}"
        );
        assert!(
            sold_units <= stock,
            "{sku} oversold: {sold_units} of {stock}"
        );
        writeln!(
            report,
            "{sku}: {available} available, {held} held, {sold_units} sold"
        )
        .unwrap();
    }
    // The feed is at most once, and only carries sales.
    let received = answer("GET /received", || ship.received()).await;
    let distinct: BTreeSet<&String> = received.iter().collect();
    assert_eq!(
        distinct.len(),
        received.len(),
        "shipping received an order twice: {received:?}"
    );
    for id in &received {
        assert!(
            sold.contains_key(id),
            "the feed published {id}, which is not sold"
        );
    }
    let shipped = answer("GET /shipments", || ship.shipments()).await;
    for (id, lines) in &shipped {
        assert_eq!(sold.get(id), Some(lines), "{id} shipped but not sold so");
    }
    writeln!(report, "shipped {}", shipped.len()).unwrap();
    report
}

/// Holds that nobody commits (an attempt cut off between reserve and
/// commit, a crash of orders) expire: once the shop is quiet, none is left.
async fn abandoned_holds_expire() {
    let client = Client::new(ORDERS);
    sim::eventually("abandoned holds expire", Duration::from_secs(2), || {
        let client = client.clone();
        async move {
            let mut held = 0;
            for (sku, _) in STOCK {
                match client.stock(sku).await {
                    Ok((_, h, _)) => held += h,
                    Err(_) => return false,
                }
            }
            held == 0
        }
    })
    .await;
}

/// The shop through a seeded plan of crashes (inventory, orders) and
/// partitions (any of the four nodes cut from the others), with three
/// clients racing for too little stock: every answer stays true, nothing
/// is oversold, the feed never repeats itself, and once the faults are
/// over the shop works again within its bound. Returns the transcript of
/// what the clients saw (and the faults they saw it through).
async fn shop_under_faults() -> String {
    let [inventory, orders, shipping] = shop();
    let clients = sim::node("clients").build();
    let crashes = sim::faults::schedule_as(
        "crashes",
        &[inventory.clone(), orders.clone()],
        &Envelope {
            crashes: 0..=2,
            window: Duration::from_secs(3),
            max_down: Duration::from_secs(1),
            ..Envelope::default()
        },
    );
    let cuts = sim::faults::schedule_as(
        "cuts",
        &[inventory, orders, shipping, clients.clone()],
        &Envelope {
            partitions: 0..=2,
            clogs: 0..=3,
            window: Duration::from_secs(3),
            max_cut: ms(1500),
            ..Envelope::default()
        },
    );
    let placements = run_clients(&clients, draw_orders(3, 6)).await;
    let quiet = crashes.quiet_at().max(cuts.quiet_at());
    tokio::time::sleep(quiet.saturating_sub(sim::elapsed())).await;
    let mut probes = 0;
    orders_flow_again(&mut probes).await;
    abandoned_holds_expire().await;
    let report = check_promises(&placements, probes).await;
    let transcript = format!("{crashes}\n{cuts}\n{report}probes {probes}\n");
    assert!(
        placements.iter().any(|p| p.placed == Placed::Confirmed),
        "no order was confirmed: the run checked nothing\n{transcript}"
    );
    transcript
}

/// [`shop_under_faults`] on many seeds; each seed runs twice and must make
/// the same decisions both times (the same fingerprint).
#[sim::test(seeds = 0..50, check_determinism)]
async fn every_answer_is_final_and_stock_is_never_oversold() {
    let transcript = shop_under_faults().await;
    tracing::info!("transcript:\n{transcript}");
}

/// The same seed tells the same story: [`shop_under_faults`] run twice in
/// fresh simulations of one seed gives the same transcript of what the
/// clients saw, byte for byte, and the same fingerprint; and the seed
/// matters (the transcripts of different seeds differ).
#[test]
fn the_same_seed_gives_the_same_transcript() {
    let run = |seed: u64| {
        let mut world = sim::World::new(seed);
        let transcript = world.block_on(shop_under_faults());
        let _in = world.enter();
        (transcript, sim::fingerprint())
    };
    let mut seen = BTreeSet::new();
    for seed in [1, 2, 3] {
        let (first, first_fp) = run(seed);
        let (again, again_fp) = run(seed);
        assert_eq!(first, again, "seed {seed} told two stories");
        assert_eq!(first_fp, again_fp, "seed {seed}: the fingerprints differ");
        seen.insert(first);
    }
    assert_eq!(seen.len(), 3, "three seeds, fewer transcripts: {seen:#?}");
}

/// Inventory's gRPC service, called directly (as a second orders replica
/// would), connecting until it answers.
async fn inventory_client() -> inventory::Client {
    answer("connect to inventory", || async {
        inventory::Client::connect("http://inventory:50051", ms(200))
            .await
            .map_err(|e| e.to_string())
    })
    .await
}

fn line_request(order: &str, sku: &str, qty: u32) -> inventory::ReserveRequest {
    inventory::ReserveRequest {
        order_id: order.into(),
        line: Some(shop::Line {
            sku: sku.into(),
            qty,
        }),
    }
}

/// `(available, held, sold)` of `sku`, from inventory itself.
async fn level(grpc: &inventory::Client, sku: &str) -> (u32, u32, u32) {
    let sku = sku.to_string();
    let l = grpc
        .clone()
        .level(inventory::LevelRequest { sku })
        .await
        .unwrap();
    (l.available, l.held, l.sold)
}

/// Waits until `id` is among shipping's shipments (for at most `bound`).
async fn ships(id: &str, bound: Duration) {
    let ship = Client::new(SHIPPING);
    sim::eventually(&format!("{id} ships"), bound, || {
        let ship = ship.clone();
        async move {
            ship.shipments()
                .await
                .is_ok_and(|s| s.iter().any(|(s, _)| s == id))
        }
    })
    .await;
}

/// A scripted life of the shop, each step checking one mechanism:
/// reservations expire on time (the delay queue); shipping notices that
/// orders crashed only through the feed's silence (heartbeats under
/// `StreamExt::timeout`) and follows it again once it is back; a crash of
/// inventory keeps its sales and drops its holds; a sale whose commit
/// answer never reached orders is not published by the retry that finds it
/// sold; a partition between orders and shipping heals by itself.
#[sim::test(seeds = 0..50)]
async fn the_feed_and_the_holds_recover_from_crashes() {
    let [inventory, orders, _shipping] = shop();
    let client = Client::new(ORDERS);
    let ship = Client::new(SHIPPING);
    let subscribed = || {
        let client = client.clone();
        async move { client.get("/health").await == Ok((200, "ok 1".into())) }
    };
    sim::eventually(
        "shipping follows the feed",
        Duration::from_secs(5),
        subscribed,
    )
    .await;
    assert_eq!(
        client.place("o-1", "apple:2", 8, ms(100)).await,
        Placed::Confirmed
    );
    ships("o-1", Duration::from_secs(2)).await;

    // A reservation nobody commits holds its units for hold_ttl (300 ms),
    // then they are back. An answer that arrives before 300 ms have passed
    // since the reserve was sent was read before the hold was due.
    let grpc = inventory_client().await;
    let pears = stock("pear");
    let sent = sim::elapsed();
    grpc.clone()
        .reserve(line_request("x-1", "pear", 3))
        .await
        .unwrap();
    loop {
        let l = level(&grpc, "pear").await;
        let read = sim::elapsed() - sent;
        if read >= ms(300) {
            break;
        }
        assert_eq!(l, (pears - 3, 3, 0), "the hold expired within {read:?}");
        tokio::time::sleep(ms(50)).await;
    }
    sim::eventually("the hold expires", Duration::from_secs(1), || async {
        level(&grpc, "pear").await == (pears, 0, 0)
    })
    .await;

    // Orders crashes: its sockets go silent, no close reaches shipping. The
    // feed's silence is the only sign; shipping follows the new process
    // (the one subscriber of a fresh process is shipping's new connection)
    // and gets its orders.
    orders.crash();
    tokio::time::sleep(Duration::from_secs(1)).await;
    orders.restart();
    sim::eventually(
        "shipping follows the restarted feed",
        Duration::from_secs(3),
        subscribed,
    )
    .await;
    assert_eq!(
        client.place("o-2", "pear:1", 8, ms(100)).await,
        Placed::Confirmed
    );
    ships("o-2", Duration::from_secs(2)).await;

    // Inventory crashes with a hold pending: the sales are on disk, the
    // hold was memory (back well before its 300 ms would have run out).
    let mut grpc = inventory_client().await;
    grpc.reserve(line_request("x-2", "apple", 4)).await.unwrap();
    inventory.crash();
    tokio::time::sleep(ms(50)).await;
    inventory.restart();
    let mut grpc = inventory_client().await;
    assert_eq!(level(&grpc, "apple").await, (stock("apple") - 2, 0, 2));
    // Orders' channel finds its connection reset by the new inventory
    // and connects again.
    let o1 = answer("GET /orders/o-1", || client.order("o-1")).await;
    assert_eq!(o1.as_deref(), Some("apple:2"));

    // A sale whose commit answer orders never got (here made directly, as
    // a lost answer leaves it): placing it again through orders confirms
    // it, and does not publish it; the feed carries a sale only from the
    // commit that made it.
    grpc.reserve(line_request("o-3", "apple", 1)).await.unwrap();
    let commit = inventory::CommitRequest {
        order_id: "o-3".into(),
        lines: vec![shop::Line {
            sku: "apple".into(),
            qty: 1,
        }],
    };
    assert!(grpc.commit(commit).await.unwrap().fresh);
    assert_eq!(
        client.place("o-3", "apple:1", 8, ms(100)).await,
        Placed::Confirmed
    );
    assert_eq!(
        client.place("o-4", "pear:2", 8, ms(100)).await,
        Placed::Confirmed
    );
    ships("o-4", Duration::from_secs(2)).await;

    // Orders and shipping cut apart for a second: shipping takes the
    // silent feed for dead and follows it again after the heal.
    sim::net::partition("orders", "shipping");
    tokio::time::sleep(Duration::from_secs(1)).await;
    sim::net::heal("orders", "shipping");
    let mut n = 4;
    sim::eventually(
        "orders reach shipping after the heal",
        Duration::from_secs(3),
        || {
            n += 1;
            let (client, ship) = (client.clone(), ship.clone());
            let id = format!("o-{n}");
            async move {
                client.place_once(&id, "probe:1").await == Placed::Confirmed && {
                    tokio::time::sleep(ms(100)).await;
                    ship.shipments()
                        .await
                        .is_ok_and(|s| s.iter().any(|(s, _)| *s == id))
                }
            }
        },
    )
    .await;
    let received = ship.received().await.unwrap();
    assert_eq!(received[..3], ["o-1", "o-2", "o-4"], "{received:?}");
    let distinct: BTreeSet<&String> = received.iter().collect();
    assert_eq!(distinct.len(), received.len(), "{received:?}");
}
