//! Linux's errno values, turned into `io::Error`s with the matching kind.

use std::io;

pub(crate) const EPERM: i32 = 1;
pub(crate) const EAGAIN: i32 = 11;
pub(crate) const EACCES: i32 = 13;
pub(crate) const EINVAL: i32 = 22;
pub(crate) const EPIPE: i32 = 32;
pub(crate) const EMSGSIZE: i32 = 90;
pub(crate) const EPROTOTYPE: i32 = 91;
pub(crate) const EADDRINUSE: i32 = 98;
pub(crate) const EADDRNOTAVAIL: i32 = 99;
pub(crate) const ECONNRESET: i32 = 104;
pub(crate) const EISCONN: i32 = 106;
pub(crate) const ENOTCONN: i32 = 107;
pub(crate) const ETIMEDOUT: i32 = 110;
pub(crate) const ECONNREFUSED: i32 = 111;
pub(crate) const EDESTADDRREQ: i32 = 89;
pub(crate) const EAFNOSUPPORT: i32 = 97;
pub(crate) const EBADF: i32 = 9;

/// The error a Linux syscall reports for `errno`.
pub(crate) fn err(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}
