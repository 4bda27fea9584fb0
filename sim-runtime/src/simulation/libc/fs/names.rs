//! The namespace: renaming, removing, links, permissions, owners, times, the working directory and canonical paths.

use super::*;
use std::time::Duration;

static REAL_FACCESSAT: Real = Real::new(c"faccessat");
static REAL_FCHMOD: Real = Real::new(c"fchmod");
static REAL_FCHMODAT: Real = Real::new(c"fchmodat");
static REAL_FCHOWN: Real = Real::new(c"fchown");
static REAL_FCHOWNAT: Real = Real::new(c"fchownat");
static REAL_FUTIMENS: Real = Real::new(c"futimens");
static REAL_GETCWD: Real = Real::new(c"getcwd");
static REAL_LINKAT: Real = Real::new(c"linkat");
static REAL_MKDIRAT: Real = Real::new(c"mkdirat");
static REAL_READLINKAT: Real = Real::new(c"readlinkat");
static REAL_REALPATH: Real = Real::new(c"realpath");
static REAL_RENAMEAT2: Real = Real::new(c"renameat2");
static REAL_SYMLINKAT: Real = Real::new(c"symlinkat");
static REAL_UNLINKAT: Real = Real::new(c"unlinkat");
static REAL_UTIMENSAT: Real = Real::new(c"utimensat");

/// Runs a namespace call that changes the namespace: on the node's disk
/// when the path is simulated, else the real function. A name the disk
/// does not have but the host's read-only files do (or would, in a host
/// directory) is `EROFS` (fs/host.rs).
///
/// # Safety
///
/// `path` as in `cpath`.
unsafe fn ns(
    dirfd: c_int,
    path: *const c_char,
    sim_op: impl FnOnce(&Ctx, PathBuf) -> Res<()>,
    real_op: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { at(dirfd, path) } {
        Some(Ok((ctx, p))) => int(match sim_op(&ctx, p.clone()) {
            Err(libc::ENOENT) if host::host().covers(&p) => Err(libc::EROFS),
            r => r,
        }),
        Some(Err(e)) => int(Err(e)),
        None => real_op(),
    }
}

/// # Safety
///
/// The C contract of `renameat2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn renameat2(
    olddirfd: c_int,
    old: *const c_char,
    newdirfd: c_int,
    new: *const c_char,
    flags: c_uint,
) -> c_int {
    // SAFETY: the caller's contract.
    let to = match unsafe { at(newdirfd, new) } {
        Some(Ok((_, p))) => Some(Ok(p)),
        Some(Err(e)) => Some(Err(e)),
        None => None,
    };
    let real_op = || {
        // SAFETY: glibc's `renameat2`, the arguments pass through.
        unsafe {
            real!(REAL_RENAMEAT2 as fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int)(
                olddirfd, old, newdirfd, new, flags,
            )
        }
    };
    let Some(to) = to else {
        return real_op();
    };
    let sim_op = |ctx: &Ctx, from: PathBuf| {
        let to = to?;
        match flags {
            0 => ctx.path_op(|fs, now| fs.rename(&from, &to, now)),
            libc::RENAME_NOREPLACE => ctx.path_op(|fs, now| {
                if fs.stat(&to, false).is_ok() {
                    return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
                }
                fs.rename(&from, &to, now)
            }),
            _ => Err(libc::EINVAL),
        }
    };
    // SAFETY: the caller's contract.
    unsafe { ns(olddirfd, old, sim_op, real_op) }
}

/// # Safety
///
/// The C contract of `renameat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn renameat(
    olddirfd: c_int,
    old: *const c_char,
    newdirfd: c_int,
    new: *const c_char,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { renameat2(olddirfd, old, newdirfd, new, 0) }
}

/// # Safety
///
/// The C contract of `rename`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: the same contract.
    unsafe { renameat2(libc::AT_FDCWD, old, libc::AT_FDCWD, new, 0) }
}

