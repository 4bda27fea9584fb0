//! The disk in the trace and on the timeline page: the operations a crash
//! can undo (through `tokio::fs` and `std::fs` alike), and at a crash what
//! it took away.

#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

use sim_runtime::io::AsyncWriteExt;
use std::time::Duration;

/// The durability bug of issue 36: a directory made by `create_dir_all`
/// and a file in it, the file synced but never the parent; beside it a
/// store written through std, its directory synced once, then a rename
/// over its file never synced. The service then waits to be crashed.
async fn store() {
    sim_runtime::fs::create_dir_all("/data/wal").await.unwrap();
    let mut f = sim_runtime::fs::File::create("/data/wal/0001")
        .await
        .unwrap();
    f.write_all(b"acked").await.unwrap();
    f.sync_all().await.unwrap();
    std::fs::create_dir("/state").unwrap();
    std::fs::File::open("/").unwrap().sync_all().unwrap();
    std::fs::write("/state/meta", b"v1").unwrap();
    std::fs::File::open("/state").unwrap().sync_all().unwrap();
    std::fs::write("/state/meta.tmp", b"v2").unwrap();
    std::fs::rename("/state/meta.tmp", "/state/meta").unwrap();
    std::future::pending::<()>().await
}

/// The text of the file a report's line starting with `prefix` names.
#[cfg(simulation)]
fn named_file(report: &str, prefix: &str) -> String {
    let path = report
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|l| l.split(" (").next())
        .unwrap_or_else(|| panic!("no `{prefix}` line in the report:\n{report}"));
    std::fs::read_to_string(path).unwrap()
}

#[cfg(simulation)]
#[test]
fn the_trace_names_disk_operations_and_what_a_crash_lost() {
    use crate::common::{options, report};
    let mut o = options("disk::lost_entries", file!(), sim::__private::Seeds::One(1));
    // The sleep below must not end before the service has run.
    o.early_timers = Some(false);
    let report = report(o, || async {
        let db = sim::node("db").start(store);
        sim_runtime::time::sleep(Duration::from_millis(100)).await;
        db.crash();
        panic!("planted after the crash");
    });
    // The sweep ran the seed untraced, the rerun traced: the journal
    // changes no decision.
    assert!(
        report.contains(
            "sim: reproduced when run again: yes: the same failure with the same fingerprint"
        ),
        "{report}"
    );
    let r = named_file(&report, "sim: trace: ");
    for words in [
        "DEBUG sim::fs: mkdir node=db path=/data",
        "DEBUG sim::fs: mkdir node=db path=/data/wal",
        "DEBUG sim::fs: create node=db path=/data/wal/0001",
        "DEBUG sim::fs: sync_all node=db path=/data/wal/0001 directory=false",
        "DEBUG sim::fs: sync_all node=db path=/ directory=true",
        "DEBUG sim::fs: sync_all node=db path=/state directory=true",
        "DEBUG sim::fs: rename node=db from=/state/meta.tmp to=/state/meta",
    ] {
        assert!(r.contains(words), "no `{words}` in the trace:\n{r}");
    }
    let crash = r
        .lines()
        .find(|l| l.contains("INFO  sim::fs: crash node=db "))
        .unwrap_or_else(|| panic!("no crash line in the trace:\n{r}"));
    assert!(
        crash.contains(
            "lost=/data/wal: a new directory, its directory not synced since; \
             /state/meta: replaced, its directory not synced since (the old one comes back)"
        ),
        "{crash}"
    );
    // The page draws the crash's losses on the node's lane.
    let html = named_file(&report, "sim: timeline: ");
    assert!(
        html.contains("\"disk lost\",\"the crash of db lost: /data/wal: "),
        "the timeline page lacks it"
    );
    assert!(
        html.contains(",\"sync\",\"db: sync_all node=db path=/state "),
        "the timeline page lacks it"
    );
}

/// A save that never flushes its `File`, read back at once: Tokio's write
/// may still be in its blocking pool (the runtime's `fs/inflight.rs`), and
/// the trace says so where the read missed it, as the page does.
#[cfg(simulation)]
#[test]
fn the_trace_says_when_a_read_missed_a_write_still_in_flight() {
    use crate::common::{options, report};
    let o = options(
        "disk::unflushed_save",
        file!(),
        sim::__private::Seeds::Range(0, 32),
    );
    let report = report(o, || async {
        let mut f = sim_runtime::fs::File::create("/snap").await.unwrap();
        f.write_all(b"1\n").await.unwrap();
        f.write_all(b"2\n").await.unwrap();
        drop(f);
        let read = sim_runtime::fs::read("/snap").await.unwrap();
        assert_eq!(read, b"1\n2\n", "the save is whole");
    });
    let r = named_file(&report, "sim: trace: ");
    assert!(
        r.contains(
            "INFO  sim::fs: unseen: a tokio::fs::File write is still in Tokio's blocking pool, \
             and this look at the disk does not see it (flush the File before another handle \
             reads it) node=main path=/snap bytes=2"
        ),
        "{r}"
    );
    let html = named_file(&report, "sim: timeline: ");
    assert!(
        html.contains(",\"write unseen\",\"main: unseen: "),
        "the timeline page lacks it"
    );
}
