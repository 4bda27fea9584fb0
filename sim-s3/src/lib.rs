//! `sim-s3`: an S3-compatible object store to run as a node of a
//! simulation, so that a service's unmodified S3 client (`object_store`'s
//! `AmazonS3`, `aws-sdk-s3`) talks to it over the simulated network.
//!
//! ```ignore
//! let faults = sim_s3::Faults::new();
//! let f = faults.clone();
//! sim::node("s3").start(move || {
//!     sim_s3::S3::new("/s3").bucket("logs").faults(&f).run("0.0.0.0:9000")
//! });
//! let store = object_store::aws::AmazonS3Builder::new()
//!     .with_endpoint("http://s3:9000")
//!     .with_allow_http(true)
//!     .with_virtual_hosted_style_request(false)
//!     .with_bucket_name("logs")
//!     .with_region("us-east-1")
//!     .with_access_key_id("sim")
//!     .with_secret_access_key("sim")
//!     .build()?;
//! faults.slow_down(2);          // the next two requests: 503 SlowDown
//! ```
//!
//! It is the transport swap of "Sim Boundaries": the client's whole stack
//! (signing, retries, XML, connection pool) runs as in production, and only
//! the far end is ours. Under `cargo sim test` the server runs on the
//! simulation, its objects on the node's simulated disk; under `cargo test`
//! the same server runs on real Tokio and a real directory, which is how
//! its answers are checked against the clients' own calls in both modes.
//!
//! **What it serves** (path-style only: `/bucket/key`): PUT, GET with
//! `Range`, HEAD, DELETE, DeleteObjects (`POST ?delete`), ListObjectsV2
//! (prefix, delimiter, `max-keys`, continuation tokens, `start-after`),
//! multipart upload (create, upload part, upload part copy, complete,
//! abort; every part but the last at least 5 MiB, as S3 requires),
//! CopyObject (`x-amz-metadata-directive`), bucket create and HEAD.
//! Conditional writes: `If-None-Match: *` answers 412 PreconditionFailed
//! when the key exists; `If-Match: <etag>` answers 412 on another etag and
//! 404 NoSuchKey on no object, as S3 does. Conditional reads: `If-Match`,
//! `If-None-Match` (304), `If-Modified-Since`, `If-Unmodified-Since`.
//! ETags are MD5s (multipart: MD5 of the parts' MD5s, `-N`), as S3's are.
//! `aws-chunked` bodies (SDKs' streaming uploads with trailing checksums)
//! are decoded; their chunk signatures and checksums are not checked.
//!
//! **Durability**: an object is written whole to a temporary file, synced,
//! renamed into place and its folder synced before the answer: a crash of
//! the node keeps every acknowledged write and never shows a torn object.
//! Uploads in progress survive a crash too; half-written files do not.
//!
//! **Not modelled**: versioning, ACLs and policies, tagging, object lock,
//! checksums other than the ETag (`x-amz-checksum-*` are accepted, not
//! checked), virtual-hosted-style addressing, ListObjects v1 (a GET on a
//! bucket is answered as v2). **SigV4 signatures are accepted and not
//! verified**: any credentials work, so a signing bug in a client is not
//! found here. Keys are file names: at most 255 bytes once escaped
//! (KeyTooLongError past that).
//!
//! **Failure modes** are one call each on [`Faults`]: `slow_down(n)` (503),
//! `internal_error(n)` (500), `conflict(n)` (409 on conditional writes),
//! `reset_mid_body(n)`, `lose_reply(n)` (applied, then no reply), `hang()`
//! until `heal()`, `slow_first_byte(d)`, `list_lag(d)`, and `drawn()`,
//! which draws them from the seed as named fault points (`s3: …`).

mod api;
mod chunked;
mod draw;
mod faults;
mod store;
mod xml;

pub use faults::{Faults, Seen};

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::net::{TcpListener, ToSocketAddrs};

/// One S3 server: where its objects live, its buckets, its faults.
#[derive(Clone, Debug)]
pub struct S3 {
    root: PathBuf,
    buckets: Vec<String>,
    faults: Faults,
}

impl S3 {
    /// A server keeping its objects under `root` (on a simulated node,
    /// a path on that node's disk; it survives the node's crashes as a
    /// disk does).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            buckets: Vec::new(),
            faults: Faults::new(),
        }
    }

    /// A bucket that exists from the start (clients may also create one
    /// with `PUT /bucket`).
    pub fn bucket(mut self, name: &str) -> Self {
        self.buckets.push(name.to_owned());
        self
    }

    /// The fault handle this server obeys: pass a clone of the one the
    /// test keeps, to every incarnation of the node.
    pub fn faults(mut self, faults: &Faults) -> Self {
        self.faults = faults.clone();
        self
    }

    /// Binds `addr` and serves until the node dies (or an accept fails).
    pub async fn listen(self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        self.serve(listener).await
    }

    /// [`S3::listen`] as a node's service: a failure to bind or serve
    /// panics with what went wrong (the node's start closure returns `()`).
    pub async fn run(self, addr: impl ToSocketAddrs) {
        if let Err(e) = self.listen(addr).await {
            panic!("sim-s3 cannot serve: {e}");
        }
    }

    /// Serves HTTP/1.1 on `listener`, a task per connection.
    pub async fn serve(self, listener: TcpListener) -> io::Result<()> {
        for b in &self.buckets {
            if !(3..=63).contains(&b.len())
                || !b
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("sim-s3: {b:?} is not a bucket name: 3 to 63 of [a-z0-9.-]"),
                ));
            }
        }
        let store = store::Store::open(self.root, &self.buckets).await?;
        let api = Arc::new(api::Api {
            store,
            faults: self.faults,
            requests: AtomicU64::new(0),
        });
        loop {
            let (stream, _) = listener.accept().await?;
            let api = api.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let api = api.clone();
                    async move { api.handle(req).await }
                });
                // A client that goes away, or a reply lost on purpose, ends
                // the connection; the server goes on.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }
}
