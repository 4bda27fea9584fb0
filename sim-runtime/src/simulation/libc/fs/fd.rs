//! Descriptors: `dup`, `fcntl`, `flock`, `copy_file_range`.

use super::*;
use libc::c_long;

static REAL_COPY_FILE_RANGE: Real = Real::new(c"copy_file_range");
static REAL_DUP: Real = Real::new(c"dup");
static REAL_FLOCK: Real = Real::new(c"flock");

/// # Safety
///
/// The C contract of `dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    if sim(fd) {
        return num(filefd::dup(fd, false)) as c_int;
    }
    // SAFETY: glibc's `dup`, the argument passes through.
    unsafe { real!(REAL_DUP as fn(c_int) -> c_int)(fd) }
}

/// `fcntl` on a simulated file (called by libc/net.rs's `fcntl`).
pub(crate) fn fcntl_sim(fd: c_int, cmd: c_int, arg: libc::c_long) -> c_int {
    match cmd {
        libc::F_DUPFD => num(filefd::dup(fd, false)) as c_int,
        libc::F_DUPFD_CLOEXEC => num(filefd::dup(fd, true)) as c_int,
        libc::F_GETFD => match filefd::cloexec(fd) {
            Ok(on) => {
                if on {
                    libc::FD_CLOEXEC
                } else {
                    0
                }
            }
            Err(e) => int(Err(e)),
        },
        libc::F_SETFD => int(filefd::set_cloexec(
            fd,
            arg as c_int & libc::FD_CLOEXEC != 0,
        )),
        libc::F_GETFL => num(filefd::status_flags(fd)) as c_int,
        libc::F_SETFL => match filefd::target(fd) {
            Ok(Target::Device(_) | Target::Host(_)) => 0,
            _ => int(filefd::with_file(fd, Dead::Ok(()), |fs, mfd, _| {
                fs.set_append(mfd, arg as c_int & libc::O_APPEND != 0)
            })),
        },
        // One process per node, and two nodes never share a disk:
        // POSIX record locks never conflict.
        libc::F_SETLK | libc::F_SETLKW | libc::F_OFD_SETLK | libc::F_OFD_SETLKW => {
            int(filefd::status_flags(fd).map(|_| ()))
        }
        libc::F_GETLK | libc::F_OFD_GETLK => {
            let lock = arg as *mut libc::flock;
            if lock.is_null() {
                return int(Err(libc::EFAULT));
            }
            // SAFETY: F_GETLK's argument is a valid `struct flock`.
            unsafe { (*lock).l_type = libc::F_UNLCK as i16 };
            0
        }
        _ => int(Err(libc::EINVAL)),
    }
}

/// # Safety
///
/// The C contract of `flock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flock(fd: c_int, op: c_int) -> c_int {
    if sim(fd) {
        let lock = match op & !libc::LOCK_NB {
            libc::LOCK_SH => sim_fs::Lock::Shared,
            libc::LOCK_EX => sim_fs::Lock::Exclusive,
            libc::LOCK_UN => sim_fs::Lock::Unlock,
            _ => return int(Err(libc::EINVAL)),
        };
        let r = filefd::with_file(fd, Dead::Ok(()), |fs, mfd, _| fs.flock(mfd, lock));
        if r == Err(libc::EAGAIN) && op & libc::LOCK_NB == 0 {
            // Blocking would stop the whole simulation: the holder is
            // another task of this node, which cannot run meanwhile.
            filefd::refuse(
                "a blocking flock (without LOCK_NB)",
                "another open file description of the node holds the lock, and waiting for \
                 it would stop the whole simulation; the call fails with EDEADLK",
            );
            return int(Err(libc::EDEADLK));
        }
        return int(r);
    }
    // SAFETY: glibc's `flock`, the arguments pass through.
    unsafe { real!(REAL_FLOCK as fn(c_int, c_int) -> c_int)(fd, op) }
}

/// `copy_file_range(2)`: between two simulated files, a read and a
/// write; between a simulated and a real one, `EXDEV` (std then copies
/// by reading and writing).
///
/// # Safety
///
/// The C contract of `copy_file_range`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let (a, b) = (sim(fd_in), sim(fd_out));
    if a && b {
        let r = (|| -> Res<usize> {
            if flags != 0 {
                return Err(libc::EINVAL);
            }
            // SAFETY: each offset pointer is null or valid (the caller's
            // contract).
            let at_in = unsafe { off_in.as_ref() }.map(|&o| o as u64);
            // SAFETY: as above.
            let at_out = unsafe { off_out.as_ref() }.map(|&o| o as u64);
            let mut buf = vec![0u8; len.min(1 << 20)];
            let n = filefd::read(fd_in, &mut buf, at_in)?;
            let w = filefd::write(fd_out, &buf[..n], at_out)?;
            // SAFETY: as above.
            if let Some(o) = unsafe { off_in.as_mut() } {
                *o += n as i64;
            }
            // SAFETY: as above.
            if let Some(o) = unsafe { off_out.as_mut() } {
                *o += w as i64;
            }
            Ok(w)
        })();
        return num(r) as ssize_t;
    }
    if a || b {
        return num::<usize>(Err(libc::EXDEV)) as ssize_t;
    }
    // SAFETY: glibc's `copy_file_range`, the arguments pass through.
    unsafe {
        real!(
            REAL_COPY_FILE_RANGE
                as fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, c_uint) -> ssize_t
        )(fd_in, off_in, fd_out, off_out, len, flags)
    }
}

/// `syscall(2)` with a simulated descriptor as its first argument (redb
/// takes its range locks with `syscall(SYS_fcntl, ..)`): the calls a store
/// makes that way go where the C function of the same name goes; any other
/// is refused with `EBADF` and a line naming it.
///
/// # Safety
///
/// The system call's contract for `num` and its arguments.
pub(crate) unsafe fn file_syscall(
    num: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
) -> c_long {
    let fd = a1 as c_int;
    // SAFETY: each arm is the C function of the system call, whose
    // contract the caller upholds.
    unsafe {
        match num {
            libc::SYS_fcntl => fcntl_sim(fd, a2 as c_int, a3) as c_long,
            libc::SYS_read => super::data::read(fd, a2 as *mut c_void, a3 as size_t) as c_long,
            libc::SYS_write => super::data::write(fd, a2 as *const c_void, a3 as size_t) as c_long,
            libc::SYS_pread64 => {
                super::data::pread64(fd, a2 as *mut c_void, a3 as size_t, a4) as c_long
            }
            libc::SYS_pwrite64 => {
                super::data::pwrite64(fd, a2 as *const c_void, a3 as size_t, a4) as c_long
            }
            libc::SYS_lseek => super::data::lseek64(fd, a2, a3 as c_int),
            libc::SYS_fsync => super::data::fsync(fd) as c_long,
            libc::SYS_fdatasync => super::data::fdatasync(fd) as c_long,
            libc::SYS_ftruncate => super::data::ftruncate64(fd, a2) as c_long,
            libc::SYS_flock => flock(fd, a2 as c_int) as c_long,
            libc::SYS_close => int(filefd::close(fd)) as c_long,
            _ => {
                filefd::refuse(
                    &format!("syscall({num}, ..) on a simulated file descriptor"),
                    "only the file system calls that have a C function served here are; \
                     the call fails with EBADF",
                );
                int(Err(libc::EBADF)) as c_long
            }
        }
    }
}
