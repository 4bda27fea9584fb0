//! The two tiers on loopback: a note written through one api node is read
//! back through another. In production this is axum and hyper on real
//! sockets; under `--cfg simulation`, on the simulated ones.

use axum::http::StatusCode;
use notes::{NotesClient, Reply};
use tokio::net::TcpListener;

#[tokio::test]
async fn a_note_written_through_one_api_is_read_through_another() {
    let store = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let store_url = format!("http://{}", store.local_addr().unwrap());
    tokio::spawn(notes::run_store(store));
    let mut apis = Vec::new();
    for _ in 0..2 {
        let api = TcpListener::bind("127.0.0.1:0").await.unwrap();
        apis.push(format!("http://{}", api.local_addr().unwrap()));
        tokio::spawn(notes::run_api(api, store_url.clone()));
    }
    let client = NotesClient::default();
    assert_eq!(
        client.put(&apis[0], "n1", "hello").await,
        Reply::Status(StatusCode::CREATED, String::new())
    );
    assert_eq!(
        client.get(&apis[1], "n1").await,
        Reply::Status(StatusCode::OK, "hello".into())
    );
    assert_eq!(
        client.get(&apis[1], "missing").await,
        Reply::Status(StatusCode::NOT_FOUND, String::new())
    );
}
