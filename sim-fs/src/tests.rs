//! Unit and property tests of the model: Linux's answers, and the
//! durability model's promises under random operation sequences.

use crate::errno::*;
use crate::*;
use std::collections::BTreeMap;
use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn t(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

fn rw_create() -> OpenFlags {
    OpenFlags {
        read: true,
        write: true,
        create: true,
        mode: 0o666,
        ..OpenFlags::default()
    }
}

fn ro() -> OpenFlags {
    OpenFlags {
        read: true,
        ..OpenFlags::default()
    }
}

fn errno<T: std::fmt::Debug>(r: std::io::Result<T>) -> i32 {
    r.expect_err("expected an error").raw_os_error().unwrap()
}

fn put(fs: &mut Fs, path: &str, data: &[u8]) {
    let fd = fs.open(p(path), rw_create(), t(1)).unwrap();
    assert_eq!(fs.write(fd, data, t(1)).unwrap(), data.len());
    fs.close(fd).unwrap();
}

fn get(fs: &mut Fs, path: &str) -> std::io::Result<Vec<u8>> {
    let fd = fs.open(p(path), ro(), t(2))?;
    let mut out = vec![0; 1 << 16];
    let n = fs.read(fd, &mut out)?;
    out.truncate(n);
    fs.close(fd).unwrap();
    Ok(out)
}

fn sync_path(fs: &mut Fs, path: &str) {
    let fd = fs.open(p(path), ro(), t(3)).unwrap();
    fs.sync(fd, false).unwrap();
    fs.close(fd).unwrap();
}

#[test]
fn fresh_disk_has_root_and_tmp() {
    let fs = Fs::new(t(0));
    assert_eq!(fs.stat(p("/"), true).unwrap().kind, FileKind::Dir);
    let tmp = fs.stat(p("/tmp"), true).unwrap();
    assert_eq!(tmp.mode, 0o1777);
    assert_eq!(tmp.nlink, 2);
    assert_eq!(fs.stat(p("/"), true).unwrap().nlink, 3);
}

#[test]
fn errors_carry_linux_errno() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"x");
    fs.create_dir(p("/tmp/d"), 0o777, t(1)).unwrap();
    put(&mut fs, "/tmp/d/inner", b"y");
    assert_eq!(errno(fs.stat(p("/tmp/missing"), true)), ENOENT);
    assert_eq!(errno(fs.stat(p("/tmp/f/x"), true)), ENOTDIR);
    assert_eq!(errno(fs.stat(p("/tmp/f/"), true)), ENOTDIR);
    assert_eq!(errno(fs.create_dir(p("/tmp/f"), 0o777, t(1))), EEXIST);
    assert_eq!(errno(fs.remove_dir(p("/tmp/d"), t(1))), ENOTEMPTY);
    assert_eq!(errno(fs.remove_dir(p("/tmp/f"), t(1))), ENOTDIR);
    assert_eq!(errno(fs.remove_file(p("/tmp/d"), t(1))), EISDIR);
    assert_eq!(errno(fs.remove_dir(p("/"), t(1))), EBUSY);
    let w = OpenFlags {
        write: true,
        ..OpenFlags::default()
    };
    assert_eq!(errno(fs.open(p("/tmp/d"), w, t(1))), EISDIR);
    let excl = OpenFlags {
        write: true,
        create_new: true,
        ..OpenFlags::default()
    };
    assert_eq!(errno(fs.open(p("/tmp/f"), excl, t(1))), EEXIST);
    assert_eq!(
        errno(fs.open(p("/tmp/f"), OpenFlags::default(), t(1))),
        EINVAL
    );
    assert_eq!(errno(fs.read_link(p("/tmp/f"))), EINVAL);
    assert_eq!(errno(fs.hard_link(p("/tmp/d"), p("/tmp/d2"), t(1))), EPERM);
    assert_eq!(
        errno(fs.rename(p("/tmp/d"), p("/tmp/d/inner/x"), t(1))),
        ENOTDIR
    );
    assert_eq!(errno(fs.rename(p("/tmp"), p("/tmp/d/sub"), t(1))), EINVAL);
    assert_eq!(errno(fs.rename(p("/tmp/f"), p("/tmp/d"), t(1))), EISDIR);
    let long = format!("/tmp/{}", "n".repeat(256));
    assert_eq!(errno(fs.stat(p(&long), true)), ENAMETOOLONG);
    let e = fs.stat(p("/nope"), true).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    fs.check();
}

