//! A replicated key-value store: one primary, its backups, a line protocol
//! over TCP.
//!
//! The primary (`kv1` in the tests) takes `PUT`s, stores them, and forwards
//! each one to every backup in order. When it acknowledges the client is
//! the whole point:
//!
//! - [`Replication::AckAfterReplicate`]: once every backup stored the
//!   write. A failover to any backup keeps every acknowledged write.
//! - [`Replication::AckBeforeReplicate`] (the planted bug): once the primary
//!   stored it; the backups get it later. A crash of the primary before the
//!   forwarding reached them loses writes the client was told are safe.
//!
//! Both are this one code path; only the moment of the reply differs.
//!
//! Protocol, one request and one reply per line (keys have no spaces, values
//! no newlines):
//!
//! ```text
//! PUT <key> <value>   → OK | ERR <why>
//! GET <key>           → VALUE <value> | NOTFOUND
//! REPL <key> <value>  → OK          (primary → backup)
//! ```
//!
//! A backup is a server without backups: it answers `GET`, `REPL`, and — once
//! promoted by a failover — `PUT`. State lives in memory, so a crashed
//! replica comes back empty.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep, timeout};

/// The port every replica listens on.
pub const PORT: u16 = 7000;

/// When the primary acknowledges a `PUT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replication {
    /// After every backup stored the write (correct).
    AckAfterReplicate,
    /// As soon as the primary stored it (the planted bug).
    AckBeforeReplicate,
}

/// A replica's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The backups' addresses (`"kv2:7000"`); empty for a backup.
    pub backups: Vec<String>,
    pub replication: Replication,
    /// How long a `PUT` waits for the backups before it answers `ERR`, and
    /// how long one forwarding attempt may take.
    pub replication_timeout: Duration,
}

impl Config {
    /// A primary forwarding to `backups`.
    pub fn primary(backups: &[&str], replication: Replication) -> Config {
        Config {
            backups: backups.iter().map(|b| b.to_string()).collect(),
            replication,
            replication_timeout: Duration::from_secs(1),
        }
    }

    /// A backup (or a promoted primary without backups).
    pub fn backup() -> Config {
        Config::primary(&[], Replication::AckAfterReplicate)
    }
}

/// Serves on `0.0.0.0:PORT` until the process ends.
pub async fn serve(config: Config) {
    let listener = TcpListener::bind(("0.0.0.0", PORT))
        .await
        .unwrap_or_else(|e| panic!("kv: cannot listen on port {PORT}: {e}"));
    run(listener, config).await
}

/// Serves on `listener`.
pub async fn run(listener: TcpListener, config: Config) {
    let backups = config
        .backups
        .iter()
        .map(|addr| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(forward(addr.clone(), rx, config.replication_timeout));
            tx
        })
        .collect();
    let replica = Arc::new(Replica {
        store: Mutex::default(),
        backups,
        config,
    });
    loop {
        // Accept errors (too many open files, an aborted handshake) concern
        // one connection, not the server.
        if let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(session(stream, replica.clone()));
        }
    }
}

/// A write on its way to one backup; `done` fires once the backup stored it.
struct Forward {
    key: String,
    value: String,
    done: oneshot::Sender<()>,
}

struct Replica {
    store: Mutex<BTreeMap<String, String>>,
    /// One queue per backup, drained in order by [`forward`].
    backups: Vec<mpsc::UnboundedSender<Forward>>,
    config: Config,
}

async fn session(stream: TcpStream, replica: Arc<Replica>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let reply = replica.handle(&line).await;
        if write.write_all(reply.as_bytes()).await.is_err() {
            break;
        }
    }
}

