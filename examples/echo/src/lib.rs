//! An echo server: every byte a client sends comes back.
//!
//! Ordinary Tokio code. Its test (`tests/sim.rs`) runs it on a simulated
//! node and talks to it over the simulated network.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves on `0.0.0.0:port` until the process ends.
pub async fn serve(port: u16) {
    let listener = TcpListener::bind(("0.0.0.0", port))
        .await
        .unwrap_or_else(|e| panic!("echo: cannot listen on port {port}: {e}"));
    loop {
        if let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(echo(stream));
        }
    }
}

async fn echo(mut stream: TcpStream) {
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stream.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
