//! `mmap` of a simulated file.

use super::*;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

static REAL_MMAP: Real = Real::new(c"mmap64");

thread_local! {
    /// The memory behind shared mappings of simulated files: one memfd
    /// per (node, incarnation, inode) of this simulation thread.
    static SHARED: RefCell<BTreeMap<(u32, u32, u64), OwnedFd>> =
        const { RefCell::new(BTreeMap::new()) };
}

crate::simulation::core::hooks::carried!(
    SHARED_CARRIED: BTreeMap<(u32, u32, u64), OwnedFd>,
    take: || SHARED.with(|s| std::mem::take(&mut *s.borrow_mut())),
    put: |v| SHARED.with(|s| *s.borrow_mut() = v),
);

#[linkme::distributed_slice(hooks::INTERPOSERS)]
static SHARED_PER_SIMULATION: hooks::Interposer = hooks::Interposer {
    start: reset,
    stop: hooks::Interposer::nothing,
};

/// Forgets the shared mappings' memory of the last simulation (mappings
/// still in use keep theirs: closing a memfd unmaps nothing).
fn reset() {
    let _ = SHARED.try_with(|s| s.borrow_mut().clear());
}

/// Writes the bytes of simulated file `fd` into the real descriptor
/// `out` (a memfd), from offset 0.
fn copy_out(fd: c_int, out: c_int, len: u64) -> Res<()> {
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0u64;
    while at < len {
        let n = filefd::read(fd, &mut buf, Some(at))?;
        if n == 0 {
            break;
        }
        // SAFETY: `buf[..n]` is initialised; `out` is a real descriptor.
        let w = unsafe { libc::pwrite64(out, buf.as_ptr().cast(), n, at as i64) };
        if w != n as isize {
            return Err(libc::EIO);
        }
        at += n as u64;
    }
    Ok(())
}

fn map_sim(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off64_t,
) -> Res<*mut c_void> {
    let Ok(Target::File { node, .. }) = filefd::target(fd) else {
        return Err(libc::ENODEV);
    };
    let (ino, size) = filefd::with_file(fd, Dead::Err(libc::EIO), |fs, mfd, _| {
        Ok((fs.fd_ino(mfd)?, fs.fstat(mfd)?.len))
    })?;
    let off_u = u64::try_from(off).map_err(|_| libc::EINVAL)?;
    let shared = flags & libc::MAP_SHARED != 0;
    if !shared && flags & libc::MAP_PRIVATE == 0 {
        return Err(libc::EINVAL);
    }
    let memfd = if shared {
        let key = (node.0, incarnation_of(fd), ino);
        let existing = SHARED.try_with(|s| s.borrow().get(&key).map(|m| m.as_raw_fd()));
        match existing.ok().flatten() {
            Some(m) => m,
            None => {
                let m = new_memfd(fd, size)?;
                let raw = m.as_raw_fd();
                let _ = SHARED.try_with(|s| s.borrow_mut().insert(key, m));
                raw
            }
        }
    } else {
        let m = new_memfd(fd, size)?;
        // A private mapping keeps its pages after the memfd closes.
        let raw = m.as_raw_fd();
        let p = real_map(
            addr,
            len,
            prot,
            libc::MAP_PRIVATE | (flags & libc::MAP_FIXED),
            raw,
            off,
        );
        return p;
    };
    // Grow the memory to cover the mapping (the file may have grown).
    let end = off_u + len as u64;
    // SAFETY: `memfd` is a real descriptor of ours; fstat fills `st`.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat64(memfd, &mut st) } == 0 && (st.st_size as u64) < end {
        // SAFETY: a real memfd of ours.
        unsafe { libc::ftruncate64(memfd, end as i64) };
    }
    real_map(addr, len, prot, flags, memfd, off)
}

fn incarnation_of(fd: c_int) -> u32 {
    filefd::incarnation(fd).unwrap_or(0)
}

/// A memfd holding the bytes of simulated file `fd`.
fn new_memfd(fd: c_int, size: u64) -> Res<OwnedFd> {
    // SAFETY: a valid NUL-terminated name; no other preconditions.
    let raw = unsafe { libc::memfd_create(c"sim-mmap".as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(libc::ENOMEM);
    }
    // SAFETY: `raw` was just opened and is owned by nothing else.
    let m = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: a real memfd of ours.
    if unsafe { libc::ftruncate64(raw, size as i64) } != 0 {
        return Err(libc::ENOMEM);
    }
    copy_out(fd, raw, size)?;
    Ok(m)
}

fn real_map(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off64_t,
) -> Res<*mut c_void> {
    // SAFETY: glibc's `mmap64` on a real memfd of ours; the caller's
    // address hint and flags pass through.
    let p = unsafe {
        real!(REAL_MMAP as fn(*mut c_void, size_t, c_int, c_int, c_int, off64_t) -> *mut c_void)(
            addr, len, prot, flags, fd, off,
        )
    };
    if p == libc::MAP_FAILED {
        // SAFETY: `__errno_location` is always valid.
        return Err(unsafe { *libc::__errno_location() });
    }
    Ok(p)
}

/// `mmap` of a simulated file: a shared mapping is memory every shared
/// mapping of that file in the node sees (SQLite's `-shm` index), never
/// written back to the file and never durable; a private one is a copy
/// of the file's bytes.
///
/// # Safety
///
/// The C contract of `mmap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off64_t,
) -> *mut c_void {
    if sim(fd) && flags & libc::MAP_ANONYMOUS == 0 {
        return match map_sim(addr, len, prot, flags, fd, off) {
            Ok(p) => p,
            Err(e) => {
                filefd::refuse(
                    &format!(
                        "mmap of a simulated file (len {len}, offset {off}, flags {flags:#x})"
                    ),
                    &format!(
                        "the mapping could not be made (errno {e}); shared and private \
                         mappings of a file on the node's disk are served"
                    ),
                );
                set_errno(e);
                libc::MAP_FAILED
            }
        };
    }
    // SAFETY: glibc's `mmap64`, the arguments pass through.
    unsafe {
        real!(REAL_MMAP as fn(*mut c_void, size_t, c_int, c_int, c_int, off64_t) -> *mut c_void)(
            addr, len, prot, flags, fd, off,
        )
    }
}

/// # Safety
///
/// The C contract of `mmap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off64_t,
) -> *mut c_void {
    // SAFETY: the same contract.
    unsafe { mmap64(addr, len, prot, flags, fd, off) }
}
