//! A write-ahead log in segments: records are appended to `seg-<n>`, a
//! new file every [`SEGMENT`] records, and acknowledged once durable. A new
//! segment's records are durable only when both the file and the directory
//! that names it are synced. The buggy log acknowledges the segment's first
//! record once the file is synced and syncs the directory right after the
//! acknowledgement, off the critical path: a crash that lands between the
//! two fsyncs loses the whole new segment, an acknowledged record with it.
//! The fix syncs the directory before the acknowledgement. A new log's
//! first segment is made durable when the log opens, so the window opens
//! only where a segment rolls over ([`SEGMENT`] records in).

use super::Variant;
use std::io;
use std::path::{Path, PathBuf};
use tokio::fs::{self, File, OpenOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

pub const PORT: u16 = 7300;
/// Records per segment file.
pub const SEGMENT: usize = 16;
/// Where the log lives on its node's disk.
pub const DIR: &str = "/data/wal";

/// Makes a directory's entries durable (on Linux: open it, fsync it).
async fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).await?.sync_all().await
}

fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("seg-{n:06}"))
}

/// An open log: the segment being written and how many records it holds.
pub struct Log {
    dir: PathBuf,
    file: Option<File>,
    segment: u64,
    in_segment: usize,
    variant: Variant,
}

impl Log {
    /// Opens the log in `dir` (created, with every ancestor synced) and
    /// recovers its records; appends go to a new segment.
    pub async fn open(dir: &Path, variant: Variant) -> io::Result<(Log, Vec<String>)> {
        fs::create_dir_all(dir).await?;
        for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
            sync_dir(d).await?;
        }
        let mut names = Vec::new();
        let mut entries = fs::read_dir(dir).await?;
        while let Some(e) = entries.next_entry().await? {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        let mut records = Vec::new();
        let mut segment = 0;
        for name in names {
            let Some(n) = name.strip_prefix("seg-").and_then(|n| n.parse().ok()) else {
                continue;
            };
            segment = segment.max(n);
            let text = fs::read_to_string(dir.join(&name)).await?;
            // A line cut short by the crash (no newline) was never acked.
            let whole = text.rfind('\n').map_or("", |at| &text[..at]);
            records.extend(whole.lines().map(str::to_string));
        }
        let mut log = Log {
            dir: dir.to_path_buf(),
            file: None,
            segment,
            in_segment: SEGMENT,
            variant,
        };
        if segment == 0 {
            // A new log: its first segment, durable before any append.
            log.roll().await?;
            log.file.as_mut().expect("just opened").sync_all().await?;
            sync_dir(dir).await?;
        }
        Ok((log, records))
    }

    /// Opens the next segment; its name is not durable until the directory
    /// is synced.
    async fn roll(&mut self) -> io::Result<()> {
        self.segment += 1;
        let path = segment_path(&self.dir, self.segment);
        self.file = Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .await?,
        );
        self.in_segment = 0;
        Ok(())
    }

    /// Appends `record`; when this returns, it may be acknowledged.
    pub async fn append(&mut self, record: &str) -> io::Result<()> {
        let mut new_segment = false;
        if self.in_segment == SEGMENT {
            self.roll().await?;
            sim::sometimes!(true, "a segment rolls over");
            new_segment = true;
        }
        let file = self.file.as_mut().expect("a segment is open");
        file.write_all(format!("{record}\n").as_bytes()).await?;
        file.sync_data().await?;
        self.in_segment += 1;
        if new_segment && self.variant == Variant::Fixed {
            sync_dir(&self.dir).await?;
        }
        Ok(())
    }

    /// What the buggy log does after the acknowledgement of a segment's
    /// first record: the directory sync it deferred.
    pub async fn after_ack(&mut self) -> io::Result<()> {
        // BUG: until this sync the new segment's name is not durable; the
        // record acknowledged a moment ago dies with it in a crash.
        if self.variant == Variant::Buggy && self.in_segment == 1 {
            sync_dir(&self.dir).await?;
        }
        Ok(())
    }
}

