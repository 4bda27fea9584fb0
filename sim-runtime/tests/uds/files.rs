//! Socket files: a bind to a path makes one, the file system calls see it,
//! and connects and sends find sockets through it. Both modes.

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

use sim_runtime::fs;
use sim_runtime::net::{UnixDatagram, UnixListener, UnixSocket, UnixStream};

use crate::{
    assert_err, assert_errno, bounded, errno, exception_root_bypasses_permissions, poll_once,
    with_dir,
};

/// Asserts `path` names a socket file (`stat` and `lstat` alike).
async fn assert_socket_file(path: &Path) {
    for m in [
        fs::symlink_metadata(path).await.unwrap(),
        fs::metadata(path).await.unwrap(),
    ] {
        assert!(m.file_type().is_socket(), "{path:?}: {:?}", m.file_type());
        assert!(!m.is_file() && !m.is_dir());
        assert_eq!(m.len(), 0);
        // `0o777` less the umask, which leaves the owner everything.
        assert_eq!(m.permissions().mode() & 0o700, 0o700);
    }
}

/// The names in `dir`, sorted, each with whether it is a socket file.
async fn listing(dir: &Path) -> Vec<(String, bool)> {
    let mut entries = fs::read_dir(dir).await.unwrap();
    let mut out = Vec::new();
    while let Some(e) = entries.next_entry().await.unwrap() {
        let name = e.file_name().into_string().unwrap();
        out.push((name, e.file_type().await.unwrap().is_socket()));
    }
    out.sort();
    out
}

#[test]
fn a_bound_path_is_a_socket_file_that_stat_and_read_dir_see() {
    with_dir(|dir| async move {
        let (l, d, u) = (dir.join("l.sock"), dir.join("d.sock"), dir.join("u.sock"));
        let _listener = UnixListener::bind(&l).unwrap();
        let _datagram = UnixDatagram::bind(&d).unwrap();
        // A `UnixSocket` makes its file at `bind`, before it listens: a
        // connect finds a socket that is not listening.
        let socket = UnixSocket::new_stream().unwrap();
        socket.bind(&u).unwrap();
        for p in [&l, &d, &u] {
            assert_socket_file(p).await;
        }
        assert_err(
            UnixStream::connect(&u).await,
            ErrorKind::ConnectionRefused,
            errno::ECONNREFUSED,
        );
        let listener = socket.listen(8).unwrap();
        let _c = bounded("connect", UnixStream::connect(&u)).await.unwrap();
        bounded("accept", listener.accept()).await.unwrap();
        // Pairs, unbound sockets and abstract names make no file.
        let _pairs = (UnixStream::pair().unwrap(), UnixDatagram::pair().unwrap());
        let _unbound = UnixDatagram::unbound().unwrap();
        let name = format!("\0sim-uds-files-{}", std::process::id());
        let _abstract = UnixListener::bind(&name).unwrap();
        assert_eq!(
            listing(&dir).await,
            [
                ("d.sock".to_string(), true),
                ("l.sock".to_string(), true),
                ("u.sock".to_string(), true)
            ]
        );
    });
}

#[test]
fn binding_a_path_that_exists_is_addr_in_use() {
    with_dir(|dir| async move {
        let path = dir.join("busy.sock");
        let listener = UnixListener::bind(&path).unwrap();
        assert_err(
            UnixListener::bind(&path),
            ErrorKind::AddrInUse,
            errno::EADDRINUSE,
        );
        assert_err(
            UnixDatagram::bind(&path),
            ErrorKind::AddrInUse,
            errno::EADDRINUSE,
        );
        // A closed socket's file stays, refusing connects, until unlinked.
        drop(listener);
        assert_socket_file(&path).await;
        assert_err(
            UnixListener::bind(&path),
            ErrorKind::AddrInUse,
            errno::EADDRINUSE,
        );
        let s = UnixSocket::new_stream().unwrap();
        assert_err(s.bind(&path), ErrorKind::AddrInUse, errno::EADDRINUSE);
        assert_err(
            UnixStream::connect(&path).await,
            ErrorKind::ConnectionRefused,
            errno::ECONNREFUSED,
        );
        fs::remove_file(&path).await.unwrap();
        let again = UnixListener::bind(&path).unwrap();
        let _c = UnixStream::connect(&path).await.unwrap();
        bounded("accept", again.accept()).await.unwrap();

        // Any file: a regular one, a directory, a dangling symlink.
        fs::write(dir.join("file"), b"x").await.unwrap();
        fs::create_dir(dir.join("sub")).await.unwrap();
        fs::symlink(dir.join("nowhere"), dir.join("dangling"))
            .await
            .unwrap();
        for taken in ["file", "sub", "dangling"] {
            assert_err(
                UnixListener::bind(dir.join(taken)),
                ErrorKind::AddrInUse,
                errno::EADDRINUSE,
            );
        }
        assert!(fs::symlink_metadata(dir.join("dangling"))
            .await
            .unwrap()
            .is_symlink());
    });
}

