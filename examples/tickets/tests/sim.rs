//! The ticket server simulated whole, its antithesis_sdk assertions the
//! harness's sites: `cargo sim test -p tickets`. Under `--cfg simulation`
//! alone the crate gets real Tokio: the file is empty then.
#![cfg(sim_graph)]

mod scenario;

use tickets::Durability;

/// The fix gives no number twice through a crash, and every site of the
/// SDK's in the server and the scenario is reached or holds in some seed
/// (`coverage = "all"`: the SDK's catalog is the harness's).
#[sim::test(seeds = 0..300, coverage = "all")]
async fn no_number_is_given_twice() {
    scenario::scenario(Durability::SyncThenAnswer).await;
    // The server's one site no run of the scenario reaches otherwise.
    bad_request().await;
}

async fn bad_request() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let s = tokio::net::TcpStream::connect("tickets:7").await.unwrap();
    let (r, mut w) = s.into_split();
    w.write_all(b"hello\n").await.unwrap();
    let mut line = String::new();
    BufReader::new(r).read_line(&mut line).await.unwrap();
    assert_eq!(line, "error\n");
}
