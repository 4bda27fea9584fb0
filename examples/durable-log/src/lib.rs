//! A tiny append-only log service, written against `tokio::fs` as usual.
//!
//! Clients send records over a channel; the service appends each to
//! `<dir>/log` as a length-prefixed frame and acknowledges it. The promise
//! is: **an acknowledged record survives a crash of the machine**.
//!
//! [`Durability::AckBeforeSync`] is the planted bug, a "group commit" that
//! acknowledges each record as soon as it is written to the page cache and
//! calls `sync_data` only every [`GROUP`] records — and, like most code
//! that was only ever tested without crashes, never syncs the directory
//! that holds the new file. [`Durability::SyncBeforeAck`] is the fix: the
//! directories on the log's path are synced once at open (so the file's
//! name is durable), and every record is synced before it is acknowledged.
//!
//! Without a crash both behave identically, so ordinary tests pass; the
//! simulation test (`tests/sim.rs`) crashes the machine at a seeded moment
//! and finds acknowledged records missing.

use std::io;
use std::path::{Path, PathBuf};
use tokio::fs::{self, File, OpenOptions};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// Records the buggy log writes between two syncs.
pub const GROUP: usize = 4;

/// When the log acknowledges a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// The planted bug: ack once written, sync every [`GROUP`] records,
    /// never sync the directory.
    AckBeforeSync,
    /// The fix: sync the directory entries at open, sync each record, then
    /// ack.
    SyncBeforeAck,
}

/// A request to the service: a record and where to acknowledge it.
pub type Append = (Vec<u8>, oneshot::Sender<()>);

/// The log file of a log kept in `dir`.
pub fn log_path(dir: &Path) -> PathBuf {
    dir.join("log")
}

/// Makes a directory's entries durable (on Linux: open it, fsync it).
async fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).await?.sync_all().await
}

/// An open log.
pub struct Log {
    file: File,
    durability: Durability,
    unsynced: usize,
}

impl Log {
    /// Opens (creating if needed) the log in `dir`.
    pub async fn open(dir: &Path, durability: Durability) -> io::Result<Log> {
        fs::create_dir_all(dir).await?;
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(log_path(dir))
            .await?;
        if durability == Durability::SyncBeforeAck {
            // A new file or directory exists after a crash only once the
            // directory holding its name is synced, and `create_dir_all`
            // may have created any directory on the path: sync them all,
            // deepest first. (The first version synced only `dir` and its
            // parent; the simulation found the log lost with `/data`.)
            for d in dir.ancestors() {
                if !d.as_os_str().is_empty() {
                    sync_dir(d).await?;
                }
            }
        }
        Ok(Log {
            file,
            durability,
            unsynced: 0,
        })
    }

    /// Appends one record; when this returns, the record is acknowledged.
    pub async fn append(&mut self, record: &[u8]) -> io::Result<()> {
        let len = u32::try_from(record.len()).expect("a record fits a u32 length");
        let mut frame = Vec::with_capacity(4 + record.len());
        frame.extend_from_slice(&len.to_le_bytes());
        frame.extend_from_slice(record);
        self.file.write_all(&frame).await?;
        match self.durability {
            Durability::AckBeforeSync => {
                // Tokio's `File` hands a write to its blocking pool and
                // returns before the bytes reach the kernel; `flush` waits
                // for them. Without it the log would ack records that are
                // not even in the page cache, and a reader after a drop
                // could miss the last one (CI saw it once, on a real disk).
                self.file.flush().await?;
                self.unsynced += 1;
                if self.unsynced == GROUP {
                    self.file.sync_data().await?;
                    self.unsynced = 0;
                }
            }
            Durability::SyncBeforeAck => self.file.sync_data().await?,
        }
        Ok(())
    }
}

/// The service: appends each request's record, then acknowledges it.
/// Returns when every client has gone.
pub async fn serve(
    dir: PathBuf,
    durability: Durability,
    mut requests: mpsc::Receiver<Append>,
) -> io::Result<()> {
    let mut log = Log::open(&dir, durability).await?;
    while let Some((record, ack)) = requests.recv().await {
        log.append(&record).await?;
        let _ = ack.send(());
    }
    Ok(())
}

/// Reads back every whole record of the log in `dir` (none if the log does
/// not exist); a frame cut short by a crash ends the log.
pub async fn recover(dir: &Path) -> io::Result<Vec<Vec<u8>>> {
    let bytes = match fs::read(log_path(dir)).await {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut records = Vec::new();
    let mut rest = &bytes[..];
    while rest.len() >= 4 {
        let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        let Some(record) = rest.get(4..4 + len) else {
            break;
        };
        records.push(record.to_vec());
        rest = &rest[4 + len..];
    }
    Ok(records)
}

/// Checks the promise: every acknowledged record was recovered, in order.
pub fn check(acked: &[Vec<u8>], recovered: &[Vec<u8>]) -> Result<(), String> {
    if recovered.starts_with(acked) {
        Ok(())
    } else {
        Err(format!(
            "lost acknowledged data: {} records acknowledged, {} recovered",
            acked.len(),
            recovered.len()
        ))
    }
}