#[test]
fn cursors_seek_append_and_set_len() {
    let mut fs = Fs::new(t(0));
    let fd = fs.open(p("/tmp/f"), rw_create(), t(1)).unwrap();
    fs.write(fd, b"hello world", t(1)).unwrap();
    assert_eq!(fs.seek(fd, SeekFrom::Start(6)).unwrap(), 6);
    let mut buf = [0; 5];
    assert_eq!(fs.read(fd, &mut buf).unwrap(), 5);
    assert_eq!(&buf, b"world");
    assert_eq!(fs.read(fd, &mut buf).unwrap(), 0);
    assert_eq!(errno(fs.seek(fd, SeekFrom::Current(-100))), EINVAL);
    assert_eq!(fs.seek(fd, SeekFrom::End(2)).unwrap(), 13);
    fs.write(fd, b"!", t(1)).unwrap();
    assert_eq!(get(&mut fs, "/tmp/f").unwrap(), b"hello world\0\0!");
    fs.set_len(fd, 5, t(2)).unwrap();
    assert_eq!(fs.fstat(fd).unwrap().len, 5);
    // A cloned descriptor shares the cursor, as dup(2).
    let dup = fs.dup(fd).unwrap();
    fs.seek(fd, SeekFrom::Start(1)).unwrap();
    assert_eq!(fs.position(dup).unwrap(), 1);
    fs.close(fd).unwrap();
    fs.close(dup).unwrap();
    assert_eq!(errno(fs.close(dup)), EBADF);
    let app = OpenFlags {
        append: true,
        ..OpenFlags::default()
    };
    let fd = fs.open(p("/tmp/f"), app, t(3)).unwrap();
    fs.seek(fd, SeekFrom::Start(0)).unwrap();
    fs.write(fd, b"++", t(3)).unwrap();
    assert_eq!(errno(fs.read(fd, &mut buf)), EBADF);
    assert_eq!(get(&mut fs, "/tmp/f").unwrap(), b"hello++");
    fs.check();
}

#[test]
fn links_symlinks_and_canonicalize() {
    let mut fs = Fs::new(t(0));
    fs.create_dir(p("/data"), 0o777, t(1)).unwrap();
    put(&mut fs, "/data/a", b"A");
    fs.hard_link(p("/data/a"), p("/data/b"), t(1)).unwrap();
    assert_eq!(fs.stat(p("/data/a"), true).unwrap().nlink, 2);
    fs.symlink(p("a"), p("/data/link"), t(1)).unwrap();
    fs.symlink(p("/data"), p("/tmp/dir-link"), t(1)).unwrap();
    assert_eq!(get(&mut fs, "/tmp/dir-link/link").unwrap(), b"A");
    assert_eq!(fs.read_link(p("/data/link")).unwrap(), PathBuf::from("a"));
    assert_eq!(
        fs.canonicalize(p("/tmp/dir-link/./link")).unwrap(),
        PathBuf::from("/data/a")
    );
    assert_eq!(
        fs.canonicalize(p("/tmp/../data/")).unwrap(),
        PathBuf::from("/data")
    );
    assert_eq!(
        fs.stat(p("/data/link"), false).unwrap().kind,
        FileKind::Symlink
    );
    fs.symlink(p("loop"), p("/tmp/loop"), t(1)).unwrap();
    assert_eq!(errno(fs.stat(p("/tmp/loop"), true)), ELOOP);
    fs.remove_file(p("/data/a"), t(2)).unwrap();
    assert_eq!(get(&mut fs, "/data/b").unwrap(), b"A");
    assert_eq!(errno(fs.stat(p("/data/link"), true)), ENOENT);
    fs.remove_dir_all(p("/data"), t(3)).unwrap();
    assert_eq!(errno(fs.stat(p("/data"), true)), ENOENT);
    fs.check();
}

