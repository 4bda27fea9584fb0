//! The log is an ordinary Tokio service: without crashes both variants
//! keep every record, in production on a real temporary directory and
//! under simulation on the simulated disk.

use durable_log::{recover, Durability, Log};
use std::path::PathBuf;

fn round_trip(durability: Durability) {
    #[cfg(not(simulation))]
    let tmp = tempfile::tempdir().unwrap();
    #[cfg(not(simulation))]
    let dir: PathBuf = tmp.path().join("log");
    #[cfg(simulation)]
    let dir = PathBuf::from("/data/log");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            let mut log = Log::open(&dir, durability).await.unwrap();
            for r in ["a", "bb", "", "dddd", "e"] {
                log.append(r.as_bytes()).await.unwrap();
            }
            drop(log);
            let records = recover(&dir).await.unwrap();
            assert_eq!(records, [&b"a"[..], b"bb", b"", b"dddd", b"e"]);
            // Reopening appends after what is there.
            let mut log = Log::open(&dir, durability).await.unwrap();
            log.append(b"f").await.unwrap();
            assert_eq!(recover(&dir).await.unwrap().len(), 6);
        });
}

#[test]
fn buggy_log_round_trips_without_crashes() {
    round_trip(Durability::AckBeforeSync);
}

#[test]
fn fixed_log_round_trips_without_crashes() {
    round_trip(Durability::SyncBeforeAck);
}
