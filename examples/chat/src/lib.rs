//! Chat: one room, served the way Tokio services are usually written, and
//! a client that retries.
//!
//! - a task per connection, lines framed with tokio-util's `LinesCodec`;
//! - a `broadcast` channel fans each message out to every session, read as
//!   a tokio-stream `BroadcastStream`;
//! - a background purge task (`interval`) closes sessions idle too long;
//! - graceful shutdown: on SIGTERM or ctrl-c a tokio-util
//!   `CancellationToken` tells every session to say `BYE shutdown` and
//!   close, and a `TaskTracker` waits for them (bounded by a timeout);
//! - the client times out each request and reconnects and retries.
//!
//! Protocol (one line each way): `HELLO <name>` → `WELCOME <last seq>`;
//! `SAY <id> <text>` → `OK <id> <seq>` (a repeated id is not posted twice);
//! `PING` → `PONG`; pushed to every session: `MSG <seq> <from> <text>`;
//! on close: `BYE <reason>`.
//!
//! `TaskTracker::spawn` calls the real `tokio::spawn`, which has no runtime
//! in a simulation: the server tracks futures it spawns itself
//! (`tokio::spawn(tracker.track_future(..))`), which is the same thing in
//! production. docs/breakage.md lists such cases.

use futures_util::SinkExt;
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, mpsc};
use tokio::time::{interval, timeout, Instant, MissedTickBehavior};
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::{BroadcastStream, ReceiverStream};
use tokio_stream::StreamExt;
use tokio_util::codec::{Framed, LinesCodec};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The server's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Sessions silent this long are closed by the purge task.
    pub idle: Duration,
    /// How often the purge task looks.
    pub purge_every: Duration,
    /// How long shutdown waits for sessions to close.
    pub grace: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            idle: Duration::from_secs(5),
            purge_every: Duration::from_secs(1),
            grace: Duration::from_secs(1),
        }
    }
}

#[derive(Clone, Debug)]
struct Msg {
    seq: u64,
    from: String,
    text: String,
}

struct Session {
    last_seen: Instant,
    close: CancellationToken,
}

#[derive(Default)]
struct Room {
    next_seq: u64,
    sessions: BTreeMap<u64, Session>,
    next_session: u64,
    /// Message ids already posted, with their seq (a retried SAY is
    /// answered, not posted again).
    posted: BTreeMap<String, u64>,
}

struct Shared {
    room: Mutex<Room>,
    fanout: broadcast::Sender<Msg>,
    config: Config,
}

/// Serves the room on `listener` until `shutdown` is cancelled, then closes
/// every session (each says `BYE shutdown`) and returns once they are done
/// or the grace period is over. Returns the number of sessions served.
pub async fn serve(listener: TcpListener, config: Config, shutdown: CancellationToken) -> u64 {
    let (fanout, _) = broadcast::channel(1024);
    let shared = Arc::new(Shared {
        room: Mutex::new(Room::default()),
        fanout,
        config,
    });
    let tracker = TaskTracker::new();
    tokio::spawn(tracker.track_future(purge(shared.clone(), shutdown.clone())));
    let mut served = 0;
    loop {
        let stream = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        served += 1;
        tokio::spawn(tracker.track_future(session(stream, shared.clone(), shutdown.clone())));
    }
    tracker.close();
    if timeout(shared.config.grace, tracker.wait()).await.is_err() {
        tracing::warn!("sessions still open after the grace period");
    }
    served
}

/// The server process: serves on `port` until SIGTERM or ctrl-c.
pub async fn main(port: u16, config: Config) {
    let listener = TcpListener::bind(("0.0.0.0", port))
        .await
        .expect("the chat port is free");
    let shutdown = CancellationToken::new();
    let trigger = shutdown.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down");
        trigger.cancel();
    });
    let served = serve(listener, config, shutdown).await;
    tracing::info!(served, "stopped");
}

/// Closes the sessions that have been silent longer than `idle`.
async fn purge(shared: Arc<Shared>, shutdown: CancellationToken) {
    let mut tick = interval(shared.config.purge_every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        let room = shared.room.lock().unwrap();
        for (id, s) in &room.sessions {
            if now.duration_since(s.last_seen) > shared.config.idle {
                tracing::info!(session = id, "purging an idle session");
                s.close.cancel();
            }
        }
    }
}