#[test]
fn rename_replaces_atomically_and_moves_directories() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/a", b"new");
    put(&mut fs, "/tmp/b", b"old");
    fs.rename(p("/tmp/a"), p("/tmp/b"), t(1)).unwrap();
    assert_eq!(get(&mut fs, "/tmp/b").unwrap(), b"new");
    assert_eq!(errno(fs.stat(p("/tmp/a"), true)), ENOENT);
    fs.create_dir(p("/tmp/d"), 0o777, t(1)).unwrap();
    put(&mut fs, "/tmp/d/x", b"x");
    fs.create_dir(p("/tmp/e"), 0o777, t(1)).unwrap();
    fs.rename(p("/tmp/d"), p("/tmp/e"), t(2)).unwrap();
    assert_eq!(get(&mut fs, "/tmp/e/x").unwrap(), b"x");
    assert_eq!(
        fs.canonicalize(p("/tmp/e/..")).unwrap(),
        PathBuf::from("/tmp")
    );
    fs.check();
}

#[test]
fn permissions_are_enforced_for_the_owner() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/ro", b"x");
    fs.set_mode(p("/tmp/ro"), 0o444, t(1)).unwrap();
    assert_eq!(errno(fs.open(p("/tmp/ro"), rw_create(), t(1))), EACCES);
    assert_eq!(get(&mut fs, "/tmp/ro").unwrap(), b"x");
    fs.create_dir(p("/tmp/locked"), 0o555, t(1)).unwrap();
    assert_eq!(
        errno(fs.open(p("/tmp/locked/f"), rw_create(), t(1))),
        EACCES
    );
    let st = fs.stat(p("/tmp/ro"), true).unwrap();
    assert_eq!(st.st_mode(), 0o100_444);
}

/// Linux's `may_lookup`: every directory a lookup passes through needs
/// its owner's `x` bit; the directory itself, and what is reached another
/// way, do not.
#[test]
fn lookups_need_search_permission_on_every_directory() {
    let mut fs = Fs::new(t(0));
    fs.create_dir(p("/tmp/d"), 0o755, t(1)).unwrap();
    fs.create_dir(p("/tmp/d/e"), 0o755, t(1)).unwrap();
    put(&mut fs, "/tmp/d/f", b"x");
    fs.set_mode(p("/tmp/d"), 0o644, t(2)).unwrap();
    assert_eq!(errno(fs.stat(p("/tmp/d/missing"), true)), EACCES);
    assert_eq!(errno(fs.open(p("/tmp/d/f"), ro(), t(2))), EACCES);
    assert_eq!(errno(fs.stat(p("/tmp/d/e/../f"), true)), EACCES);
    assert_eq!(errno(fs.create_dir(p("/tmp/d/g"), 0o755, t(2))), EACCES);
    // The directory itself is looked up in /tmp, which may be searched.
    assert_eq!(fs.stat(p("/tmp/d"), true).unwrap().st_mode(), 0o040_644);
    fs.set_mode(p("/tmp/d"), 0o100, t(3)).unwrap();
    assert_eq!(get(&mut fs, "/tmp/d/f").unwrap(), b"x");
    fs.check();
}

#[test]
fn unlinked_open_file_stays_readable_until_closed() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"data");
    let fd = fs.open(p("/tmp/f"), ro(), t(1)).unwrap();
    fs.remove_file(p("/tmp/f"), t(1)).unwrap();
    assert_eq!(fs.used_bytes(), 4, "an open file still takes room");
    let mut buf = [0; 4];
    assert_eq!(fs.read(fd, &mut buf).unwrap(), 4);
    assert_eq!(fs.fstat(fd).unwrap().nlink, 0);
    fs.close(fd).unwrap();
    assert_eq!(fs.used_bytes(), 0);
    fs.check();
}

