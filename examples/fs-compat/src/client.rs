//! One HTTP/1.1 request over TLS (tokio-rustls), trusting only the
//! certificates it is given: no platform roots, so it needs no CA bundle
//! on the host.

use std::io;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// The most of a response this client reads.
const RESPONSE_BYTES_MAX: usize = 1 << 20;

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// `GET path` from the server at `addr`, whose certificate must chain to
/// one in `roots_pem` and name `server_name`. Returns the status code and
/// the body. A certificate that does not verify fails the handshake
/// (`InvalidData`).
pub async fn get(
    addr: impl ToSocketAddrs,
    server_name: &str,
    roots_pem: &[u8],
    path: &str,
) -> io::Result<(u16, String)> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(roots_pem) {
        roots.add(cert.map_err(invalid)?).map_err(invalid)?;
    }
    crate::use_aws_lc_rs();
    let config = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(server_name.to_string()).map_err(invalid)?;
    let tcp = TcpStream::connect(addr).await?;
    let mut tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await?;
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await?;
    read_response(&mut tls).await
}

/// The status and body of a response with a `Content-Length` (read to
/// that length: the end of the stream is not needed).
async fn read_response(r: &mut (impl AsyncReadExt + Unpin)) -> io::Result<(u16, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0; 4096];
    let (head_len, status, body_len) = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).map_err(invalid)?;
            let status = head
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| invalid(format!("no status line in {head:?}")))?;
            let body_len = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                .ok_or_else(|| invalid(format!("no Content-Length in {head:?}")))?;
            break (end + 4, status, body_len);
        }
        if buf.len() > RESPONSE_BYTES_MAX {
            return Err(invalid("a response head over 1 MiB"));
        }
        let n = r.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    if body_len > RESPONSE_BYTES_MAX {
        return Err(invalid(format!("a body of {body_len} bytes")));
    }
    while buf.len() < head_len + body_len {
        let n = r.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8(buf[head_len..head_len + body_len].to_vec()).map_err(invalid)?;
    Ok((status, body))
}
