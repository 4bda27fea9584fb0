//! Linux's errno values, so an error carries the kind *and* the raw code a
//! real program would see. The model is Linux's file system semantics; it
//! does not take errno from the host's libc, so its answers do not depend on
//! where it is compiled.

use std::io;

pub const EPERM: i32 = 1;
pub const ENOENT: i32 = 2;
pub const EIO: i32 = 5;
pub const ENXIO: i32 = 6;
pub const EBADF: i32 = 9;
pub const EAGAIN: i32 = 11;
pub const EACCES: i32 = 13;
pub const EBUSY: i32 = 16;
pub const EEXIST: i32 = 17;
pub const ENOTDIR: i32 = 20;
pub const EISDIR: i32 = 21;
pub const EINVAL: i32 = 22;
pub const ENOSPC: i32 = 28;
pub const ENAMETOOLONG: i32 = 36;
pub const ENOTEMPTY: i32 = 39;
pub const ELOOP: i32 = 40;
pub const EOPNOTSUPP: i32 = 95;
pub const EADDRINUSE: i32 = 98;
pub const ECONNREFUSED: i32 = 111;

/// The error a system call failing with `code` returns.
pub fn err(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// `Err(err(code))`.
pub fn fail<T>(code: i32) -> io::Result<T> {
    Err(err(code))
}
