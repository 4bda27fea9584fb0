//! The conformance suite through `std::fs` and `std::os::unix::fs`: the
//! same tests in both modes, a real temporary directory in production and
//! the node's simulated disk under `--cfg simulation` (std reaches it from
//! inside a runtime's `block_on`: intercept_fs). Exceptions are named in
//! the binary's docs.

use crate::errno::*;
use crate::{assert_err, assert_errno, exception_root_bypasses_permissions, oflag, with_dir};
use std::fs::{self, DirBuilder, File, FileTimes, OpenOptions, Permissions, TryLockError};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{
    symlink, DirBuilderExt, DirEntryExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// A directory's entries, sorted (`EXCEPTION_READ_DIR_ORDER`), each with
/// whether it is a directory; every entry's path, type, metadata and inode
/// number agree with one another.
fn listing(dir: &Path) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        assert_eq!(e.path(), dir.join(e.file_name()));
        let ft = e.file_type().unwrap();
        let m = e.metadata().unwrap();
        assert_eq!(m.is_dir(), ft.is_dir());
        assert_eq!(m.is_symlink(), ft.is_symlink());
        assert_eq!(e.ino(), m.ino(), "d_ino is the inode's number");
        out.push((e.file_name().into_string().unwrap(), ft.is_dir()));
    }
    out.sort();
    out
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn write_then_read_back() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"hello").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"hello");
        assert_eq!(fs::read_to_string(&p).unwrap(), "hello");
        let m = fs::metadata(&p).unwrap();
        assert!(m.is_file() && !m.is_dir() && !m.is_symlink());
        assert_eq!(m.len(), 5);
        assert_eq!(m.size(), 5);
        assert_eq!(m.nlink(), 1);
        assert_eq!(m.mode(), 0o100_644, "a regular file, 0o666 & !umask");
        assert_eq!(m.rdev(), 0);
        // EXCEPTION_ALLOCATED_BLOCKS: only bounded, never compared.
        assert_eq!(m.blksize(), 4096);
        assert!(m.blocks() * 512 >= m.size());
        let dm = fs::metadata(&d).unwrap();
        assert_eq!((m.uid(), m.gid()), (dm.uid(), dm.gid()), "one owner");
        assert_eq!(m.dev(), dm.dev(), "one file system");
        assert_ne!(m.ino(), dm.ino());
        assert!(m.modified().is_ok() && m.accessed().is_ok());
        assert_eq!(m.mtime(), fs::metadata(&p).unwrap().mtime());
        fs::write(&p, b"hi").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"hi", "write replaces the contents");
        assert!(fs::exists(&p).unwrap());
        let e = fs::read_to_string({
            fs::write(d.join("bin"), [0xff, 0xfe]).unwrap();
            d.join("bin")
        })
        .unwrap_err();
        assert_eq!((e.kind(), e.raw_os_error()), (ErrorKind::InvalidData, None));
    });
}

