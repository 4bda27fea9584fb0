//! Orders: the shop's HTTP API (axum), in front of inventory (gRPC), and
//! the order feed.
//!
//! - `PUT /orders/{id}` with a body of lines (`apple:2 pear:1`) places the
//!   order `id` (the client's idempotency key): every line is reserved at
//!   once (a tokio-util `JoinMap` of tasks keyed by SKU), then the order is
//!   committed. `201 confirmed` is final, and so is `409 out of stock` (the
//!   order is aborted at inventory first, so no earlier attempt of it can
//!   still sell it). `503` means "not known yet": placing the same id again
//!   is safe and gives the final answer. The commit that sells the order
//!   publishes `confirmed <id> <lines>` on the feed.
//! - `GET /orders/{id}`: `200 <lines>` if sold, `410` if aborted, `404` if
//!   inventory never heard of it (`503` if inventory cannot say).
//! - `GET /stock/{sku}`: `available held sold`, as inventory counts them.
//! - `GET /health`: `ok <subscribers>`, the feed's live connections.
//!
//! Every call to inventory goes through one tower stack: a `Buffer` (one
//! worker task owns the client; handlers hold cheap clones) in front of a
//! `Timeout` (a call that takes longer than `rpc_timeout` fails, so a
//! partition costs a request `rpc_timeout`, not forever). The gRPC channel
//! is made with `Endpoint::connect` on first use.

use crate::proto::{
    AbortRequest, CommitRequest, InventoryClient, LevelRequest, Line, LookupRequest, ReserveRequest,
};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::broadcast;
use tokio_util::task::{JoinMap, TaskTracker};
use tonic::Code;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceBuilder, ServiceExt};

/// How orders runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Inventory's gRPC address, `http://inventory:50051`.
    pub inventory_url: String,
    /// The longest a call to inventory may take, connecting included.
    pub rpc_timeout: Duration,
    /// The feed's ping interval.
    pub heartbeat: Duration,
}

impl Config {
    /// Inventory at `inventory_url`; calls time out after 250 ms, the feed
    /// pings every 100 ms.
    pub fn new(inventory_url: &str) -> Config {
        Config {
            inventory_url: inventory_url.to_string(),
            rpc_timeout: Duration::from_millis(250),
            heartbeat: Duration::from_millis(100),
        }
    }
}

/// Serves the API on `api` and the feed on `feed` until either fails.
pub async fn serve(api: TcpListener, feed: TcpListener, config: Config) -> std::io::Result<()> {
    let (events, _) = broadcast::channel(256);
    let subscribers = TaskTracker::new();
    let app = App {
        rpc: rpc_stack(&config),
        events: events.clone(),
        subscribers: subscribers.clone(),
    };
    let router = Router::new()
        .route("/orders/{id}", get(lookup).put(place))
        .route("/stock/{sku}", get(stock))
        .route("/health", get(health))
        .with_state(app);
    tokio::select! {
        r = axum::serve(api, router) => r,
        r = crate::feed::publish(feed, events, subscribers, config.heartbeat) => r,
    }
}

/// A call to inventory, as the tower stack carries it.
#[derive(Debug)]
pub enum Call {
    Reserve(ReserveRequest),
    Commit(CommitRequest),
    Abort(AbortRequest),
    Lookup(LookupRequest),
    Level(LevelRequest),
}

/// Inventory's answer to a [`Call`].
#[derive(Debug)]
pub enum Reply {
    Reserved,
    /// `true`: this commit made the sale.
    Committed(bool),
    /// `true`: the order was sold before the abort.
    Aborted(bool),
    Found(crate::proto::LookupReply),
    Level(crate::proto::LevelReply),
}

/// The stack every handler calls inventory through.
pub type Rpc = BoxCloneSyncService<Call, Reply, BoxError>;

/// `Buffer(Timeout(inventory))`.
pub fn rpc_stack(config: &Config) -> Rpc {
    let inventory = Inventory {
        url: config.inventory_url.clone().into(),
        // Connecting is part of a call, so it gets the call's budget.
        connect_timeout: config.rpc_timeout,
        client: Default::default(),
    };
    let stack = ServiceBuilder::new()
        .buffer(64)
        .timeout(config.rpc_timeout)
        .service_fn(move |call| inventory.clone().call(call));
    BoxCloneSyncService::new(stack)
}

/// Inventory's client, connected on first use (`Endpoint::connect`).
#[derive(Clone)]
struct Inventory {
    url: Arc<str>,
    connect_timeout: Duration,
    client: Arc<tokio::sync::Mutex<Option<InventoryClient>>>,
}

impl Inventory {
    async fn client(&self) -> Result<InventoryClient, BoxError> {
        let mut slot = self.client.lock().await;
        if let Some(client) = &*slot {
            return Ok(client.clone());
        }
        let client = InventoryClient::connect(&self.url, self.connect_timeout).await?;
        *slot = Some(client.clone());
        Ok(client)
    }

