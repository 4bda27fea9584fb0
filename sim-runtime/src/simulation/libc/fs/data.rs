//! The data path: reads, writes, cursors, syncs, lengths.

use super::*;

static REAL_FALLOCATE: Real = Real::new(c"fallocate64");
static REAL_FDATASYNC: Real = Real::new(c"fdatasync");
static REAL_FSYNC: Real = Real::new(c"fsync");
static REAL_FTRUNCATE: Real = Real::new(c"ftruncate64");
static REAL_LSEEK: Real = Real::new(c"lseek64");
static REAL_POSIX_FALLOCATE: Real = Real::new(c"posix_fallocate64");
static REAL_PREAD: Real = Real::new(c"pread64");
static REAL_PREADV: Real = Real::new(c"preadv64");
static REAL_PREADV2: Real = Real::new(c"preadv64v2");
static REAL_PWRITE: Real = Real::new(c"pwrite64");
static REAL_PWRITEV: Real = Real::new(c"pwritev64");
static REAL_PWRITEV2: Real = Real::new(c"pwritev64v2");
static REAL_READ: Real = Real::new(c"read");
static REAL_READV: Real = Real::new(c"readv");
static REAL_SYNC_FILE_RANGE: Real = Real::new(c"sync_file_range");
static REAL_TRUNCATE: Real = Real::new(c"truncate64");
static REAL_WRITE: Real = Real::new(c"write");
static REAL_WRITEV: Real = Real::new(c"writev");

/// A byte slice of the caller's.
///
/// # Safety
///
/// `buf` is valid for `len` bytes (for writing, if `&mut`), or `len` is 0.
unsafe fn bytes<'a>(buf: *const c_void, len: size_t) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(buf.cast(), len) }
}

/// # Safety
///
/// As [`bytes`], for writing.
unsafe fn bytes_mut<'a>(buf: *mut c_void, len: size_t) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) }
}

fn offset(off: off64_t) -> Res<u64> {
    u64::try_from(off).map_err(|_| libc::EINVAL)
}

/// # Safety
///
/// The C contract of `read`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, len: size_t) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        let buf = unsafe { bytes_mut(buf, len) };
        return num(filefd::read(fd, buf, None)) as ssize_t;
    }
    // SAFETY: glibc's `read`, the arguments pass through.
    unsafe { real!(REAL_READ as fn(c_int, *mut c_void, size_t) -> ssize_t)(fd, buf, len) }
}

/// # Safety
///
/// The C contract of `write`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, len: size_t) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        let data = unsafe { bytes(buf, len) };
        return num(filefd::write(fd, data, None)) as ssize_t;
    }
    // SAFETY: glibc's `write`, the arguments pass through.
    unsafe { real!(REAL_WRITE as fn(c_int, *const c_void, size_t) -> ssize_t)(fd, buf, len) }
}

/// # Safety
///
/// The C contract of `pread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pread64(
    fd: c_int,
    buf: *mut c_void,
    len: size_t,
    off: off64_t,
) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        let buf = unsafe { bytes_mut(buf, len) };
        return num(offset(off).and_then(|o| filefd::read(fd, buf, Some(o)))) as ssize_t;
    }
    // SAFETY: glibc's `pread64`, the arguments pass through.
    unsafe {
        real!(REAL_PREAD as fn(c_int, *mut c_void, size_t, off64_t) -> ssize_t)(fd, buf, len, off)
    }
}

/// # Safety
///
/// The C contract of `pread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, len: size_t, off: off64_t) -> ssize_t {
    // SAFETY: the same contract.
    unsafe { pread64(fd, buf, len, off) }
}

/// # Safety
///
/// The C contract of `pwrite`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwrite64(
    fd: c_int,
    buf: *const c_void,
    len: size_t,
    off: off64_t,
) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        let data = unsafe { bytes(buf, len) };
        return num(offset(off).and_then(|o| filefd::write(fd, data, Some(o)))) as ssize_t;
    }
    // SAFETY: glibc's `pwrite64`, the arguments pass through.
    unsafe {
        real!(REAL_PWRITE as fn(c_int, *const c_void, size_t, off64_t) -> ssize_t)(
            fd, buf, len, off,
        )
    }
}

/// # Safety
///
/// The C contract of `pwrite`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwrite(
    fd: c_int,
    buf: *const c_void,
    len: size_t,
    off: off64_t,
) -> ssize_t {
    // SAFETY: the same contract.
    unsafe { pwrite64(fd, buf, len, off) }
}

