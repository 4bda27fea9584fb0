//! The same tests in both modes: real Tokio on a real temporary directory,
//! and the simulated disk. Exceptions are named in the binary's docs.

use crate::errno::*;
use crate::{assert_err, assert_errno, exception_root_bypasses_permissions, with_dir};
use sim_runtime::fs::{self, File, OpenOptions};
use sim_runtime::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use std::io::{ErrorKind, SeekFrom};
use std::os::unix::fs::{DirEntryExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

async fn listing(dir: &Path) -> Vec<(String, bool)> {
    let mut rd = fs::read_dir(dir).await.unwrap();
    let mut out = Vec::new();
    while let Some(e) = rd.next_entry().await.unwrap() {
        assert_eq!(e.path(), dir.join(e.file_name()));
        let is_dir = e.file_type().await.unwrap().is_dir();
        assert_eq!(e.metadata().await.unwrap().is_dir(), is_dir);
        out.push((e.file_name().into_string().unwrap(), is_dir));
    }
    // EXCEPTION_READ_DIR_ORDER: real order is arbitrary.
    out.sort();
    out
}

#[test]
fn write_then_read_back() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"hello").await.unwrap();
        assert_eq!(fs::read(&p).await.unwrap(), b"hello");
        assert_eq!(fs::read_to_string(&p).await.unwrap(), "hello");
        let m = fs::metadata(&p).await.unwrap();
        assert!(m.is_file());
        assert!(!m.is_dir());
        assert!(!m.is_symlink());
        assert_eq!(m.len(), 5);
        assert_eq!(m.nlink(), 1);
        assert_eq!(m.permissions().mode() & 0o777, 0o644, "0o666 & !umask");
        assert!(m.modified().is_ok());
        // write replaces the whole contents.
        fs::write(&p, b"hi").await.unwrap();
        assert_eq!(fs::read(&p).await.unwrap(), b"hi");
    });
}

/// `tokio::fs` returns std's own `Metadata` and `FileType` (what fs-err and
/// axum-server's TLS name), and they agree with what `std::fs` says of the
/// same file, the `std::os::unix::fs` extensions included: one disk (in a
/// simulation, the node's), one answer.
#[test]
fn metadata_and_file_types_are_std_ones_agreeing_with_std() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"hello").await.unwrap();
        fs::create_dir(d.join("sub")).await.unwrap();
        fs::symlink("f", d.join("link")).await.unwrap();
        let same = |a: &std::fs::Metadata, b: &std::fs::Metadata| {
            assert_eq!(a.file_type(), b.file_type());
            assert_eq!(
                (a.dev(), a.ino(), a.mode(), a.nlink(), a.uid(), a.gid()),
                (b.dev(), b.ino(), b.mode(), b.nlink(), b.uid(), b.gid())
            );
            assert_eq!(
                (a.size(), a.blocks(), a.blksize()),
                (b.size(), b.blocks(), b.blksize())
            );
            assert_eq!(a.modified().unwrap(), b.modified().unwrap());
            assert_eq!((a.ctime(), a.ctime_nsec()), (b.ctime(), b.ctime_nsec()));
        };
        let m: std::fs::Metadata = fs::metadata(&p).await.unwrap();
        same(&m, &std::fs::metadata(&p).unwrap());
        let m: std::fs::Metadata = fs::symlink_metadata(d.join("link")).await.unwrap();
        same(&m, &std::fs::symlink_metadata(d.join("link")).unwrap());
        assert!(m.file_type().is_symlink());
        let f = File::open(&p).await.unwrap();
        let m: std::fs::Metadata = f.metadata().await.unwrap();
        same(&m, &std::fs::File::open(&p).unwrap().metadata().unwrap());

        let mut std_types = std::collections::BTreeMap::new();
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            std_types.insert(e.file_name(), (e.ino(), e.file_type().unwrap()));
        }
        let mut rd = fs::read_dir(&d).await.unwrap();
        let mut seen = 0;
        while let Some(e) = rd.next_entry().await.unwrap() {
            let t: std::fs::FileType = e.file_type().await.unwrap();
            assert_eq!(std_types[&e.file_name()], (e.ino(), t));
            assert!(!t.is_socket() && !t.is_fifo() && !t.is_block_device());
            let m: std::fs::Metadata = e.metadata().await.unwrap();
            same(&m, &std::fs::symlink_metadata(e.path()).unwrap());
            seen += 1;
        }
        assert_eq!(seen, std_types.len());
        assert_eq!(seen, 3);
    });
}

