//! `std::fs` and libc file calls inside a simulation reach the node's
//! simulated disk (fs/fd.rs, libc/fs/, intercept_dir.rs): the same
//! disk `tokio::fs` uses, with its crash and kill semantics, its faults,
//! one disk per node, and nothing on the real disk.
//!
//! Without the interposers each of these tests fails: the files would be
//! on the real disk (shared by every node and seed, surviving every crash),
//! and `tokio::fs` would not see them.

/// Names the failure-mode rows (sim-fs's crate docs) a test checks;
/// `cargo xtask tidy` reads the claims from the source.
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}

use sim_runtime::sim;
use sim_runtime::time::{sleep, Duration};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

fn rt(seed: u64) -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(seed)
        .build()
        .unwrap()
}

/// A path that exists on no real disk here: the check that nothing
/// reached it.
const UNIQUE: &str = "/sim-std-fs-never-on-the-real-disk";

fn real_exists(p: &Path) -> bool {
    sim::fs::on_real_disk(|| p.exists())
}

#[test]
fn std_and_tokio_see_one_disk_and_the_real_one_is_untouched() {
    claims!("fs.std");
    rt(1).block_on(async {
        let dir = Path::new(UNIQUE);
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("a"), b"from std").unwrap();
        assert_eq!(
            sim_runtime::fs::read(dir.join("a")).await.unwrap(),
            b"from std"
        );
        sim_runtime::fs::write(dir.join("b"), b"from tokio")
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(dir.join("b")).unwrap(), "from tokio");

        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().into_string().unwrap(),
                    e.file_type().unwrap().is_dir(),
                )
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ("a".into(), false),
                ("b".into(), false),
                ("sub".into(), true)
            ]
        );
        let m = fs::metadata(dir.join("a")).unwrap();
        assert_eq!((m.len(), m.is_file()), (8, true));
        assert_eq!(
            m.modified().unwrap(),
            std::time::SystemTime::now(),
            "stamped by the node's virtual wall clock"
        );

        fs::rename(dir.join("a"), dir.join("sub/c")).unwrap();
        assert_eq!(
            fs::metadata(dir.join("a")).unwrap_err().kind(),
            ErrorKind::NotFound
        );
        fs::hard_link(dir.join("b"), dir.join("b2")).unwrap();
        std::os::unix::fs::symlink("b", dir.join("s")).unwrap();
        assert_eq!(fs::read_link(dir.join("s")).unwrap(), Path::new("b"));
        assert_eq!(fs::read(dir.join("s")).unwrap(), b"from tokio");
        assert_eq!(fs::canonicalize(dir.join("s")).unwrap(), dir.join("b"));
        fs::copy(dir.join("b"), dir.join("copy")).unwrap();
        assert_eq!(fs::read(dir.join("copy")).unwrap(), b"from tokio");
        assert_eq!(std::env::current_dir().unwrap(), Path::new("/"));

        assert!(!real_exists(dir), "the real disk was written");
        fs::remove_dir_all(dir).unwrap();
        assert!(!sim_runtime::fs::try_exists(dir).await.unwrap());
    });
}

