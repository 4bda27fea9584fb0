//! The inventory's gRPC contract. The messages and the service glue are
//! what `tonic-prost-build` would generate from `inventory.proto` (written
//! out here, as in `examples/grpc`, so building needs no `protoc`):
//!
//! ```proto
//! package shop;
//! service Inventory {
//!   rpc Reserve(ReserveRequest) returns (ReserveReply);
//!   rpc Commit(CommitRequest) returns (CommitReply);
//!   rpc Abort(AbortRequest) returns (AbortReply);
//!   rpc Lookup(LookupRequest) returns (LookupReply);
//!   rpc Level(LevelRequest) returns (LevelReply);
//! }
//! message Line { string sku = 1; uint32 qty = 2; }
//! message ReserveRequest { string order_id = 1; Line line = 2; }
//! message ReserveReply {}
//! message CommitRequest { string order_id = 1; repeated Line lines = 2; }
//! message CommitReply { bool fresh = 1; }
//! message AbortRequest { string order_id = 1; }
//! message AbortReply { bool sold = 1; }
//! message LookupRequest { string order_id = 1; }
//! message LookupReply { bool sold = 1; repeated Line lines = 2; bool aborted = 3; }
//! message LevelRequest { string sku = 1; }
//! message LevelReply { uint32 available = 1; uint32 held = 2; uint32 sold = 3; }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::codegen::{http, Body, StdError};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