#[test]
fn read_to_string_refuses_invalid_utf8() {
    with_dir(|d| async move {
        let p = d.join("bin");
        fs::write(&p, [0xff, 0xfe]).await.unwrap();
        let e = fs::read_to_string(&p).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert_eq!(e.raw_os_error(), None);
    });
}

#[test]
fn missing_paths_are_not_found() {
    with_dir(|d| async move {
        let p = d.join("missing");
        assert_err(fs::read(&p).await, ErrorKind::NotFound, ENOENT);
        assert_err(fs::metadata(&p).await, ErrorKind::NotFound, ENOENT);
        assert_err(fs::remove_file(&p).await, ErrorKind::NotFound, ENOENT);
        assert_err(fs::remove_dir(&p).await, ErrorKind::NotFound, ENOENT);
        assert_err(File::open(&p).await, ErrorKind::NotFound, ENOENT);
        assert_err(
            fs::create_dir(d.join("no/sub")).await,
            ErrorKind::NotFound,
            ENOENT,
        );
        assert_err(fs::read_dir(&p).await, ErrorKind::NotFound, ENOENT);
        assert_err(
            fs::rename(&p, d.join("x")).await,
            ErrorKind::NotFound,
            ENOENT,
        );
        assert_err(fs::canonicalize(&p).await, ErrorKind::NotFound, ENOENT);
        assert!(!fs::try_exists(&p).await.unwrap());
    });
}