#[test]
fn dead_inodes_are_freed_unless_a_crash_could_bring_them_back() {
    let mut fs = Fs::new(t(0));
    let base = fs.inode_count();
    put(&mut fs, "/tmp/never-durable", b"x");
    fs.remove_file(p("/tmp/never-durable"), t(1)).unwrap();
    assert_eq!(fs.inode_count(), base, "freed at once");
    put(&mut fs, "/tmp/durable", b"y");
    sync_path(&mut fs, "/tmp");
    fs.remove_file(p("/tmp/durable"), t(2)).unwrap();
    assert_eq!(
        fs.inode_count(),
        base + 1,
        "kept: /tmp still names it durably"
    );
    sync_path(&mut fs, "/tmp");
    assert_eq!(fs.inode_count(), base, "freed once the removal is durable");
    fs.check();
}

#[test]
fn crash_keeps_only_durable_state() {
    let mut fs = Fs::new(t(0));
    fs.create_dir(p("/db"), 0o777, t(1)).unwrap();
    sync_path(&mut fs, "/");
    // Synced data and entry: kept.
    put(&mut fs, "/db/kept", b"k");
    sync_path(&mut fs, "/db/kept");
    // Synced data, unsynced entry: lost (the file vanishes).
    sync_path(&mut fs, "/db");
    put(&mut fs, "/db/orphan", b"o");
    sync_path(&mut fs, "/db/orphan");
    // Durable entry, unsynced data: kept, empty.
    let fd = fs.open(p("/db/kept"), rw_create(), t(4)).unwrap();
    fs.seek(fd, SeekFrom::End(0)).unwrap();
    fs.write(fd, b"-unsynced", t(4)).unwrap();
    let report = fs.crash(1);
    assert_eq!(report.torn_bytes, 0);
    assert_eq!(errno(fs.stat(p("/db/orphan"), true)), ENOENT);
    assert_eq!(get(&mut fs, "/db/kept").unwrap(), b"k");
    assert_eq!(
        errno(fs.close(fd)),
        EBADF,
        "a crash closes every descriptor"
    );
    fs.check();
}

#[test]
fn kill_keeps_the_page_cache() {
    let mut fs = Fs::new(t(0));
    let fd = fs.open(p("/tmp/f"), rw_create(), t(1)).unwrap();
    fs.write(fd, b"cached", t(1)).unwrap();
    fs.kill();
    assert!(!fs.is_open(fd));
    assert_eq!(get(&mut fs, "/tmp/f").unwrap(), b"cached");
    fs.crash(0);
    assert_eq!(errno(get(&mut fs, "/tmp/f")), ENOENT);
}

#[test]
fn unsynced_removal_and_rename_come_back_after_crash() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/a", b"A");
    sync_path(&mut fs, "/tmp/a");
    sync_path(&mut fs, "/tmp");
    fs.remove_file(p("/tmp/a"), t(2)).unwrap();
    fs.crash(0);
    assert_eq!(get(&mut fs, "/tmp/a").unwrap(), b"A");
    fs.rename(p("/tmp/a"), p("/tmp/b"), t(3)).unwrap();
    fs.crash(0);
    assert_eq!(get(&mut fs, "/tmp/a").unwrap(), b"A");
    fs.rename(p("/tmp/a"), p("/tmp/b"), t(3)).unwrap();
    sync_path(&mut fs, "/tmp");
    fs.crash(0);
    assert_eq!(errno(get(&mut fs, "/tmp/a")), ENOENT);
    assert_eq!(get(&mut fs, "/tmp/b").unwrap(), b"A");
}