/// The log service: `APPEND <record>` → `OK`; `READ` → every record, then
/// `END`. One client at a time.
pub async fn serve(variant: Variant) {
    let (mut log, mut records) = Log::open(Path::new(DIR), variant)
        .await
        .expect("the log opens");
    let listener = TcpListener::bind(("0.0.0.0", PORT))
        .await
        .expect("the log's port is free");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (r, mut w) = stream.into_split();
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(record) = line.strip_prefix("APPEND ") {
                log.append(record).await.expect("the disk works");
                records.push(record.to_string());
                if w.write_all(b"OK\n").await.is_err() {
                    break;
                }
                log.after_ack().await.expect("the disk works");
            } else if line == "READ" {
                let all = records.iter().map(|r| format!("{r}\n")).collect::<String>();
                if w.write_all(format!("{all}END\n").as_bytes()).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// A connection to the log, if it answers within a few tries.
pub async fn connect(addr: &str) -> Option<TcpStream> {
    for _ in 0..20 {
        let timeout = std::time::Duration::from_millis(50);
        if let Ok(Ok(s)) = tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            return Some(s);
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    None
}

/// Records the client appends.
pub const RECORDS: usize = 64;
/// The nemesis crashes the machine in a given millisecond with
/// probability 1 in this.
pub const CRASH_ODDS: u64 = 50;

/// A client appends records with pauses between them while a nemesis, each
/// millisecond, crashes the log's machine with p = 1/[`CRASH_ODDS`], once
/// (drawn as the run goes, so exploration can branch from a moment and
/// crash there); the machine comes back and every acknowledged record must
/// be read back. The client marks its progress (`sim::state!` of the
/// records acknowledged) and the log its rollovers (`sim::sometimes!`).
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    use std::cell::Cell;
    use std::time::Duration;
    let wal = sim::node("wal")
        .ip("10.0.3.1")
        .start(move || serve(variant));
    // Each disk operation takes two milliseconds.
    sim::fs::set_latency(&wal, Duration::from_millis(2));
    let done = Cell::new(false);
    let nemesis = async {
        let mut rng = sim::Rng::from_seed(sim::fork_seed("torn_log.nemesis"));
        while !done.get() {
            tokio::time::sleep(Duration::from_millis(1)).await;
            if rng.below(CRASH_ODDS) == 0 {
                wal.crash();
                return;
            }
        }
    };
    let addr = format!("wal:{PORT}");
    let client = async {
        let mut rng = sim::Rng::from_seed(sim::fork_seed("torn_log.workload"));
        let mut acked = Vec::new();
        let mut stream = connect(&addr).await.map(BufReader::new);
        for i in 0..RECORDS {
            let Some(stream) = stream.as_mut() else {
                break; // the machine died before the client got in
            };
            let record = format!("r{i}");
            if stream
                .get_mut()
                .write_all(format!("APPEND {record}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
            let mut line = String::new();
            let answer =
                tokio::time::timeout(Duration::from_millis(100), stream.read_line(&mut line));
            match answer.await {
                Ok(Ok(_)) if line == "OK\n" => acked.push(record),
                _ => break, // the machine died with the request
            }
            sim::state!("records", acked.len());
            tokio::time::sleep(Duration::from_millis(rng.below(40))).await;
        }
        done.set(true);
        acked
    };
    let ((), acked) = tokio::join!(nemesis, client);
    if wal.is_alive() {
        wal.crash();
    }
    wal.restart();
    let mut stream = BufReader::new(connect(&addr).await.expect("the log is back"));
    stream.get_mut().write_all(b"READ\n").await.expect("read");
    let mut recovered = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).await.expect("the log answers");
        match line.trim_end() {
            "END" | "" => break,
            r => recovered.push(r.to_string()),
        }
    }
    for r in &acked {
        assert!(
            recovered.contains(r),
            "acknowledged record {r} lost in the crash (recovered {} of {} acked)",
            recovered.len(),
            acked.len()
        );
    }
}
