//! The shop on real Tokio and real loopback sockets (a plain `cargo test`):
//! the same library code the simulated tests run, unchanged. Under
//! `cargo sim test` this `#[tokio::test]` runs in a simulation instead,
//! on the main node's loopback and simulated disk.

use shop::client::{Client, Placed};
use shop::{inventory, orders, shipping};
use std::time::Duration;
use tokio::net::TcpListener;

async fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// Retries `check` every 20 ms until it holds, for at most 10 s.
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..500 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what}: not within 10 s");
}

#[tokio::test]
async fn orders_sell_ship_expire_and_survive_an_inventory_restart() {
    let dir = std::env::temp_dir().join(format!("shop-roundtrip-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let stock = [("apple", 5), ("pear", 3)];

    let (inv, inv_port) = listener().await;
    let inventory_config = inventory::Config::new(&dir, &stock);
    let inventory_task = tokio::spawn(inventory::serve(inv, inventory_config.clone()));
    let inventory_url = format!("http://127.0.0.1:{inv_port}");

    let (api, api_port) = listener().await;
    let (feed, feed_port) = listener().await;
    tokio::spawn(orders::serve(
        api,
        feed,
        orders::Config::new(&inventory_url),
    ));
    let orders_url = format!("http://127.0.0.1:{api_port}");

    let (ship, ship_port) = listener().await;
    tokio::spawn(shipping::serve(
        ship,
        shipping::Config::new(&format!("ws://127.0.0.1:{feed_port}/"), &orders_url),
    ));
    let client = Client::new(&orders_url);
    let shipping = Client::new(&format!("http://127.0.0.1:{ship_port}"));

    // Shipping follows the feed before the first order.
    until("shipping subscribes", || async {
        client.get("/health").await == Ok((200, "ok 1".into()))
    })
    .await;

    // A sale; the same order again is the same sale.
    assert_eq!(
        client.place_once("o-1", "apple:2 pear:1").await,
        Placed::Confirmed
    );
    assert_eq!(
        client.place_once("o-1", "apple:2 pear:1").await,
        Placed::Confirmed
    );
    assert_eq!(client.order("o-1").await, Ok(Some("apple:2,pear:1".into())));
    // More than is left: refused, and the order id is spent.
    assert_eq!(
        client.place_once("o-2", "apple:4").await,
        Placed::OutOfStock
    );
    assert_eq!(client.get("/orders/o-2").await, Ok((410, "aborted".into())));
    assert_eq!(
        client.place_once("o-2", "apple:1").await,
        Placed::OutOfStock
    );
    assert_eq!(client.stock("apple").await, Ok((3, 0, 2)));
    assert_eq!(client.get("/orders/nope").await.unwrap().0, 404);
    assert_eq!(client.get("/orders/o-1").await.unwrap().0, 200);

    // A reservation nobody commits expires and its stock comes back.
    let mut grpc = inventory::Client::connect(&inventory_url, Duration::from_secs(1))
        .await
        .unwrap();
    let sent = tokio::time::Instant::now();
    grpc.reserve(shop_reserve("x-1", "apple", 2)).await.unwrap();
    let held = client.stock("apple").await;
    // (A machine slow enough to take the hold's 300 ms may see it gone.)
    if sent.elapsed() < Duration::from_millis(300) {
        assert_eq!(held, Ok((1, 2, 2)));
    }
    until("the hold expires", || async {
        client.stock("apple").await == Ok((3, 0, 2))
    })
    .await;

    // Shipping got the sale once, checked it with orders, and shipped it.
    until("o-1 ships", || async {
        shipping.shipments().await == Ok(vec![("o-1".into(), "apple:2,pear:1".into())])
    })
    .await;
    assert_eq!(shipping.received().await, Ok(vec!["o-1".to_string()]));

    // Inventory starts again from its data directory (on another port:
    // the first server's connections outlive its listener): the sale and
    // the abort were on disk, the holds were not.
    assert_eq!(client.place_once("o-3", "pear:2").await, Placed::Confirmed);
    grpc.reserve(shop_reserve("x-2", "apple", 1)).await.unwrap();
    inventory_task.abort();
    let _ = inventory_task.await;
    let (inv, inv_port) = listener().await;
    tokio::spawn(inventory::serve(inv, inventory_config));
    let url = format!("http://127.0.0.1:{inv_port}");
    let mut again = inventory::Client::connect(&url, Duration::from_secs(1))
        .await
        .unwrap();
    let lookup = |id: &str| inventory::LookupRequest {
        order_id: id.into(),
    };
    let o1 = again.lookup(lookup("o-1")).await.unwrap();
    assert!(o1.sold && !o1.aborted, "{o1:?}");
    assert_eq!(shop::format_lines(&o1.lines), "apple:2,pear:1");
    let o2 = again.lookup(lookup("o-2")).await.unwrap();
    assert!(!o2.sold && o2.aborted, "{o2:?}");
    let level = |sku: &str| inventory::LevelRequest { sku: sku.into() };
    let pear = again.level(level("pear")).await.unwrap();
    assert_eq!((pear.available, pear.held, pear.sold), (0, 0, 3));
    let apple = again.level(level("apple")).await.unwrap();
    assert_eq!((apple.available, apple.held, apple.sold), (3, 0, 2));

    let _ = std::fs::remove_dir_all(&dir);
}

fn shop_reserve(order: &str, sku: &str, qty: u32) -> shop::inventory::ReserveRequest {
    shop::inventory::ReserveRequest {
        order_id: order.into(),
        line: Some(shop::Line {
            sku: sku.into(),
            qty,
        }),
    }
}
