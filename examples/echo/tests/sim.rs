//! The first simulation test: start the service on a node, talk to it over
//! the simulated network, crash it, restart it.
//!
//! ```sh
//! RUSTFLAGS="--cfg simulation" cargo test -p echo
//! ```
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout};

async fn ask(msg: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect("echo:7").await?;
    stream.write_all(msg).await?;
    let mut reply = vec![0; msg.len()];
    stream.read_exact(&mut reply).await?;
    Ok(reply)
}

/// Waits until the server accepts connections: a fixed sleep is a race (an
/// early timer can end it before the server's first step, as a slow start
/// would on a real machine).
async fn until_listening() {
    while TcpStream::connect("echo:7").await.is_err() {
        sleep(Duration::from_millis(1)).await;
    }
}

#[sim::test(seeds = 0..100)]
async fn echoes_and_comes_back_after_a_crash() {
    let server = sim::node("echo").start(|| echo::serve(7));
    until_listening().await;

    assert_eq!(ask(b"hello").await.unwrap(), b"hello");

    server.crash();
    let answer = timeout(Duration::from_secs(5), ask(b"anyone?")).await;
    assert!(
        !matches!(answer, Ok(Ok(_))),
        "a crashed server does not answer"
    );

    server.restart();
    until_listening().await;
    assert_eq!(ask(b"hello again").await.unwrap(), b"hello again");
}