#[test]
fn sync_data_keeps_length_but_not_metadata() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"");
    sync_path(&mut fs, "/tmp");
    sync_path(&mut fs, "/tmp/f");
    let fd = fs.open(p("/tmp/f"), rw_create(), t(5)).unwrap();
    fs.write(fd, b"abc", t(5)).unwrap();
    fs.fset_mode(fd, 0o600, t(5)).unwrap();
    fs.sync(fd, true).unwrap();
    fs.crash(0);
    let st = fs.stat(p("/tmp/f"), true).unwrap();
    assert_eq!(st.len, 3);
    assert_eq!(st.mode, 0o644, "chmod was not made durable by sync_data");
}

#[test]
fn torn_writes_keep_a_seeded_prefix() {
    let run = |seed: u64| {
        let mut fs = Fs::new(t(0));
        fs.set_faults(Faults {
            torn_writes: true,
            ..Faults::default()
        });
        put(&mut fs, "/tmp/f", b"");
        sync_path(&mut fs, "/tmp");
        let fd = fs.open(p("/tmp/f"), rw_create(), t(1)).unwrap();
        for chunk in [&b"aaaa"[..], b"bbbb", b"cccc"] {
            fs.write(fd, chunk, t(1)).unwrap();
        }
        let report = fs.crash(seed);
        let data = get(&mut fs, "/tmp/f").unwrap();
        assert_eq!(data.len() as u64, report.torn_bytes);
        assert!(b"aaaabbbbcccc".starts_with(&data), "a prefix, in order");
        (data, report)
    };
    let outcomes: std::collections::BTreeSet<usize> = (0..64).map(|s| run(s).0.len()).collect();
    assert!(
        outcomes.len() > 3,
        "seeds choose different prefixes: {outcomes:?}"
    );
    assert_eq!(run(9), run(9), "the same seed tears the same way");
}

#[test]
fn failed_sync_loses_the_writeback() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"");
    sync_path(&mut fs, "/tmp");
    let fd = fs.open(p("/tmp/f"), rw_create(), t(1)).unwrap();
    fs.write(fd, b"acked?", t(1)).unwrap();
    fs.set_faults(Faults {
        failing_syncs: 1,
        ..Faults::default()
    });
    assert_eq!(errno(fs.sync(fd, true)), EIO);
    assert_eq!(
        fs.take_fired(),
        vec![Fired::SyncFailed(fs.fstat(fd).unwrap().ino)]
    );
    fs.sync(fd, true).unwrap();
    assert_eq!(
        get(&mut fs, "/tmp/f").unwrap(),
        b"acked?",
        "the cache still has it"
    );
    fs.crash(0);
    assert_eq!(
        get(&mut fs, "/tmp/f").unwrap(),
        b"",
        "the medium never got it"
    );
}

#[test]
fn eio_rules_hit_by_path_prefix_and_op() {
    let mut fs = Fs::new(t(0));
    fs.create_dir(p("/bad"), 0o777, t(0)).unwrap();
    put(&mut fs, "/bad/f", b"x");
    put(&mut fs, "/tmp/g", b"y");
    fs.set_faults(Faults {
        eio: vec![Eio {
            op: IoOp::Read,
            path: Some("/bad".into()),
        }],
        ..Faults::default()
    });
    assert_eq!(errno(get(&mut fs, "/bad/f")), EIO);
    assert_eq!(get(&mut fs, "/tmp/g").unwrap(), b"y");
    put(&mut fs, "/bad/f", b"z");
    fs.set_faults(Faults {
        eio: vec![Eio {
            op: IoOp::Write,
            path: None,
        }],
        ..Faults::default()
    });
    let fd = fs.open(p("/tmp/g"), rw_create(), t(1)).unwrap();
    assert_eq!(errno(fs.write(fd, b"q", t(1))), EIO);
    assert_eq!(fs.take_fired().len(), 2);
}