/// # Safety
///
/// The C contract of `unlinkat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let sim_op = |ctx: &Ctx, p: PathBuf| {
        if flags & libc::AT_REMOVEDIR != 0 {
            ctx.path_op(|fs, now| fs.remove_dir(&p, now))
        } else {
            ctx.path_op(|fs, now| fs.remove_file(&p, now))
        }
    };
    // SAFETY: the caller's contract; glibc's `unlinkat` otherwise.
    unsafe {
        ns(dirfd, path, sim_op, || {
            real!(REAL_UNLINKAT as fn(c_int, *const c_char, c_int) -> c_int)(dirfd, path, flags)
        })
    }
}

/// # Safety
///
/// The C contract of `unlink`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    // SAFETY: the same contract.
    unsafe { unlinkat(libc::AT_FDCWD, path, 0) }
}

/// # Safety
///
/// The C contract of `rmdir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rmdir(path: *const c_char) -> c_int {
    // SAFETY: the same contract.
    unsafe { unlinkat(libc::AT_FDCWD, path, libc::AT_REMOVEDIR) }
}

/// # Safety
///
/// The C contract of `mkdirat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkdirat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int {
    let sim_op = |ctx: &Ctx, p: PathBuf| match ctx.path_op(|fs, now| fs.create_dir(&p, mode, now)) {
        // A host directory exists (fs/host.rs), as Linux answers on a
        // read-only file system too.
        Err(libc::ENOENT) if host::host().find(&p).is_some() => Err(libc::EEXIST),
        r => r,
    };
    // SAFETY: the caller's contract; glibc's `mkdirat` otherwise.
    unsafe {
        ns(dirfd, path, sim_op, || {
            real!(REAL_MKDIRAT as fn(c_int, *const c_char, mode_t) -> c_int)(dirfd, path, mode)
        })
    }
}

/// # Safety
///
/// The C contract of `mkdir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkdir(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { mkdirat(libc::AT_FDCWD, path, mode) }
}

/// # Safety
///
/// The C contract of `linkat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn linkat(
    olddirfd: c_int,
    old: *const c_char,
    newdirfd: c_int,
    new: *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let to = unsafe { at(newdirfd, new) }.map(|r| r.map(|(_, p)| p));
    let real_op = || {
        // SAFETY: glibc's `linkat`, the arguments pass through.
        unsafe {
            real!(REAL_LINKAT as fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int)(
                olddirfd, old, newdirfd, new, flags,
            )
        }
    };
    let Some(to) = to else {
        return real_op();
    };
    let sim_op = |ctx: &Ctx, from: PathBuf| {
        let to = to?;
        ctx.path_op(|fs, now| fs.hard_link(&from, &to, now))
    };
    // SAFETY: the caller's contract.
    unsafe { ns(olddirfd, old, sim_op, real_op) }
}

/// # Safety
///
/// The C contract of `link`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn link(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: the same contract.
    unsafe { linkat(libc::AT_FDCWD, old, libc::AT_FDCWD, new, 0) }
}

/// # Safety
///
/// The C contract of `symlinkat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn symlinkat(
    target: *const c_char,
    dirfd: c_int,
    link: *const c_char,
) -> c_int {
    let sim_op = |ctx: &Ctx, p: PathBuf| {
        // SAFETY: the caller's contract.
        let target = unsafe { cpath(target) }?.to_path_buf();
        ctx.path_op(|fs, now| fs.symlink(&target, &p, now))
    };
    // SAFETY: the caller's contract; glibc's `symlinkat` otherwise.
    unsafe {
        ns(dirfd, link, sim_op, || {
            real!(REAL_SYMLINKAT as fn(*const c_char, c_int, *const c_char) -> c_int)(
                target, dirfd, link,
            )
        })
    }
}

/// # Safety
///
/// The C contract of `symlink`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn symlink(target: *const c_char, link: *const c_char) -> c_int {
    // SAFETY: the same contract.
    unsafe { symlinkat(target, libc::AT_FDCWD, link) }
}