#[test]
fn missing_paths_are_not_found() {
    with_dir(|d| async move {
        let p = d.join("missing");
        assert_err(fs::read(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::metadata(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::symlink_metadata(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::remove_file(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::remove_dir(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::remove_dir_all(&p), ErrorKind::NotFound, ENOENT);
        assert_err(File::open(&p), ErrorKind::NotFound, ENOENT);
        assert_err(
            fs::create_dir(d.join("no/sub")),
            ErrorKind::NotFound,
            ENOENT,
        );
        assert_err(File::create(d.join("no/f")), ErrorKind::NotFound, ENOENT);
        assert_err(fs::read_dir(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::rename(&p, d.join("x")), ErrorKind::NotFound, ENOENT);
        assert_err(fs::hard_link(&p, d.join("x")), ErrorKind::NotFound, ENOENT);
        assert_err(fs::read_link(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::canonicalize(&p), ErrorKind::NotFound, ENOENT);
        assert_err(fs::copy(&p, d.join("x")), ErrorKind::NotFound, ENOENT);
        assert_err(
            fs::set_permissions(&p, Permissions::from_mode(0o600)),
            ErrorKind::NotFound,
            ENOENT,
        );
        assert!(!fs::exists(&p).unwrap());
        assert!(!p.exists() && !p.is_file() && !p.is_dir());
        // An empty target is refused by symlink(2) itself.
        assert_err(symlink("", d.join("empty")), ErrorKind::NotFound, ENOENT);
    });
}

#[test]
fn paths_through_a_file_are_not_a_directory() {
    with_dir(|d| async move {
        let f = d.join("file");
        fs::write(&f, b"x").unwrap();
        assert_err(fs::metadata(f.join("x")), ErrorKind::NotADirectory, ENOTDIR);
        assert_err(File::open(f.join("x")), ErrorKind::NotADirectory, ENOTDIR);
        assert_err(fs::read_dir(&f), ErrorKind::NotADirectory, ENOTDIR);
        assert_err(fs::exists(f.join("x")), ErrorKind::NotADirectory, ENOTDIR);
        let mut slash = f.clone().into_os_string();
        slash.push("/");
        assert_err(fs::metadata(&slash), ErrorKind::NotADirectory, ENOTDIR);
        assert_err(File::open(&slash), ErrorKind::NotADirectory, ENOTDIR);
        assert_err(
            fs::create_dir_all(f.join("a/b")),
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        assert_err(fs::remove_dir(&f), ErrorKind::NotADirectory, ENOTDIR);
        assert_err(fs::remove_dir_all(&f), ErrorKind::NotADirectory, ENOTDIR);
        // O_DIRECTORY on a file.
        assert_err(
            OpenOptions::new()
                .read(true)
                .custom_flags(oflag::O_DIRECTORY)
                .open(&f),
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
    });
}

#[test]
fn existing_names_are_already_exists() {
    with_dir(|d| async move {
        let p = d.join("f");
        File::create_new(&p).unwrap();
        assert_err(File::create_new(&p), ErrorKind::AlreadyExists, EEXIST);
        assert_err(
            OpenOptions::new().write(true).create_new(true).open(&p),
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        assert_err(fs::create_dir(&p), ErrorKind::AlreadyExists, EEXIST);
        fs::create_dir(d.join("dir")).unwrap();
        assert_err(
            fs::create_dir(d.join("dir")),
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        assert_err(
            fs::hard_link(&p, d.join("dir")),
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        assert_err(symlink("x", &p), ErrorKind::AlreadyExists, EEXIST);
        // create_new does not follow a dangling link either.
        symlink("nowhere", d.join("dangling")).unwrap();
        assert_err(
            File::create_new(d.join("dangling")),
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        assert!(!fs::exists(d.join("nowhere")).unwrap());
    });
}

#[test]
fn directories_refuse_file_operations() {
    with_dir(|d| async move {
        let dir = d.join("dir");
        fs::create_dir(&dir).unwrap();
        assert_err(File::create(&dir), ErrorKind::IsADirectory, EISDIR);
        assert_err(
            OpenOptions::new().write(true).open(&dir),
            ErrorKind::IsADirectory,
            EISDIR,
        );
        assert_err(fs::read(&dir), ErrorKind::IsADirectory, EISDIR);
        assert_err(fs::remove_file(&dir), ErrorKind::IsADirectory, EISDIR);
        assert_err(
            fs::hard_link(&dir, d.join("l")),
            ErrorKind::PermissionDenied,
            EPERM,
        );
        let mut slash = d.join("new").into_os_string();
        slash.push("/");
        assert_err(File::create(&slash), ErrorKind::IsADirectory, EISDIR);
        // Opening a directory read-only works: it is how one syncs it.
        let mut handle = File::open(&dir).unwrap();
        handle.sync_all().unwrap();
        handle.sync_data().unwrap();
        assert!(handle.metadata().unwrap().is_dir());
        let mut buf = [0; 4];
        assert_err(handle.read(&mut buf), ErrorKind::IsADirectory, EISDIR);
        assert_errno(handle.write(b"x"), EBADF);
        assert_err(handle.set_len(0), ErrorKind::InvalidInput, EINVAL);
    });
}

#[test]
fn remove_dir_needs_an_empty_directory() {
    with_dir(|d| async move {
        let dir = d.join("dir");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("f"), b"x").unwrap();
        assert_err(
            fs::remove_dir(&dir),
            ErrorKind::DirectoryNotEmpty,
            ENOTEMPTY,
        );
        fs::remove_file(dir.join("f")).unwrap();
        fs::remove_dir(&dir).unwrap();
        assert!(!fs::exists(&dir).unwrap());
    });
}

#[test]
fn remove_dir_all_removes_a_tree_without_following_symlinks() {
    with_dir(|d| async move {
        let keep = d.join("keep");
        fs::create_dir(&keep).unwrap();
        fs::write(keep.join("k"), b"k").unwrap();
        fs::create_dir_all(d.join("t/a/b/c")).unwrap();
        fs::write(d.join("t/a/b/f"), b"x").unwrap();
        fs::write(d.join("t/g"), b"y").unwrap();
        symlink(&keep, d.join("t/a/link")).unwrap();
        symlink("nowhere", d.join("t/dangling")).unwrap();
        fs::set_permissions(d.join("t/g"), Permissions::from_mode(0o400)).unwrap();
        fs::remove_dir_all(d.join("t")).unwrap();
        assert!(!fs::exists(d.join("t")).unwrap());
        assert_eq!(fs::read(keep.join("k")).unwrap(), b"k");
        // A symlink to a directory: the link goes, the directory stays.
        symlink(&keep, d.join("to-keep")).unwrap();
        fs::remove_dir_all(d.join("to-keep")).unwrap();
        assert!(fs::symlink_metadata(d.join("to-keep")).is_err());
        assert_eq!(listing(&keep), vec![("k".into(), false)]);
    });
}

#[test]
fn read_dir_lists_entries() {
    with_dir(|d| async move {
        fs::write(d.join("b"), b"").unwrap();
        fs::write(d.join("a"), b"").unwrap();
        fs::create_dir(d.join("c")).unwrap();
        symlink("c", d.join("l")).unwrap();
        assert_eq!(
            listing(&d),
            vec![
                ("a".into(), false),
                ("b".into(), false),
                ("c".into(), true),
                ("l".into(), false)
            ]
        );
        assert!(fs::read_dir(&d)
            .unwrap()
            .any(|e| e.unwrap().file_type().unwrap().is_symlink()));
        assert!(listing(&d.join("c")).is_empty());
        // Through the link, the directory's own (empty) listing.
        assert!(listing(&d.join("l")).is_empty());
        // A directory's link count: itself, `.`, and each child's `..`.
        assert_eq!(fs::metadata(&d).unwrap().nlink(), 3);
        assert_eq!(fs::metadata(d.join("c")).unwrap().nlink(), 2);
    });
}

#[test]
fn rename_replaces_and_refuses_mismatched_kinds() {
    with_dir(|d| async move {
        fs::write(d.join("a"), b"new").unwrap();
        fs::write(d.join("b"), b"old").unwrap();
        let ino = fs::metadata(d.join("a")).unwrap().ino();
        fs::rename(d.join("a"), d.join("b")).unwrap();
        assert_eq!(fs::read(d.join("b")).unwrap(), b"new");
        assert_eq!(fs::metadata(d.join("b")).unwrap().ino(), ino);
        assert!(!fs::exists(d.join("a")).unwrap());
        // Onto itself, and between two links of one file: nothing happens.
        fs::rename(d.join("b"), d.join("b")).unwrap();
        fs::hard_link(d.join("b"), d.join("b2")).unwrap();
        fs::rename(d.join("b"), d.join("b2")).unwrap();
        assert!(fs::exists(d.join("b")).unwrap() && fs::exists(d.join("b2")).unwrap());
        assert_eq!(fs::metadata(d.join("b")).unwrap().nlink(), 2);
        fs::create_dir(d.join("full")).unwrap();
        fs::write(d.join("full/x"), b"").unwrap();
        fs::create_dir(d.join("empty")).unwrap();
        assert_err(
            fs::rename(d.join("b"), d.join("full")),
            ErrorKind::IsADirectory,
            EISDIR,
        );
        assert_err(
            fs::rename(d.join("full"), d.join("b")),
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        assert_err(
            fs::rename(d.join("empty"), d.join("full")),
            ErrorKind::DirectoryNotEmpty,
            ENOTEMPTY,
        );
        assert_err(
            fs::rename(d.join("full"), d.join("full/sub")),
            ErrorKind::InvalidInput,
            EINVAL,
        );
        // A symlink is renamed, not its target.
        symlink("full", d.join("link")).unwrap();
        fs::rename(d.join("link"), d.join("link2")).unwrap();
        assert_eq!(fs::read_link(d.join("link2")).unwrap(), Path::new("full"));
        // A directory may replace an empty one.
        fs::rename(d.join("full"), d.join("empty")).unwrap();
        assert_eq!(fs::read(d.join("empty/x")).unwrap(), b"");
        assert!(!fs::exists(d.join("full")).unwrap());
    });
}

#[test]
fn cursors_seek_read_and_write() {
    with_dir(|d| async move {
        let p = d.join("f");
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&p)
            .unwrap();
        f.write_all(b"hello world").unwrap();
        assert_eq!(f.stream_position().unwrap(), 11);
        assert_eq!(f.seek(SeekFrom::Start(6)).unwrap(), 6);
        let mut buf = [0; 5];
        f.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"world");
        assert_eq!(f.read(&mut buf).unwrap(), 0, "at the end");
        let e = f.read_exact(&mut buf).unwrap_err();
        assert_eq!(
            (e.kind(), e.raw_os_error()),
            (ErrorKind::UnexpectedEof, None)
        );
        assert_eq!(f.seek(SeekFrom::End(-5)).unwrap(), 6);
        assert_eq!(f.seek(SeekFrom::Current(-6)).unwrap(), 0);
        f.write_all(b"J").unwrap();
        assert_err(
            f.seek(SeekFrom::Current(-10)),
            ErrorKind::InvalidInput,
            EINVAL,
        );
        assert_err(f.seek(SeekFrom::End(-100)), ErrorKind::InvalidInput, EINVAL);
        assert_eq!(
            f.stream_position().unwrap(),
            1,
            "a refused seek moves nothing"
        );
        // Writing past the end leaves zeros between.
        assert_eq!(f.seek(SeekFrom::End(2)).unwrap(), 13);
        f.write_all(b"!").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"Jello world\0\0!");
        f.rewind().unwrap();
        let mut all = Vec::new();
        f.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"Jello world\0\0!");
        // Vectored writes and reads.
        f.rewind().unwrap();
        let n = f
            .write_vectored(&[std::io::IoSlice::new(b"AB"), std::io::IoSlice::new(b"CD")])
            .unwrap();
        assert_eq!(n, 4);
        f.rewind().unwrap();
        let (mut x, mut y) = ([0; 3], [0; 3]);
        let n = f
            .read_vectored(&mut [
                std::io::IoSliceMut::new(&mut x),
                std::io::IoSliceMut::new(&mut y),
            ])
            .unwrap();
        assert_eq!((n, &x, &y), (6, b"ABC", b"Do "));
    });
}

#[test]
fn positioned_reads_and_writes() {
    with_dir(|d| async move {
        let p = d.join("f");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&p)
            .unwrap();
        f.write_all_at(b"hello", 0).unwrap();
        assert_eq!(f.write_at(b"XY", 8).unwrap(), 2);
        assert_eq!(fs::read(&p).unwrap(), b"hello\0\0\0XY");
        assert_eq!(
            (&f).stream_position().unwrap(),
            0,
            "pwrite leaves the cursor"
        );
        let mut buf = [0; 4];
        assert_eq!(f.read_at(&mut buf, 8).unwrap(), 2, "short at the end");
        assert_eq!(&buf[..2], b"XY");
        assert_eq!(f.read_at(&mut buf, 100).unwrap(), 0, "past the end");
        f.read_exact_at(&mut buf, 1).unwrap();
        assert_eq!(&buf, b"ello");
        let e = f.read_exact_at(&mut buf, 8).unwrap_err();
        assert_eq!(
            (e.kind(), e.raw_os_error()),
            (ErrorKind::UnexpectedEof, None)
        );
        // Linux: pwrite on an O_APPEND descriptor appends, whatever the offset.
        let a = OpenOptions::new().append(true).open(&p).unwrap();
        a.write_all_at(b"END", 0).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"hello\0\0\0XYEND");
        // On a read-only descriptor.
        let ro = File::open(&p).unwrap();
        assert_errno(ro.write_at(b"x", 0), EBADF);
        let wo = OpenOptions::new().write(true).open(&p).unwrap();
        assert_errno(wo.read_at(&mut buf, 0), EBADF);
    });
}

#[test]
fn append_mode_writes_at_the_end() {
    with_dir(|d| async move {
        let p = d.join("log");
        fs::write(&p, b"one\n").unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(b"two\n").unwrap();
        assert_eq!(f.stream_position().unwrap(), 8);
        let mut other = OpenOptions::new().append(true).open(&p).unwrap();
        other.write_all(b"three\n").unwrap();
        f.write_all(b"four\n").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one\ntwo\nthree\nfour\n");
        let mut buf = [0; 1];
        assert_errno(f.read(&mut buf), EBADF);
        // append + create makes the file.
        let mut g = OpenOptions::new()
            .append(true)
            .create(true)
            .open(d.join("new"))
            .unwrap();
        g.write_all(b"x").unwrap();
        assert_eq!(fs::read(d.join("new")).unwrap(), b"x");
    });
}

#[test]
// The refused combinations are the point of this test.
#[allow(clippy::nonsensical_open_options, clippy::suspicious_open_options)]
fn open_options_and_custom_flags() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"data").unwrap();
        // std refuses these itself, before any system call: no errno.
        let refused = |r: std::io::Result<File>| {
            let e = r.unwrap_err();
            assert_eq!(
                (e.kind(), e.raw_os_error()),
                (ErrorKind::InvalidInput, None)
            );
        };
        refused(OpenOptions::new().open(&p));
        refused(OpenOptions::new().read(true).truncate(true).open(&p));
        refused(OpenOptions::new().read(true).create(true).open(&p));
        refused(OpenOptions::new().append(true).truncate(true).open(&p));
        assert_eq!(fs::read(&p).unwrap(), b"data", "nothing was truncated");
        drop(
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&p)
                .unwrap(),
        );
        assert_eq!(fs::read(&p).unwrap(), b"data", "create keeps the contents");
        // write without truncate overwrites in place.
        OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .write_all(b"D")
            .unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"Data");
        drop(File::create(&p).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"", "File::create truncates");
        // mode() sets the new file's bits (before the umask), and only a
        // new file's.
        let q = d.join("private");
        let opts = || {
            let mut o = OpenOptions::new();
            o.write(true).create(true).truncate(false).mode(0o600);
            o
        };
        opts().open(&q).unwrap();
        assert_eq!(mode(&q), 0o600);
        fs::set_permissions(&q, Permissions::from_mode(0o640)).unwrap();
        opts().open(&q).unwrap();
        assert_eq!(mode(&q), 0o640, "mode() leaves an existing file alone");
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o777)
            .open(d.join("umasked"))
            .unwrap();
        assert_eq!(mode(&d.join("umasked")), 0o755, "the umask applies");
        // O_NOFOLLOW on a symlink, O_EXCL through custom flags, O_SYNC.
        symlink("f", d.join("link")).unwrap();
        assert_errno(
            OpenOptions::new()
                .read(true)
                .custom_flags(oflag::O_NOFOLLOW)
                .open(d.join("link")),
            ELOOP,
        );
        OpenOptions::new()
            .read(true)
            .custom_flags(oflag::O_NOFOLLOW)
            .open(&p)
            .unwrap();
        let mut s = OpenOptions::new()
            .write(true)
            .custom_flags(oflag::O_SYNC)
            .open(&p)
            .unwrap();
        s.write_all(b"synced").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"synced");
        // custom_flags cannot override the access mode std sets.
        let mut w = OpenOptions::new()
            .write(true)
            .custom_flags(oflag::O_RDWR)
            .open(&p)
            .unwrap();
        let mut b = [0; 1];
        assert_errno(w.read(&mut b), EBADF);
    });
}

