//! `std::fs` and `tokio::fs` on one node are one disk (simulation only: in
//! production both are the real disk, trivially), and the crash model
//! applies to what `std::fs` writes. tests/interposers/std_fs.rs has the
//! first cases of each; these go further.

use crate::durability::{on, run};
use sim_runtime::fs as tfs;
use sim_runtime::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use sim_runtime::sim;
use std::fs;
use std::io::{ErrorKind, Read, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};

/// Syncs a directory through std (open it, `fsync`).
fn std_sync_dir(path: &str) {
    fs::File::open(path).unwrap().sync_all().unwrap();
}

#[test]
fn what_std_writes_tokio_reads_and_back_in_one_test() {
    run(31, async {
        // 1. A file std made, read and extended through tokio.
        fs::create_dir_all("/data/a").unwrap();
        fs::write("/data/a/one", b"std").unwrap();
        assert_eq!(tfs::read("/data/a/one").await.unwrap(), b"std");
        let mut t = tfs::OpenOptions::new()
            .append(true)
            .open("/data/a/one")
            .await
            .unwrap();
        t.write_all(b"+tokio").await.unwrap();
        t.flush().await.unwrap();
        assert_eq!(fs::read("/data/a/one").unwrap(), b"std+tokio");

        // 2. One file open through both at once: each sees the other's
        //    writes at once (one page cache), each keeps its own cursor.
        let mut s = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/data/a/one")
            .unwrap();
        let mut t = tfs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/data/a/one")
            .await
            .unwrap();
        s.write_all(b"STD").unwrap();
        let mut buf = [0; 3];
        t.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"STD", "tokio's cursor was at 0");
        t.write_all(b"+T").await.unwrap();
        t.flush().await.unwrap();
        let mut rest = String::new();
        s.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "+Tokio", "std's cursor was at 3");
        t.set_len(4).await.unwrap();
        assert_eq!(s.metadata().unwrap().len(), 4);
        s.write_all_at(b"!", 6).unwrap();
        t.seek(SeekFrom::Start(0)).await.unwrap();
        let mut all = Vec::new();
        t.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"STD+\0\0!");

        // 3. Names: tokio makes, std renames, links and lists; tokio sees it.
        tfs::create_dir("/data/b").await.unwrap();
        tfs::write("/data/b/x", b"x").await.unwrap();
        tfs::set_permissions("/data/b/x", std::fs::Permissions::from_mode(0o600))
            .await
            .unwrap();
        let m = fs::metadata("/data/b/x").unwrap();
        assert_eq!(
            (m.mode() & 0o777, m.ino()),
            (0o600, tfs::metadata("/data/b/x").await.unwrap().ino())
        );
        fs::rename("/data/b/x", "/data/a/one").unwrap();
        fs::hard_link("/data/a/one", "/data/b/y").unwrap();
        std::os::unix::fs::symlink("../a/one", "/data/b/z").unwrap();
        assert_eq!(tfs::read("/data/b/z").await.unwrap(), b"x");
        assert_eq!(tfs::metadata("/data/b/y").await.unwrap().nlink(), 2);
        let mut names = Vec::new();
        let mut rd = tfs::read_dir("/data/b").await.unwrap();
        while let Some(e) = rd.next_entry().await.unwrap() {
            names.push(e.file_name().into_string().unwrap());
        }
        assert_eq!(names, ["y", "z"]);

        // 4. tokio removes a tree std made; std sees it gone.
        fs::create_dir_all("/data/c/d/e").unwrap();
        fs::write("/data/c/d/e/f", b"").unwrap();
        tfs::remove_dir_all("/data/c").await.unwrap();
        assert_eq!(
            fs::metadata("/data/c").unwrap_err().kind(),
            ErrorKind::NotFound
        );
        // And std copies what tokio wrote.
        tfs::write("/data/src", vec![7; 10_000]).await.unwrap();
        assert_eq!(fs::copy("/data/src", "/data/dst").unwrap(), 10_000);
        assert_eq!(tfs::read("/data/dst").await.unwrap(), vec![7; 10_000]);
    });
}