#[test]
fn bind_needs_a_directory_it_may_write() {
    with_dir(|dir| async move {
        let missing = dir.join("no-such-dir").join("x.sock");
        assert_err(
            UnixListener::bind(&missing),
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        assert_err(
            UnixDatagram::bind(&missing),
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        let s = UnixSocket::new_datagram().unwrap();
        assert_err(s.bind(&missing), ErrorKind::NotFound, errno::ENOENT);
        fs::write(dir.join("file"), b"x").await.unwrap();
        assert_errno(UnixListener::bind(dir.join("file/x.sock")), errno::ENOTDIR);

        let ro = dir.join("ro");
        fs::create_dir(&ro).await.unwrap();
        fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555))
            .await
            .unwrap();
        let no_search = dir.join("no-search");
        fs::create_dir(&no_search).await.unwrap();
        fs::set_permissions(&no_search, std::fs::Permissions::from_mode(0o666))
            .await
            .unwrap();
        for inside in [ro.join("x.sock"), no_search.join("x.sock")] {
            let r = UnixListener::bind(&inside);
            if exception_root_bypasses_permissions() {
                // EXCEPTION_ROOT_BYPASSES_PERMISSIONS.
                drop(r.unwrap());
            } else {
                assert_err(r, ErrorKind::PermissionDenied, errno::EACCES);
            }
        }
        // Let the temporary directory's cleanup in.
        for d in [&ro, &no_search] {
            fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                .await
                .unwrap();
        }
    });
}

#[test]
fn a_socket_binds_once_and_a_second_bind_leaves_no_file() {
    with_dir(|dir| async move {
        let (a, b) = (dir.join("a.sock"), dir.join("b.sock"));
        for s in [UnixSocket::new_stream(), UnixSocket::new_datagram()] {
            let s = s.unwrap();
            s.bind(&a).unwrap();
            assert_errno(s.bind(&b), errno::EINVAL);
            assert_err(fs::metadata(&b).await, ErrorKind::NotFound, errno::ENOENT);
            // The path that exists is refused first (the file comes first).
            assert_err(s.bind(&a), ErrorKind::AddrInUse, errno::EADDRINUSE);
            fs::remove_file(&a).await.unwrap();
        }
    });
}

#[test]
fn remove_file_unlinks_the_name_not_the_socket() {
    with_dir(|dir| async move {
        let path = dir.join("svc.sock");
        let old = UnixListener::bind(&path).unwrap();
        let queued = UnixStream::connect(&path).await.unwrap();
        fs::remove_file(&path).await.unwrap();
        assert_err(
            fs::metadata(&path).await,
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        // The listener lives, unreachable by the path; what it queued is
        // still accepted.
        assert_err(
            UnixStream::connect(&path).await,
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        bounded("accept", old.accept()).await.unwrap();
        // The path bound again is a new socket file: connects reach the
        // new listener only.
        let new = UnixListener::bind(&path).unwrap();
        let _c = UnixStream::connect(&path).await.unwrap();
        bounded("accept", new.accept()).await.unwrap();
        assert!(poll_once(std::pin::pin!(old.accept())).await.is_pending());
        // A socket file renamed is the same socket under its new name.
        let moved = dir.join("moved.sock");
        fs::rename(&path, &moved).await.unwrap();
        let _c = UnixStream::connect(&moved).await.unwrap();
        bounded("accept", new.accept()).await.unwrap();
        drop(queued);
    });
}

#[test]
fn connect_and_send_find_only_socket_files() {
    with_dir(|dir| async move {
        let path = dir.join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let file = dir.join("file");
        fs::write(&file, b"x").await.unwrap();
        let d = UnixDatagram::unbound().unwrap();
        for not_a_socket in [&file, &dir] {
            assert_err(
                UnixStream::connect(not_a_socket).await,
                ErrorKind::ConnectionRefused,
                errno::ECONNREFUSED,
            );
            assert_err(
                d.send_to(b"x", not_a_socket).await,
                ErrorKind::ConnectionRefused,
                errno::ECONNREFUSED,
            );
        }
        assert_errno(
            UnixStream::connect(dir.join("s.sock/")).await,
            errno::ENOTDIR,
        );
        // A symlink is followed to the socket file.
        fs::symlink(&path, dir.join("link")).await.unwrap();
        let _c = UnixStream::connect(dir.join("link")).await.unwrap();
        bounded("accept", listener.accept()).await.unwrap();
        // Connecting needs write permission on the socket file.
        fs::set_permissions(&path, std::fs::Permissions::from_mode(0o555))
            .await
            .unwrap();
        let r = UnixStream::connect(&path).await;
        if exception_root_bypasses_permissions() {
            // EXCEPTION_ROOT_BYPASSES_PERMISSIONS.
            drop(r.unwrap());
        } else {
            assert_err(r, ErrorKind::PermissionDenied, errno::EACCES);
        }
    });
}

#[test]
fn opening_a_socket_file_is_no_such_device() {
    with_dir(|dir| async move {
        let path = dir.join("s.sock");
        let _listener = UnixListener::bind(&path).unwrap();
        assert_errno(fs::File::open(&path).await, errno::ENXIO);
        assert_errno(
            fs::OpenOptions::new().write(true).open(&path).await,
            errno::ENXIO,
        );
        assert_errno(fs::read(&path).await, errno::ENXIO);
        assert_errno(std::fs::File::open(&path), errno::ENXIO);
        assert_err(
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .await,
            ErrorKind::AlreadyExists,
            17,
        );
    });
}