/// # Safety
///
/// The C contract of `readlinkat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readlinkat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut c_char,
    len: size_t,
) -> ssize_t {
    // SAFETY: the caller's contract.
    match unsafe { at(dirfd, path) } {
        Some(Ok((ctx, p))) => {
            let r = ctx.path_op(|fs, _| fs.read_link(&p)).map(|t| {
                let bytes = t.as_os_str().as_bytes();
                let n = bytes.len().min(len);
                // SAFETY: `buf` is valid for `len` bytes (the caller's
                // contract) and `n <= len`.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast(), n) };
                n
            });
            num(r) as ssize_t
        }
        Some(Err(e)) => num::<usize>(Err(e)) as ssize_t,
        // SAFETY: glibc's `readlinkat`, the arguments pass through.
        None => unsafe {
            real!(REAL_READLINKAT as fn(c_int, *const c_char, *mut c_char, size_t) -> ssize_t)(
                dirfd, path, buf, len,
            )
        },
    }
}

/// # Safety
///
/// The C contract of `readlink`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readlink(path: *const c_char, buf: *mut c_char, len: size_t) -> ssize_t {
    // SAFETY: the same contract.
    unsafe { readlinkat(libc::AT_FDCWD, path, buf, len) }
}

/// # Safety
///
/// The C contract of `faccessat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn faccessat(
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> c_int {
    let sim_op = |ctx: &Ctx, p: PathBuf| {
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        let st_mode = match ctx.path_op(|fs, _| fs.stat(&p, follow)) {
            Ok(st) => st.mode,
            // The host's read-only files (fs/host.rs), where the disk
            // has no such name.
            Err(libc::ENOENT) => match host::host().find(&p) {
                Some(_) if mode & libc::W_OK != 0 => return Err(libc::EROFS),
                Some(e) => host::mode(e),
                None => return Err(libc::ENOENT),
            },
            Err(e) => return Err(e),
        };
        // The process owns every file and is not root (sim-fs).
        let denied = (mode & libc::R_OK != 0 && st_mode & 0o400 == 0)
            || (mode & libc::W_OK != 0 && st_mode & 0o200 == 0)
            || (mode & libc::X_OK != 0 && st_mode & 0o100 == 0);
        if denied {
            Err(libc::EACCES)
        } else {
            Ok(())
        }
    };
    // SAFETY: the caller's contract.
    match unsafe { at(dirfd, path) } {
        Some(Ok((ctx, p))) => int(sim_op(&ctx, p)),
        Some(Err(e)) => int(Err(e)),
        // SAFETY: glibc's `faccessat`, the arguments pass through.
        None => unsafe {
            real!(REAL_FACCESSAT as fn(c_int, *const c_char, c_int, c_int) -> c_int)(
                dirfd, path, mode, flags,
            )
        },
    }
}

/// # Safety
///
/// The C contract of `access`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: the same contract.
    unsafe { faccessat(libc::AT_FDCWD, path, mode, 0) }
}

/// # Safety
///
/// The C contract of `fchmodat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchmodat(
    dirfd: c_int,
    path: *const c_char,
    mode: mode_t,
    flags: c_int,
) -> c_int {
    let sim_op = |ctx: &Ctx, p: PathBuf| ctx.path_op(|fs, now| fs.set_mode(&p, mode & 0o7777, now));
    // SAFETY: the caller's contract; glibc's `fchmodat` otherwise.
    unsafe {
        ns(dirfd, path, sim_op, || {
            real!(REAL_FCHMODAT as fn(c_int, *const c_char, mode_t, c_int) -> c_int)(
                dirfd, path, mode, flags,
            )
        })
    }
}

/// # Safety
///
/// The C contract of `chmod`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chmod(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { fchmodat(libc::AT_FDCWD, path, mode, 0) }
}

