//! `stat` and its forms.

use super::*;

static REAL_FSTAT: Real = Real::new(c"fstat64");
static REAL_FSTATAT: Real = Real::new(c"fstatat64");
static REAL_STATX: Real = Real::new(c"statx");

/// What `stat` answers, in the shape both `stat64` and `statx` take.
struct Answer {
    dev: u64,
    ino: u64,
    mode: u32,
    nlink: u64,
    rdev: u64,
    size: u64,
    times: [SystemTime; 4], // accessed, modified, changed, created
}

fn answer_of(st: &sim_fs::Stat, dev: u64) -> Answer {
    Answer {
        dev,
        ino: st.ino,
        mode: st.st_mode(),
        nlink: st.nlink,
        rdev: 0,
        size: st.len,
        times: [st.accessed, st.modified, st.changed, st.created],
    }
}

/// What `stat` of a host file answers: constants, the same on every node
/// and seed (fs/host.rs).
fn host_answer(e: &host::Entry) -> Answer {
    Answer {
        dev: host::HOST_DEV,
        ino: e.ino,
        mode: host::mode(e),
        nlink: host::nlink(e),
        rdev: 0,
        size: host::host().size(e),
        times: [SystemTime::UNIX_EPOCH; 4],
    }
}

fn device_answer(kind: Kind) -> Answer {
    let (mode, rdev) = filefd::device_stat(kind);
    Answer {
        // devtmpfs, as on Linux.
        dev: 5,
        ino: rdev,
        mode,
        nlink: 1,
        rdev,
        size: 0,
        times: [SystemTime::UNIX_EPOCH; 4],
    }
}

fn split(t: SystemTime) -> (i64, u32) {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let (s, n) = (d.as_secs() as i64, d.subsec_nanos());
            if n == 0 {
                (-s, 0)
            } else {
                (-s - 1, 1_000_000_000 - n)
            }
        }
    }
}

/// # Safety
///
/// `out` is valid for writing one `stat64`.
unsafe fn put_stat(a: &Answer, out: *mut libc::stat64) -> c_int {
    if out.is_null() {
        return int(Err(libc::EFAULT));
    }
    // SAFETY: `stat64` is plain old data; all zeros is a valid value.
    let mut s: libc::stat64 = unsafe { std::mem::zeroed() };
    s.st_dev = a.dev;
    s.st_ino = a.ino;
    s.st_nlink = a.nlink;
    s.st_mode = a.mode;
    // SAFETY: `geteuid`/`getegid` have no preconditions.
    (s.st_uid, s.st_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    s.st_rdev = a.rdev;
    s.st_size = a.size as i64;
    s.st_blksize = 4096;
    s.st_blocks = a.size.div_ceil(512) as i64;
    (s.st_atime, s.st_atime_nsec) = (split(a.times[0]).0, split(a.times[0]).1.into());
    (s.st_mtime, s.st_mtime_nsec) = (split(a.times[1]).0, split(a.times[1]).1.into());
    (s.st_ctime, s.st_ctime_nsec) = (split(a.times[2]).0, split(a.times[2]).1.into());
    // SAFETY: the caller's contract.
    unsafe { out.write_unaligned(s) };
    0
}

/// # Safety
///
/// `out` is valid for writing one `statx`.
unsafe fn put_statx(a: &Answer, out: *mut libc::statx) -> c_int {
    if out.is_null() {
        return int(Err(libc::EFAULT));
    }
    // SAFETY: `statx` is plain old data; all zeros is a valid value.
    let mut s: libc::statx = unsafe { std::mem::zeroed() };
    s.stx_mask = libc::STATX_BASIC_STATS | libc::STATX_BTIME;
    s.stx_blksize = 4096;
    s.stx_nlink = a.nlink as u32;
    // SAFETY: `geteuid`/`getegid` have no preconditions.
    (s.stx_uid, s.stx_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    s.stx_mode = a.mode as u16;
    s.stx_ino = a.ino;
    s.stx_size = a.size;
    s.stx_blocks = a.size.div_ceil(512);
    let ts = |t: SystemTime| {
        let (sec, nsec) = split(t);
        // SAFETY: plain old data; all zeros is valid.
        let mut x: libc::statx_timestamp = unsafe { std::mem::zeroed() };
        x.tv_sec = sec;
        x.tv_nsec = nsec;
        x
    };
    s.stx_atime = ts(a.times[0]);
    s.stx_mtime = ts(a.times[1]);
    s.stx_ctime = ts(a.times[2]);
    s.stx_btime = ts(a.times[3]);
    s.stx_rdev_major = (a.rdev >> 8) as u32;
    s.stx_rdev_minor = (a.rdev & 0xff) as u32;
    s.stx_dev_major = (a.dev >> 32) as u32;
    s.stx_dev_minor = a.dev as u32;
    // SAFETY: the caller's contract.
    unsafe { out.write_unaligned(s) };
    0
}

/// What `fstat` of a simulated descriptor answers.
fn fd_answer(fd: c_int) -> Res<Answer> {
    match filefd::target(fd)? {
        Target::Device(k) => Ok(device_answer(k)),
        Target::Host(id) => Ok(host_answer(host::entry(id)?)),
        Target::File { .. } => {
            let st = filefd::with_file(fd, Dead::Err(libc::EIO), |fs, mfd, _| fs.fstat(mfd))?;
            Ok(answer_of(&st, filefd::dev(fd)?))
        }
    }
}

/// What `stat`/`lstat` of a path answers.
fn path_answer(ctx: &Ctx, path: &Path, follow: bool) -> Res<Answer> {
    if let Some(k) = filefd::device(path) {
        return Ok(device_answer(k));
    }
    match ctx.path_op(|fs, _| fs.stat(path, follow)) {
        Ok(st) => Ok(answer_of(&st, ctx.dev())),
        Err(libc::ENOENT) => match host::host().find(path) {
            Some(e) => Ok(host_answer(e)),
            None => Err(libc::ENOENT),
        },
        Err(e) => Err(e),
    }
}

/// The answer for `(dirfd, path, flags)` of `fstatat`/`statx`, or
/// `None` for the real disk.
///
/// # Safety
///
/// `path` as in [`cpath`].
unsafe fn at_answer(dirfd: c_int, path: *const c_char, flags: c_int) -> Option<Res<Answer>> {
    let empty = flags & libc::AT_EMPTY_PATH != 0
        // SAFETY: the caller's contract.
        && !path.is_null()
        // SAFETY: the caller's contract.
        && unsafe { *path } == 0;
    if empty {
        if sim(dirfd) {
            return Some(fd_answer(dirfd));
        }
        if dirfd != libc::AT_FDCWD || filefd::context().is_none() {
            return None;
        }
    }
    // SAFETY: the caller's contract.
    let (ctx, p) = match unsafe { at(dirfd, path) }? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
    Some(path_answer(&ctx, &p, follow))
}

/// # Safety
///
/// The C contract of `fstat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstat64(fd: c_int, out: *mut libc::stat64) -> c_int {
    if sim(fd) {
        return match fd_answer(fd) {
            // SAFETY: the caller's contract.
            Ok(a) => unsafe { put_stat(&a, out) },
            Err(e) => int(Err(e)),
        };
    }
    // SAFETY: glibc's `fstat64`, the arguments pass through.
    unsafe { real!(REAL_FSTAT as fn(c_int, *mut libc::stat64) -> c_int)(fd, out) }
}

/// # Safety
///
/// The C contract of `fstat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstat(fd: c_int, out: *mut libc::stat64) -> c_int {
    // SAFETY: the same contract (`stat` and `stat64` are one layout on
    // x86_64).
    unsafe { fstat64(fd, out) }
}

