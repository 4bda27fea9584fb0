//! The same service on real Tokio and the real disk (a temporary
//! directory): what the simulation test relies on, checked against the
//! real thing (no crash: a clean close keeps every write).
#![cfg(not(simulation))]

use rocks::{Rocks, Sync};

#[test]
fn open_put_flush_close_reopen_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            let db = Rocks::open(&dir).await.unwrap();
            db.put("flushed", "1", Sync::No).await.unwrap();
            db.flush().await.unwrap();
            db.put("synced", "2", Sync::Yes).await.unwrap();
            db.put("buffered", "3", Sync::No).await.unwrap();
            drop(db);
            let db = Rocks::open(&dir).await.unwrap();
            for (k, v) in [("flushed", "1"), ("synced", "2"), ("buffered", "3")] {
                assert_eq!(db.get(k).await.unwrap().as_deref(), Some(v), "{k}");
            }
        });
    assert!(tmp.path().join("rocksdb").join("CURRENT").exists());
}
