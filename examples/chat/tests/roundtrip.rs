//! The room on loopback: a message said by one client is pushed to the
//! other, a retried id is not posted twice, and shutdown says goodbye to
//! every session. Real sockets in production; simulated ones under
//! `--cfg simulation`.

use chat::{Client, Config, Event};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn messages_fan_out_and_shutdown_says_goodbye() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(chat::serve(listener, Config::default(), shutdown.clone()));

    let (mut ada, _ada_events) = Client::new(&addr, "ada");
    let (mut bob, mut bob_events) = Client::new(&addr, "bob");
    bob.ensure_connected().await.unwrap();
    let seq = ada.say("a1", "hello bob").await.unwrap();
    assert_eq!(seq, 1);
    // The same id again: answered with the same seq, not posted twice.
    assert_eq!(ada.say("a1", "hello bob").await.unwrap(), 1);
    assert_eq!(ada.say("a2", "still there?").await.unwrap(), 2);

    assert!(bob.listen(Duration::from_millis(200)).await);
    let mut seen = Vec::new();
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(10), bob_events.next()).await
    {
        seen.push(e);
    }
    assert_eq!(
        seen,
        [
            Event::Welcome(0),
            Event::Msg {
                seq: 1,
                from: "ada".into(),
                text: "hello bob".into()
            },
            Event::Msg {
                seq: 2,
                from: "ada".into(),
                text: "still there?".into()
            },
        ]
    );

    shutdown.cancel();
    assert!(
        !bob.listen(Duration::from_secs(1)).await,
        "the session closed"
    );
    assert_eq!(bob_events.next().await, Some(Event::Bye("shutdown".into())));
    assert_eq!(server.await.unwrap(), 2, "two sessions served");
}