#[test]
fn paths_through_a_file_are_not_a_directory() {
    with_dir(|d| async move {
        let f = d.join("file");
        fs::write(&f, b"x").await.unwrap();
        assert_err(
            fs::metadata(f.join("x")).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        assert_err(fs::read_dir(&f).await, ErrorKind::NotADirectory, ENOTDIR);
        assert_err(
            fs::try_exists(f.join("x")).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        let mut slash = f.clone().into_os_string();
        slash.push("/");
        assert_err(
            fs::metadata(&slash).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        assert_err(
            fs::create_dir_all(f.join("a/b")).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
    });
}

#[test]
fn create_new_on_existing_is_already_exists() {
    with_dir(|d| async move {
        let p = d.join("f");
        File::create_new(&p).await.unwrap();
        assert_err(File::create_new(&p).await, ErrorKind::AlreadyExists, EEXIST);
        assert_err(fs::create_dir(&p).await, ErrorKind::AlreadyExists, EEXIST);
        fs::create_dir(d.join("dir")).await.unwrap();
        assert_err(
            fs::create_dir(d.join("dir")).await,
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        assert_err(
            fs::hard_link(&p, d.join("dir")).await,
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        assert_err(fs::symlink("x", &p).await, ErrorKind::AlreadyExists, EEXIST);
    });
}

#[test]
fn directories_refuse_file_operations() {
    with_dir(|d| async move {
        let dir = d.join("dir");
        fs::create_dir(&dir).await.unwrap();
        assert_err(File::create(&dir).await, ErrorKind::IsADirectory, EISDIR);
        assert_err(
            OpenOptions::new().write(true).open(&dir).await,
            ErrorKind::IsADirectory,
            EISDIR,
        );
        assert_err(fs::read(&dir).await, ErrorKind::IsADirectory, EISDIR);
        assert_err(fs::remove_file(&dir).await, ErrorKind::IsADirectory, EISDIR);
        assert_err(
            fs::hard_link(&dir, d.join("l")).await,
            ErrorKind::PermissionDenied,
            EPERM,
        );
        let mut slash = d.join("new").into_os_string();
        slash.push("/");
        assert_err(File::create(&slash).await, ErrorKind::IsADirectory, EISDIR);
        // Opening a directory read-only works: it is how one syncs it.
        let handle = File::open(&dir).await.unwrap();
        handle.sync_all().await.unwrap();
        assert!(handle.metadata().await.unwrap().is_dir());
    });
}

#[test]
fn remove_dir_needs_an_empty_directory() {
    with_dir(|d| async move {
        let dir = d.join("dir");
        fs::create_dir(&dir).await.unwrap();
        fs::write(dir.join("f"), b"x").await.unwrap();
        assert_err(
            fs::remove_dir(&dir).await,
            ErrorKind::DirectoryNotEmpty,
            ENOTEMPTY,
        );
        assert_err(
            fs::remove_dir(dir.join("f")).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        fs::remove_file(dir.join("f")).await.unwrap();
        fs::remove_dir(&dir).await.unwrap();
        assert!(!fs::try_exists(&dir).await.unwrap());
    });
}

#[test]
fn remove_dir_all_removes_a_tree_without_following_symlinks() {
    with_dir(|d| async move {
        let keep = d.join("keep");
        fs::write(&keep, b"k").await.unwrap();
        fs::create_dir_all(d.join("t/a/b")).await.unwrap();
        fs::write(d.join("t/a/b/f"), b"x").await.unwrap();
        fs::write(d.join("t/g"), b"y").await.unwrap();
        fs::symlink(&keep, d.join("t/a/link")).await.unwrap();
        fs::remove_dir_all(d.join("t")).await.unwrap();
        assert!(!fs::try_exists(d.join("t")).await.unwrap());
        assert_eq!(fs::read(&keep).await.unwrap(), b"k");
        assert_err(
            fs::remove_dir_all(d.join("t")).await,
            ErrorKind::NotFound,
            ENOENT,
        );
        assert_err(
            fs::remove_dir_all(&keep).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
    });
}

#[test]
fn read_dir_lists_entries() {
    with_dir(|d| async move {
        fs::write(d.join("b"), b"").await.unwrap();
        fs::write(d.join("a"), b"").await.unwrap();
        fs::create_dir(d.join("c")).await.unwrap();
        assert_eq!(
            listing(&d).await,
            vec![("a".into(), false), ("b".into(), false), ("c".into(), true)]
        );
        assert!(listing(&d.join("c")).await.is_empty());
    });
}

#[test]
fn rename_replaces_and_refuses_mismatched_kinds() {
    with_dir(|d| async move {
        fs::write(d.join("a"), b"new").await.unwrap();
        fs::write(d.join("b"), b"old").await.unwrap();
        fs::rename(d.join("a"), d.join("b")).await.unwrap();
        assert_eq!(fs::read(d.join("b")).await.unwrap(), b"new");
        assert!(!fs::try_exists(d.join("a")).await.unwrap());
        fs::create_dir(d.join("full")).await.unwrap();
        fs::write(d.join("full/x"), b"").await.unwrap();
        fs::create_dir(d.join("empty")).await.unwrap();
        assert_err(
            fs::rename(d.join("b"), d.join("full")).await,
            ErrorKind::IsADirectory,
            EISDIR,
        );
        assert_err(
            fs::rename(d.join("full"), d.join("b")).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        assert_err(
            fs::rename(d.join("empty"), d.join("full")).await,
            ErrorKind::DirectoryNotEmpty,
            ENOTEMPTY,
        );
        assert_err(
            fs::rename(d.join("full"), d.join("full/x/inside")).await,
            ErrorKind::NotADirectory,
            ENOTDIR,
        );
        assert_err(
            fs::rename(&d, d.join("empty/inside")).await,
            ErrorKind::InvalidInput,
            EINVAL,
        );
        // A directory may replace an empty one.
        fs::rename(d.join("full"), d.join("empty")).await.unwrap();
        assert_eq!(fs::read(d.join("empty/x")).await.unwrap(), b"");
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
            .await
            .unwrap();
        f.write_all(b"hello world").await.unwrap();
        f.flush().await.unwrap();
        assert_eq!(f.stream_position().await.unwrap(), 11);
        assert_eq!(f.seek(SeekFrom::Start(6)).await.unwrap(), 6);
        let mut buf = [0; 5];
        f.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"world");
        assert_eq!(f.read(&mut buf).await.unwrap(), 0, "at the end");
        assert_eq!(f.seek(SeekFrom::End(-5)).await.unwrap(), 6);
        assert_eq!(f.seek(SeekFrom::Current(-6)).await.unwrap(), 0);
        f.write_all(b"J").await.unwrap();
        assert_err(
            f.seek(SeekFrom::Current(-10)).await,
            ErrorKind::InvalidInput,
            EINVAL,
        );
        // Writing past the end leaves zeros between.
        f.seek(SeekFrom::Start(13)).await.unwrap();
        f.write_all(b"!").await.unwrap();
        f.flush().await.unwrap();
        assert_eq!(fs::read(&p).await.unwrap(), b"Jello world\0\0!");
        let mut rest = Vec::new();
        f.seek(SeekFrom::Start(1)).await.unwrap();
        f.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"ello world\0\0!");
    });
}

#[test]
fn append_mode_writes_at_the_end() {
    with_dir(|d| async move {
        let p = d.join("log");
        fs::write(&p, b"one\n").await.unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).await.unwrap();
        f.seek(SeekFrom::Start(0)).await.unwrap();
        f.write_all(b"two\n").await.unwrap();
        f.flush().await.unwrap();
        assert_eq!(fs::read(&p).await.unwrap(), b"one\ntwo\n");
        let mut buf = [0; 1];
        assert_errno(f.read(&mut buf).await, EBADF);
    });
}

#[test]
// The refused combinations are the point of this test.
#[allow(clippy::nonsensical_open_options, clippy::suspicious_open_options)]
fn open_options_combinations_follow_std() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"data").await.unwrap();
        // std refuses these itself, before any system call: no errno.
        let refused = |r: std::io::Result<File>, message: &str| {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert_eq!(e.raw_os_error(), None);
            assert_eq!(e.to_string(), message);
        };
        let access = "must specify at least one of read, write, or append access";
        let needs_write = "creating or truncating a file requires write or append access";
        refused(OpenOptions::new().open(&p).await, access);
        refused(
            OpenOptions::new().read(true).truncate(true).open(&p).await,
            needs_write,
        );
        refused(
            OpenOptions::new().read(true).create(true).open(&p).await,
            needs_write,
        );
        refused(
            OpenOptions::new()
                .read(true)
                .create_new(true)
                .open(&p)
                .await,
            needs_write,
        );
        refused(
            OpenOptions::new()
                .append(true)
                .truncate(true)
                .open(&p)
                .await,
            needs_write,
        );
        assert_eq!(
            fs::read(&p).await.unwrap(),
            b"data",
            "nothing was truncated"
        );
        // create(true) opens an existing file without truncating it.
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&p)
            .await
            .unwrap();
        drop(f);
        assert_eq!(fs::read(&p).await.unwrap(), b"data");
        // File::create truncates.
        drop(File::create(&p).await.unwrap());
        assert_eq!(fs::read(&p).await.unwrap(), b"");
        // mode() sets the new file's permission bits (before the umask).
        let q = d.join("private");
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&q)
            .await
            .unwrap();
        assert_eq!(
            fs::metadata(&q).await.unwrap().permissions().mode() & 0o777,
            0o600
        );
    });
}