/// Vectored I/O on a simulated file: each buffer in turn, stopping at
/// the first short one (as the kernel's result reads).
///
/// # Safety
///
/// `iov` is valid for `n` entries, each valid for its length.
unsafe fn vectored(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    mut at: Option<u64>,
    writing: bool,
) -> ssize_t {
    if !(0..=libc::UIO_MAXIOV).contains(&n) {
        return num::<usize>(Err(libc::EINVAL)) as ssize_t;
    }
    if n == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let iov = unsafe { std::slice::from_raw_parts(iov, n as usize) };
    let mut total = 0usize;
    for v in iov {
        let r = if writing {
            // SAFETY: the caller's contract: each buffer is valid.
            filefd::write(fd, unsafe { bytes(v.iov_base, v.iov_len) }, at)
        } else {
            // SAFETY: the caller's contract: each buffer is valid.
            filefd::read(fd, unsafe { bytes_mut(v.iov_base, v.iov_len) }, at)
        };
        match r {
            Ok(k) => {
                total += k;
                at = at.map(|a| a + k as u64);
                if k < v.iov_len {
                    break;
                }
            }
            Err(e) if total == 0 => return num::<usize>(Err(e)) as ssize_t,
            Err(_) => break,
        }
    }
    total as ssize_t
}

/// # Safety
///
/// The C contract of `readv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        return unsafe { vectored(fd, iov, n, None, false) };
    }
    // SAFETY: glibc's `readv`, the arguments pass through.
    unsafe { real!(REAL_READV as fn(c_int, *const iovec, c_int) -> ssize_t)(fd, iov, n) }
}

/// # Safety
///
/// The C contract of `writev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        return unsafe { vectored(fd, iov, n, None, true) };
    }
    // SAFETY: glibc's `writev`, the arguments pass through.
    unsafe { real!(REAL_WRITEV as fn(c_int, *const iovec, c_int) -> ssize_t)(fd, iov, n) }
}

/// # Safety
///
/// The C contract of `preadv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preadv64(fd: c_int, iov: *const iovec, n: c_int, off: off64_t) -> ssize_t {
    if sim(fd) {
        return match offset(off) {
            // SAFETY: the caller's contract.
            Ok(o) => unsafe { vectored(fd, iov, n, Some(o), false) },
            Err(e) => num::<usize>(Err(e)) as ssize_t,
        };
    }
    // SAFETY: glibc's `preadv64`, the arguments pass through.
    unsafe {
        real!(REAL_PREADV as fn(c_int, *const iovec, c_int, off64_t) -> ssize_t)(fd, iov, n, off)
    }
}

/// # Safety
///
/// The C contract of `preadv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preadv(fd: c_int, iov: *const iovec, n: c_int, off: off64_t) -> ssize_t {
    // SAFETY: the same contract.
    unsafe { preadv64(fd, iov, n, off) }
}

/// # Safety
///
/// The C contract of `pwritev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev64(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: off64_t,
) -> ssize_t {
    if sim(fd) {
        return match offset(off) {
            // SAFETY: the caller's contract.
            Ok(o) => unsafe { vectored(fd, iov, n, Some(o), true) },
            Err(e) => num::<usize>(Err(e)) as ssize_t,
        };
    }
    // SAFETY: glibc's `pwritev64`, the arguments pass through.
    unsafe {
        real!(REAL_PWRITEV as fn(c_int, *const iovec, c_int, off64_t) -> ssize_t)(fd, iov, n, off)
    }
}

/// # Safety
///
/// The C contract of `pwritev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev(fd: c_int, iov: *const iovec, n: c_int, off: off64_t) -> ssize_t {
    // SAFETY: the same contract.
    unsafe { pwritev64(fd, iov, n, off) }
}

/// `preadv2`/`pwritev2` on a simulated file: an offset of -1 is the
/// cursor; the flags (`RWF_*`) change nothing the model has, except
/// `RWF_DSYNC`/`RWF_SYNC`, which sync the data afterwards.
///
/// # Safety
///
/// As [`vectored`].
unsafe fn vectored2(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: off64_t,
    flags: c_int,
    writing: bool,
) -> ssize_t {
    let at = if off == -1 {
        None
    } else {
        match offset(off) {
            Ok(o) => Some(o),
            Err(e) => return num::<usize>(Err(e)) as ssize_t,
        }
    };
    // SAFETY: the caller's contract.
    let r = unsafe { vectored(fd, iov, n, at, writing) };
    if r > 0 && writing && flags & (libc::RWF_DSYNC | libc::RWF_SYNC) != 0 {
        let synced = filefd::with_file(fd, Dead::Ok(()), |fs, mfd, _| fs.sync(mfd, true));
        if let Err(e) = synced {
            return num::<usize>(Err(e)) as ssize_t;
        }
    }
    r
}