/// # Safety
///
/// The C contract of `fstatat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstatat64(
    dirfd: c_int,
    path: *const c_char,
    out: *mut libc::stat64,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { at_answer(dirfd, path, flags) } {
        // SAFETY: the caller's contract.
        Some(Ok(a)) => unsafe { put_stat(&a, out) },
        Some(Err(e)) => int(Err(e)),
        // SAFETY: glibc's `fstatat64`, the arguments pass through.
        None => unsafe {
            real!(REAL_FSTATAT as fn(c_int, *const c_char, *mut libc::stat64, c_int) -> c_int)(
                dirfd, path, out, flags,
            )
        },
    }
}

/// # Safety
///
/// The C contract of `fstatat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstatat(
    dirfd: c_int,
    path: *const c_char,
    out: *mut libc::stat64,
    flags: c_int,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { fstatat64(dirfd, path, out, flags) }
}

/// # Safety
///
/// The C contract of `stat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stat64(path: *const c_char, out: *mut libc::stat64) -> c_int {
    // SAFETY: the same contract.
    unsafe { fstatat64(libc::AT_FDCWD, path, out, 0) }
}

/// # Safety
///
/// The C contract of `stat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stat(path: *const c_char, out: *mut libc::stat64) -> c_int {
    // SAFETY: the same contract.
    unsafe { fstatat64(libc::AT_FDCWD, path, out, 0) }
}

/// # Safety
///
/// The C contract of `lstat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lstat64(path: *const c_char, out: *mut libc::stat64) -> c_int {
    // SAFETY: the same contract.
    unsafe { fstatat64(libc::AT_FDCWD, path, out, libc::AT_SYMLINK_NOFOLLOW) }
}

/// # Safety
///
/// The C contract of `lstat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lstat(path: *const c_char, out: *mut libc::stat64) -> c_int {
    // SAFETY: the same contract.
    unsafe { fstatat64(libc::AT_FDCWD, path, out, libc::AT_SYMLINK_NOFOLLOW) }
}

/// `statx(2)`: what std's `metadata` calls first.
///
/// # Safety
///
/// The C contract of `statx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    out: *mut libc::statx,
) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { at_answer(dirfd, path, flags) } {
        // SAFETY: the caller's contract.
        Some(Ok(a)) => unsafe { put_statx(&a, out) },
        Some(Err(e)) => int(Err(e)),
        // SAFETY: glibc's `statx`, the arguments pass through.
        None => unsafe {
            real!(REAL_STATX as fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int)(
                dirfd, path, flags, mask, out,
            )
        },
    }
}
