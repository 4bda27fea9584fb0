//! Crash and kill semantics, per-node disks, yields, latency and virtual
//! timestamps (simulation only: none of this has a production counterpart).

use crate::errno::*;
use crate::{assert_err, assert_errno};
use sim_runtime::fs::{self, File, OpenOptions};
use sim_runtime::io::AsyncWriteExt;
use sim_runtime::sim;
use std::future::Future;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Runs `f` in a simulation with `seed`.
pub fn run<F: Future>(seed: u64, f: F) -> F::Output {
    sim_runtime::runtime::Builder::new_current_thread()
        .sim_seed(seed)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Runs `f` as a task of `node` and waits for it.
pub async fn on<F>(node: sim::Node, f: F) -> F::Output
where
    F: Future + 'static,
    F::Output: 'static,
{
    sim::spawn_on(node, f).await.unwrap()
}

/// Syncs a directory the way a program must (open it, `sync_all`).
pub async fn sync_dir(path: &str) {
    File::open(path).await.unwrap().sync_all().await.unwrap();
}

/// A new file with `data`, its bytes synced (`sync_data`), its directory
/// entry synced only if `sync_entry`.
async fn create_synced(path: &'static str, data: &'static [u8], sync_entry: bool) {
    let mut f = File::create(path).await.unwrap();
    f.write_all(data).await.unwrap();
    f.sync_data().await.unwrap();
    if sync_entry {
        sync_dir("/tmp").await;
    }
}

fn crash_and_revive(node: sim::Node) {
    sim::crash(node);
    sim::revive(node);
}

#[test]
fn crash_loses_unsynced_writes_and_entries() {
    claims!("fs.crash.unsynced");
    run(1, async {
        let db = sim::node("db").build();
        let (done, written) = sim_runtime::sync::oneshot::channel();
        sim::spawn_on(db, async {
            // An entry made durable, data never synced.
            let mut f = File::create("/tmp/no-data").await.unwrap();
            sync_dir("/tmp").await;
            f.write_all(b"lost").await.unwrap();
            create_synced("/tmp/durable", b"kept", true).await;
            // The last change to /tmp: never synced.
            create_synced("/tmp/no-entry", b"data synced, entry not", false).await;
            // Unsynced appends to a durable file.
            let mut f = OpenOptions::new()
                .append(true)
                .open("/tmp/durable")
                .await
                .unwrap();
            f.write_all(b" + unsynced").await.unwrap();
            f.flush().await.unwrap();
            assert_eq!(fs::read("/tmp/durable").await.unwrap(), b"kept + unsynced");
            done.send(()).unwrap();
            std::future::pending::<()>().await;
        });
        // The task above never ends, its files open: crash the machine
        // under it.
        written.await.unwrap();
        crash_and_revive(db);
        on(db, async {
            assert_eq!(fs::read("/tmp/durable").await.unwrap(), b"kept");
            assert_err(fs::read("/tmp/no-entry").await, ErrorKind::NotFound, ENOENT);
            assert_eq!(fs::read("/tmp/no-data").await.unwrap(), b"");
        })
        .await;
        sim::fs::check(db);
    });
}

#[test]
fn kill_keeps_the_page_cache() {
    claims!("fs.kill");
    run(2, async {
        let db = sim::node("db").build();
        sim::spawn_on(db, async {
            fs::write("/tmp/cached", b"never synced").await.unwrap();
            std::future::pending::<()>().await;
        });
        // Let the write happen, then kill the process only.
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
        sim::kill(db);
        sim::revive(db);
        on(db, async {
            assert_eq!(fs::read("/tmp/cached").await.unwrap(), b"never synced");
        })
        .await;
        crash_and_revive(db);
        on(db, async {
            assert_err(fs::read("/tmp/cached").await, ErrorKind::NotFound, ENOENT);
        })
        .await;
    });
}

#[test]
fn rename_is_durable_once_the_directory_is_synced() {
    claims!("fs.crash.rename");
    run(3, async {
        let db = sim::node("db").build();
        on(db, async {
            create_synced("/tmp/tmpfile", b"v2", true).await;
            fs::rename("/tmp/tmpfile", "/tmp/current").await.unwrap();
        })
        .await;
        crash_and_revive(db);
        on(db, async {
            assert!(!fs::try_exists("/tmp/current").await.unwrap());
            assert_eq!(fs::read("/tmp/tmpfile").await.unwrap(), b"v2");
            fs::rename("/tmp/tmpfile", "/tmp/current").await.unwrap();
            sync_dir("/tmp").await;
        })
        .await;
        crash_and_revive(db);
        on(db, async {
            assert_eq!(fs::read("/tmp/current").await.unwrap(), b"v2");
            assert!(!fs::try_exists("/tmp/tmpfile").await.unwrap());
        })
        .await;
    });
}

#[test]
fn handles_die_with_their_process() {
    claims!("fs.kill.handles");
    run(4, async {
        let db = sim::node("db").build();
        // A file opened on `db`, handed out of it, outlives the process.
        let f = on(db, async { File::create("/tmp/f").await.unwrap() }).await;
        f.sync_all().await.unwrap();
        sim::kill(db);
        assert_errno(f.sync_all().await, EBADF);
        assert_errno(f.metadata().await, EBADF);
        drop(f);
        sim::fs::check(db);
    });
}

#[test]
fn each_node_has_its_own_disk() {
    claims!("fs.isolation");
    run(5, async {
        let a = sim::node("a").build();
        let b = sim::node("b").build();
        on(a, async {
            fs::write("/tmp/only-on-a", b"a").await.unwrap()
        })
        .await;
        on(b, async {
            assert!(!fs::try_exists("/tmp/only-on-a").await.unwrap());
        })
        .await;
        assert!(
            !fs::try_exists("/tmp/only-on-a").await.unwrap(),
            "main's disk"
        );
        on(a, async {
            assert!(fs::try_exists("/tmp/only-on-a").await.unwrap())
        })
        .await;
    });
}

#[test]
fn fresh_disk_has_root_and_tmp_and_relative_paths_start_at_root() {
    run(6, async {
        assert!(fs::metadata("/tmp").await.unwrap().is_dir());
        fs::write("relative", b"r").await.unwrap();
        assert_eq!(fs::read("/relative").await.unwrap(), b"r");
        let mut names = Vec::new();
        let mut rd = fs::read_dir("/").await.unwrap();
        while let Some(e) = rd.next_entry().await.unwrap() {
            names.push(e.file_name().into_string().unwrap());
        }
        assert_eq!(names, ["relative", "tmp"], "listed in name order");
    });
}

#[test]
fn every_operation_yields_to_the_scheduler() {
    // Over a few seeds another task gets to run between an operation's
    // call and its completion; without the yield it never could.
    let interleaved = (0..16).filter(|&seed| {
        run(seed, async {
            let ran = Arc::new(AtomicBool::new(false));
            let flag = ran.clone();
            let task = sim_runtime::spawn(async move { flag.store(true, Ordering::SeqCst) });
            fs::metadata("/").await.unwrap();
            let seen = ran.load(Ordering::SeqCst);
            task.await.unwrap();
            seen
        })
    });
    assert!(interleaved.count() > 0);
}

#[test]
fn latency_takes_virtual_time() {
    claims!("fs.latency");
    run(7, async {
        let me = sim::current_node();
        sim::fs::set_latency(me, Duration::from_millis(10));
        let start = sim_runtime::time::Instant::now();
        fs::write("/tmp/slow", b"x").await.unwrap();
        fs::read("/tmp/slow").await.unwrap();
        assert!(start.elapsed() >= Duration::from_millis(20));
        sim::fs::set_latency(me, Duration::ZERO);
        let start = sim_runtime::time::Instant::now();
        fs::read("/tmp/slow").await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
    });
}

#[test]
fn timestamps_come_from_the_virtual_wall_clock() {
    run(8, async {
        let t0 = SystemTime::now();
        fs::write("/tmp/f", b"1").await.unwrap();
        assert_eq!(
            fs::metadata("/tmp/f").await.unwrap().modified().unwrap(),
            t0
        );
        sim_runtime::time::sleep(Duration::from_secs(3600)).await;
        fs::write("/tmp/f", b"2").await.unwrap();
        let m = fs::metadata("/tmp/f").await.unwrap();
        assert_eq!(m.modified().unwrap(), t0 + Duration::from_secs(3600));
        assert_eq!(m.created().unwrap(), t0);
    });
}

#[test]
fn torn_writes_keep_a_seeded_prefix_and_replay() {
    claims!("fs.crash.torn");
    let outcome = |seed: u64| {
        run(seed, async {
            let db = sim::node("db").build();
            sim::fs::set_torn_writes(db, true);
            on(db, async {
                create_synced("/tmp/log", b"", true).await;
                let mut f = OpenOptions::new()
                    .append(true)
                    .open("/tmp/log")
                    .await
                    .unwrap();
                for chunk in [&b"one;"[..], b"two;", b"three;"] {
                    f.write_all(chunk).await.unwrap();
                }
            })
            .await;
            crash_and_revive(db);
            let data = on(db, async { fs::read("/tmp/log").await.unwrap() }).await;
            assert!(b"one;two;three;".starts_with(&data));
            (data, sim::fingerprint())
        })
    };
    let lens: std::collections::BTreeSet<usize> = (0..32).map(|s| outcome(s).0.len()).collect();
    assert!(lens.len() > 2, "seeds tear differently: {lens:?}");
    assert_eq!(outcome(11), outcome(11), "a seed replays its tear exactly");
}

#[test]
fn crash_outcomes_enter_the_fingerprint() {
    // Two runs with the same schedule whose crashes keep different bytes
    // (one synced its data, the other did not) end with different
    // fingerprints; the same run twice ends with the same one.
    let fingerprint = |sync: bool| {
        run(9, async move {
            let db = sim::node("db").build();
            on(db, async move {
                let mut f = File::create("/tmp/f").await.unwrap();
                sync_dir("/tmp").await;
                f.write_all(b"x").await.unwrap();
                // The same number of operations either way.
                if sync {
                    f.sync_data().await.unwrap();
                } else {
                    f.metadata().await.unwrap();
                }
            })
            .await;
            sim::crash(db);
            sim::fingerprint()
        })
    };
    assert_eq!(fingerprint(true), fingerprint(true));
    assert_ne!(fingerprint(true), fingerprint(false));
}

#[test]
fn a_simulated_run_never_touches_the_real_disk() {
    claims!("fs.real-disk");
    let pid = std::process::id();
    let absolute = std::path::PathBuf::from(format!("/tmp/sim-fs-probe-{pid}"));
    let relative = format!("sim-fs-probe-relative-{pid}");
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let (abs, rel) = (absolute.clone(), relative.clone());
    run(10, async move {
        fs::create_dir_all(&abs).await.unwrap();
        fs::write(abs.join("f"), b"x").await.unwrap();
        fs::write(&rel, b"x").await.unwrap();
        File::open(abs.join("f"))
            .await
            .unwrap()
            .sync_all()
            .await
            .unwrap();
        // Nor does it read it: the real manifest is not on the simulated disk.
        assert_err(fs::metadata(manifest).await, ErrorKind::NotFound, ENOENT);
    });
    assert!(
        !absolute.exists(),
        "{absolute:?} was created on the real disk"
    );
    assert!(!std::path::Path::new(&relative).exists());
    assert!(std::path::Path::new(manifest).exists());
}

/// A disk workload with everything that draws from the seed: racing
/// writers, latency, torn writes, a crash, a fired fault.
#[sim_runtime::test(crate = "sim_runtime")]
async fn child_disk_workload() {
    let db = sim::node("db").build();
    sim::fs::set_torn_writes(db, true);
    sim::fs::set_latency(db, Duration::from_micros(300));
    on(db, async {
        create_synced("/tmp/log", b"", true).await;
    })
    .await;
    for w in 0..3u8 {
        sim::spawn_on(db, async move {
            let mut f = OpenOptions::new()
                .append(true)
                .open("/tmp/log")
                .await
                .unwrap();
            for _ in 0..5 {
                f.write_all(&[b'a' + w; 3]).await.unwrap();
            }
        });
    }
    let crash_at = Duration::from_micros(sim::fork_seed("crash") % 4_000);
    sim::at(crash_at, move || sim::crash(db));
    sim_runtime::time::sleep(Duration::from_millis(5)).await;
    sim::revive(db);
    sim::fs::fail_io(db, sim::fs::IoOp::Read, None);
    let read = on(db, async { fs::read("/tmp/log").await }).await;
    assert_errno(read, EIO);
}

#[test]
fn disk_workloads_pass_the_determinism_check() {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "durability::child_disk_workload",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd.env_remove("SIM_SEED")
        .env("SIM_SEEDS", "0..8")
        .env("SIM_CHECK_DETERMINISM", "1");
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("seed 7 · replay"), "every seed ran: {text}");
}