async fn session(stream: TcpStream, shared: Arc<Shared>, shutdown: CancellationToken) {
    let mut lines = Framed::new(stream, LinesCodec::new_with_max_length(4096));
    // Subscribe before anything is posted to this session's name, so it
    // misses nothing from its WELCOME on.
    let (id, close, mut feed, welcome) = {
        let mut room = shared.room.lock().unwrap();
        let id = room.next_session;
        room.next_session += 1;
        let close = CancellationToken::new();
        room.sessions.insert(
            id,
            Session {
                last_seen: Instant::now(),
                close: close.clone(),
            },
        );
        let feed = BroadcastStream::new(shared.fanout.subscribe());
        (id, close, feed, room.next_seq)
    };
    let mut name: Option<String> = None;
    let bye = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break "shutdown",
            _ = close.cancelled() => break "idle",
            pushed = feed.next(), if name.is_some() => match pushed {
                Some(Ok(m)) => {
                    if lines.send(format!("MSG {} {} {}", m.seq, m.from, m.text)).await.is_err() {
                        break "gone";
                    }
                }
                Some(Err(BroadcastStreamRecvError::Lagged(_))) => break "lagged",
                None => break "shutdown",
            },
            line = lines.next() => {
                let Some(Ok(line)) = line else { break "gone" };
                if let Some(s) = shared.room.lock().unwrap().sessions.get_mut(&id) {
                    s.last_seen = Instant::now();
                }
                let reply = match line.split_once(' ') {
                    Some(("HELLO", who)) if name.is_none() => {
                        name = Some(who.to_string());
                        format!("WELCOME {}", welcome)
                    }
                    Some(("SAY", rest)) if name.is_some() => {
                        let (msg_id, text) = rest.split_once(' ').unwrap_or((rest, ""));
                        let seq = post(&shared, msg_id, name.as_deref().unwrap_or("?"), text);
                        format!("OK {msg_id} {seq}")
                    }
                    _ if line == "PING" => "PONG".to_string(),
                    _ => format!("ERR {line}"),
                };
                if lines.send(reply).await.is_err() {
                    break "gone";
                }
            }
        }
    };
    shared.room.lock().unwrap().sessions.remove(&id);
    let _ = lines.send(format!("BYE {bye}")).await;
}

/// Posts a message once per id; its seq.
fn post(shared: &Shared, msg_id: &str, from: &str, text: &str) -> u64 {
    let mut room = shared.room.lock().unwrap();
    if let Some(&seq) = room.posted.get(msg_id) {
        return seq;
    }
    room.next_seq += 1;
    let seq = room.next_seq;
    room.posted.insert(msg_id.to_string(), seq);
    // Sent under the room's lock, so the channel's order is seq order.
    let _ = shared.fanout.send(Msg {
        seq,
        from: from.to_string(),
        text: text.to_string(),
    });
    seq
}

/// What a client's connection saw, pushed to its owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A new connection's `WELCOME <seq>`.
    Welcome(u64),
    Msg {
        seq: u64,
        from: String,
        text: String,
    },
    Bye(String),
}

/// A client that reconnects: each `say` is retried (same id) on a new
/// connection until it is answered or the attempts run out.
pub struct Client {
    addr: String,
    name: String,
    conn: Option<Framed<TcpStream, LinesCodec>>,
    events: mpsc::Sender<Event>,
    /// Per-request timeout.
    pub timeout: Duration,
    pub attempts: u32,
}

impl Client {
    /// A client of the room at `addr`; its events (welcomes, messages,
    /// byes) go to the returned stream.
    pub fn new(addr: &str, name: &str) -> (Client, ReceiverStream<Event>) {
        let (events, rx) = mpsc::channel(4096);
        (
            Client {
                addr: addr.to_string(),
                name: name.to_string(),
                conn: None,
                events,
                timeout: Duration::from_millis(500),
                attempts: 20,
            },
            ReceiverStream::new(rx),
        )
    }

