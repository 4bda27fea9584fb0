//! Injected faults: each one call, recorded in the fingerprint, with a
//! scripted form through `sim::at` (simulation only).

use crate::durability::{on, run, sync_dir};
use crate::errno::*;
use crate::{assert_err, assert_errno};
use sim_runtime::fs::{self, File, OpenOptions};
use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::sim;
use sim_runtime::sim::fs::{Faults, IoOp};
use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

#[test]
fn eio_on_reads_under_a_path() {
    claims!("fs.eio.read");
    run(1, async {
        let me = sim::current_node();
        fs::create_dir("/bad").await.unwrap();
        fs::write("/bad/f", b"x").await.unwrap();
        fs::write("/tmp/g", b"y").await.unwrap();
        sim::fs::fail_io(me, IoOp::Read, Some(Path::new("/bad")));
        // EIO's kind is not a stable ErrorKind yet: compare the errno.
        assert_errno(fs::read("/bad/f").await, EIO);
        let mut f = File::open("/bad/f").await.unwrap();
        let mut buf = [0; 1];
        assert_errno(f.read(&mut buf).await, EIO);
        assert_eq!(
            fs::read("/tmp/g").await.unwrap(),
            b"y",
            "other paths read fine"
        );
        fs::write("/bad/f", b"writes still work").await.unwrap();
        sim::fs::heal_io(me, IoOp::Read);
        assert_eq!(fs::read("/bad/f").await.unwrap(), b"writes still work");
    });
}

#[test]
fn eio_on_writes_for_a_whole_node() {
    claims!("fs.eio.write");
    run(2, async {
        let me = sim::current_node();
        let mut f = File::create("/tmp/f").await.unwrap();
        sim::fs::fail_io(me, IoOp::Write, None);
        // As Tokio's: the write is handed over, and its error is what the
        // next write or flush returns.
        f.write_all(b"x").await.unwrap();
        assert_errno(f.flush().await, EIO);
        assert_errno(f.set_len(3).await, EIO);
        assert_errno(fs::write("/tmp/g", b"x").await, EIO);
        sim::fs::clear_faults(me);
        f.write_all(b"ok").await.unwrap();
        f.flush().await.unwrap();
        assert_eq!(fs::read("/tmp/f").await.unwrap(), b"ok");
        assert_eq!(sim::fs::faults(me), Faults::default());
    });
}

#[test]
fn eio_on_sync_loses_the_writeback() {
    claims!("fs.eio.sync");
    run(3, async {
        let db = sim::node("db").build();
        on(db, async move {
            let mut f = File::create("/tmp/f").await.unwrap();
            sync_dir("/tmp").await;
            f.write_all(b"acked?").await.unwrap();
            sim::fs::fail_io(db, IoOp::Sync, Some(Path::new("/tmp/f")));
            assert_errno(f.sync_data().await, EIO);
            sim::fs::heal_io(db, IoOp::Sync);
            // The retry succeeds, but the failed sync dropped the pages.
            f.sync_data().await.unwrap();
            assert_eq!(fs::read("/tmp/f").await.unwrap(), b"acked?");
        })
        .await;
        sim::crash(db);
        sim::revive(db);
        on(db, async {
            assert_eq!(fs::read("/tmp/f").await.unwrap(), b"")
        })
        .await;
    });
}

#[test]
fn a_failing_sync_fails_once() {
    claims!("fs.sync.fail-once");
    run(4, async {
        let me = sim::current_node();
        let f = File::create("/tmp/f").await.unwrap();
        sim::fs::fail_syncs(me, 1);
        assert_errno(f.sync_all().await, EIO);
        f.sync_all().await.unwrap();
        assert_eq!(sim::fs::faults(me).failing_syncs, 0);
    });
}

#[test]
fn capacity_gives_enospc() {
    claims!("fs.enospc");
    run(5, async {
        let me = sim::current_node();
        sim::fs::set_capacity(me, Some(8));
        let mut f = File::create("/tmp/f").await.unwrap();
        // Tokio's write takes all ten bytes; its blocking pool writes 8 and
        // hits ENOSPC, which the next write returns.
        assert_eq!(f.write(b"0123456789").await.unwrap(), 10);
        assert_err(f.write(b"x").await, ErrorKind::StorageFull, ENOSPC);
        assert_err(
            fs::write("/tmp/g", b"x").await,
            ErrorKind::StorageFull,
            ENOSPC,
        );
        assert_eq!(sim::fs::used_bytes(me), 8);
        fs::remove_file("/tmp/f").await.unwrap();
        drop(f);
        assert_eq!(sim::fs::used_bytes(me), 0, "removing frees the room");
        fs::write("/tmp/g", b"fits").await.unwrap();
    });
}

#[test]
fn scripted_fault_fires_at_its_virtual_time() {
    run(6, async {
        let me = sim::current_node();
        sim::at(Duration::from_secs(5), move || {
            sim::fs::set_capacity(me, Some(0));
        });
        fs::write("/tmp/early", b"x")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        sim_runtime::time::sleep(Duration::from_secs(6)).await;
        assert_err(
            fs::write("/tmp/late", b"x").await,
            ErrorKind::StorageFull,
            ENOSPC,
        );
        assert_eq!(sim::fs::faults(me).capacity_bytes, Some(0));
    });
}

#[test]
fn fired_faults_enter_the_fingerprint() {
    // The same program, the same plan; only whether the read hits the
    // faulty path differs, so only the fired-fault record differs.
    let fingerprint = |path: &'static str| {
        run(7, async move {
            let me = sim::current_node();
            fs::write("/tmp/a", b"a").await.unwrap();
            fs::write("/tmp/b", b"b").await.unwrap();
            sim::fs::fail_io(me, IoOp::Read, Some(Path::new("/tmp/a")));
            let _ = fs::read(path).await;
            sim::fingerprint()
        })
    };
    assert_eq!(fingerprint("/tmp/a"), fingerprint("/tmp/a"));
    assert_ne!(fingerprint("/tmp/a"), fingerprint("/tmp/b"));
}

#[test]
fn fault_plans_enter_the_fingerprint() {
    let fingerprint = |latency_ms: u64| {
        run(8, async move {
            sim::fs::set_faults(
                sim::current_node(),
                Faults {
                    latency: Duration::from_millis(latency_ms),
                    ..Faults::default()
                },
            );
            sim::fingerprint()
        })
    };
    assert_ne!(fingerprint(1), fingerprint(2));
}

#[test]
fn o_dsync_writes_are_durable_at_once() {
    claims!("fs.dsync");
    run(9, async {
        let db = sim::node("db").build();
        on(db, async {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .custom_flags(sim_fs_flags::O_DSYNC)
                .open("/tmp/f")
                .await
                .unwrap();
            sync_dir("/tmp").await;
            f.write_all(b"durable").await.unwrap();
        })
        .await;
        sim::crash(db);
        sim::revive(db);
        on(db, async {
            assert_eq!(fs::read("/tmp/f").await.unwrap(), b"durable")
        })
        .await;
    });
}

/// Linux's flag values (x86_64), as a program would take them from libc.
mod sim_fs_flags {
    pub const O_DSYNC: i32 = 0o10_000;
}

#[test]
#[should_panic(expected = "must be absolute")]
fn eio_rules_need_absolute_paths() {
    run(10, async {
        sim::fs::fail_io(sim::current_node(), IoOp::Read, Some(Path::new("relative")));
    });
}