#[test]
fn set_len_truncates_and_extends() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"0123456789").unwrap();
        let mut f = OpenOptions::new().read(true).write(true).open(&p).unwrap();
        f.seek(SeekFrom::End(0)).unwrap();
        f.set_len(4).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 4);
        assert_eq!(
            f.stream_position().unwrap(),
            10,
            "set_len leaves the cursor"
        );
        f.set_len(6).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"0123\0\0");
        f.write_all(b"!").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"0123\0\0\0\0\0\0!");
        let ro = File::open(&p).unwrap();
        assert_err(ro.set_len(1), ErrorKind::InvalidInput, EINVAL);
        f.sync_all().unwrap();
        f.sync_data().unwrap();
        ro.sync_all().unwrap();
        // Truncating by path, through create: opening with truncate.
        OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        assert_eq!(fs::metadata(&p).unwrap().len(), 0);
        assert_eq!(f.metadata().unwrap().len(), 0, "one inode");
    });
}

#[test]
fn try_clone_shares_the_cursor_and_the_open_file() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"abcdef").unwrap();
        let mut a = File::open(&p).unwrap();
        let mut b = a.try_clone().unwrap();
        let mut buf = [0; 2];
        a.read_exact(&mut buf).unwrap();
        b.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"cd");
        drop(a);
        b.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ef", "the clone outlives the original");
    });
}