    async fn call(self, call: Call) -> Result<Reply, BoxError> {
        let mut c = self.client().await?;
        Ok(match call {
            Call::Reserve(r) => c.reserve(r).await.map(|_| Reply::Reserved)?,
            Call::Commit(r) => c.commit(r).await.map(|r| Reply::Committed(r.fresh))?,
            Call::Abort(r) => c.abort(r).await.map(|r| Reply::Aborted(r.sold))?,
            Call::Lookup(r) => c.lookup(r).await.map(Reply::Found)?,
            Call::Level(r) => c.level(r).await.map(Reply::Level)?,
        })
    }
}

#[derive(Clone)]
struct App {
    rpc: Rpc,
    events: broadcast::Sender<String>,
    subscribers: TaskTracker,
}

type Answer = (StatusCode, String);

/// The gRPC status inside an error of the stack, if it is one.
fn code(e: &BoxError) -> Option<Code> {
    e.downcast_ref::<tonic::Status>().map(|s| s.code())
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> Answer {
    (StatusCode::SERVICE_UNAVAILABLE, format!("{what}: {e}"))
}

async fn place(State(app): State<App>, Path(id): Path<String>, body: String) -> Answer {
    if !crate::valid_name(&id) {
        return (StatusCode::BAD_REQUEST, "bad order id".into());
    }
    let lines = match crate::parse_lines(&body) {
        Ok(lines) => lines,
        Err(e) => return (StatusCode::BAD_REQUEST, e),
    };
    let (out_of_stock, trouble) = reserve_all(&app.rpc, &id, &lines).await;
    if !out_of_stock.is_empty() {
        let abort = Call::Abort(AbortRequest {
            order_id: id.clone(),
        });
        return match app.rpc.clone().oneshot(abort).await {
            Ok(Reply::Aborted(false)) => (
                StatusCode::CONFLICT,
                format!("out of stock: {}", out_of_stock.join(",")),
            ),
            // An earlier attempt of this order sold it.
            Ok(Reply::Aborted(true)) => (StatusCode::CREATED, "confirmed".into()),
            Ok(other) => unreachable!("abort answered {other:?}"),
            Err(e) => unavailable("abort", e),
        };
    }
    if let Some(trouble) = trouble {
        // The holds that were taken expire by themselves.
        return (StatusCode::SERVICE_UNAVAILABLE, trouble);
    }
    let commit = Call::Commit(CommitRequest {
        order_id: id.clone(),
        lines: lines.clone(),
    });
    match app.rpc.clone().oneshot(commit).await {
        Ok(Reply::Committed(fresh)) => {
            if fresh {
                let event = format!("confirmed {id} {}", crate::format_lines(&lines));
                // No subscriber is not an error: the feed is at most once.
                let _ = app.events.send(event);
            }
            (StatusCode::CREATED, "confirmed".into())
        }
        Ok(other) => unreachable!("commit answered {other:?}"),
        Err(e) => unavailable("commit", e),
    }
}

/// Reserves every line at once; the SKUs out of stock (sorted), and what
/// went wrong otherwise, if anything.
async fn reserve_all(rpc: &Rpc, id: &str, lines: &[Line]) -> (Vec<String>, Option<String>) {
    let mut pending = JoinMap::new();
    for line in lines {
        let call = Call::Reserve(ReserveRequest {
            order_id: id.to_string(),
            line: Some(line.clone()),
        });
        pending.spawn(line.sku.clone(), rpc.clone().oneshot(call));
    }
    let mut out_of_stock = Vec::new();
    let mut trouble = None;
    while let Some((sku, joined)) = pending.join_next().await {
        match joined {
            Ok(Ok(_)) => {}
            Ok(Err(e)) if code(&e) == Some(Code::FailedPrecondition) => out_of_stock.push(sku),
            Ok(Err(e)) => trouble = Some(format!("reserve {sku}: {e}")),
            Err(e) => trouble = Some(format!("reserve {sku}: {e}")),
        }
    }
    out_of_stock.sort();
    (out_of_stock, trouble)
}

async fn lookup(State(app): State<App>, Path(id): Path<String>) -> Answer {
    let call = Call::Lookup(LookupRequest { order_id: id });
    match app.rpc.oneshot(call).await {
        Ok(Reply::Found(r)) if r.sold => (StatusCode::OK, crate::format_lines(&r.lines)),
        Ok(Reply::Found(r)) if r.aborted => (StatusCode::GONE, "aborted".into()),
        Ok(Reply::Found(_)) => (StatusCode::NOT_FOUND, "no such order".into()),
        Ok(other) => unreachable!("lookup answered {other:?}"),
        Err(e) => unavailable("lookup", e),
    }
}

async fn stock(State(app): State<App>, Path(sku): Path<String>) -> Answer {
    match app.rpc.oneshot(Call::Level(LevelRequest { sku })).await {
        Ok(Reply::Level(l)) => (
            StatusCode::OK,
            format!("{} {} {}", l.available, l.held, l.sold),
        ),
        Ok(other) => unreachable!("level answered {other:?}"),
        Err(e) => unavailable("stock", e),
    }
}

async fn health(State(app): State<App>) -> String {
    format!("ok {}", app.subscribers.len())
}
