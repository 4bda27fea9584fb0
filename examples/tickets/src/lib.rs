//! A ticket server: every `next` request gets the next number, and no
//! number is ever given twice, across crashes. The last number given is
//! kept in a file, written before the answer.
//!
//! Its invariants are written with antithesis_sdk's macros, as a service
//! tested on that platform has them. Nothing here knows of the simulation:
//! under `cargo sim test` the same macros are the harness's `always!` and
//! `sometimes!` sites, counted in its coverage and exploration.

use antithesis_sdk::{assert_always, assert_reachable, assert_sometimes};
use std::path::{Path, PathBuf};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Whether the number is on disk before the client hears it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Written and synced, then answered: the fix.
    SyncThenAnswer,
    /// Written, answered, never synced: a crash can take back numbers
    /// already given (the planted bug).
    AnswerUnsynced,
}

/// The last number given, as the file holds it (0: none yet).
async fn recover(path: &Path) -> std::io::Result<u64> {
    match tokio::fs::read_to_string(path).await {
        Ok(s) => Ok(s.trim().parse().unwrap_or(0)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// Makes `dir`'s entries durable (a new or renamed file in it).
async fn sync_dir(dir: &Path) -> std::io::Result<()> {
    tokio::fs::File::open(dir).await?.sync_all().await
}

async fn persist(path: &Path, n: u64, durability: Durability) -> std::io::Result<()> {
    let text = format!("{n}\n");
    match durability {
        Durability::AnswerUnsynced => tokio::fs::write(path, text).await,
        Durability::SyncThenAnswer => {
            // A crash keeps the old number or the new one, never an empty
            // file: the new one is written aside, synced, renamed over the
            // old, and the rename made durable.
            let tmp = path.with_extension("tmp");
            let mut f = tokio::fs::File::create(&tmp).await?;
            f.write_all(text.as_bytes()).await?;
            f.sync_all().await?;
            tokio::fs::rename(&tmp, path).await?;
            sync_dir(path.parent().unwrap_or(Path::new("/"))).await
        }
    }
}

/// Serves `next` requests on `port`, numbers kept in `dir/last`.
pub async fn serve(port: u16, dir: PathBuf, durability: Durability) -> std::io::Result<()> {
    tokio::fs::create_dir_all(&dir).await?;
    if durability == Durability::SyncThenAnswer {
        // Every directory made on the way is durable too (the simulation
        // found this: a crash took back a new `/data` with all below it).
        for d in dir.ancestors() {
            sync_dir(d).await?;
        }
    }
    let path = dir.join("last");
    let mut last = recover(&path).await?;
    assert_sometimes!(last > 0, "a restart recovered the numbers given");
    let listener = TcpListener::bind(("0.0.0.0", port)).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<tokio::sync::oneshot::Sender<u64>>(16);
    // One task owns the counter: each request is numbered and persisted in
    // turn.
    tokio::spawn(async move {
        while let Some(reply) = rx.recv().await {
            let n = last + 1;
            if persist(&path, n, durability).await.is_err() {
                continue;
            }
            assert_always!(
                n > last,
                "numbers only go up",
                &serde_json::json!({ "n": n })
            );
            last = n;
            let _ = reply.send(n);
        }
    });
    loop {
        let (stream, _) = listener.accept().await?;
        let tx = tx.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.trim() != "next" {
                    assert_reachable!("a request that is not `next`");
                    let _ = w.write_all(b"error\n").await;
                    continue;
                }
                let (reply, answer) = tokio::sync::oneshot::channel();
                if tx.send(reply).await.is_err() {
                    return;
                }
                let Ok(n) = answer.await else { return };
                if w.write_all(format!("{n}\n").as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// A client: one connection, one number per [`Client::next`].
pub struct Client {
    lines: tokio::io::Lines<BufReader<tokio::net::tcp::OwnedReadHalf>>,
    w: tokio::net::tcp::OwnedWriteHalf,
}

impl Client {
    pub async fn connect(addr: &str) -> std::io::Result<Client> {
        let (r, w) = tokio::net::TcpStream::connect(addr).await?.into_split();
        Ok(Client {
            lines: BufReader::new(r).lines(),
            w,
        })
    }

    /// The next number, or the request's error (the server may have
    /// crashed: a number not heard was never given to this client).
    pub async fn next(&mut self) -> std::io::Result<u64> {
        self.w.write_all(b"next\n").await?;
        let line = self.lines.next_line().await?.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the server went away")
        })?;
        line.trim()
            .parse()
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, line))
    }
}