#[test]
fn locks_conflict_between_open_files() {
    with_dir(|d| async move {
        let p = d.join("lock");
        fs::write(&p, b"").unwrap();
        let a = File::open(&p).unwrap();
        let b = File::open(&p).unwrap();
        a.lock().unwrap();
        assert!(matches!(b.try_lock(), Err(TryLockError::WouldBlock)));
        assert!(matches!(b.try_lock_shared(), Err(TryLockError::WouldBlock)));
        // The same open file (a clone) converts its own lock.
        let a2 = a.try_clone().unwrap();
        a2.try_lock_shared().unwrap();
        b.try_lock_shared().unwrap();
        assert!(matches!(a.try_lock(), Err(TryLockError::WouldBlock)));
        // Linux removes the old lock before it tries the new one: the
        // failed conversion left `a` holding nothing.
        b.unlock().unwrap();
        let c = File::open(&p).unwrap();
        c.try_lock().unwrap();
        assert!(matches!(a.try_lock_shared(), Err(TryLockError::WouldBlock)));
        drop(c);
        a.try_lock().unwrap();
        a.unlock().unwrap();
        b.lock_shared().unwrap();
        a.lock_shared().unwrap();
        drop(b);
        // Closing releases: the last shared holder is `a`.
        a.unlock().unwrap();
        let c = File::open(&p).unwrap();
        c.try_lock().unwrap();
        drop(c);
        a.try_lock().unwrap();
    });
}

