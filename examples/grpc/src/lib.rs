//! Counter: a gRPC service with tonic. Clients add to named counters;
//! each `Add` carries a request id, and the server applies an id at most
//! once, so a client may retry an `Add` whose answer it did not get
//! (a timeout, a reset connection) without counting twice.
//!
//! The messages and the service glue are what `tonic-prost-build` would
//! generate from `counter.proto` (written out here, so building needs no
//! `protoc`):
//!
//! ```proto
//! package counter;
//! service Counter {
//!   rpc Add(AddRequest) returns (AddReply);
//!   rpc Get(GetRequest) returns (AddReply);
//! }
//! message AddRequest { string key = 1; int64 delta = 2; string request_id = 3; }
//! message GetRequest { string key = 1; }
//! message AddReply { int64 value = 1; }
//! ```
//!
//! The only simulation-specific lines are the runtime glue: the channel is
//! built with `tokio::hyper::{Executor, Connector}` and the server is
//! served with `tokio::hyper::serve` (real Tokio in production).

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tonic::codegen::{http as tonic_http, Body, StdError};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

#[derive(Clone, PartialEq, prost::Message)]
pub struct AddRequest {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(int64, tag = "2")]
    pub delta: i64,
    #[prost(string, tag = "3")]
    pub request_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRequest {
    #[prost(string, tag = "1")]
    pub key: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AddReply {
    #[prost(int64, tag = "1")]
    pub value: i64,
}

/// The counters, and the request ids already applied.
#[derive(Default)]
pub struct Counters {
    state: Mutex<(BTreeMap<String, i64>, BTreeSet<String>)>,
    /// The planted bug for the tests: apply every `Add`, retries included.
    pub forget_ids: bool,
}

impl Counters {
    /// Counters; `forget_ids` plants the bug (every retry counts).
    pub fn new(forget_ids: bool) -> Counters {
        Counters {
            forget_ids,
            ..Counters::default()
        }
    }

    fn add(&self, r: AddRequest) -> i64 {
        let mut state = self.state.lock().unwrap();
        let (values, seen) = &mut *state;
        let fresh = self.forget_ids || seen.insert(r.request_id);
        let value = values.entry(r.key).or_default();
        if fresh {
            *value += r.delta;
        }
        *value
    }

    fn get(&self, key: &str) -> i64 {
        self.state.lock().unwrap().0.get(key).copied().unwrap_or(0)
    }
}

// ----- the server glue (as generated) -----------------------------------

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'static>>;

/// The `counter.Counter` service over `Counters`.
#[derive(Clone)]
pub struct CounterServer {
    inner: Arc<Counters>,
}

impl CounterServer {
    pub fn new(counters: Arc<Counters>) -> CounterServer {
        CounterServer { inner: counters }
    }
}

impl tonic::server::NamedService for CounterServer {
    const NAME: &'static str = "counter.Counter";
}

struct AddSvc(Arc<Counters>);

impl tonic::server::UnaryService<AddRequest> for AddSvc {
    type Response = AddReply;
    type Future = BoxFuture<Response<AddReply>, Status>;
    fn call(&mut self, request: Request<AddRequest>) -> Self::Future {
        let counters = self.0.clone();
        Box::pin(async move {
            let value = counters.add(request.into_inner());
            Ok(Response::new(AddReply { value }))
        })
    }
}

struct GetSvc(Arc<Counters>);

impl tonic::server::UnaryService<GetRequest> for GetSvc {
    type Response = AddReply;
    type Future = BoxFuture<Response<AddReply>, Status>;
    fn call(&mut self, request: Request<GetRequest>) -> Self::Future {
        let counters = self.0.clone();
        Box::pin(async move {
            let value = counters.get(&request.into_inner().key);
            Ok(Response::new(AddReply { value }))
        })
    }
}

impl<B> tower_service::Service<tonic_http::Request<B>> for CounterServer
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = tonic_http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: tonic_http::Request<B>) -> Self::Future {
        let counters = self.inner.clone();
        match req.uri().path() {
            "/counter.Counter/Add" => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
                Ok(grpc.unary(AddSvc(counters), req).await)
            }),
            "/counter.Counter/Get" => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
                Ok(grpc.unary(GetSvc(counters), req).await)
            }),
            _ => Box::pin(async move { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}

/// Serves the counters on `listener` (HTTP/2, as gRPC speaks).
pub async fn serve(listener: tokio::net::TcpListener, counters: Arc<Counters>) {
    let routes = tonic::service::Routes::new(CounterServer::new(counters)).prepare();
    tokio::hyper::serve(listener, routes)
        .await
        .expect("the counter's listener failed");
}

// ----- the client glue (as generated) -----------------------------------

#[derive(Clone)]
pub struct CounterClient {
    inner: tonic::client::Grpc<Channel>,
}

impl CounterClient {
    /// A client for `uri` (`http://counter:50051`), connecting lazily (and
    /// again after a connection is lost).
    pub fn new(uri: &str) -> Result<CounterClient, tonic::transport::Error> {
        let channel = Endpoint::from_shared(uri.to_string())?
            .executor(tokio::hyper::Executor)
            .connect_with_connector_lazy(tokio::hyper::Connector);
        Ok(CounterClient {
            inner: tonic::client::Grpc::new(channel),
        })
    }

    /// A client over a channel made elsewhere (`Endpoint::connect`).
    pub fn from_channel(channel: Channel) -> CounterClient {
        CounterClient {
            inner: tonic::client::Grpc::new(channel),
        }
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
        let path = tonic_http::uri::PathAndQuery::from_static(path);
        let codec = tonic_prost::ProstCodec::default();
        Ok(self
            .inner
            .unary(Request::new(message), path, codec)
            .await?
            .into_inner())
    }

    pub async fn add(&mut self, request: AddRequest) -> Result<i64, Status> {
        let reply: AddReply = self.unary(request, "/counter.Counter/Add").await?;
        Ok(reply.value)
    }

    pub async fn get(&mut self, key: &str) -> Result<i64, Status> {
        let reply: AddReply = self
            .unary(
                GetRequest {
                    key: key.to_string(),
                },
                "/counter.Counter/Get",
            )
            .await?;
        Ok(reply.value)
    }
}