impl Replica {
    async fn handle(&self, line: &str) -> String {
        let mut parts = line.splitn(3, ' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("GET"), Some(key), None) => match self.store.lock().unwrap().get(key) {
                Some(value) => format!("VALUE {value}\n"),
                None => "NOTFOUND\n".into(),
            },
            (Some("REPL"), Some(key), Some(value)) => {
                self.store.lock().unwrap().insert(key.into(), value.into());
                tracing::info!("stored {key} from the primary");
                "OK\n".into()
            }
            (Some("PUT"), Some(key), Some(value)) => self.put(key, value).await,
            _ => "ERR malformed request\n".into(),
        }
    }

    async fn put(&self, key: &str, value: &str) -> String {
        self.store.lock().unwrap().insert(key.into(), value.into());
        let mut stored = Vec::new();
        for backup in &self.backups {
            let (done, rx) = oneshot::channel();
            let (key, value) = (key.into(), value.into());
            if backup.send(Forward { key, value, done }).is_err() {
                return "ERR replication stopped\n".into();
            }
            stored.push(rx);
        }
        if self.config.replication == Replication::AckBeforeReplicate {
            // The planted bug: the client hears "stored" while the write
            // exists on this machine only.
            tracing::info!("PUT {key} acknowledged (the backups do not have it yet)");
            return "OK\n".into();
        }
        let all = async {
            for rx in stored {
                rx.await.map_err(|_| ())?;
            }
            Ok::<(), ()>(())
        };
        match timeout(self.config.replication_timeout, all).await {
            Ok(Ok(())) => {
                tracing::info!("PUT {key} acknowledged (every backup has it)");
                "OK\n".into()
            }
            _ => {
                tracing::info!("PUT {key} failed: not replicated in time");
                "ERR not replicated\n".into()
            }
        }
    }
}

/// Sends one backup its writes, in order, each until the backup stored it:
/// a failed attempt drops the connection and retries on a new one.
async fn forward(addr: String, mut queue: mpsc::UnboundedReceiver<Forward>, limit: Duration) {
    let mut conn: Option<Client> = None;
    while let Some(write) = queue.recv().await {
        loop {
            let attempt = async {
                if conn.is_none() {
                    conn = Some(Client::connect(&addr).await?);
                }
                let c = conn.as_mut().expect("connected above");
                c.call(format!("REPL {} {}\n", write.key, write.value))
                    .await
            };
            match timeout(limit, attempt).await {
                Ok(Ok(reply)) if reply == "OK" => break,
                _ => {
                    conn = None;
                    sleep(limit / 10).await;
                }
            }
        }
        // The PUT may have given up waiting; the write is stored regardless.
        let _ = write.done.send(());
    }
}

/// A connection to a replica.
pub struct Client {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl Client {
    pub async fn connect(addr: &str) -> io::Result<Client> {
        let (read, write) = TcpStream::connect(addr).await?.into_split();
        Ok(Client {
            lines: BufReader::new(read).lines(),
            write,
        })
    }

    /// Stores `value` under `key`; `Ok` means the replica acknowledged it.
    pub async fn put(&mut self, key: &str, value: &str) -> io::Result<()> {
        check_word("key", key)?;
        if value.contains('\n') {
            return Err(invalid("a value has no newline"));
        }
        match self.call(format!("PUT {key} {value}\n")).await? {
            r if r == "OK" => Ok(()),
            r => Err(io::Error::other(format!("PUT {key}: {r}"))),
        }
    }

    /// The value under `key`, if any.
    pub async fn get(&mut self, key: &str) -> io::Result<Option<String>> {
        check_word("key", key)?;
        let reply = self.call(format!("GET {key}\n")).await?;
        if reply == "NOTFOUND" {
            return Ok(None);
        }
        match reply.strip_prefix("VALUE ") {
            Some(value) => Ok(Some(value.to_string())),
            None => Err(io::Error::other(format!("GET {key}: {reply}"))),
        }
    }

    async fn call(&mut self, request: String) -> io::Result<String> {
        self.write.write_all(request.as_bytes()).await?;
        match self.lines.next_line().await? {
            Some(reply) => Ok(reply),
            None => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

fn check_word(what: &str, s: &str) -> io::Result<()> {
    if s.is_empty() || s.contains([' ', '\n']) {
        return Err(invalid(&format!("a {what} is one word: {s:?}")));
    }
    Ok(())
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why.to_string())
}