#[test]
fn hard_links_share_contents() {
    with_dir(|d| async move {
        let a = d.join("a");
        fs::write(&a, b"same").unwrap();
        fs::hard_link(&a, d.join("b")).unwrap();
        let (ma, mb) = (
            fs::metadata(&a).unwrap(),
            fs::metadata(d.join("b")).unwrap(),
        );
        assert_eq!((ma.nlink(), mb.nlink()), (2, 2));
        assert_eq!(ma.ino(), mb.ino());
        fs::write(d.join("b"), b"changed").unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"changed");
        fs::remove_file(&a).unwrap();
        assert_eq!(fs::read(d.join("b")).unwrap(), b"changed");
        assert_eq!(fs::metadata(d.join("b")).unwrap().nlink(), 1);
    });
}

#[test]
fn symlinks_resolve_and_read_back() {
    with_dir(|d| async move {
        fs::create_dir(d.join("real")).unwrap();
        fs::write(d.join("real/f"), b"target").unwrap();
        symlink("real", d.join("dirlink")).unwrap();
        symlink("real/f", d.join("filelink")).unwrap();
        assert_eq!(fs::read(d.join("dirlink/f")).unwrap(), b"target");
        assert_eq!(fs::read(d.join("filelink")).unwrap(), b"target");
        assert_eq!(
            fs::read_link(d.join("filelink")).unwrap(),
            PathBuf::from("real/f")
        );
        assert_err(
            fs::read_link(d.join("real/f")),
            ErrorKind::InvalidInput,
            EINVAL,
        );
        let lm = fs::symlink_metadata(d.join("filelink")).unwrap();
        assert!(lm.is_symlink() && lm.file_type().is_symlink());
        assert_eq!(lm.len(), "real/f".len() as u64);
        assert_eq!(lm.mode() & 0o170_000, 0o120_000);
        assert!(d.join("filelink").is_symlink());
        assert!(fs::metadata(d.join("filelink")).unwrap().is_file());
        let base = fs::canonicalize(&d).unwrap();
        assert_eq!(
            fs::canonicalize(d.join("dirlink/./f")).unwrap(),
            base.join("real/f")
        );
        assert_eq!(fs::canonicalize(d.join("real/..")).unwrap(), base);
        assert_eq!(
            fs::canonicalize(d.join("dirlink/../filelink")).unwrap(),
            base.join("real/f"),
            "`..` after a link is the link target's parent"
        );
        // An absolute target.
        symlink(d.join("real"), d.join("abs")).unwrap();
        assert_eq!(fs::read(d.join("abs/f")).unwrap(), b"target");
        // A dangling link exists as a link only.
        symlink("nowhere", d.join("dangling")).unwrap();
        assert!(!fs::exists(d.join("dangling")).unwrap());
        assert!(fs::symlink_metadata(d.join("dangling")).is_ok());
        assert_err(
            fs::metadata(d.join("dangling")),
            ErrorKind::NotFound,
            ENOENT,
        );
        assert_err(
            fs::canonicalize(d.join("dangling")),
            ErrorKind::NotFound,
            ENOENT,
        );
        // Writing through a dangling link creates its target.
        fs::write(d.join("dangling"), b"made").unwrap();
        assert_eq!(fs::read(d.join("nowhere")).unwrap(), b"made");
        // Removing a link leaves its target.
        fs::remove_file(d.join("filelink")).unwrap();
        assert!(fs::exists(d.join("real/f")).unwrap());
        // A loop.
        symlink("loop2", d.join("loop1")).unwrap();
        symlink("loop1", d.join("loop2")).unwrap();
        assert_errno(fs::metadata(d.join("loop1")), ELOOP);
        assert_errno(File::open(d.join("loop1")), ELOOP);
        assert_errno(fs::canonicalize(d.join("loop1")), ELOOP);
        assert!(fs::symlink_metadata(d.join("loop1")).unwrap().is_symlink());
        // A hard link to a symlink links the symlink itself.
        fs::hard_link(d.join("dirlink"), d.join("dirlink2")).unwrap();
        assert!(fs::symlink_metadata(d.join("dirlink2"))
            .unwrap()
            .is_symlink());
        // rmdir through a link to a directory.
        assert_err(
            fs::remove_dir(d.join("dirlink")),
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
    });
}

#[test]
fn create_dir_all_and_dir_builder() {
    with_dir(|d| async move {
        fs::create_dir_all(d.join("a/b/c")).unwrap();
        fs::create_dir_all(d.join("a/b/c")).unwrap();
        fs::create_dir_all(d.join("a/./b/../b/c/")).unwrap();
        assert!(fs::metadata(d.join("a/b/c")).unwrap().is_dir());
        assert_eq!(mode(&d.join("a")), 0o755);
        assert_eq!(
            fs::metadata(d.join("a")).unwrap().mode() & 0o170_000,
            0o040_000
        );
        let mut b = DirBuilder::new();
        b.mode(0o700);
        b.create(d.join("private")).unwrap();
        assert_eq!(mode(&d.join("private")), 0o700);
        assert_err(b.create(d.join("x/y")), ErrorKind::NotFound, ENOENT);
        assert_err(
            b.create(d.join("private")),
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        b.recursive(true);
        b.create(d.join("x/y")).unwrap();
        b.create(d.join("x/y")).unwrap();
        assert_eq!(mode(&d.join("x")), 0o700);
        assert_eq!(mode(&d.join("x/y")), 0o700);
        let long = "n".repeat(256);
        assert_errno(fs::create_dir(d.join(&long)), ENAMETOOLONG);
        assert_errno(File::create(d.join(&long)), ENAMETOOLONG);
        fs::create_dir(d.join("n".repeat(255))).unwrap();
    });
}

#[test]
fn copy_copies_bytes_and_permissions() {
    with_dir(|d| async move {
        let a = d.join("a");
        let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&a, &big).unwrap();
        fs::set_permissions(&a, Permissions::from_mode(0o640)).unwrap();
        assert_eq!(fs::copy(&a, d.join("b")).unwrap(), big.len() as u64);
        assert_eq!(fs::read(d.join("b")).unwrap(), big);
        assert_eq!(mode(&d.join("b")), 0o640);
        // Over an existing, longer file: truncated, and its mode replaced.
        fs::write(d.join("c"), vec![b'z'; 200_000]).unwrap();
        fs::set_permissions(d.join("c"), Permissions::from_mode(0o600)).unwrap();
        fs::copy(&a, d.join("c")).unwrap();
        assert_eq!(fs::read(d.join("c")).unwrap(), big);
        assert_eq!(mode(&d.join("c")), 0o640);
        // Through a link: the target's bytes.
        symlink("a", d.join("link")).unwrap();
        fs::copy(d.join("link"), d.join("e")).unwrap();
        assert!(!fs::symlink_metadata(d.join("e")).unwrap().is_symlink());
        // An empty file.
        fs::write(d.join("empty"), b"").unwrap();
        assert_eq!(fs::copy(d.join("empty"), d.join("empty2")).unwrap(), 0);
        fs::create_dir(d.join("dir")).unwrap();
        let e = fs::copy(d.join("dir"), d.join("x")).unwrap_err();
        assert_eq!(
            (e.kind(), e.raw_os_error()),
            (ErrorKind::InvalidInput, None)
        );
        assert_err(fs::copy(&a, d.join("dir")), ErrorKind::IsADirectory, EISDIR);
        assert_err(fs::copy(&a, d.join("none/x")), ErrorKind::NotFound, ENOENT);
    });
}

#[test]
fn permissions_round_trip_and_apply() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"x").unwrap();
        let mut perm = fs::metadata(&p).unwrap().permissions();
        assert!(!perm.readonly());
        perm.set_readonly(true);
        fs::set_permissions(&p, perm).unwrap();
        assert!(fs::metadata(&p).unwrap().permissions().readonly());
        assert_eq!(mode(&p), 0o444);
        assert_eq!(fs::read(&p).unwrap(), b"x", "reading is still allowed");
        let write = OpenOptions::new().write(true).open(&p);
        let sub = d.join("ro-dir");
        fs::create_dir(&sub).unwrap();
        fs::set_permissions(&sub, Permissions::from_mode(0o500)).unwrap();
        let create_inside = File::create(sub.join("x"));
        if exception_root_bypasses_permissions() {
            assert!(write.is_ok() && create_inside.is_ok());
        } else {
            assert_err(write, ErrorKind::PermissionDenied, EACCES);
            assert_err(create_inside, ErrorKind::PermissionDenied, EACCES);
        }
        let f = File::open(&p).unwrap();
        f.set_permissions(Permissions::from_mode(0o600)).unwrap();
        let m = f.metadata().unwrap();
        assert_eq!(m.permissions().mode(), 0o100_600);
        assert_eq!(m.mode(), 0o100_600);
        // Special bits round-trip.
        fs::set_permissions(&p, Permissions::from_mode(0o1755)).unwrap();
        assert_eq!(mode(&p), 0o1755);
        // chmod through a symlink changes the target.
        symlink("f", d.join("l")).unwrap();
        fs::set_permissions(d.join("l"), Permissions::from_mode(0o640)).unwrap();
        assert_eq!(mode(&p), 0o640);
    });
}