#[test]
fn the_data_path_cursors_and_errors_are_linuxs() {
    rt(2).block_on(async {
        let p = Path::new("/tmp/data");
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(p)
            .unwrap();
        f.write_all(b"hello world").unwrap();
        assert_eq!(f.stream_position().unwrap(), 11);
        f.write_all_at(b"HELLO", 0).unwrap();
        assert_eq!(f.stream_position().unwrap(), 11, "pwrite leaves the cursor");
        let mut buf = [0; 5];
        f.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        f.seek(SeekFrom::Start(0)).unwrap();
        let mut all = String::new();
        f.read_to_string(&mut all).unwrap();
        assert_eq!(all, "HELLO world");
        f.set_len(5).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 5);
        let clone = f.try_clone().unwrap();
        clone.sync_all().unwrap();
        drop((f, clone));

        let e = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
        let e = File::open("/tmp/missing").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(2));
        let e = fs::remove_dir("/tmp/data").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(20), "ENOTDIR");

        // Appending, and `flock` between two open file descriptions.
        let mut a = OpenOptions::new().append(true).open(p).unwrap();
        a.write_all(b"!").unwrap();
        assert_eq!(fs::read(p).unwrap(), b"HELLO!");
        let other = File::open(p).unwrap();
        a.try_lock().unwrap();
        assert!(matches!(
            other.try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        a.unlock().unwrap();
        other.try_lock_shared().unwrap();

        // tempfile's patterns: a named temporary file, an anonymous one
        // (O_TMPFILE refused, so it falls back), a temporary directory.
        let mut named = tempfile::NamedTempFile::new().unwrap();
        named.write_all(b"t").unwrap();
        assert!(named.path().starts_with("/tmp"));
        assert!(!real_exists(named.path()));
        // `persist` renames through rustix, whose raw system calls no
        // interposer would see (its libc backend is forced under the cfg).
        named.persist("/tmp/persisted").unwrap();
        assert_eq!(fs::read("/tmp/persisted").unwrap(), b"t");
        let other = tempfile::NamedTempFile::new().unwrap();
        let e = other.persist_noclobber("/tmp/persisted").unwrap_err();
        assert_eq!(e.error.kind(), ErrorKind::AlreadyExists);
        let mut anon = tempfile::tempfile().unwrap();
        anon.write_all(b"anonymous").unwrap();
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("x"), b"1").unwrap();
        assert!(!real_exists(d.path()));
    });
}

#[test]
fn each_node_has_its_own_files() {
    rt(3).block_on(async {
        let a = sim::node("a").build();
        let b = sim::node("b").build();
        sim::spawn_on(a, async { fs::write("/tmp/who", b"a").unwrap() })
            .await
            .unwrap();
        sim::spawn_on(b, async { fs::write("/tmp/who", b"b").unwrap() })
            .await
            .unwrap();
        let read = |n| sim::spawn_on(n, async { fs::read("/tmp/who").unwrap() });
        assert_eq!(read(a).await.unwrap(), b"a");
        assert_eq!(read(b).await.unwrap(), b"b");
        assert!(fs::read("/tmp/who").is_err(), "the main node has neither");
    });
}

/// Writes `data` to `path` and syncs the file; the directory entry is
/// synced only when `sync_dir`.
fn write_synced(path: &str, data: &[u8], sync_dir: bool) {
    let mut f = File::create(path).unwrap();
    f.write_all(data).unwrap();
    f.sync_all().unwrap();
    if sync_dir {
        File::open(Path::new(path).parent().unwrap())
            .unwrap()
            .sync_all()
            .unwrap();
    }
}

#[test]
fn a_crash_keeps_what_was_durable_and_a_kill_keeps_the_page_cache() {
    rt(4).block_on(async {
        let n = sim::node("db").build();
        sim::spawn_on(n, async {
            write_synced("/tmp/durable", b"kept", true);
            write_synced("/tmp/entry-not-synced", b"lost", false);
            fs::write("/tmp/unsynced", b"cache only").unwrap();
        })
        .await
        .unwrap();
        sim::kill(n);
        sim::restart(n);
        let after_kill = sim::spawn_on(n, async {
            (
                fs::read("/tmp/durable").unwrap(),
                fs::read("/tmp/unsynced").unwrap(),
            )
        });
        assert_eq!(
            after_kill.await.unwrap(),
            (b"kept".to_vec(), b"cache only".to_vec())
        );
        sim::crash(n);
        sim::restart(n);
        let after_crash = sim::spawn_on(n, async {
            (
                fs::read("/tmp/durable").map_err(|e| e.kind()),
                fs::read("/tmp/entry-not-synced").map_err(|e| e.kind()),
                fs::read("/tmp/unsynced").map_err(|e| e.kind()),
            )
        });
        assert_eq!(
            after_crash.await.unwrap(),
            (
                Ok(b"kept".to_vec()),
                Err(ErrorKind::NotFound),
                Err(ErrorKind::NotFound)
            )
        );
    });
}

