//! `GET /manifest` over TLS: axum on axum-server's rustls acceptor.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use axum_server::tls_rustls::RustlsConfig;
pub use axum_server::Handle;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the server's certificate chain and private key are (PEM files).
#[derive(Clone, Debug)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Tls {
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Tls {
        Tls {
            cert: cert.into(),
            key: key.into(),
        }
    }
}

/// Serves the manifest of `root` on `addr` over TLS until `handle` shuts it
/// down. The certificate and key are read when it starts; a missing file is
/// an error naming its path.
pub async fn serve(
    addr: SocketAddr,
    tls: Tls,
    root: PathBuf,
    handle: Handle<SocketAddr>,
) -> io::Result<()> {
    crate::use_aws_lc_rs();
    let config = RustlsConfig::from_pem_file(&tls.cert, &tls.key).await?;
    let app = Router::new()
        .route("/manifest", get(manifest))
        .with_state(Arc::new(root));
    axum_server::bind_rustls(addr, config)
        .handle(handle)
        .serve(app.into_make_service())
        .await
}

async fn manifest(State(root): State<Arc<PathBuf>>) -> Result<String, (StatusCode, String)> {
    match crate::manifest::manifest(root.as_path()).await {
        Ok(entries) => Ok(crate::manifest::render(&entries)),
        Err(e) => Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}