#[test]
fn options_converted_from_std_keep_every_setting() {
    use std::os::unix::fs::OpenOptionsExt;
    with_dir(|d| async move {
        let p = d.join("from-std");
        let mut std = std::fs::OpenOptions::new();
        std.write(true).create_new(true).mode(0o600);
        let mut f = OpenOptions::from(std).open(&p).await.unwrap();
        f.write_all(b"made").await.unwrap();
        // Tokio's write lands later; flush waits for it (without it the
        // read below races the write, on a real disk as in simulation).
        f.flush().await.unwrap();
        drop(f);
        assert_eq!(
            fs::metadata(&p).await.unwrap().permissions().mode() & 0o777,
            0o600
        );
        // create_new carried over: the file exists now.
        let mut again = std::fs::OpenOptions::new();
        again.write(true).create_new(true);
        assert_err(
            OpenOptions::from(again).open(&p).await,
            ErrorKind::AlreadyExists,
            EEXIST,
        );
        // append carried over: a write lands at the end.
        let mut append = std::fs::OpenOptions::new();
        append.append(true);
        let mut f = OpenOptions::from(append).open(&p).await.unwrap();
        f.write_all(b"+more").await.unwrap();
        f.flush().await.unwrap();
        drop(f);
        assert_eq!(fs::read(&p).await.unwrap(), b"made+more");
    });
}

#[test]
fn set_len_truncates_and_extends() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"0123456789").await.unwrap();
        let f = OpenOptions::new().write(true).open(&p).await.unwrap();
        f.set_len(4).await.unwrap();
        assert_eq!(f.metadata().await.unwrap().len(), 4);
        f.set_len(6).await.unwrap();
        assert_eq!(fs::read(&p).await.unwrap(), b"0123\0\0");
        let ro = File::open(&p).await.unwrap();
        assert_err(ro.set_len(1).await, ErrorKind::InvalidInput, EINVAL);
        f.sync_all().await.unwrap();
        f.sync_data().await.unwrap();
    });
}

