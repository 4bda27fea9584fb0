//! The glue hyper (and what stands on it: axum, tonic, reqwest-style
//! clients) needs from a runtime, written against this crate's paths so it
//! is real Tokio in production and the simulation under `--cfg
//! simulation` (feature `hyper`).
//!
//! hyper-util's `TokioExecutor`, `TokioTimer` and `HttpConnector`, and
//! `axum::serve`, call the real `tokio` crate directly (`tokio::spawn`, its
//! timer, its sockets); inside a simulation there is no real Tokio runtime,
//! so they panic ("there is no reactor running") or would reach the OS.
//! These are their drop-in replacements:
//!
//! | instead of | use |
//! |---|---|
//! | `hyper_util::rt::TokioExecutor` | [`Executor`] |
//! | `hyper_util::rt::TokioTimer` | [`Timer`] |
//! | `hyper_util::client::legacy::connect::HttpConnector` | [`Connector`] |
//! | `axum::serve(listener, app)` | [`serve`]`(listener, app)` |
//!
//! `hyper_util::rt::TokioIo` needs no replacement: this crate's sockets
//! implement Tokio's own `AsyncRead`/`AsyncWrite` (the `io` traits are real
//! Tokio's in both builds). In production each of these does what the
//! hyper-util original does, so the same code serves both builds.

use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

type BoxError = Box<dyn StdError + Send + Sync>;

/// A `hyper::rt::Executor` that spawns on this runtime (`crate::spawn`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Executor;

impl<F> ::hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[track_caller]
    fn execute(&self, future: F) {
        crate::spawn(future);
    }
}

/// A `hyper::rt::Timer` on this runtime's clock (`crate::time`): virtual
/// time in a simulation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer;

/// A `crate::time::Sleep` as hyper's `Sleep`.
struct Sleep(Pin<Box<crate::time::Sleep>>);

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl ::hyper::rt::Sleep for Sleep {}

impl ::hyper::rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(Sleep(Box::pin(crate::time::sleep(duration))))
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(Sleep(Box::pin(crate::time::sleep_until(
            crate::time::Instant::from_std(deadline),
        ))))
    }

    fn now(&self) -> std::time::Instant {
        crate::time::Instant::now().into_std()
    }
}

/// A TCP connection made by [`Connector`]: hyper's `Read`/`Write` over this
/// runtime's `TcpStream`, and hyper-util's `Connection`.
#[derive(Debug)]
pub struct Stream(TokioIo<crate::net::TcpStream>);

impl Stream {
    pub fn new(stream: crate::net::TcpStream) -> Stream {
        Stream(TokioIo::new(stream))
    }

    pub fn get_ref(&self) -> &crate::net::TcpStream {
        self.0.inner()
    }
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl ::hyper::rt::Read for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ::hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl ::hyper::rt::Write for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}

/// A connector (a `tower::Service<Uri>`) for hyper-util's client and
/// tonic's `Endpoint::connect_with_connector`: resolves the URI's host and
/// port with this runtime (node names in a simulation) and connects with
/// its `TcpStream`. Plain TCP: `http://` URIs (port 80 by default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Connector;

impl tower_service::Service<http::Uri> for Connector {
    type Response = Stream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        Box::pin(async move {
            if uri.scheme_str().is_some_and(|s| s != "http") {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{uri}: the connector speaks plain TCP (`http://`); TLS is not simulated"
                    ),
                ));
            }
            let host = uri.host().ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{uri} has no host"))
            })?;
            // `[::1]` → `::1`
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let port = uri.port_u16().unwrap_or(80);
            let stream = crate::net::TcpStream::connect((host, port)).await?;
            stream.set_nodelay(true)?;
            Ok(Stream::new(stream))
        })
    }
}

/// Serves `service` (an axum `Router`, a tonic `Routes`, any
/// `tower::Service` of HTTP requests) on `listener`: each accepted
/// connection in a task of its own, HTTP/1.1 or HTTP/2 as the client
/// speaks, with [`Executor`] and [`Timer`]. What `axum::serve(listener,
/// app)` does, on this runtime. Returns only if accepting fails with an
/// error that is not about one connection.
pub async fn serve<S, B>(listener: crate::net::TcpListener, service: S) -> io::Result<()>
where
    S: tower_service::Service<http::Request<::hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Errors about one connection (it was reset before it was
            // accepted): the next one may be fine.
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => return Err(e),
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        crate::spawn(async move {
            let mut builder = hyper_util::server::conn::auto::Builder::new(Executor);
            builder.http1().timer(Timer);
            builder.http2().timer(Timer);
            // A connection's error (the peer reset it, a malformed
            // request) ends that connection only.
            let _ = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