/// What a reader at the same virtual instant sees of a `File` dropped
/// right after a write, without `flush`, in the run of `seed`.
fn read_after_an_unflushed_write(seed: u64) -> (Vec<u8>, u64) {
    run(seed, async {
        let mut f = File::create("/tmp/log").await.unwrap();
        f.write_all(b"a").await.unwrap();
        f.write_all(b"b").await.unwrap();
        drop(f);
        let seen = fs::read("/tmp/log").await.unwrap();
        // A moment later the blocking pool has surely written it.
        sim_runtime::time::sleep(std::time::Duration::from_millis(1)).await;
        assert_eq!(fs::read("/tmp/log").await.unwrap(), b"ab");
        (seen, sim::fingerprint())
    })
}

/// Tokio's `File` hands a write to its blocking pool and returns: the next
/// write waits for it (so `a` is always there), but a reader at the same
/// instant races the last one. The seed decides which way it goes, the same
/// way each time; with `flush` the reader always sees it.
#[test]
fn a_write_in_flight_races_a_reader_at_the_same_instant_as_the_seed_decides() {
    claims!("fs.write-behind");
    let seen: Vec<Vec<u8>> = (0..32)
        .map(|seed| read_after_an_unflushed_write(seed).0)
        .collect();
    assert!(seen.iter().all(|s| s == b"a" || s == b"ab"), "{seen:?}");
    assert!(seen.iter().any(|s| s == b"a"), "the reader sometimes wins");
    assert!(seen.iter().any(|s| s == b"ab"), "and sometimes loses");
    for seed in [0, 1, 7] {
        assert_eq!(
            read_after_an_unflushed_write(seed),
            read_after_an_unflushed_write(seed),
            "the same seed, the same outcome and fingerprint"
        );
    }
    for seed in 0..16 {
        run(seed, async {
            let mut f = File::create("/tmp/log").await.unwrap();
            f.write_all(b"ab").await.unwrap();
            f.flush().await.unwrap();
            drop(f);
            assert_eq!(fs::read("/tmp/log").await.unwrap(), b"ab");
        });
    }
}

/// A write in flight when its node dies lands first: a kill keeps it in the
/// page cache, as the write a program made before it died.
#[test]
fn a_write_in_flight_when_the_node_is_killed_reaches_the_page_cache() {
    run(9, async {
        let db = sim::node("db").build();
        let (written, wait) = sim_runtime::sync::oneshot::channel();
        sim::spawn_on(db, async move {
            let mut f = File::create("/tmp/f").await.unwrap();
            f.write_all(b"handed over").await.unwrap();
            written.send(()).unwrap();
            std::future::pending::<()>().await;
        });
        wait.await.unwrap();
        sim::kill(db);
        sim::revive(db);
        on(db, async {
            assert_eq!(fs::read("/tmp/f").await.unwrap(), b"handed over");
        })
        .await;
    });
}