#[test]
fn try_clone_shares_the_cursor() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"abcdef").await.unwrap();
        let mut a = File::open(&p).await.unwrap();
        let mut b = a.try_clone().await.unwrap();
        let mut buf = [0; 2];
        a.read_exact(&mut buf).await.unwrap();
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"cd");
    });
}

#[test]
fn hard_links_share_contents() {
    with_dir(|d| async move {
        let a = d.join("a");
        fs::write(&a, b"same").await.unwrap();
        fs::hard_link(&a, d.join("b")).await.unwrap();
        assert_eq!(fs::metadata(&a).await.unwrap().nlink(), 2);
        let ino = fs::metadata(&a).await.unwrap().ino();
        assert_eq!(fs::metadata(d.join("b")).await.unwrap().ino(), ino);
        fs::write(d.join("b"), b"changed").await.unwrap();
        assert_eq!(fs::read(&a).await.unwrap(), b"changed");
        fs::remove_file(&a).await.unwrap();
        assert_eq!(fs::read(d.join("b")).await.unwrap(), b"changed");
        assert_eq!(fs::metadata(d.join("b")).await.unwrap().nlink(), 1);
    });
}

#[test]
fn symlinks_resolve_and_read_back() {
    with_dir(|d| async move {
        fs::create_dir(d.join("real")).await.unwrap();
        fs::write(d.join("real/f"), b"target").await.unwrap();
        fs::symlink("real", d.join("dirlink")).await.unwrap();
        fs::symlink("real/f", d.join("filelink")).await.unwrap();
        assert_eq!(fs::read(d.join("dirlink/f")).await.unwrap(), b"target");
        assert_eq!(fs::read(d.join("filelink")).await.unwrap(), b"target");
        assert_eq!(
            fs::read_link(d.join("filelink")).await.unwrap(),
            PathBuf::from("real/f")
        );
        assert_err(
            fs::read_link(d.join("real/f")).await,
            ErrorKind::InvalidInput,
            EINVAL,
        );
        let lm = fs::symlink_metadata(d.join("filelink")).await.unwrap();
        assert!(lm.is_symlink());
        assert!(lm.file_type().is_symlink());
        assert_eq!(lm.len(), "real/f".len() as u64);
        assert!(fs::metadata(d.join("filelink")).await.unwrap().is_file());
        let base = fs::canonicalize(&d).await.unwrap();
        assert_eq!(
            fs::canonicalize(d.join("dirlink/./f")).await.unwrap(),
            base.join("real/f")
        );
        assert_eq!(fs::canonicalize(d.join("real/..")).await.unwrap(), base);
        // A dangling link exists as a link only.
        fs::symlink("nowhere", d.join("dangling")).await.unwrap();
        assert!(!fs::try_exists(d.join("dangling")).await.unwrap());
        assert!(fs::symlink_metadata(d.join("dangling")).await.is_ok());
        assert_err(
            fs::metadata(d.join("dangling")).await,
            ErrorKind::NotFound,
            ENOENT,
        );
        // Removing a link leaves its target.
        fs::remove_file(d.join("filelink")).await.unwrap();
        assert!(fs::try_exists(d.join("real/f")).await.unwrap());
        // A loop.
        fs::symlink("loop2", d.join("loop1")).await.unwrap();
        fs::symlink("loop1", d.join("loop2")).await.unwrap();
        assert_errno(fs::metadata(d.join("loop1")).await, ELOOP);
        // A hard link to a symlink links the symlink itself.
        fs::hard_link(d.join("dirlink"), d.join("dirlink2"))
            .await
            .unwrap();
        assert!(fs::symlink_metadata(d.join("dirlink2"))
            .await
            .unwrap()
            .is_symlink());
    });
}

