//! A key-value store on an append-only log: `SET k v` appends `k=v` to
//! `log` and syncs it before it answers `OK`; `GET k` answers the value or
//! `NONE`. When the log holds [`COMPACT_AT`] records it is compacted: the
//! live keys are written to `log.tmp`, which is renamed over `log` (and the
//! directory synced). The buggy store never syncs `log.tmp` before the
//! rename: until the next `SET` syncs the new log, a crash leaves the
//! renamed file without its data, and every acknowledged key with it. The
//! fix syncs `log.tmp` first.
//!
//! A rare fault after a rare state: compaction happens in about one run in
//! forty (the client's writes must reach [`COMPACT_AT`] among its reads),
//! and the crash, which a nemesis draws as the run goes, must land in the
//! few milliseconds between the rename and the next `SET`.

use super::Variant;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use tokio::fs::{self, File, OpenOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

pub const PORT: u16 = 7700;
/// Records in the log that start a compaction.
pub const COMPACT_AT: usize = 38;
/// Where the store lives on its node's disk.
pub const DIR: &str = "/data/kv";

async fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).await?.sync_all().await
}

/// The store: its keys, its log and how many records the log holds.
struct Store {
    dir: PathBuf,
    keys: BTreeMap<String, String>,
    log: File,
    records: usize,
    variant: Variant,
}

impl Store {
    async fn open(dir: &Path, variant: Variant) -> io::Result<Store> {
        fs::create_dir_all(dir).await?;
        for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
            sync_dir(d).await?;
        }
        let path = dir.join("log");
        let text = fs::read_to_string(&path).await.unwrap_or_default();
        let mut keys = BTreeMap::new();
        let mut records = 0;
        // A line cut short by a crash (no newline) was never acknowledged.
        let whole = text.rfind('\n').map_or("", |at| &text[..at]);
        for line in whole.lines() {
            if let Some((k, v)) = line.split_once('=') {
                keys.insert(k.to_string(), v.to_string());
                records += 1;
            }
        }
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .await?;
        log.sync_all().await?;
        sync_dir(dir).await?;
        Ok(Store {
            dir: dir.to_path_buf(),
            keys,
            log,
            records,
            variant,
        })
    }

    async fn set(&mut self, k: &str, v: &str) -> io::Result<()> {
        self.log.write_all(format!("{k}={v}\n").as_bytes()).await?;
        self.log.sync_data().await?;
        self.keys.insert(k.to_string(), v.to_string());
        self.records += 1;
        if self.records >= COMPACT_AT {
            self.compact().await?;
        }
        Ok(())
    }

    /// Rewrites the log with one record per live key.
    async fn compact(&mut self) -> io::Result<()> {
        sim::sometimes!(true, "the log is compacted");
        let tmp = self.dir.join("log.tmp");
        let mut f = File::create(&tmp).await?;
        let text: String = self
            .keys
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        f.write_all(text.as_bytes()).await?;
        if self.variant == Variant::Fixed {
            f.sync_all().await?;
        }
        // BUG (buggy variant): `log.tmp`'s data is not durable, and the
        // rename makes it the log.
        fs::rename(&tmp, self.dir.join("log")).await?;
        sync_dir(&self.dir).await?;
        self.log = OpenOptions::new()
            .append(true)
            .open(self.dir.join("log"))
            .await?;
        self.records = self.keys.len();
        Ok(())
    }
}

/// The store's service: `SET k v` → `OK`, `GET k` → the value or `NONE`.
pub async fn serve(variant: Variant) {
    let mut store = Store::open(Path::new(DIR), variant)
        .await
        .expect("the store opens");
    let listener = TcpListener::bind(("0.0.0.0", PORT))
        .await
        .expect("the store's port is free");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (r, mut w) = stream.into_split();
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let words: Vec<&str> = line.split(' ').collect();
            let answer = match words.as_slice() {
                ["SET", k, v] => {
                    store.set(k, v).await.expect("the disk works");
                    "OK".to_string()
                }
                ["GET", k] => store.keys.get(*k).cloned().unwrap_or("NONE".into()),
                _ => break,
            };
            if w.write_all(format!("{answer}\n").as_bytes()).await.is_err() {
                break;
            }
        }
    }
}

/// Operations the client makes.
pub const OPS: usize = 60;

/// A client sets and gets four keys, an operation every few milliseconds
/// (a set or a get, one each in two); a nemesis, every 3 ms, crashes the
/// store's machine with p = 1/80, once. After the crash the machine comes
/// back and every key must hold the last value acknowledged for it.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    use std::cell::Cell;
    use std::time::Duration;
    let kv = sim::node("kv").ip("10.0.7.1").start(move || serve(variant));
    let crashed = Cell::new(false);
    let done = Cell::new(false);
    let nemesis = async {
        let mut rng = sim::Rng::from_seed(sim::fork_seed("nemesis"));
        while !done.get() {
            tokio::time::sleep(Duration::from_millis(3)).await;
            if rng.below(80) == 0 {
                kv.crash();
                crashed.set(true);
                return;
            }
        }
    };
    let addr = format!("kv:{PORT}");
    let client = async {
        let mut rng = sim::Rng::from_seed(sim::fork_seed("workload"));
        let mut acked: BTreeMap<String, String> = BTreeMap::new();
        let mut stream = super::torn_log::connect(&addr).await.map(BufReader::new);
        let mut writes = 0u32;
        for i in 0..OPS {
            let Some(s) = stream.as_mut() else { break };
            let key = format!("k{}", rng.below(4));
            let write = rng.below(2) == 0;
            let request = if write {
                format!("SET {key} v{i}\n")
            } else {
                format!("GET {key}\n")
            };
            if s.get_mut().write_all(request.as_bytes()).await.is_err() {
                break;
            }
            let mut line = String::new();
            match tokio::time::timeout(Duration::from_millis(100), s.read_line(&mut line)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => break, // the machine died with the request
            }
            if write {
                acked.insert(key, format!("v{i}"));
                writes += 1;
                sim::state!("writes", writes / 4);
            }
            tokio::time::sleep(Duration::from_millis(1 + rng.below(4))).await;
        }
        done.set(true);
        acked
    };
    let ((), acked) = tokio::join!(nemesis, client);
    if !crashed.get() {
        return;
    }
    kv.restart();
    let mut s = BufReader::new(
        super::torn_log::connect(&addr)
            .await
            .expect("the store is back"),
    );
    for (key, value) in &acked {
        s.get_mut()
            .write_all(format!("GET {key}\n").as_bytes())
            .await
            .expect("get");
        let mut line = String::new();
        s.read_line(&mut line).await.expect("the store answers");
        assert_eq!(
            line.trim_end(),
            value,
            "acknowledged {key}={value} lost in the crash"
        );
    }
}
