//! The store is ordinary Tokio code: three replicas on loopback, a write
//! through the primary, read back from each backup. (In production this
//! uses real sockets; under `--cfg simulation` the simulated ones.)

use kv::{Client, Config, Replication};
use tokio::net::TcpListener;

#[tokio::test]
async fn a_write_reaches_every_backup_before_it_is_acknowledged() {
    let mut backups = Vec::new();
    for _ in 0..2 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        backups.push(listener.local_addr().unwrap().to_string());
        tokio::spawn(kv::run(listener, Config::backup()));
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let primary = listener.local_addr().unwrap().to_string();
    let names: Vec<&str> = backups.iter().map(String::as_str).collect();
    let config = Config::primary(&names, Replication::AckAfterReplicate);
    tokio::spawn(kv::run(listener, config));

    let mut client = Client::connect(&primary).await.unwrap();
    client.put("greeting", "hello world").await.unwrap();
    assert_eq!(
        client.get("greeting").await.unwrap().as_deref(),
        Some("hello world")
    );
    assert_eq!(client.get("missing").await.unwrap(), None);
    for backup in &backups {
        let mut reader = Client::connect(backup).await.unwrap();
        let got = reader.get("greeting").await.unwrap();
        assert_eq!(got.as_deref(), Some("hello world"), "backup {backup}");
    }
}