/// # Safety
///
/// The C contract of `preadv2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preadv64v2(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: off64_t,
    flags: c_int,
) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        return unsafe { vectored2(fd, iov, n, off, flags, false) };
    }
    // SAFETY: glibc's `preadv64v2`, the arguments pass through.
    unsafe {
        real!(REAL_PREADV2 as fn(c_int, *const iovec, c_int, off64_t, c_int) -> ssize_t)(
            fd, iov, n, off, flags,
        )
    }
}

/// # Safety
///
/// The C contract of `preadv2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preadv2(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: off64_t,
    flags: c_int,
) -> ssize_t {
    // SAFETY: the same contract.
    unsafe { preadv64v2(fd, iov, n, off, flags) }
}

/// # Safety
///
/// The C contract of `pwritev2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev64v2(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: off64_t,
    flags: c_int,
) -> ssize_t {
    if sim(fd) {
        // SAFETY: the caller's contract.
        return unsafe { vectored2(fd, iov, n, off, flags, true) };
    }
    // SAFETY: glibc's `pwritev64v2`, the arguments pass through.
    unsafe {
        real!(REAL_PWRITEV2 as fn(c_int, *const iovec, c_int, off64_t, c_int) -> ssize_t)(
            fd, iov, n, off, flags,
        )
    }
}

/// # Safety
///
/// The C contract of `pwritev2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev2(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: off64_t,
    flags: c_int,
) -> ssize_t {
    // SAFETY: the same contract.
    unsafe { pwritev64v2(fd, iov, n, off, flags) }
}

/// # Safety
///
/// The C contract of `lseek`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lseek64(fd: c_int, off: off64_t, whence: c_int) -> off64_t {
    if sim(fd) {
        let to = match whence {
            libc::SEEK_SET => match offset(off) {
                Ok(o) => SeekFrom::Start(o),
                Err(e) => return num::<u64>(Err(e)),
            },
            libc::SEEK_CUR => SeekFrom::Current(off),
            libc::SEEK_END => SeekFrom::End(off),
            _ => return num::<u64>(Err(libc::EINVAL)),
        };
        return match filefd::target(fd) {
            Ok(Target::Device(_)) => 0,
            Ok(Target::Host(id)) => num(host::seek(id, to)),
            _ => num(filefd::with_file(fd, Dead::Ok(0), |fs, mfd, _| {
                fs.seek(mfd, to)
            })),
        };
    }
    // SAFETY: glibc's `lseek64`, the arguments pass through.
    unsafe { real!(REAL_LSEEK as fn(c_int, off64_t, c_int) -> off64_t)(fd, off, whence) }
}

/// # Safety
///
/// The C contract of `lseek`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lseek(fd: c_int, off: off64_t, whence: c_int) -> off64_t {
    // SAFETY: the same contract.
    unsafe { lseek64(fd, off, whence) }
}

/// A sync of a simulated file (devices: nothing to do).
fn sync(fd: c_int, data_only: bool) -> c_int {
    if let Ok(Target::Device(_) | Target::Host(_)) = filefd::target(fd) {
        return 0;
    }
    int(filefd::with_file(fd, Dead::Ok(()), |fs, mfd, _| {
        fs.sync(mfd, data_only)
    }))
}

/// # Safety
///
/// The C contract of `fsync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    if sim(fd) {
        return sync(fd, false);
    }
    // SAFETY: glibc's `fsync`, the argument passes through.
    unsafe { real!(REAL_FSYNC as fn(c_int) -> c_int)(fd) }
}

/// # Safety
///
/// The C contract of `fdatasync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    if sim(fd) {
        return sync(fd, true);
    }
    // SAFETY: glibc's `fdatasync`, the argument passes through.
    unsafe { real!(REAL_FDATASYNC as fn(c_int) -> c_int)(fd) }
}