#[test]
fn create_dir_all_and_dir_builder() {
    with_dir(|d| async move {
        fs::create_dir_all(d.join("a/b/c")).await.unwrap();
        fs::create_dir_all(d.join("a/b/c")).await.unwrap();
        fs::create_dir_all(d.join("a/./b/../b/c/")).await.unwrap();
        assert!(fs::metadata(d.join("a/b/c")).await.unwrap().is_dir());
        assert_eq!(
            fs::metadata(d.join("a"))
                .await
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        let mut b = fs::DirBuilder::new();
        b.mode(0o700);
        b.create(d.join("private")).await.unwrap();
        assert_eq!(
            fs::metadata(d.join("private"))
                .await
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_err(b.create(d.join("x/y")).await, ErrorKind::NotFound, ENOENT);
        b.recursive(true);
        b.create(d.join("x/y")).await.unwrap();
        b.create(d.join("x/y")).await.unwrap();
        assert!(fs::metadata(d.join("x/y")).await.unwrap().is_dir());
        let long = "n".repeat(256);
        assert_errno(fs::create_dir(d.join(long)).await, ENAMETOOLONG);
    });
}

#[test]
fn copy_copies_bytes_and_permissions() {
    with_dir(|d| async move {
        let a = d.join("a");
        fs::write(&a, b"payload").await.unwrap();
        fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640))
            .await
            .unwrap();
        assert_eq!(fs::copy(&a, d.join("b")).await.unwrap(), 7);
        assert_eq!(fs::read(d.join("b")).await.unwrap(), b"payload");
        let mode = fs::metadata(d.join("b"))
            .await
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        fs::create_dir(d.join("dir")).await.unwrap();
        let e = fs::copy(d.join("dir"), d.join("c")).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(e.raw_os_error(), None);
        assert_err(
            fs::copy(d.join("none"), d.join("c")).await,
            ErrorKind::NotFound,
            ENOENT,
        );
    });
}

#[test]
fn permissions_round_trip_and_apply() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"x").await.unwrap();
        let mut perm = fs::metadata(&p).await.unwrap().permissions();
        assert!(!perm.readonly());
        perm.set_readonly(true);
        fs::set_permissions(&p, perm.clone()).await.unwrap();
        assert!(fs::metadata(&p).await.unwrap().permissions().readonly());
        // Reading is still allowed.
        assert_eq!(fs::read(&p).await.unwrap(), b"x");
        let open_for_write = OpenOptions::new().write(true).open(&p).await;
        if exception_root_bypasses_permissions() {
            assert!(open_for_write.is_ok());
        } else {
            assert_err(open_for_write, ErrorKind::PermissionDenied, EACCES);
        }
        let f = File::open(&p).await.unwrap();
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .await
            .unwrap();
        let m = f.metadata().await.unwrap();
        assert_eq!(m.permissions().mode(), 0o100_600);
        assert_eq!(m.mode(), 0o100_600);
    });
}

#[test]
fn unlinked_open_file_stays_readable() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"still here").await.unwrap();
        let mut f = File::open(&p).await.unwrap();
        fs::remove_file(&p).await.unwrap();
        let mut s = String::new();
        f.read_to_string(&mut s).await.unwrap();
        assert_eq!(s, "still here");
        assert_eq!(f.metadata().await.unwrap().nlink(), 0);
    });
}

#[test]
fn timestamps_move_forward_with_writes() {
    with_dir(|d| async move {
        let p = d.join("f");
        fs::write(&p, b"1").await.unwrap();
        let before = fs::metadata(&p).await.unwrap().modified().unwrap();
        sim_runtime::time::sleep(std::time::Duration::from_millis(20)).await;
        fs::write(&p, b"2").await.unwrap();
        let after = fs::metadata(&p).await.unwrap().modified().unwrap();
        assert!(after > before, "{after:?} > {before:?}");
        let set = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        let f = OpenOptions::new().write(true).open(&p).await.unwrap();
        f.set_modified(set).await.unwrap();
        assert_eq!(fs::metadata(&p).await.unwrap().modified().unwrap(), set);
    });
}

/// Tokio's `File` writes behind: `write` takes the bytes and returns, and
/// the write's error (here `EBADF`: the file was opened read-only) is what
/// the next `flush` returns, once.
#[test]
fn a_writes_error_is_what_the_next_flush_returns() {
    with_dir(|d| async move {
        let p = d.join("read-only");
        fs::write(&p, b"x").await.unwrap();
        let mut f = File::open(&p).await.unwrap();
        assert_eq!(f.write(b"yz").await.unwrap(), 2);
        assert_errno(f.flush().await, EBADF);
        f.flush().await.unwrap();
        assert_eq!(fs::read(&p).await.unwrap(), b"x");
    });
}
