//! An HTTPS server: hyper's HTTP/1.1 over tokio-rustls.

use crate::{Pki, Tap};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::crypto::CryptoProvider;
use rustls::ServerConfig;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The server's TLS configuration: `pki`'s certificate, on `provider`.
pub fn config(pki: &Pki, provider: Arc<CryptoProvider>) -> Arc<ServerConfig> {
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the provider supports TLS 1.2 and 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![pki.cert_der.clone()], pki.key_der())
        .expect("the key matches the certificate");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Serves every connection `listener` accepts: `GET /x` answers
/// `hello over TLS: /x`. Each connection's bytes go through `tap`.
pub async fn serve(listener: TcpListener, config: Arc<ServerConfig>, tap: Tap) {
    let acceptor = TlsAcceptor::from(config);
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let (acceptor, tap) = (acceptor.clone(), tap.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tap.wrap(tcp)).await else {
                return;
            };
            let service =
                hyper::service::service_fn(|req: Request<hyper::body::Incoming>| async move {
                    let body = format!("hello over TLS: {}", req.uri().path());
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}