/// One line of an order: `qty` units of `sku`.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Line {
    #[prost(string, tag = "1")]
    pub sku: String,
    #[prost(uint32, tag = "2")]
    pub qty: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ReserveRequest {
    #[prost(string, tag = "1")]
    pub order_id: String,
    #[prost(message, optional, tag = "2")]
    pub line: Option<Line>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ReserveReply {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommitRequest {
    #[prost(string, tag = "1")]
    pub order_id: String,
    #[prost(message, repeated, tag = "2")]
    pub lines: Vec<Line>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommitReply {
    /// This commit made the sale (and is the one that publishes it); false
    /// when the order was already sold.
    #[prost(bool, tag = "1")]
    pub fresh: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AbortRequest {
    #[prost(string, tag = "1")]
    pub order_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AbortReply {
    /// The order was already sold: it cannot be aborted.
    #[prost(bool, tag = "1")]
    pub sold: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LookupRequest {
    #[prost(string, tag = "1")]
    pub order_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LookupReply {
    #[prost(bool, tag = "1")]
    pub sold: bool,
    #[prost(message, repeated, tag = "2")]
    pub lines: Vec<Line>,
    #[prost(bool, tag = "3")]
    pub aborted: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LevelRequest {
    #[prost(string, tag = "1")]
    pub sku: String,
}

#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct LevelReply {
    #[prost(uint32, tag = "1")]
    pub available: u32,
    #[prost(uint32, tag = "2")]
    pub held: u32,
    #[prost(uint32, tag = "3")]
    pub sold: u32,
}

// ----- the server glue (as generated) -----------------------------------

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'static>>;

/// What the server glue calls: inventory's five methods.
pub trait Inventory: Send + Sync + 'static {
    fn reserve(&self, r: ReserveRequest) -> Result<ReserveReply, Status>;
    fn commit(&self, r: CommitRequest) -> impl Future<Output = Result<CommitReply, Status>> + Send;
    fn abort(&self, r: AbortRequest) -> impl Future<Output = Result<AbortReply, Status>> + Send;
    fn lookup(&self, r: LookupRequest) -> Result<LookupReply, Status>;
    fn level(&self, r: LevelRequest) -> Result<LevelReply, Status>;
}

/// The `shop.Inventory` service over an [`Inventory`].
pub struct InventoryServer<T> {
    inner: Arc<T>,
}

impl<T> Clone for InventoryServer<T> {
    fn clone(&self) -> Self {
        InventoryServer {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Inventory> InventoryServer<T> {
    pub fn new(inner: Arc<T>) -> Self {
        InventoryServer { inner }
    }
}

impl<T> tonic::server::NamedService for InventoryServer<T> {
    const NAME: &'static str = "shop.Inventory";
}

/// One unary method, as the generated code has a struct per method.
struct Method<F>(F);

impl<Req, Rep, F, Fut> tonic::server::UnaryService<Req> for Method<F>
where
    F: FnMut(Req) -> Fut,
    Fut: Future<Output = Result<Rep, Status>> + Send + 'static,
{
    type Response = Rep;
    type Future = BoxFuture<Response<Rep>, Status>;
    fn call(&mut self, request: Request<Req>) -> Self::Future {
        let reply = (self.0)(request.into_inner());
        Box::pin(async move { reply.await.map(Response::new) })
    }
}

impl<T, B> tower_service::Service<http::Request<B>> for InventoryServer<T>
where
    T: Inventory,
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let inv = self.inner.clone();
        macro_rules! unary {
            ($call:expr) => {
                Box::pin(async move {
                    let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
                    Ok(grpc.unary(Method($call), req).await)
                })
            };
        }
        match req.uri().path() {
            "/shop.Inventory/Reserve" => {
                unary!(move |r| std::future::ready(inv.reserve(r)))
            }
            "/shop.Inventory/Commit" => unary!(move |r| {
                let inv = inv.clone();
                async move { inv.commit(r).await }
            }),
            "/shop.Inventory/Abort" => unary!(move |r| {
                let inv = inv.clone();
                async move { inv.abort(r).await }
            }),
            "/shop.Inventory/Lookup" => unary!(move |r| std::future::ready(inv.lookup(r))),
            "/shop.Inventory/Level" => unary!(move |r| std::future::ready(inv.level(r))),
            _ => Box::pin(async move { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}

// ----- the client glue (as generated) -----------------------------------

/// A `shop.Inventory` client over a tonic channel.
#[derive(Clone)]
pub struct InventoryClient {
    inner: tonic::client::Grpc<Channel>,
}

impl InventoryClient {
    /// Connects to `uri` (`http://inventory:50051`) with tonic's own
    /// connector, giving up after `connect_timeout`. The channel reconnects
    /// by itself after a lost connection; HTTP/2 keep-alive notices a peer
    /// that went silent (a crashed machine sends no reset).
    pub async fn connect(
        uri: &str,
        connect_timeout: Duration,
    ) -> Result<InventoryClient, tonic::transport::Error> {
        let channel = Endpoint::from_shared(uri.to_string())?
            .connect_timeout(connect_timeout)
            .http2_keep_alive_interval(Duration::from_millis(500))
            .keep_alive_timeout(Duration::from_millis(500))
            .keep_alive_while_idle(true)
            .connect()
            .await?;
        Ok(InventoryClient {
            inner: tonic::client::Grpc::new(channel),
        })
    }

    async fn unary<M1, M2>(&mut self, message: M1, path: &'static str) -> Result<M2, Status>
    where
        M1: prost::Message + Send + Sync + 'static,
        M2: prost::Message + Default + Send + Sync + 'static,
    {
        self.inner
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("not ready: {e}")))?;
        let path = http::uri::PathAndQuery::from_static(path);
        let codec = tonic_prost::ProstCodec::default();
        Ok(self
            .inner
            .unary(Request::new(message), path, codec)
            .await?
            .into_inner())
    }

    pub async fn reserve(&mut self, r: ReserveRequest) -> Result<ReserveReply, Status> {
        self.unary(r, "/shop.Inventory/Reserve").await
    }

    pub async fn commit(&mut self, r: CommitRequest) -> Result<CommitReply, Status> {
        self.unary(r, "/shop.Inventory/Commit").await
    }

    pub async fn abort(&mut self, r: AbortRequest) -> Result<AbortReply, Status> {
        self.unary(r, "/shop.Inventory/Abort").await
    }

    pub async fn lookup(&mut self, r: LookupRequest) -> Result<LookupReply, Status> {
        self.unary(r, "/shop.Inventory/Lookup").await
    }

    pub async fn level(&mut self, r: LevelRequest) -> Result<LevelReply, Status> {
        self.unary(r, "/shop.Inventory/Level").await
    }
}