/// What a store does on drop (redb commits and syncs): neither a power
/// loss nor SIGKILL runs it, so the simulation must not let it reach the
/// disk while it tears the node's tasks down.
struct SyncOnDrop(File);

impl Drop for SyncOnDrop {
    fn drop(&mut self) {
        self.0.write_all(b" + written on drop").unwrap();
        self.0.sync_all().unwrap();
        assert!(fs::write("/tmp/made-on-drop", b"x").is_err());
    }
}

#[test]
fn destructors_of_a_dead_node_do_not_reach_its_disk() {
    claims!("fs.dead-process");
    for crash in [true, false] {
        rt(5).block_on(async move {
            let n = sim::node("store").build();
            sim::spawn_on(n, async {
                write_synced("/tmp/log", b"committed", true);
                let f = OpenOptions::new().append(true).open("/tmp/log").unwrap();
                let _guard = SyncOnDrop(f);
                std::future::pending::<()>().await;
            });
            sleep(Duration::from_millis(1)).await;
            if crash {
                sim::crash(n);
            } else {
                sim::kill(n);
            }
            sim::restart(n);
            let h = sim::spawn_on(n, async {
                (
                    fs::read_to_string("/tmp/log").unwrap(),
                    fs::metadata("/tmp/made-on-drop").is_ok(),
                )
            });
            assert_eq!(h.await.unwrap(), ("committed".to_string(), false));
        });
    }
}

#[test]
fn a_descriptor_from_an_earlier_incarnation_is_ebadf() {
    use std::os::fd::{AsRawFd, FromRawFd};
    rt(6).block_on(async {
        let n = sim::node("n").build();
        let raw = sim::spawn_on(n, async {
            let f = File::create("/tmp/f").unwrap();
            let raw = f.as_raw_fd();
            std::mem::forget(f);
            raw
        })
        .await
        .unwrap();
        sim::kill(n);
        sim::restart(n);
        let h = sim::spawn_on(n, async move {
            // SAFETY: the test owns this number; the call must refuse it.
            let f = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(raw) });
            (&*f).write_all(b"x").unwrap_err().raw_os_error()
        });
        assert_eq!(h.await.unwrap(), Some(9));
    });
}

#[test]
fn disk_faults_reach_std_callers() {
    rt(7).block_on(async {
        let me = sim::current_node();
        let mut f = File::create("/tmp/f").unwrap();
        f.write_all(b"x").unwrap();
        sim::fs::fail_io(me, sim::fs::IoOp::Sync, None);
        assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(5));
        sim::fs::heal_io(me, sim::fs::IoOp::Sync);
        f.sync_data().unwrap();
        sim::fs::set_capacity(me, Some(4));
        let e = f.write_all(b"too long").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28), "ENOSPC");
    });
}

/// One run on a fresh thread, as the harness runs each seed (std seeds a
/// thread's `HashMap` keys once, from the run's stream, so a second run on
/// the same thread would start its stream further on).
fn urandom(seed: u64) -> [u8; 16] {
    std::thread::spawn(move || urandom_here(seed))
        .join()
        .unwrap()
}

fn urandom_here(seed: u64) -> [u8; 16] {
    rt(seed).block_on(async {
        let mut b = [0; 16];
        File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut b)
            .unwrap();
        let mut z = [1; 4];
        File::open("/dev/zero").unwrap().read_exact(&mut z).unwrap();
        assert_eq!(z, [0; 4]);
        fs::write("/dev/null", b"gone").unwrap();
        b
    })
}

#[test]
fn dev_urandom_reads_the_seed() {
    assert_eq!(urandom(8), urandom(8));
    assert_ne!(urandom(8), urandom(9));
}