#[test]
fn capacity_gives_short_writes_then_enospc() {
    let mut fs = Fs::new(t(0));
    fs.set_faults(Faults {
        capacity_bytes: Some(10),
        ..Faults::default()
    });
    let fd = fs.open(p("/tmp/f"), rw_create(), t(1)).unwrap();
    assert_eq!(fs.write(fd, b"0123456789abc", t(1)).unwrap(), 10);
    assert_eq!(errno(fs.write(fd, b"x", t(1))), ENOSPC);
    // Overwriting in place needs no room.
    fs.seek(fd, SeekFrom::Start(0)).unwrap();
    assert_eq!(fs.write(fd, b"ab", t(1)).unwrap(), 2);
    assert_eq!(errno(fs.set_len(fd, 11, t(1))), ENOSPC);
    fs.set_len(fd, 4, t(1)).unwrap();
    assert_eq!(fs.used_bytes(), 4);
    fs.check();
}

// ----- property tests -------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NAMES: [&str; 4] = ["/tmp/a", "/tmp/b", "/tmp/d/c", "/tmp/d/e"];

/// Random operations against a flat oracle of file contents. After each
/// operation the model's invariants hold and every file reads back as the
/// oracle says; after syncing everything a crash changes nothing.
#[test]
fn random_operations_match_the_oracle_and_survive_a_synced_crash() {
    for seed in 0..200 {
        let mut rng = Rng(seed);
        let mut fs = Fs::new(t(0));
        fs.create_dir(p("/tmp/d"), 0o777, t(0)).unwrap();
        let mut oracle: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        for step in 0..60 {
            let name = NAMES[rng.below(4) as usize];
            match rng.below(6) {
                0 | 1 => {
                    let fd = fs.open(p(name), rw_create(), t(step)).unwrap();
                    let off = rng.below(12);
                    let len = rng.below(9) as usize;
                    let byte = b'a' + rng.below(26) as u8;
                    fs.seek(fd, SeekFrom::Start(off)).unwrap();
                    fs.write(fd, &vec![byte; len], t(step)).unwrap();
                    let f = oracle.entry(name).or_default();
                    if len > 0 {
                        inode::write_at(f, off, &vec![byte; len]);
                    }
                    fs.close(fd).unwrap();
                }
                2 => {
                    let r = fs.remove_file(p(name), t(step));
                    assert_eq!(r.is_ok(), oracle.remove(name).is_some());
                }
                3 => {
                    let to = NAMES[rng.below(4) as usize];
                    let r = fs.rename(p(name), p(to), t(step));
                    assert_eq!(r.is_ok(), oracle.contains_key(name));
                    if let Some(data) = oracle.remove(name) {
                        oracle.insert(to, data);
                    }
                }
                4 => {
                    if oracle.contains_key(name) {
                        let fd = fs.open(p(name), rw_create(), t(step)).unwrap();
                        let len = rng.below(10);
                        fs.set_len(fd, len, t(step)).unwrap();
                        oracle.get_mut(name).unwrap().resize(len as usize, 0);
                        fs.close(fd).unwrap();
                    }
                }
                _ => {
                    if oracle.contains_key(name) {
                        sync_path(&mut fs, name);
                    }
                }
            }
            fs.check();
            for n in NAMES {
                match oracle.get(n) {
                    Some(data) => assert_eq!(&get(&mut fs, n).unwrap(), data, "seed {seed}"),
                    None => assert_eq!(errno(get(&mut fs, n)), ENOENT, "seed {seed}"),
                }
            }
            assert_eq!(
                fs.used_bytes(),
                oracle.values().map(|d| d.len() as u64).sum::<u64>()
            );
        }
        for n in oracle.keys() {
            sync_path(&mut fs, n);
        }
        sync_path(&mut fs, "/tmp/d");
        sync_path(&mut fs, "/tmp");
        let before = fs.digest();
        fs.crash(seed);
        assert_eq!(
            fs.digest(),
            before,
            "seed {seed}: a fully synced disk survives"
        );
        for (n, data) in &oracle {
            assert_eq!(&get(&mut fs, n).unwrap(), data);
        }
    }
}

