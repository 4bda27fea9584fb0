//! A tiny shop in three services, written the usual way on the crates most
//! Tokio services use, with a plain `tokio` dependency and not one line
//! that knows about simulation:
//!
//! - **inventory** ([`inventory::serve`]): a gRPC service (tonic's
//!   `transport::Server`) holding the stock. An order first *reserves* each
//!   line; a reservation that is not committed in time expires (a tokio-util
//!   `DelayQueue`) and its stock returns. *Committing* an order appends it to
//!   a log on disk and syncs it before answering, so a sale survives a crash.
//! - **orders** ([`orders::serve`]): the HTTP API (axum, `axum::serve`).
//!   `PUT /orders/{id}` reserves every line at once (a tokio-util `JoinMap`
//!   of tasks keyed by SKU) through a tower `Buffer` + `Timeout` around a
//!   tonic client (`Endpoint::connect`), commits, and publishes the order on
//!   a WebSocket feed (`tokio_tungstenite::accept_async`, one
//!   `TaskTracker::spawn`ed task per subscriber, heartbeats from a
//!   tokio-stream `IntervalStream`).
//! - **shipping** ([`shipping::serve`]): follows the feed
//!   (`tokio_tungstenite::connect_async`; a feed silent for longer than its
//!   heartbeat is dead, `StreamExt::timeout`, and is reconnected), checks
//!   each order with orders over HTTP (reqwest, by host name) and ships it.
//!
//! [`client::Client`] is the reqwest client for orders and shipping.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use shop::{client, inventory, orders, shipping};
//! use tokio::net::TcpListener;
//! // Each service on its own host: inventory, orders and shipping.
//! let stock = inventory::Config::new("/var/lib/shop", &[("apple", 5)]);
//! tokio::spawn(inventory::serve(TcpListener::bind("0.0.0.0:50051").await?, stock));
//! let api = TcpListener::bind("0.0.0.0:8080").await?;
//! let feed = TcpListener::bind("0.0.0.0:9000").await?;
//! tokio::spawn(orders::serve(api, feed, orders::Config::new("http://inventory:50051")));
//! let books = shipping::Config::new("ws://orders:9000/", "http://orders:8080");
//! tokio::spawn(shipping::serve(TcpListener::bind("0.0.0.0:8081").await?, books));
//! // A client.
//! let shop = client::Client::new("http://orders:8080");
//! assert_eq!(shop.place_once("o-1", "apple:2").await, client::Placed::Confirmed);
//! # Ok(()) }
//! ```
//!
//! # What the shop promises
//!
//! - **Stock is never oversold**: for every SKU, `sold <= stock`, and
//!   `available + held + sold == stock` at every moment, across crashes of
//!   either service (reservations are soft state and die with inventory;
//!   sales are durable).
//! - **An acknowledged order is never lost**: once `PUT /orders/{id}`
//!   answered 201, `GET /orders/{id}` says it is confirmed, with its lines,
//!   forever, through crashes of orders and of inventory. An order answered
//!   409 (out of stock) is never confirmed (it is aborted at inventory,
//!   durably, before the answer, so no slower attempt of it can still sell
//!   it). An order whose answer the
//!   client did not get may be either; retrying it with the same id is
//!   safe (every step is idempotent by order id) and gives the final answer.
//! - **Abandoned reservations come back**: a hold that no commit claims
//!   (an attempt cut off, a crash of orders) returns its units after the
//!   hold's time to live, so stock is never stuck.
//! - **The feed is at most once**: each confirmed order is published at most
//!   once, ever (only by the commit that made it durable), so shipping never
//!   receives an order twice and every order it receives is confirmed. It
//!   is *not* at least once: an order whose commit answer was lost (a
//!   timeout, a crash of orders) is confirmed but never published, and a
//!   subscriber misses what is published while it is disconnected. A shop
//!   that must ship every order needs an outbox on inventory's log; this one
//!   promises only that, once the network is whole again, new orders reach
//!   shipping again within a few seconds.

pub mod client;
pub mod feed;
pub mod inventory;
pub mod orders;
mod proto;
pub mod shipping;

pub use proto::Line;

/// The port inventory's gRPC service listens on.
pub const INVENTORY_PORT: u16 = 50051;
/// The port of the orders API.
pub const ORDERS_PORT: u16 = 8080;
/// The port of the orders feed (WebSocket).
pub const FEED_PORT: u16 = 9000;
/// The port of shipping's status API.
pub const SHIPPING_PORT: u16 = 8081;

/// Parses an order's lines, `apple:2 pear:1` (spaces or commas between
/// lines): each SKU once, each quantity at least 1.
pub fn parse_lines(text: &str) -> Result<Vec<Line>, String> {
    let mut lines: Vec<Line> = Vec::new();
    for item in text.split([' ', ',', '\n']).filter(|s| !s.is_empty()) {
        let (sku, qty) = item
            .split_once(':')
            .ok_or_else(|| format!("{item:?} is not sku:qty"))?;
        let qty: u32 = qty
            .parse()
            .map_err(|_| format!("{item:?}: {qty:?} is not a quantity"))?;
        if !valid_name(sku) || qty == 0 {
            return Err(format!("{item:?} is not sku:qty"));
        }
        if lines.iter().any(|l| l.sku == sku) {
            return Err(format!("{sku} appears twice"));
        }
        lines.push(Line {
            sku: sku.to_string(),
            qty,
        });
    }
    if lines.is_empty() {
        return Err("an order has at least one line".into());
    }
    Ok(lines)
}

/// Formats lines as [`parse_lines`] reads them, in SKU order.
pub fn format_lines(lines: &[Line]) -> String {
    let mut sorted: Vec<&Line> = lines.iter().collect();
    sorted.sort_by(|a, b| a.sku.cmp(&b.sku));
    let items: Vec<String> = sorted
        .iter()
        .map(|l| format!("{}:{}", l.sku, l.qty))
        .collect();
    items.join(",")
}

/// Order ids and SKUs: 1 to 64 of `[A-Za-z0-9_-]` (they go into URLs, log
/// lines and feed events unescaped).
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_in_sku_order() {
        let lines = parse_lines("pear:1 apple:2").unwrap();
        assert_eq!(format_lines(&lines), "apple:2,pear:1");
        assert_eq!(parse_lines(&format_lines(&lines)).unwrap().len(), 2);
    }

    #[test]
    fn bad_lines_are_refused() {
        for bad in [
            "",
            "apple",
            "apple:0",
            "apple:x",
            "a/b:1",
            "apple:1 apple:2",
        ] {
            assert!(parse_lines(bad).is_err(), "{bad:?}");
        }
    }
}
