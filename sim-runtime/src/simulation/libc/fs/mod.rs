//! The libc file interface inside a simulation: `std::fs`, and C or Rust
//! stores that call libc themselves, on the node's simulated disk
//! (fs/fd.rs says what a simulated descriptor is and when a call is
//! simulated).
//!
//! Every function here first checks whether its descriptor is a simulated
//! one (one comparison: they are numbered from `filefd::FD_FILE`, far above
//! any real descriptor) or, for a path, whether the thread is in a
//! simulation; otherwise it calls glibc's definition unchanged.
//!
//! | calls | inside a simulation |
//! |---|---|
//! | `open`, `open64`, `openat`, `openat64`, `creat`, `creat64` (and the `_2` fortified forms) | the node's disk; `/dev/urandom`, `/dev/random` the seeded stream, `/dev/null`, `/dev/zero`; `O_TMPFILE` is `EOPNOTSUPP` (callers fall back to a named file) |
//! | `read`, `write`, `pread`, `pwrite`, `readv`, `writev`, `preadv`, `pwritev`, `preadv2`, `pwritev2` (and `64` forms) | the model's data path, with its faults |
//! | `lseek`, `fsync`, `fdatasync`, `sync_file_range`, `ftruncate`, `truncate`, `fallocate`, `posix_fallocate` | as the model's durability rules say; `sync_file_range` makes nothing durable (it never did) |
//! | `stat`, `lstat`, `fstat`, `fstatat`, `statx` (and `64` forms) | the model's inode, `st_dev` per node and seed |
//! | `rename`, `renameat`, `renameat2`, `unlink`, `unlinkat`, `mkdir`, `mkdirat`, `rmdir`, `link`, `linkat`, `symlink`, `symlinkat`, `readlink`, `readlinkat`, `access`, `faccessat`, `chmod`, `fchmod`, `fchmodat`, `chown`, `fchown`, `lchown`, `utimensat`, `futimens` | the model's namespace |
//! | `syscall(SYS_fcntl, ..)` and the other file system calls made through `syscall(2)` on a simulated descriptor (redb's range locks) | as the C function of the same name |
//! | `dup`, `fcntl`, `fcntl64` (`F_DUPFD*`, `F_GETFD`/`F_SETFD`, `F_GETFL`/`F_SETFL`, record locks), `flock` | descriptors of the node; record locks always succeed (one process per node: they never conflict), `flock` conflicts between open file descriptions |
//! | `opendir`, `fdopendir`, `readdir`, `readdir64`, `dirfd`, `rewinddir`, `closedir` | listings in name order, `.` and `..` first (dir.rs) |
//! | `mmap`, `mmap64` of a simulated file | memory shared by every mapping of the file in the node (SQLite's `-shm`), never durable; a private mapping is a copy (dir.rs) |
//! | `copy_file_range` | copies between two simulated files; `EXDEV` between a real and a simulated one (std falls back to reading and writing) |
//! | `getcwd`, `realpath` | `/` is the working directory; paths resolve on the disk |
//! | `fopen`, `fopen64`, `fdopen` | a real `FILE *` whose I/O comes here (`fopencookie`): C's stdio on the node's disk (stdio.rs) |
//!
//! `close`, `fcntl` and `ioctl` are defined in libc/net.rs (they serve
//! socket stubs too) and come here for simulated files.

use super::sys::{set_errno, Real};
use crate::simulation::core::hooks;
use crate::simulation::fs::fd as filefd;
use crate::simulation::fs::fd::{Ctx, Dead, Kind, Res, Target};
use crate::simulation::fs::host;
use libc::{c_char, c_int, c_uint, c_void, iovec, mode_t, off64_t, size_t, ssize_t};
use std::ffi::{CStr, OsStr};
use std::io::SeekFrom;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `0`, or `-1` with `errno`.
pub(crate) fn int(r: Res<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// A descriptor or a count, or `-1` with `errno`.
pub(crate) fn num<T: TryInto<i64>>(r: Res<T>) -> i64 {
    match r {
        Ok(v) => v.try_into().unwrap_or(i64::MAX),
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// The path a C string names.
///
/// # Safety
///
/// `p` is null or a valid NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn cpath<'a>(p: *const c_char) -> Res<&'a Path> {
    if p.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    Ok(Path::new(OsStr::from_bytes(bytes)))
}

/// Whether `fd` is a simulated file of this thread.
#[inline]
pub(crate) fn sim(fd: c_int) -> bool {
    filefd::in_range(fd) && filefd::is_open(fd)
}

/// A path call's context and absolute path, or `None` for the real
/// disk. A relative path with a real `dirfd` inside a simulation is
/// `EBADF`: no real directory is open on a simulated node.
///
/// # Safety
///
/// `path` as in [`cpath`].
pub(crate) unsafe fn at(dirfd: c_int, path: *const c_char) -> Option<Res<(Ctx, PathBuf)>> {
    let ctx = filefd::context()?;
    // SAFETY: the caller's contract.
    let p = match unsafe { cpath(path) } {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    if std::thread::panicking() && symbol_source(p) {
        return None;
    }
    if !p.is_absolute() && dirfd != libc::AT_FDCWD && !sim(dirfd) {
        return Some(Err(libc::EBADF));
    }
    Some(ctx.at(dirfd, p).map(|abs| (ctx, abs)))
}

/// Whether `p` is where std's panic message finds the symbols of its
/// backtrace (the executable, its debug files): read from the real
/// disk while the thread panics, so a panic on a node prints names.
fn symbol_source(p: &Path) -> bool {
    static EXE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let exe = EXE.get_or_init(|| hooks::on_real_disk(|| std::env::current_exe().ok()));
    p.starts_with("/proc/self") || p.starts_with("/usr/lib/debug") || exe.as_deref() == Some(p)
}

mod data;
mod dir;
mod fd;
mod map;
mod meta;
mod names;
mod open;
mod stdio;

pub(crate) use self::fd::{fcntl_sim, file_syscall};
pub(crate) use self::open::open64;
