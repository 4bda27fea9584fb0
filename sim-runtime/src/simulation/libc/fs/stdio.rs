//! C's stdio on a node: `fopen`, `fopen64` and `fdopen` of a simulated
//! file give a real `FILE *` whose reads, writes, seeks and close come
//! here (glibc's `fopencookie`), so a C library's `fread`/`fwrite`/`fflush`
//! reach the node's disk too. (glibc's own `fopen` opens through an
//! internal call no interposer sees.)

use super::*;

static REAL_FOPEN: Real = Real::new(c"fopen64");
static REAL_FDOPEN: Real = Real::new(c"fdopen");

/// glibc's `cookie_io_functions_t`.
#[repr(C)]
struct CookieIo {
    read: Option<unsafe extern "C" fn(*mut c_void, *mut c_char, size_t) -> ssize_t>,
    write: Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t) -> ssize_t>,
    seek: Option<unsafe extern "C" fn(*mut c_void, *mut off64_t, c_int) -> c_int>,
    close: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}

unsafe extern "C" {
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, io: CookieIo) -> *mut libc::FILE;
}

/// The descriptor a stream's cookie carries.
fn fd_of(cookie: *mut c_void) -> c_int {
    cookie as usize as c_int
}

/// # Safety
///
/// `buf` is valid for `len` bytes (glibc's contract for the cookie).
unsafe extern "C" fn cookie_read(cookie: *mut c_void, buf: *mut c_char, len: size_t) -> ssize_t {
    // SAFETY: the caller's contract.
    let buf = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    num(filefd::read(fd_of(cookie), buf, None)) as ssize_t
}

/// # Safety
///
/// `buf` is valid for `len` bytes (glibc's contract for the cookie).
unsafe extern "C" fn cookie_write(cookie: *mut c_void, buf: *const c_char, len: size_t) -> ssize_t {
    // SAFETY: the caller's contract.
    let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
    match filefd::write(fd_of(cookie), data, None) {
        Ok(n) => n as ssize_t,
        // A cookie's write reports an error as 0 bytes written.
        Err(e) => {
            set_errno(e);
            0
        }
    }
}

/// # Safety
///
/// `off` is valid for reading and writing (glibc's contract).
unsafe extern "C" fn cookie_seek(cookie: *mut c_void, off: *mut off64_t, whence: c_int) -> c_int {
    // SAFETY: the caller's contract.
    let at = unsafe { *off };
    // SAFETY: the same call as on the descriptor itself.
    let r = unsafe { super::data::lseek64(fd_of(cookie), at, whence) };
    if r < 0 {
        return -1;
    }
    // SAFETY: the caller's contract.
    unsafe { *off = r };
    0
}

/// # Safety
///
/// glibc's contract for the cookie: called once, at `fclose`.
unsafe extern "C" fn cookie_close(cookie: *mut c_void) -> c_int {
    int(filefd::close(fd_of(cookie)))
}

/// A stream over the simulated descriptor `fd`, which it owns.
///
/// # Safety
///
/// `mode` is a valid NUL-terminated string.
unsafe fn stream(fd: c_int, mode: *const c_char) -> *mut libc::FILE {
    let io = CookieIo {
        read: Some(cookie_read),
        write: Some(cookie_write),
        seek: Some(cookie_seek),
        close: Some(cookie_close),
    };
    // SAFETY: `mode` is valid (the caller's contract); the cookie is the
    // descriptor's number, and the callbacks have glibc's signatures.
    let f = unsafe { fopencookie(fd as usize as *mut c_void, mode, io) };
    if f.is_null() {
        let _ = filefd::close(fd);
    }
    f
}

/// `fopen`'s mode as `open(2)`'s flags.
fn open_flags(mode: &[u8]) -> Res<c_int> {
    let plus = mode.contains(&b'+');
    let mut flags = match (mode.first(), plus) {
        (Some(b'r'), false) => libc::O_RDONLY,
        (Some(b'r'), true) => libc::O_RDWR,
        (Some(b'w'), false) => libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
        (Some(b'w'), true) => libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC,
        (Some(b'a'), false) => libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND,
        (Some(b'a'), true) => libc::O_RDWR | libc::O_CREAT | libc::O_APPEND,
        _ => return Err(libc::EINVAL),
    };
    if mode.contains(&b'x') {
        flags |= libc::O_EXCL;
    }
    if mode.contains(&b'e') {
        flags |= libc::O_CLOEXEC;
    }
    Ok(flags)
}

/// # Safety
///
/// The C contract of `fopen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    // SAFETY: the caller's contract.
    match unsafe { at(libc::AT_FDCWD, path) } {
        Some(r) => {
            let fd = r.and_then(|(ctx, p)| {
                // SAFETY: the caller's contract: `mode` is a C string.
                let flags = open_flags(unsafe { CStr::from_ptr(mode) }.to_bytes())?;
                ctx.open(&p, flags, 0o666)
            });
            match fd {
                // SAFETY: the caller's contract.
                Ok(fd) => unsafe { stream(fd, mode) },
                Err(e) => {
                    set_errno(e);
                    std::ptr::null_mut()
                }
            }
        }
        // SAFETY: glibc's `fopen64`, the arguments pass through.
        None => unsafe {
            real!(REAL_FOPEN as fn(*const c_char, *const c_char) -> *mut libc::FILE)(path, mode)
        },
    }
}

/// # Safety
///
/// The C contract of `fopen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    // SAFETY: the same contract.
    unsafe { fopen64(path, mode) }
}

/// # Safety
///
/// The C contract of `fdopen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut libc::FILE {
    if sim(fd) {
        // SAFETY: the caller's contract.
        return unsafe { stream(fd, mode) };
    }
    // SAFETY: glibc's `fdopen`, the arguments pass through.
    unsafe { real!(REAL_FDOPEN as fn(c_int, *const c_char) -> *mut libc::FILE)(fd, mode) }
}
