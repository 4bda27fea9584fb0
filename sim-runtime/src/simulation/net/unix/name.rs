//! Unix socket names on the node's disk.
//!
//! A path address is a socket file on the simulated disk of the socket's
//! node, as on Linux: `bind` makes it (`sim_fs::Fs::bind_socket`: a name
//! that exists is `EADDRINUSE`, a missing directory `ENOENT`), the network
//! model's socket holds it by inode number, and `connect` or `send_to`
//! resolves the path to it (`sim_fs::Fs::find_socket`). So `stat`,
//! `read_dir` and `remove_file` see what the sockets see, and a socket
//! file outlives its socket until it is unlinked. Abstract names and
//! unnamed sockets live in the network model only.
//!
//! The disk and the network are two drivers; these functions use one,
//! then the other, with no user code in between, so nothing can come
//! between the file's making and the socket's bind.

use crate::simulation::core::executor::expect_current;
use crate::simulation::core::node::NodeId;
use crate::simulation::fs::with_disk;
use crate::simulation::net::with_net;
use sim_net::{HostId, SocketId, UnixAddr, UnixName};
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::SystemTime;

/// Linux's `EBADF` and `EINVAL`.
const EBADF: i32 = 9;
const EINVAL: i32 = 22;

/// The host of the current node (where a new socket is made).
pub(super) fn current_host() -> HostId {
    HostId(expect_current().current_node().0)
}

/// The host of socket `id` (`EBADF` once it is closed).
pub(super) fn socket_host(id: SocketId) -> io::Result<HostId> {
    with_net(|net, _, _| net.socket_host(id)).ok_or_else(|| io::Error::from_raw_os_error(EBADF))
}

/// Runs `f` on the disk of `host`'s node, with the node's wall-clock time.
fn on_disk<R>(host: HostId, f: impl FnOnce(&mut sim_fs::Fs, SystemTime) -> R) -> R {
    with_disk(Some(NodeId(host.0)), f)
}

/// A path address's bytes as a path.
fn as_path(path: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(path))
}

/// Binds to `addr` on `host` as Linux's `unix_bind` does: for a path,
/// first the socket file on the node's disk, then `bind` with its inode
/// (an abstract or unnamed address: `bind` alone, with none). If `bind`
/// fails, the file it was given is unlinked again.
pub(super) fn bind_with_file<T>(
    host: HostId,
    addr: &UnixAddr,
    bind: impl FnOnce(Option<u64>) -> io::Result<T>,
) -> io::Result<T> {
    let UnixAddr::Path(path) = addr else {
        return bind(None);
    };
    let ino = on_disk(host, |fs, now| fs.bind_socket(as_path(path), now))?;
    bind(Some(ino)).inspect_err(|_| {
        on_disk(host, |fs, now| {
            fs.remove_file(as_path(path), now)
                .expect("sim: the socket file just made is still there to unlink");
        });
    })
}

/// What a connect or a send to `addr` from a socket of `host` looks up: a
/// path's socket file on the node's disk (`ENOENT` if missing,
/// `ECONNREFUSED` if not a socket file), or the abstract name. The unnamed
/// address names nothing (`EINVAL`, as Linux's address check).
pub(super) fn target(host: HostId, addr: &UnixAddr) -> io::Result<UnixName> {
    match addr {
        UnixAddr::Path(path) => {
            on_disk(host, |fs, _| fs.find_socket(as_path(path))).map(UnixName::File)
        }
        UnixAddr::Abstract(name) => Ok(UnixName::Abstract(name.clone())),
        UnixAddr::Unnamed => Err(io::Error::from_raw_os_error(EINVAL)),
    }
}
