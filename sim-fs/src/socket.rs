//! Socket files: what a Unix socket's `bind(2)` to a path makes on the
//! disk, and what `connect(2)` and `sendto(2)` find there.
//!
//! The disk knows nothing of sockets: a socket file is a name with no
//! data, and the network model binds its socket to the file's inode
//! number. These are the file-system halves of Linux's `unix_bind_bsd` and
//! `unix_find_bsd` (`af_unix.c`), with their errors.

use crate::errno::*;
use crate::fs::UMASK;
use crate::inode::{Body, FileKind, Ino};
use crate::Fs;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::SystemTime;

impl Fs {
    /// The file half of `bind(2)` of a Unix socket to `path`: creates the
    /// socket file (mode `0o777` less the [`UMASK`], as Linux's socket
    /// inode) and returns its inode, for the caller's socket to hold.
    ///
    /// A name that exists, whatever it is (a socket file left by a closed
    /// or crashed socket too, or a dangling symlink, which is not
    /// followed), is `EADDRINUSE`, as `af_unix` turns `mknod`'s `EEXIST`;
    /// a missing directory is `ENOENT`, one the process may not write or
    /// search `EACCES`. The new entry is durable once its directory is
    /// synced, as any other.
    pub fn bind_socket(&mut self, path: &Path, now: SystemTime) -> io::Result<Ino> {
        // Linux looks the last component up without its trailing slashes:
        // an existing name is in use, a missing one cannot be created (it
        // would have to be a directory).
        let bytes = path.as_os_str().as_bytes();
        let end = bytes.iter().rposition(|&b| b != b'/').map_or(1, |i| i + 1);
        let trailing_slash = end < bytes.len();
        let r = self.resolve(Path::new(OsStr::from_bytes(&bytes[..end])), false)?;
        let (Some(name), None) = (r.name, r.ino) else {
            // It exists, or it ends in `/`, `.` or `..`.
            return fail(EADDRINUSE);
        };
        if trailing_slash {
            return fail(ENOENT);
        }
        if self.inode(r.parent).meta.mode & 0o200 == 0 {
            return fail(EACCES);
        }
        let ino = self.alloc(Body::Socket, 0o777 & !UMASK, now);
        self.link_entry(r.parent, name, ino, now);
        self.journal(|| crate::journal::Op::Bind(crate::journal::abs(path)));
        assert_eq!(self.inode(ino).kind(), FileKind::Socket);
        Ok(ino)
    }

    /// The file half of `connect(2)` or `sendto(2)` to a Unix socket path:
    /// the socket file's inode, following symlinks. A missing name is
    /// `ENOENT`; a file the process may not write (the check comes first)
    /// `EACCES`; anything but a socket file `ECONNREFUSED`. Whether a
    /// socket holds the inode is the network's question.
    pub fn find_socket(&self, path: &Path) -> io::Result<Ino> {
        let ino = self.lookup(path, true)?;
        let i = self.inode(ino);
        if i.meta.mode & 0o200 == 0 {
            return fail(EACCES);
        }
        if i.kind() != FileKind::Socket {
            return fail(ECONNREFUSED);
        }
        Ok(ino)
    }
}

