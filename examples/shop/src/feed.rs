//! The order feed: a WebSocket stream of `confirmed <order> <lines>` text
//! messages, with a ping every heartbeat.
//!
//! [`publish`] is the server side (in orders): each subscriber connection
//! is a task of a tokio-util `TaskTracker`, fed from a `broadcast` channel,
//! with heartbeats from a tokio-stream `IntervalStream`. A subscriber that
//! falls too far behind is dropped (it reconnects and misses what it
//! lagged over: the feed is at most once).
//!
//! [`follow`] is the subscriber side (in shipping): `connect_async`, and a
//! feed silent for longer than `idle` is taken for dead (`StreamExt::timeout`:
//! a crashed machine sends no close and no reset) and connected again.

use futures_util::SinkExt;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;
use tokio_stream::wrappers::IntervalStream;
use tokio_stream::StreamExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::task::TaskTracker;

/// Serves the feed on `listener`: every event sent on `events` after a
/// subscriber connected reaches it once, unless it lags or disconnects.
/// The connections are `tracker`'s tasks.
pub async fn publish(
    listener: TcpListener,
    events: broadcast::Sender<String>,
    tracker: TaskTracker,
    heartbeat: Duration,
) -> std::io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        // Subscribed before the handshake: what is published from now on is
        // this subscriber's.
        let rx = events.subscribe();
        tracker.spawn(async move {
            if let Err(e) = subscriber(stream, rx, heartbeat).await {
                tracing::debug!(%peer, "feed: subscriber gone: {e}");
            }
        });
    }
}

async fn subscriber(
    stream: TcpStream,
    mut rx: broadcast::Receiver<String>,
    heartbeat: Duration,
) -> Result<(), tokio_tungstenite::tungstenite::Error> {
    let mut ws = tokio_tungstenite::accept_async(stream).await?;
    let mut beats = IntervalStream::new(tokio::time::interval(heartbeat));
    loop {
        tokio::select! {
            event = rx.recv() => match event {
                Ok(event) => ws.send(Message::text(event)).await?,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "feed: subscriber lagged; dropping it");
                    return ws.close(None).await;
                }
                Err(broadcast::error::RecvError::Closed) => return ws.close(None).await,
            },
            Some(_) = beats.next() => ws.send(Message::Ping(Default::default())).await?,
            incoming = ws.next() => match incoming {
                // Pongs, and anything else a subscriber says, are ignored.
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
        }
    }
}

/// Follows the feed at `url` (`ws://orders:9000/`) forever, calling
/// `on_event` with each event's text. A feed that cannot be reached, that
/// closes, or that is silent for `idle` (no event, no ping) is connected
/// again after `retry`.
pub async fn follow(url: &str, idle: Duration, retry: Duration, mut on_event: impl FnMut(String)) {
    loop {
        match tokio::time::timeout(idle, tokio_tungstenite::connect_async(url)).await {
            Ok(Ok((ws, _))) => {
                tracing::info!(url, "feed: following");
                let messages = ws.timeout(idle);
                tokio::pin!(messages);
                while let Some(message) = messages.next().await {
                    match message {
                        Ok(Ok(Message::Text(text))) => on_event(text.as_str().to_string()),
                        Ok(Ok(Message::Close(_))) | Ok(Err(_)) => break,
                        Ok(Ok(_)) => {}
                        Err(_) => {
                            tracing::info!(url, "feed: silent for {idle:?}; reconnecting");
                            break;
                        }
                    }
                }
            }
            Ok(Err(e)) => tracing::debug!(url, "feed: cannot connect: {e}"),
            Err(_) => tracing::debug!(url, "feed: connecting timed out"),
        }
        tokio::time::sleep(retry).await;
    }
}