#[test]
fn a_std_append_without_sync_is_lost_in_a_crash_and_kept_by_a_kill() {
    claims!("fs.crash.unsynced", "fs.kill");
    run(32, async {
        let n = sim::node("wal").build();
        on(n, async {
            let mut f = fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open("/tmp/wal")
                .unwrap();
            f.write_all(b"rec1;").unwrap();
            f.sync_data().unwrap();
            std_sync_dir("/tmp");
            // Then a record through tokio, synced, and one through std, not.
            let mut t = tfs::OpenOptions::new()
                .append(true)
                .open("/tmp/wal")
                .await
                .unwrap();
            t.write_all(b"rec2;").await.unwrap();
            t.sync_data().await.unwrap();
            f.write_all(b"rec3;").unwrap();
            // And a truncation through std, not synced, on another file.
            fs::write("/tmp/meta", b"0123456789").unwrap();
            fs::File::open("/tmp/meta").unwrap().sync_all().unwrap();
            std_sync_dir("/tmp");
            fs::OpenOptions::new()
                .write(true)
                .open("/tmp/meta")
                .unwrap()
                .set_len(2)
                .unwrap();
        })
        .await;
        sim::kill(n);
        sim::restart(n);
        let read = || async {
            (
                fs::read("/tmp/wal").unwrap(),
                fs::metadata("/tmp/meta").unwrap().len(),
            )
        };
        assert_eq!(on(n, read()).await, (b"rec1;rec2;rec3;".to_vec(), 2));
        sim::crash(n);
        sim::restart(n);
        assert_eq!(on(n, read()).await, (b"rec1;rec2;".to_vec(), 10));
    });
}

#[test]
fn a_std_rename_is_durable_only_once_the_directory_is_synced() {
    claims!("fs.crash.rename");
    for sync_dir in [false, true] {
        run(33, async move {
            let n = sim::node("db").build();
            on(n, async move {
                // The atomic-replace pattern, through std: write a temporary
                // file, sync it, rename it over the old one.
                fs::write("/tmp/current", b"v1").unwrap();
                fs::File::open("/tmp/current").unwrap().sync_all().unwrap();
                std_sync_dir("/tmp");
                let mut tmp = fs::File::create("/tmp/current.tmp").unwrap();
                tmp.write_all(b"v2").unwrap();
                tmp.sync_all().unwrap();
                fs::rename("/tmp/current.tmp", "/tmp/current").unwrap();
                if sync_dir {
                    std_sync_dir("/tmp");
                }
            })
            .await;
            sim::crash(n);
            sim::restart(n);
            let after = on(n, async {
                let mut s = String::new();
                fs::File::open("/tmp/current")
                    .unwrap()
                    .read_to_string(&mut s)
                    .unwrap();
                (s, fs::exists("/tmp/current.tmp").unwrap())
            })
            .await;
            let expected = if sync_dir { "v2" } else { "v1" };
            assert_eq!(after, (expected.to_string(), false), "sync_dir {sync_dir}");
        });
    }
}

#[test]
fn a_std_file_opened_o_dsync_survives_a_crash_write_by_write() {
    claims!("fs.dsync");
    run(34, async {
        let n = sim::node("log").build();
        on(n, async {
            use std::os::unix::fs::OpenOptionsExt;
            drop(fs::File::create("/tmp/log").unwrap());
            std_sync_dir("/tmp");
            let mut d = fs::OpenOptions::new()
                .append(true)
                .custom_flags(crate::oflag::O_DSYNC)
                .open("/tmp/log")
                .unwrap();
            let mut plain = fs::OpenOptions::new()
                .append(true)
                .open("/tmp/log")
                .unwrap();
            d.write_all(b"durable;").unwrap();
            plain.write_all(b"cached;").unwrap();
            assert_eq!(fs::read("/tmp/log").unwrap(), b"durable;cached;");
        })
        .await;
        sim::crash(n);
        sim::restart(n);
        assert_eq!(
            on(n, async { fs::read("/tmp/log").unwrap() }).await,
            b"durable;"
        );
    });
}

/// `tokio::fs`'s metadata is std's, read through the interposers; inside
/// `sim::fs::on_real_disk` std would read the real disk, so a metadata
/// call that runs there panics, saying so, instead of answering from the
/// wrong disk (a future polled past its gate inside the scope).
#[test]
fn metadata_inside_on_real_disk_panics_saying_so() {
    use std::future::Future;
    use std::task::Poll;
    run(32, async {
        tfs::write("/tmp/f", b"x").await.unwrap();
        let mut meta = Box::pin(tfs::metadata("/tmp/f"));
        let mut polls = 0;
        let message = std::future::poll_fn(|cx| {
            polls += 1;
            if polls == 1 {
                // The gate: a yield.
                assert!(meta.as_mut().poll(cx).is_pending());
                return Poll::Pending;
            }
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                sim::fs::on_real_disk(|| meta.as_mut().poll(cx).map(drop))
            }));
            let payload = r.expect_err("metadata answered inside on_real_disk");
            Poll::Ready(
                payload
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_default(),
            )
        })
        .await;
        assert!(message.contains("on_real_disk"), "{message}");
        assert!(message.contains("tokio::fs::metadata"), "{message}");
        // Outside the scope the same call answers from the node's disk.
        assert_eq!(tfs::metadata("/tmp/f").await.unwrap().len(), 1);
    });
}