#[cfg(test)]
mod tests {
    use crate::errno::*;
    use crate::*;
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    fn t(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    fn p(s: &str) -> &Path {
        Path::new(s)
    }

    fn errno<T: std::fmt::Debug>(r: std::io::Result<T>) -> i32 {
        r.expect_err("expected an error").raw_os_error().unwrap()
    }

    fn flags(read: bool, write: bool) -> OpenFlags {
        OpenFlags {
            read,
            write,
            mode: 0o666,
            ..OpenFlags::default()
        }
    }

    #[test]
    fn a_bound_path_is_a_socket_file() {
        let mut fs = Fs::new(t(0));
        let ino = fs.bind_socket(p("/tmp/s.sock"), t(1)).unwrap();
        for follow in [false, true] {
            let st = fs.stat(p("/tmp/s.sock"), follow).unwrap();
            assert_eq!(st.ino, ino);
            assert_eq!(st.kind, FileKind::Socket);
            assert_eq!(st.mode, 0o755);
            assert_eq!(st.st_mode(), 0o140_755);
            assert_eq!((st.len, st.nlink), (0, 1));
            assert_eq!(st.created, t(1));
        }
        let listed = fs.read_dir(p("/tmp")).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].ino, listed[0].kind), (ino, FileKind::Socket));
        // The directory changed, as for any new entry.
        assert_eq!(fs.stat(p("/tmp"), true).unwrap().modified, t(1));
        // A relative path is taken from `/`.
        assert_eq!(fs.find_socket(p("tmp/s.sock")).unwrap(), ino);
        assert_eq!(fs.used_bytes(), 0);
        fs.check();
    }

    #[test]
    fn binding_a_name_that_exists_is_addr_in_use() {
        let mut fs = Fs::new(t(0));
        let create = OpenFlags {
            create: true,
            ..flags(false, true)
        };
        let fd = fs.open(p("/tmp/file"), create, t(1)).unwrap();
        fs.close(fd).unwrap();
        fs.bind_socket(p("/tmp/s"), t(1)).unwrap();
        fs.symlink(p("/nowhere"), p("/tmp/dangling"), t(1)).unwrap();
        for taken in [
            "/tmp/file",
            "/tmp/s",
            "/tmp/dangling",
            "/tmp",
            "/tmp/",
            "/tmp/file/",
            "/",
            "/tmp/.",
            "/tmp/..",
        ] {
            assert_eq!(errno(fs.bind_socket(p(taken), t(2))), EADDRINUSE, "{taken}");
        }
        // A closed socket's file stays until it is unlinked; then the path
        // binds again, to a new inode.
        let old = fs.stat(p("/tmp/s"), false).unwrap().ino;
        fs.remove_file(p("/tmp/s"), t(3)).unwrap();
        assert_eq!(errno(fs.find_socket(p("/tmp/s"))), ENOENT);
        let new = fs.bind_socket(p("/tmp/s"), t(4)).unwrap();
        assert_ne!(new, old);
        fs.check();
    }

    #[test]
    fn bind_needs_the_directory() {
        let mut fs = Fs::new(t(0));
        assert_eq!(errno(fs.bind_socket(p("/no/s"), t(1))), ENOENT);
        assert_eq!(errno(fs.bind_socket(p("/tmp/new/"), t(1))), ENOENT);
        fs.bind_socket(p("/tmp/s"), t(1)).unwrap();
        assert_eq!(errno(fs.bind_socket(p("/tmp/s/x"), t(1))), ENOTDIR);
        fs.create_dir(p("/tmp/ro"), 0o555, t(1)).unwrap();
        assert_eq!(errno(fs.bind_socket(p("/tmp/ro/s"), t(1))), EACCES);
        fs.create_dir(p("/tmp/nx"), 0o666, t(1)).unwrap();
        assert_eq!(errno(fs.bind_socket(p("/tmp/nx/s"), t(1))), EACCES);
        // A failed bind leaves nothing behind.
        assert!(fs.read_dir(p("/tmp/ro")).unwrap().is_empty());
        fs.check();
    }

    #[test]
    fn connect_finds_a_socket_file_only() {
        let mut fs = Fs::new(t(0));
        let ino = fs.bind_socket(p("/tmp/s"), t(1)).unwrap();
        fs.symlink(p("s"), p("/tmp/link"), t(1)).unwrap();
        assert_eq!(fs.find_socket(p("/tmp/link")).unwrap(), ino);
        assert_eq!(errno(fs.find_socket(p("/tmp/none"))), ENOENT);
        assert_eq!(errno(fs.find_socket(p("/tmp/s/"))), ENOTDIR);
        assert_eq!(errno(fs.find_socket(p("/tmp"))), ECONNREFUSED);
        let create = OpenFlags {
            create: true,
            ..flags(false, true)
        };
        let fd = fs.open(p("/tmp/file"), create, t(1)).unwrap();
        fs.close(fd).unwrap();
        assert_eq!(errno(fs.find_socket(p("/tmp/file"))), ECONNREFUSED);
        // Write permission is checked first, on whatever the path names.
        fs.set_mode(p("/tmp/file"), 0o444, t(2)).unwrap();
        assert_eq!(errno(fs.find_socket(p("/tmp/file"))), EACCES);
        fs.set_mode(p("/tmp/s"), 0o555, t(2)).unwrap();
        assert_eq!(errno(fs.find_socket(p("/tmp/s"))), EACCES);
        // A renamed socket file is the same inode under its new name.
        fs.set_mode(p("/tmp/s"), 0o755, t(3)).unwrap();
        fs.rename(p("/tmp/s"), p("/tmp/moved"), t(3)).unwrap();
        assert_eq!(fs.find_socket(p("/tmp/moved")).unwrap(), ino);
        fs.check();
    }

    #[test]
    fn opening_a_socket_file_is_no_such_device() {
        let mut fs = Fs::new(t(0));
        fs.bind_socket(p("/tmp/s"), t(1)).unwrap();
        for (read, write) in [(true, false), (false, true), (true, true)] {
            assert_eq!(errno(fs.open(p("/tmp/s"), flags(read, write), t(2))), ENXIO);
        }
        let existing = OpenFlags {
            create: true,
            truncate: true,
            ..flags(false, true)
        };
        assert_eq!(errno(fs.open(p("/tmp/s"), existing, t(2))), ENXIO);
        let new = OpenFlags {
            create_new: true,
            ..flags(false, true)
        };
        assert_eq!(errno(fs.open(p("/tmp/s"), new, t(2))), EEXIST);
        let dir = OpenFlags {
            directory: true,
            ..flags(true, false)
        };
        assert_eq!(errno(fs.open(p("/tmp/s"), dir, t(2))), ENOTDIR);
        fs.set_mode(p("/tmp/s"), 0o000, t(2)).unwrap();
        assert_eq!(
            errno(fs.open(p("/tmp/s"), flags(true, false), t(2))),
            EACCES
        );
        fs.check();
    }

    #[test]
    fn a_socket_file_is_an_entry_as_durable_as_its_directory() {
        // A kill keeps the page cache: the file stays behind.
        let mut fs = Fs::new(t(0));
        let ino = fs.bind_socket(p("/tmp/s"), t(1)).unwrap();
        fs.kill();
        assert_eq!(fs.find_socket(p("/tmp/s")).unwrap(), ino);
        // A crash before the directory's sync loses it...
        fs.crash(1);
        assert_eq!(errno(fs.find_socket(p("/tmp/s"))), ENOENT);
        // ...and after it, keeps it, a socket file still.
        let ino = fs.bind_socket(p("/tmp/s"), t(2)).unwrap();
        let dir = fs.open(p("/tmp"), flags(true, false), t(2)).unwrap();
        fs.sync(dir, false).unwrap();
        fs.close(dir).unwrap();
        let report = fs.crash(2);
        assert_eq!(report.lost_inodes, 0);
        assert_eq!(fs.find_socket(p("/tmp/s")).unwrap(), ino);
        assert_eq!(errno(fs.bind_socket(p("/tmp/s"), t(3))), EADDRINUSE);
        // An unlink that was not synced comes back after a crash.
        fs.remove_file(p("/tmp/s"), t(4)).unwrap();
        fs.crash(3);
        assert_eq!(fs.stat(p("/tmp/s"), false).unwrap().kind, FileKind::Socket);
        fs.check();
    }
}