#[test]
fn unlinked_open_file_stays_usable() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"still here").unwrap();
        let mut f = OpenOptions::new().read(true).write(true).open(&p).unwrap();
        fs::remove_file(&p).unwrap();
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        assert_eq!(s, "still here");
        f.write_all(b"!").unwrap();
        f.sync_all().unwrap();
        let m = f.metadata().unwrap();
        assert_eq!((m.nlink(), m.len()), (0, 11));
        assert!(!fs::exists(&p).unwrap());
        // A new file under the old name is another inode.
        fs::write(&p, b"new").unwrap();
        assert_ne!(fs::metadata(&p).unwrap().ino(), m.ino());
    });
}

#[test]
fn timestamps_set_and_move_forward() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"1").unwrap();
        let before = fs::metadata(&p).unwrap().modified().unwrap();
        sim_runtime::time::sleep(Duration::from_millis(20)).await;
        fs::write(&p, b"2").unwrap();
        let after = fs::metadata(&p).unwrap().modified().unwrap();
        assert!(after > before, "{after:?} > {before:?}");
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        let (at, mt) = (
            UNIX_EPOCH + Duration::new(1_000_000_000, 5),
            UNIX_EPOCH + Duration::new(1_100_000_000, 7),
        );
        f.set_times(FileTimes::new().set_accessed(at).set_modified(mt))
            .unwrap();
        let m = fs::metadata(&p).unwrap();
        assert_eq!((m.accessed().unwrap(), m.modified().unwrap()), (at, mt));
        assert_eq!((m.atime(), m.atime_nsec()), (1_000_000_000, 5));
        assert_eq!((m.mtime(), m.mtime_nsec()), (1_100_000_000, 7));
        // Setting only one leaves the other.
        let mt2 = UNIX_EPOCH + Duration::from_secs(1_200_000_000);
        f.set_modified(mt2).unwrap();
        let m = fs::metadata(&p).unwrap();
        assert_eq!((m.accessed().unwrap(), m.modified().unwrap()), (at, mt2));
        // A directory's modification time moves with its entries.
        File::open(&d)
            .unwrap()
            .set_times(FileTimes::new().set_modified(mt))
            .unwrap();
        fs::write(d.join("g"), b"").unwrap();
        assert!(fs::metadata(&d).unwrap().modified().unwrap() > mt);
    });
}

#[test]
fn exists_and_try_exists_follow_links() {
    with_dir(|d| async move {
        fs::write(d.join("f"), b"").unwrap();
        symlink("f", d.join("ok")).unwrap();
        symlink("gone", d.join("bad")).unwrap();
        assert!(d.join("ok").try_exists().unwrap());
        assert!(!d.join("bad").try_exists().unwrap());
        assert!(d.join("f").is_file() && d.is_dir());
        assert!(!d.join("bad").exists());
    });
}