/// Whatever was made durable survives any crash, and a crash keeps nothing
/// that was never written.
#[test]
fn crash_after_random_syncs_keeps_at_least_the_synced_bytes() {
    for seed in 0..200 {
        let mut rng = Rng(seed ^ 0xabc);
        let mut fs = Fs::new(t(0));
        fs.set_faults(Faults {
            torn_writes: rng.below(2) == 0,
            ..Faults::default()
        });
        put(&mut fs, "/tmp/f", b"");
        sync_path(&mut fs, "/tmp");
        let fd = fs.open(p("/tmp/f"), rw_create(), t(0)).unwrap();
        let mut written = Vec::new();
        let mut synced = Vec::new();
        for _ in 0..20 {
            let chunk = vec![b'a' + rng.below(26) as u8; rng.below(7) as usize + 1];
            fs.write(fd, &chunk, t(1)).unwrap();
            written.extend_from_slice(&chunk);
            if rng.below(4) == 0 {
                fs.sync(fd, true).unwrap();
                synced = written.clone();
            }
        }
        fs.crash(seed);
        let data = get(&mut fs, "/tmp/f").unwrap();
        assert!(data.starts_with(&synced), "seed {seed}: synced bytes kept");
        assert!(written.starts_with(&data), "seed {seed}: nothing invented");
        if !fs.faults().torn_writes {
            assert_eq!(data, synced);
        }
    }
}

#[test]
fn positional_reads_and_writes_leave_the_cursor() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"hello world");
    let fd = fs.open(p("/tmp/f"), rw_create(), t(1)).unwrap();
    let mut buf = [0; 5];
    assert_eq!(fs.read_at(fd, &mut buf, 6).unwrap(), 5);
    assert_eq!(&buf, b"world");
    assert_eq!(fs.position(fd).unwrap(), 0);
    assert_eq!(fs.write_at(fd, b"HELLO", 0, t(2)).unwrap(), 5);
    assert_eq!(fs.position(fd).unwrap(), 0);
    // Past the end: a hole of zeros, as pwrite(2).
    assert_eq!(fs.write_at(fd, b"!", 13, t(2)).unwrap(), 1);
    assert_eq!(fs.read_at(fd, &mut [0; 4], 14).unwrap(), 0);
    fs.close(fd).unwrap();
    assert_eq!(get(&mut fs, "/tmp/f").unwrap(), b"HELLO world\0\0!");
    // A positional write is unsynced like any other: a crash loses it.
    sync_path(&mut fs, "/tmp");
    let fd = fs.open(p("/tmp/f"), rw_create(), t(3)).unwrap();
    fs.sync(fd, false).unwrap();
    fs.write_at(fd, b"h", 0, t(3)).unwrap();
    fs.close(fd).unwrap();
    fs.crash(1);
    assert_eq!(get(&mut fs, "/tmp/f").unwrap(), b"HELLO world\0\0!");
}

#[test]
fn positional_write_on_an_append_descriptor_appends() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"ab");
    let append = OpenFlags {
        append: true,
        ..OpenFlags::default()
    };
    let fd = fs.open(p("/tmp/f"), append, t(1)).unwrap();
    fs.write_at(fd, b"c", 0, t(1)).unwrap();
    assert!(fs.access(fd).unwrap().append);
    fs.set_append(fd, false).unwrap();
    fs.write_at(fd, b"A", 0, t(1)).unwrap();
    fs.close(fd).unwrap();
    assert_eq!(get(&mut fs, "/tmp/f").unwrap(), b"Abc");
}

