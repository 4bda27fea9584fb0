//! Shipping: follows the order feed and ships each confirmed order once.
//!
//! An event is not trusted on its own: each order is checked with orders
//! (`GET /orders/{id}` over reqwest, by host name) before it ships, in a
//! task of a tokio-util `TaskTracker`, retried while orders cannot say.
//! `GET /received` lists the orders the feed delivered, in arrival order
//! (duplicates included, so a test can see them); `GET /shipments` lists
//! the orders shipped, one `id lines` per line, in id order. Both are
//! in memory: a restart of shipping starts them empty.

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

/// How shipping runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The feed, `ws://orders:9000/`.
    pub feed_url: String,
    /// The orders API, `http://orders:8080`.
    pub orders_url: String,
    /// A feed silent this long is dead (a few of its heartbeats).
    pub idle: Duration,
}

impl Config {
    /// The feed and API of orders at `host`; the feed is dead after 400 ms
    /// of silence.
    pub fn new(feed_url: &str, orders_url: &str) -> Config {
        Config {
            feed_url: feed_url.to_string(),
            orders_url: orders_url.to_string(),
            idle: Duration::from_millis(400),
        }
    }
}

#[derive(Default)]
struct Book {
    received: Vec<String>,
    shipped: BTreeMap<String, String>,
}

/// Follows the feed and serves the status API on `listener`.
pub async fn serve(listener: TcpListener, config: Config) -> std::io::Result<()> {
    let book = Arc::new(Mutex::new(Book::default()));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .expect("a reqwest client without TLS always builds");
    let checks = TaskTracker::new();
    let follower = {
        let book = book.clone();
        let config = config.clone();
        async move {
            crate::feed::follow(&config.feed_url, config.idle, config.idle / 4, |event| {
                let Some(id) = event
                    .strip_prefix("confirmed ")
                    .and_then(|rest| rest.split(' ').next())
                else {
                    tracing::warn!(event, "shipping: not an order event");
                    return;
                };
                book.lock().unwrap().received.push(id.to_string());
                checks.spawn(ship(
                    http.clone(),
                    config.orders_url.clone(),
                    id.to_string(),
                    book.clone(),
                ));
            })
            .await
        }
    };
    let router = Router::new()
        .route("/received", get(received))
        .route("/shipments", get(shipments))
        .with_state(book);
    tokio::select! {
        r = axum::serve(listener, router) => r,
        () = follower => unreachable!("following the feed never ends"),
    }
}

/// Ships `id` once orders confirms it; gives up on an order orders does not
/// know, and after about five seconds of orders not answering.
async fn ship(http: reqwest::Client, orders: String, id: String, book: Arc<Mutex<Book>>) {
    let url = format!("{orders}/orders/{id}");
    for _ in 0..50 {
        match http.get(&url).send().await {
            Ok(r) if r.status() == reqwest::StatusCode::OK => {
                if let Ok(lines) = r.text().await {
                    tracing::info!(order = %id, "shipping: shipped");
                    book.lock().unwrap().shipped.entry(id).or_insert(lines);
                    return;
                }
            }
            Ok(r) if r.status().is_client_error() => {
                tracing::warn!(order = %id, status = %r.status(), "shipping: not a sold order");
                return;
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::warn!(order = %id, "shipping: orders never confirmed the order; not shipped");
}

async fn received(State(book): State<Arc<Mutex<Book>>>) -> String {
    book.lock().unwrap().received.join("\n")
}

async fn shipments(State(book): State<Arc<Mutex<Book>>>) -> String {
    let book = book.lock().unwrap();
    let lines: Vec<String> = book
        .shipped
        .iter()
        .map(|(id, lines)| format!("{id} {lines}"))
        .collect();
    lines.join("\n")
}