    async fn connect(&mut self) -> io::Result<()> {
        let stream = TcpStream::connect(&self.addr).await?;
        let mut lines = Framed::new(stream, LinesCodec::new_with_max_length(4096));
        lines
            .send(format!("HELLO {}", self.name))
            .await
            .map_err(io::Error::other)?;
        self.conn = Some(lines);
        Ok(())
    }

    /// Reads lines until one satisfies `done`, reporting pushed events.
    async fn until(&mut self, done: impl Fn(&str) -> bool) -> io::Result<String> {
        let lines = self.conn.as_mut().expect("connected");
        loop {
            let line = match lines.next().await {
                Some(Ok(line)) => line,
                Some(Err(e)) => return Err(io::Error::other(e)),
                None => return Err(io::ErrorKind::UnexpectedEof.into()),
            };
            let event = if let Some(rest) = line.strip_prefix("WELCOME ") {
                rest.parse().ok().map(Event::Welcome)
            } else if let Some(rest) = line.strip_prefix("MSG ") {
                let mut parts = rest.splitn(3, ' ');
                match (
                    parts.next().and_then(|s| s.parse().ok()),
                    parts.next(),
                    parts.next(),
                ) {
                    (Some(seq), Some(from), text) => Some(Event::Msg {
                        seq,
                        from: from.to_string(),
                        text: text.unwrap_or_default().to_string(),
                    }),
                    _ => None,
                }
            } else {
                line.strip_prefix("BYE ").map(|r| Event::Bye(r.to_string()))
            };
            if let Some(e) = event {
                let bye = matches!(e, Event::Bye(_));
                let _ = self.events.send(e).await;
                if bye {
                    return Err(io::ErrorKind::ConnectionAborted.into());
                }
            }
            if done(&line) {
                return Ok(line);
            }
        }
    }

    /// Posts `text` under the id `msg_id`; its seq. Retried on a new
    /// connection after a timeout or a lost connection.
    pub async fn say(&mut self, msg_id: &str, text: &str) -> io::Result<u64> {
        let mut last = io::Error::other("no attempt");
        let limit = self.timeout;
        for _ in 0..self.attempts {
            let attempt = async {
                if self.conn.is_none() {
                    self.connect().await?;
                    self.until(|l| l.starts_with("WELCOME ")).await?;
                }
                let lines = self.conn.as_mut().expect("connected");
                lines
                    .send(format!("SAY {msg_id} {text}"))
                    .await
                    .map_err(io::Error::other)?;
                let prefix = format!("OK {msg_id} ");
                let line = self.until(|l| l.starts_with(&prefix)).await?;
                line[prefix.len()..]
                    .parse()
                    .map_err(|_| io::Error::other(format!("a malformed answer: {line}")))
            };
            match timeout(limit, attempt).await {
                Ok(Ok(seq)) => return Ok(seq),
                Ok(Err(e)) => last = e,
                Err(_) => last = io::ErrorKind::TimedOut.into(),
            }
            self.conn = None;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(last)
    }

    /// Connects (and says HELLO) unless connected.
    pub async fn ensure_connected(&mut self) -> io::Result<()> {
        if self.conn.is_none() {
            let limit = self.timeout;
            let hello = async {
                self.connect().await?;
                self.until(|l| l.starts_with("WELCOME ")).await
            };
            match timeout(limit, hello).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    self.conn = None;
                    return Err(e);
                }
                Err(_) => {
                    self.conn = None;
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
        }
        Ok(())
    }

    /// Keeps reading pushed messages for `period` (answering nothing).
    /// Returns `false` if the connection ended (a `BYE`, or lost).
    pub async fn listen(&mut self, period: Duration) -> bool {
        if self.conn.is_none() {
            tokio::time::sleep(period).await;
            return false;
        }
        match timeout(period, self.until(|_| false)).await {
            Err(_) => true,
            Ok(_) => {
                self.conn = None;
                false
            }
        }
    }

    /// Drops the connection (the server sees EOF).
    pub fn hang_up(&mut self) {
        self.conn = None;
    }
}