/// # Safety
///
/// The C contract of `fchmod`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchmod(fd: c_int, mode: mode_t) -> c_int {
    if sim(fd) {
        return int(filefd::with_file(fd, Dead::Ok(()), |fs, mfd, now| {
            fs.fset_mode(mfd, mode & 0o7777, now)
        }));
    }
    // SAFETY: glibc's `fchmod`, the arguments pass through.
    unsafe { real!(REAL_FCHMOD as fn(c_int, mode_t) -> c_int)(fd, mode) }
}

/// Owners are not modelled (the process owns every file): changing one
/// succeeds when the file exists.
///
/// # Safety
///
/// The C contract of `fchownat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchownat(
    dirfd: c_int,
    path: *const c_char,
    uid: libc::uid_t,
    gid: libc::gid_t,
    flags: c_int,
) -> c_int {
    let sim_op = |ctx: &Ctx, p: PathBuf| {
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        ctx.path_op(|fs, _| fs.stat(&p, follow).map(|_| ()))
    };
    // SAFETY: the caller's contract; glibc's `fchownat` otherwise.
    unsafe {
        ns(dirfd, path, sim_op, || {
            real!(
                REAL_FCHOWNAT as fn(c_int, *const c_char, libc::uid_t, libc::gid_t, c_int) -> c_int
            )(dirfd, path, uid, gid, flags)
        })
    }
}

/// # Safety
///
/// The C contract of `chown`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { fchownat(libc::AT_FDCWD, path, uid, gid, 0) }
}

/// # Safety
///
/// The C contract of `lchown`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lchown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { fchownat(libc::AT_FDCWD, path, uid, gid, libc::AT_SYMLINK_NOFOLLOW) }
}

/// # Safety
///
/// The C contract of `fchown`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchown(fd: c_int, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    if sim(fd) {
        return int(filefd::status_flags(fd).map(|_| ()));
    }
    // SAFETY: glibc's `fchown`, the arguments pass through.
    unsafe { real!(REAL_FCHOWN as fn(c_int, libc::uid_t, libc::gid_t) -> c_int)(fd, uid, gid) }
}

/// `utimensat`'s two times: `None` to leave one alone.
///
/// # Safety
///
/// `times` is null or valid for reading two `timespec`s.
unsafe fn times(
    times: *const libc::timespec,
    now: SystemTime,
) -> Res<(Option<SystemTime>, Option<SystemTime>)> {
    if times.is_null() {
        return Ok((Some(now), Some(now)));
    }
    // SAFETY: the caller's contract.
    let ts = unsafe { std::slice::from_raw_parts(times, 2) };
    let one = |t: &libc::timespec| -> Res<Option<SystemTime>> {
        match t.tv_nsec {
            libc::UTIME_OMIT => Ok(None),
            libc::UTIME_NOW => Ok(Some(now)),
            n if (0..1_000_000_000).contains(&n) => {
                let d = Duration::new(t.tv_sec.unsigned_abs(), n as u32);
                Ok(Some(if t.tv_sec >= 0 {
                    SystemTime::UNIX_EPOCH + d
                } else {
                    SystemTime::UNIX_EPOCH - Duration::from_secs(t.tv_sec.unsigned_abs())
                        + Duration::from_nanos(n as u64)
                }))
            }
            _ => Err(libc::EINVAL),
        }
    };
    Ok((one(&ts[0])?, one(&ts[1])?))
}