/// `sync_file_range(2)` starts writeback and may wait for it, but never
/// flushes the drive's cache nor the file's metadata: nothing it does
/// is durable. On a simulated file it checks the descriptor and does
/// nothing else.
///
/// # Safety
///
/// The C contract of `sync_file_range`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sync_file_range(
    fd: c_int,
    off: off64_t,
    len: off64_t,
    flags: c_uint,
) -> c_int {
    if sim(fd) {
        return int(filefd::with_file(fd, Dead::Ok(()), |fs, mfd, _| {
            fs.fstat(mfd).map(|_| ())
        }));
    }
    // SAFETY: glibc's `sync_file_range`, the arguments pass through.
    unsafe {
        real!(REAL_SYNC_FILE_RANGE as fn(c_int, off64_t, off64_t, c_uint) -> c_int)(
            fd, off, len, flags,
        )
    }
}

/// # Safety
///
/// The C contract of `ftruncate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ftruncate64(fd: c_int, len: off64_t) -> c_int {
    if sim(fd) {
        return int(offset(len).and_then(|len| {
            filefd::with_file(fd, Dead::Ok(()), |fs, mfd, now| fs.set_len(mfd, len, now))
        }));
    }
    // SAFETY: glibc's `ftruncate64`, the arguments pass through.
    unsafe { real!(REAL_FTRUNCATE as fn(c_int, off64_t) -> c_int)(fd, len) }
}

/// # Safety
///
/// The C contract of `ftruncate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ftruncate(fd: c_int, len: off64_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { ftruncate64(fd, len) }
}

/// # Safety
///
/// The C contract of `truncate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn truncate64(path: *const c_char, len: off64_t) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { at(libc::AT_FDCWD, path) } {
        Some(Ok((ctx, p))) => int(offset(len).and_then(|len| {
            ctx.path_op(|fs, now| {
                let flags = sim_fs::OpenFlags {
                    write: true,
                    ..sim_fs::OpenFlags::default()
                };
                let fd = fs.open(&p, flags, now)?;
                let r = fs.set_len(fd, len, now);
                fs.close(fd)?;
                r
            })
        })),
        Some(Err(e)) => int(Err(e)),
        // SAFETY: glibc's `truncate64`, the arguments pass through.
        None => unsafe { real!(REAL_TRUNCATE as fn(*const c_char, off64_t) -> c_int)(path, len) },
    }
}

/// # Safety
///
/// The C contract of `truncate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn truncate(path: *const c_char, len: off64_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { truncate64(path, len) }
}

/// `fallocate(2)` on a simulated file: mode 0 extends, `KEEP_SIZE`
/// reserves nothing the model has (and succeeds); other modes (punching
/// holes, collapsing ranges) are `EOPNOTSUPP`, as on a file system
/// without them.
fn allocate(fd: c_int, mode: c_int, off: off64_t, len: off64_t) -> Res<()> {
    let (off, len) = (offset(off)?, offset(len)?);
    if len == 0 {
        return Err(libc::EINVAL);
    }
    match mode {
        0 => filefd::with_file(fd, Dead::Ok(()), |fs, mfd, now| {
            fs.allocate(mfd, off, len, now)
        }),
        libc::FALLOC_FL_KEEP_SIZE => {
            filefd::with_file(fd, Dead::Ok(()), |fs, mfd, _| fs.fstat(mfd).map(|_| ()))
        }
        _ => Err(libc::EOPNOTSUPP),
    }
}

/// # Safety
///
/// The C contract of `fallocate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fallocate64(fd: c_int, mode: c_int, off: off64_t, len: off64_t) -> c_int {
    if sim(fd) {
        return int(allocate(fd, mode, off, len));
    }
    // SAFETY: glibc's `fallocate64`, the arguments pass through.
    unsafe {
        real!(REAL_FALLOCATE as fn(c_int, c_int, off64_t, off64_t) -> c_int)(fd, mode, off, len)
    }
}

/// # Safety
///
/// The C contract of `fallocate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fallocate(fd: c_int, mode: c_int, off: off64_t, len: off64_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { fallocate64(fd, mode, off, len) }
}

/// `posix_fallocate(3)`: returns the error instead of setting `errno`.
///
/// # Safety
///
/// The C contract of `posix_fallocate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_fallocate64(fd: c_int, off: off64_t, len: off64_t) -> c_int {
    if sim(fd) {
        return match allocate(fd, 0, off, len) {
            Ok(()) => 0,
            Err(e) => e,
        };
    }
    // SAFETY: glibc's `posix_fallocate64`, the arguments pass through.
    unsafe { real!(REAL_POSIX_FALLOCATE as fn(c_int, off64_t, off64_t) -> c_int)(fd, off, len) }
}

/// # Safety
///
/// The C contract of `posix_fallocate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_fallocate(fd: c_int, off: off64_t, len: off64_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { posix_fallocate64(fd, off, len) }
}