#[test]
fn shared_mappings_of_a_file_share_memory() {
    extern "C" {
        fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
        fn munmap(addr: *mut u8, len: usize) -> i32;
    }
    const PROT_RW: i32 = 3;
    const MAP_SHARED: i32 = 1;
    const MAP_PRIVATE: i32 = 2;
    use std::os::fd::AsRawFd;
    rt(10).block_on(async {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open("/tmp/db-shm")
            .unwrap();
        f.set_len(4096).unwrap();
        f.write_all_at(b"init", 0).unwrap();
        let g = File::open("/tmp/db-shm").unwrap();
        // SAFETY: mapping 4096 bytes of an open file; unmapped below.
        let (a, b, p) = unsafe {
            (
                mmap(
                    std::ptr::null_mut(),
                    4096,
                    PROT_RW,
                    MAP_SHARED,
                    f.as_raw_fd(),
                    0,
                ),
                mmap(
                    std::ptr::null_mut(),
                    4096,
                    PROT_RW,
                    MAP_SHARED,
                    g.as_raw_fd(),
                    0,
                ),
                mmap(
                    std::ptr::null_mut(),
                    4096,
                    PROT_RW,
                    MAP_PRIVATE,
                    f.as_raw_fd(),
                    0,
                ),
            )
        };
        assert!(![a, b, p].contains(&(usize::MAX as *mut u8)), "mmap failed");
        // SAFETY: all three map 4096 bytes.
        unsafe {
            assert_eq!(std::slice::from_raw_parts(a, 4), b"init");
            *a = b'I';
            assert_eq!(*b, b'I', "one memory for every shared mapping");
            assert_eq!(*p, b'i', "a private mapping is a copy");
            munmap(a, 4096);
            munmap(b, 4096);
            munmap(p, 4096);
        }
    });
}

#[test]
fn c_stdio_reaches_the_nodes_disk() {
    extern "C" {
        fn fopen(path: *const std::ffi::c_char, mode: *const std::ffi::c_char) -> *mut u8;
        fn fwrite(buf: *const u8, size: usize, n: usize, f: *mut u8) -> usize;
        fn fread(buf: *mut u8, size: usize, n: usize, f: *mut u8) -> usize;
        fn fseek(f: *mut u8, off: i64, whence: i32) -> i32;
        fn fclose(f: *mut u8) -> i32;
    }
    rt(11).block_on(async {
        // SAFETY: C strings and buffers valid for the calls; each stream
        // is closed once.
        unsafe {
            let f = fopen(c"/tmp/c.txt".as_ptr(), c"w+".as_ptr());
            assert!(!f.is_null());
            assert_eq!(fwrite(b"from C".as_ptr(), 1, 6, f), 6);
            assert_eq!(fseek(f, 0, 0), 0);
            let mut buf = [0u8; 6];
            assert_eq!(fread(buf.as_mut_ptr(), 1, 6, f), 6);
            assert_eq!(&buf, b"from C");
            assert_eq!(fclose(f), 0);
            assert!(fopen(c"/tmp/none".as_ptr(), c"r".as_ptr()).is_null());
        }
        assert_eq!(
            sim_runtime::fs::read("/tmp/c.txt").await.unwrap(),
            b"from C"
        );
        assert!(
            !real_exists(Path::new("/tmp/c.txt")) || {
                // A real /tmp/c.txt may exist on this machine: it must not be ours.
                sim::fs::on_real_disk(|| fs::read("/tmp/c.txt").unwrap()) != b"from C"
            }
        );
    });
}

/// The same leak checked for `tokio::fs`: an operation still waiting for
/// the disk when the node is killed never lands (a kill keeps the page
/// cache, so a write that landed would be seen).
#[test]
fn a_tokio_fs_write_in_flight_at_a_kill_does_not_land() {
    rt(12).block_on(async {
        let n = sim::node("n").build();
        sim::fs::set_latency(n, Duration::from_millis(10));
        sim::spawn_on(n, async {
            sim_runtime::fs::write("/tmp/late", b"in flight")
                .await
                .unwrap();
        });
        sleep(Duration::from_millis(5)).await;
        sim::kill(n);
        sim::restart(n);
        let h = sim::spawn_on(n, async { fs::metadata("/tmp/late").is_ok() });
        assert!(!h.await.unwrap(), "the write landed after its process died");
    });
}

