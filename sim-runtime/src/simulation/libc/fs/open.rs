//! Opening `open(2)` and its forms.

use super::*;

static REAL_OPEN: Real = Real::new(c"open64");
static REAL_OPENAT: Real = Real::new(c"openat64");

fn open_sim(ctx: &Ctx, path: &Path, flags: c_int, mode: mode_t) -> c_int {
    let create = flags & libc::O_CREAT != 0;
    let mode = if create { mode & 0o7777 } else { 0 };
    num(ctx.open(path, flags, mode)) as c_int
}

/// `open(2)`, declared with its optional mode as a third argument (on
/// x86_64 a variadic caller passes it in the same register; it is read
/// only with `O_CREAT`).
///
/// # Safety
///
/// The C contract of `open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { at(libc::AT_FDCWD, path) } {
        Some(Ok((ctx, p))) => open_sim(&ctx, &p, flags, mode),
        Some(Err(e)) => int(Err(e)),
        // SAFETY: glibc's `open64`, the arguments pass through.
        None => unsafe {
            real!(REAL_OPEN as fn(*const c_char, c_int, mode_t) -> c_int)(path, flags, mode)
        },
    }
}

/// `open(2)`: as [`open64`] (the same function on x86_64).
///
/// # Safety
///
/// The C contract of `open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: the same contract.
    unsafe { open64(path, flags, mode) }
}

/// `openat(2)`.
///
/// # Safety
///
/// The C contract of `openat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { at(dirfd, path) } {
        Some(Ok((ctx, p))) => open_sim(&ctx, &p, flags, mode),
        Some(Err(e)) => int(Err(e)),
        // SAFETY: glibc's `openat64`, the arguments pass through.
        None => unsafe {
            real!(REAL_OPENAT as fn(c_int, *const c_char, c_int, mode_t) -> c_int)(
                dirfd, path, flags, mode,
            )
        },
    }
}

/// `openat(2)`: as [`openat64`].
///
/// # Safety
///
/// The C contract of `openat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { openat64(dirfd, path, flags, mode) }
}

/// `creat(2)`.
///
/// # Safety
///
/// The C contract of `creat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn creat64(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the same contract as `open`'s.
    unsafe { open64(path, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, mode) }
}

/// `creat(2)`.
///
/// # Safety
///
/// The C contract of `creat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn creat(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the same contract as `open`'s.
    unsafe { open64(path, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, mode) }
}

/// `__open_2`, what `_FORTIFY_SOURCE` makes of an `open` without a mode.
///
/// # Safety
///
/// The C contract of `open` without `O_CREAT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the same contract.
    unsafe { open64(path, flags, 0) }
}

/// As [`__open_2`].
///
/// # Safety
///
/// The C contract of `open` without `O_CREAT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the same contract.
    unsafe { open64(path, flags, 0) }
}