/// # Safety
///
/// The C contract of `utimensat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn utimensat(
    dirfd: c_int,
    path: *const c_char,
    ts: *const libc::timespec,
    flags: c_int,
) -> c_int {
    if path.is_null() && sim(dirfd) {
        // SAFETY: the same contract, as `futimens`.
        return unsafe { futimens(dirfd, ts) };
    }
    let sim_op = |ctx: &Ctx, p: PathBuf| {
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        ctx.path_op(|fs, now| {
            // SAFETY: the caller's contract.
            let (a, m) = unsafe { times(ts, now) }.map_err(std::io::Error::from_raw_os_error)?;
            if follow {
                fs.set_times(&p, a, m, now)
            } else {
                // The model follows symlinks; a symlink's own times are
                // not modelled.
                fs.stat(&p, false).and_then(|st| match st.kind {
                    sim_fs::FileKind::Symlink => Ok(()),
                    _ => fs.set_times(&p, a, m, now),
                })
            }
        })
    };
    // SAFETY: the caller's contract; glibc's `utimensat` otherwise.
    unsafe {
        ns(dirfd, path, sim_op, || {
            real!(REAL_UTIMENSAT as fn(c_int, *const c_char, *const libc::timespec, c_int) -> c_int)(
                dirfd, path, ts, flags,
            )
        })
    }
}

/// # Safety
///
/// The C contract of `futimens`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn futimens(fd: c_int, ts: *const libc::timespec) -> c_int {
    if sim(fd) {
        return int(filefd::with_file(fd, Dead::Ok(()), |fs, mfd, now| {
            // SAFETY: the caller's contract.
            let (a, m) = unsafe { times(ts, now) }.map_err(std::io::Error::from_raw_os_error)?;
            fs.fset_times(mfd, a, m, now)
        }));
    }
    // SAFETY: glibc's `futimens`, the arguments pass through.
    unsafe { real!(REAL_FUTIMENS as fn(c_int, *const libc::timespec) -> c_int)(fd, ts) }
}
/// `getcwd(3)`: a simulated node's working directory is `/` (relative
/// paths resolve there, as `tokio::fs`'s do).
///
/// # Safety
///
/// The C contract of `getcwd`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, len: size_t) -> *mut c_char {
    if filefd::context().is_some() {
        if buf.is_null() {
            // glibc allocates when `buf` is null.
            // SAFETY: `strdup` of a valid NUL-terminated string.
            return unsafe { libc::strdup(c"/".as_ptr()) };
        }
        if len < 2 {
            set_errno(libc::ERANGE);
            return std::ptr::null_mut();
        }
        // SAFETY: `buf` is valid for `len >= 2` bytes.
        unsafe {
            *buf = b'/' as c_char;
            *buf.add(1) = 0;
        }
        return buf;
    }
    // SAFETY: glibc's `getcwd`, the arguments pass through.
    unsafe { real!(REAL_GETCWD as fn(*mut c_char, size_t) -> *mut c_char)(buf, len) }
}

/// `realpath(3)` (std's `canonicalize`) on the node's disk.
///
/// # Safety
///
/// The C contract of `realpath`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realpath(path: *const c_char, out: *mut c_char) -> *mut c_char {
    // SAFETY: the caller's contract.
    match unsafe { at(libc::AT_FDCWD, path) } {
        Some(r) => {
            let canon = r.and_then(|(ctx, p)| ctx.path_op(|fs, _| fs.canonicalize(&p)));
            let canon = match canon {
                Ok(c) => c,
                Err(e) => {
                    set_errno(e);
                    return std::ptr::null_mut();
                }
            };
            let bytes = canon.as_os_str().as_bytes();
            if bytes.len() >= libc::PATH_MAX as usize {
                set_errno(libc::ENAMETOOLONG);
                return std::ptr::null_mut();
            }
            let dst = if out.is_null() {
                // SAFETY: `malloc` has no preconditions; the caller frees.
                unsafe { libc::malloc(bytes.len() + 1) }.cast::<c_char>()
            } else {
                out
            };
            if dst.is_null() {
                set_errno(libc::ENOMEM);
                return dst;
            }
            // SAFETY: `dst` holds `PATH_MAX` bytes (the caller's
            // contract) or `len + 1` (allocated above).
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast(), bytes.len());
                *dst.add(bytes.len()) = 0;
            }
            dst
        }
        // SAFETY: glibc's `realpath`, the arguments pass through.
        None => unsafe {
            real!(REAL_REALPATH as fn(*const c_char, *mut c_char) -> *mut c_char)(path, out)
        },
    }
}