/// SQLite locks with `fcntl64(F_SETLK/F_GETLK)`, redb with
/// `syscall(SYS_fcntl, fd, F_OFD_SETLK, ..)`: both reach the simulated
/// descriptor (one process per node: record locks never conflict).
#[test]
fn record_locks_through_fcntl64_and_syscall_are_served() {
    #[repr(C)]
    struct Flock {
        l_type: i16,
        l_whence: i16,
        l_start: i64,
        l_len: i64,
        l_pid: i32,
    }
    extern "C" {
        fn syscall(num: i64, ...) -> i64;
        fn fcntl64(fd: i32, cmd: i32, ...) -> i32;
    }
    const SYS_FCNTL: i64 = 72;
    const F_GETLK: i32 = 5;
    const F_SETLK: i32 = 6;
    const F_OFD_SETLK: i32 = 37;
    const F_WRLCK: i16 = 1;
    const F_UNLCK: i16 = 2;
    use std::os::fd::AsRawFd;
    rt(13).block_on(async {
        let f = File::create("/tmp/db").unwrap();
        let fd = f.as_raw_fd();
        let mut lock = Flock {
            l_type: F_WRLCK,
            l_whence: 0,
            l_start: 0x4000_0000,
            l_len: 1,
            l_pid: 0,
        };
        // SAFETY: a valid descriptor and `struct flock` for each call.
        unsafe {
            assert_eq!(fcntl64(fd, F_SETLK, &mut lock as *mut Flock), 0);
            assert_eq!(
                syscall(SYS_FCNTL, fd, F_OFD_SETLK, &mut lock as *mut Flock),
                0
            );
            assert_eq!(fcntl64(fd, F_GETLK, &mut lock as *mut Flock), 0);
        }
        assert_eq!(lock.l_type, F_UNLCK, "no other process holds it");
    });
}

/// What the simulation cannot serve fails the run, naming the call: here a
/// blocking `flock` that would wait for another task of the node for ever.
#[test]
fn a_blocking_flock_that_would_wait_fails_the_run() {
    let r = std::thread::spawn(|| {
        std::panic::catch_unwind(|| {
            rt(14).block_on(async {
                let a = File::create("/tmp/lock").unwrap();
                let b = File::open("/tmp/lock").unwrap();
                a.lock().unwrap();
                let e = b.lock().unwrap_err();
                assert_eq!(e.raw_os_error(), Some(35), "EDEADLK meanwhile");
                sleep(Duration::from_millis(1)).await;
            })
        })
    })
    .join()
    .unwrap();
    let text = crate::panic_text(r.expect_err("the run must fail"));
    assert!(
        text.contains("a blocking flock (without LOCK_NB) is not supported"),
        "unexpected failure: {text}"
    );
}

/// Seeds run side by side in one process (the harness's jobs, libtest's
/// threads): each simulation has its own disks and descriptors, and a
/// thread outside any simulation keeps the real disk.
#[test]
fn simulations_side_by_side_have_their_own_files() {
    let threads: Vec<_> = (0..4u8)
        .map(|i| {
            std::thread::spawn(move || {
                rt(20 + u64::from(i)).block_on(async move {
                    for round in 0..50u8 {
                        fs::write("/tmp/mine", [i, round]).unwrap();
                        let mut f = File::open("/tmp/mine").unwrap();
                        let mut b = Vec::new();
                        f.read_to_end(&mut b).unwrap();
                        assert_eq!(b, [i, round], "another simulation's file");
                        sleep(Duration::from_millis(1)).await;
                    }
                })
            })
        })
        .collect();
    let real = tempfile::tempdir().unwrap();
    fs::write(real.path().join("outside"), b"real").unwrap();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(fs::read(real.path().join("outside")).unwrap(), b"real");
}