#[test]
fn flock_is_held_by_the_description() {
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"");
    let a = fs.open(p("/tmp/f"), ro(), t(1)).unwrap();
    let b = fs.open(p("/tmp/f"), ro(), t(1)).unwrap();
    fs.flock(a, Lock::Shared).unwrap();
    fs.flock(b, Lock::Shared).unwrap();
    assert_eq!(errno(fs.flock(b, Lock::Exclusive)), EAGAIN);
    fs.flock(a, Lock::Unlock).unwrap();
    fs.flock(b, Lock::Exclusive).unwrap();
    assert_eq!(errno(fs.flock(a, Lock::Shared)), EAGAIN);
    // A dup shares the lock: it is the same description.
    let b2 = fs.dup(b).unwrap();
    fs.flock(b2, Lock::Exclusive).unwrap();
    fs.close(b).unwrap();
    assert_eq!(errno(fs.flock(a, Lock::Shared)), EAGAIN);
    // Closing the description's last descriptor releases it.
    fs.close(b2).unwrap();
    fs.flock(a, Lock::Exclusive).unwrap();
    // A kill closes everything, so locks do not outlive the process.
    fs.kill();
    let c = fs.open(p("/tmp/f"), ro(), t(2)).unwrap();
    fs.flock(c, Lock::Exclusive).unwrap();
}

#[test]
fn a_refused_flock_conversion_drops_the_lock_held() {
    // Linux's flock_lock_inode removes the description's lock before it
    // looks for conflicts with the new one.
    let mut fs = Fs::new(t(0));
    put(&mut fs, "/tmp/f", b"");
    let a = fs.open(p("/tmp/f"), ro(), t(1)).unwrap();
    let b = fs.open(p("/tmp/f"), ro(), t(1)).unwrap();
    let c = fs.open(p("/tmp/f"), ro(), t(1)).unwrap();
    fs.flock(a, Lock::Shared).unwrap();
    fs.flock(b, Lock::Shared).unwrap();
    assert_eq!(errno(fs.flock(a, Lock::Exclusive)), EAGAIN);
    fs.flock(b, Lock::Unlock).unwrap();
    fs.flock(c, Lock::Exclusive).unwrap();
    // Asking again for the kind held changes nothing and succeeds.
    fs.flock(c, Lock::Exclusive).unwrap();
    assert_eq!(errno(fs.flock(a, Lock::Shared)), EAGAIN);
}

#[test]
fn allocate_extends_with_zeros_and_takes_room() {
    let mut fs = Fs::new(t(0));
    let fd = fs.open(p("/tmp/f"), rw_create(), t(1)).unwrap();
    fs.write(fd, b"xy", t(1)).unwrap();
    fs.allocate(fd, 0, 1, t(1)).unwrap();
    assert_eq!(fs.fstat(fd).unwrap().len, 2);
    fs.allocate(fd, 1, 7, t(1)).unwrap();
    assert_eq!(fs.fstat(fd).unwrap().len, 8);
    fs.set_faults(Faults {
        capacity_bytes: Some(10),
        ..Faults::default()
    });
    assert_eq!(errno(fs.allocate(fd, 0, 11, t(1))), ENOSPC);
    fs.close(fd).unwrap();
    assert_eq!(get(&mut fs, "/tmp/f").unwrap(), b"xy\0\0\0\0\0\0");
}

#[test]
fn raw_open_creates_read_only_and_lists_by_descriptor() {
    let mut fs = Fs::new(t(0));
    let std_checked = OpenFlags {
        read: true,
        create: true,
        mode: 0o644,
        ..OpenFlags::default()
    };
    assert_eq!(errno(fs.open(p("/tmp/lock"), std_checked, t(1))), EINVAL);
    let raw = OpenFlags {
        raw: true,
        ..std_checked
    };
    let fd = fs.open(p("/tmp/lock"), raw, t(1)).unwrap();
    assert_eq!(errno(fs.write(fd, b"x", t(1))), EBADF);
    let dir = fs.open(p("/tmp"), ro(), t(1)).unwrap();
    let names: Vec<_> = fs
        .read_dir_fd(dir)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["lock"]);
    assert_eq!(errno(fs.read_dir_fd(fd)), ENOTDIR);
}
