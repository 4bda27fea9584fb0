//! A small file server written the usual way on two crates that name std's
//! file types through Tokio, with a plain `tokio` dependency and not one
//! line that knows about simulation:
//!
//! - [`manifest`]: a directory's tree through fs-err's `tokio` module
//!   (`metadata`, `symlink_metadata`, `read_dir`, `DirEntry::file_type`,
//!   `DirEntry::metadata`, `File::metadata`), which returns std's
//!   `Metadata`, `FileType` and `Permissions` as Tokio does.
//! - [`server`]: `GET /manifest` over TLS with axum-server's `tls-rustls`
//!   (rustls on aws-lc-rs), its certificate and key read from PEM files on
//!   the host's disk (through fs-err, by axum-server).
//! - [`client`]: a tokio-rustls client that trusts only the certificate it
//!   is given (no platform roots).
//!
//! Under `cargo sim test` all of it runs on the simulated Tokio: each
//! node's disk is simulated, and the TLS bytes cross the simulated network.
//!
//! ```no_run
//! # async fn run(cert_pem: Vec<u8>) -> std::io::Result<()> {
//! use fs_compat::{client, server};
//! let tls = server::Tls::new("/etc/files/cert.pem", "/etc/files/key.pem");
//! let handle = server::Handle::new();
//! tokio::spawn(server::serve("0.0.0.0:8443".parse().unwrap(), tls, "/srv".into(), handle));
//! let (status, body) = client::get("files:8443", "files", &cert_pem, "/manifest").await?;
//! assert_eq!(status, 200);
//! println!("{body}");
//! # Ok(()) }
//! ```

pub mod client;
pub mod manifest;
pub mod server;

/// Makes aws-lc-rs (axum-server's provider) the process's rustls provider,
/// unless one is already installed. rustls picks one by itself only when
/// exactly one of its providers is built: in a workspace where another
/// crate turns on `ring` too (examples/tls), it would panic instead.
pub fn use_aws_lc_rs() {
    let _ = tokio_rustls::rustls::crypto::aws_lc_rs::default_provider().install_default();
}
