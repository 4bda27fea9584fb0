//! Directory streams: `opendir`, `readdir` and the rest.

use super::*;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::OsString;

static REAL_CLOSEDIR: Real = Real::new(c"closedir");
static REAL_DIRFD: Real = Real::new(c"dirfd");
static REAL_FDOPENDIR: Real = Real::new(c"fdopendir");
static REAL_OPENDIR: Real = Real::new(c"opendir");
static REAL_READDIR: Real = Real::new(c"readdir64");
static REAL_REWINDDIR: Real = Real::new(c"rewinddir");

/// A directory stream of a simulated directory. The `DIR *` handed out
/// is the address of one of these; the set below says which addresses
/// are ours (an address is an identity here, never a decision).
struct Stream {
    fd: c_int,
    entries: Vec<(OsString, u64, u8)>,
    next: usize,
    /// What `readdir` returns a pointer to, valid until the next call.
    ent: libc::dirent64,
}

thread_local! {
    static STREAMS: RefCell<BTreeSet<usize>> = const { RefCell::new(BTreeSet::new()) };
}

crate::simulation::core::hooks::carried!(
    STREAMS_CARRIED: BTreeSet<usize>,
    take: || STREAMS.with(|s| std::mem::take(&mut *s.borrow_mut())),
    put: |v| STREAMS.with(|s| *s.borrow_mut() = v),
);

fn ours(dir: *mut libc::DIR) -> bool {
    !dir.is_null()
        && STREAMS
            .try_with(|s| s.try_borrow().is_ok_and(|s| s.contains(&(dir as usize))))
            .unwrap_or(false)
}

/// The listing of the simulated directory `fd`, `.` and `..` first.
fn listing(fd: c_int) -> Res<Vec<(OsString, u64, u8)>> {
    if let Target::Host(id) = filefd::target(fd)? {
        return host_listing(id);
    }
    let (ino, entries) = filefd::with_file(fd, Dead::Err(libc::EIO), |fs, mfd, _| {
        Ok((fs.fd_ino(mfd)?, fs.read_dir_fd(mfd)?))
    })?;
    let mut v = vec![
        (OsString::from("."), ino, libc::DT_DIR),
        (OsString::from(".."), ino, libc::DT_DIR),
    ];
    v.extend(entries.into_iter().map(|e| {
        let t = match e.kind {
            sim_fs::FileKind::File => libc::DT_REG,
            sim_fs::FileKind::Dir => libc::DT_DIR,
            sim_fs::FileKind::Symlink => libc::DT_LNK,
            sim_fs::FileKind::Socket => libc::DT_SOCK,
        };
        (e.name, e.ino, t)
    }));
    Ok(v)
}

/// The listing of a host directory (fs/host.rs): each name's inode and
/// type from the host tree.
fn host_listing(id: u32) -> Res<Vec<(OsString, u64, u8)>> {
    let e = host::entry(id)?;
    let host::What::Dir(names) = &e.what else {
        return Err(libc::ENOTDIR);
    };
    let h = host::host();
    let mut v = vec![
        (OsString::from("."), e.ino, libc::DT_DIR),
        (OsString::from(".."), e.ino, libc::DT_DIR),
    ];
    // Every name a host directory lists is itself a host entry.
    for name in names {
        let child = h.child(e, name).ok_or(libc::EIO)?;
        let t = match child.what {
            host::What::Dir(_) => libc::DT_DIR,
            host::What::File => libc::DT_REG,
        };
        v.push((name.clone(), child.ino, t));
    }
    Ok(v)
}

/// A stream over the simulated directory `fd` (which it owns).
fn new_stream(fd: c_int) -> *mut libc::DIR {
    let entries = match listing(fd) {
        Ok(e) => e,
        Err(e) => {
            set_errno(e);
            return std::ptr::null_mut();
        }
    };
    let s = Box::new(Stream {
        fd,
        entries,
        next: 0,
        // SAFETY: `dirent64` is plain old data; all zeros is valid.
        ent: unsafe { std::mem::zeroed() },
    });
    let ptr = Box::into_raw(s);
    let _ = STREAMS.try_with(|s| s.borrow_mut().insert(ptr as usize));
    ptr.cast()
}

/// # Safety
///
/// The C contract of `opendir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut libc::DIR {
    // SAFETY: the caller's contract.
    match unsafe { at(libc::AT_FDCWD, path) } {
        Some(Ok((ctx, p))) => {
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
            match ctx.open(&p, flags, 0) {
                Ok(fd) => new_stream(fd),
                Err(e) => {
                    set_errno(e);
                    std::ptr::null_mut()
                }
            }
        }
        Some(Err(e)) => {
            set_errno(e);
            std::ptr::null_mut()
        }
        // SAFETY: glibc's `opendir`, the argument passes through.
        None => unsafe { real!(REAL_OPENDIR as fn(*const c_char) -> *mut libc::DIR)(path) },
    }
}

/// # Safety
///
/// The C contract of `fdopendir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdopendir(fd: c_int) -> *mut libc::DIR {
    if sim(fd) {
        return new_stream(fd);
    }
    // SAFETY: glibc's `fdopendir`, the argument passes through.
    unsafe { real!(REAL_FDOPENDIR as fn(c_int) -> *mut libc::DIR)(fd) }
}

/// # Safety
///
/// The C contract of `readdir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    if ours(dir) {
        // SAFETY: `dir` is one of our live streams (the set says so),
        // and C's contract gives this call exclusive use of it.
        let s = unsafe { &mut *dir.cast::<Stream>() };
        let Some((name, ino, kind)) = s.entries.get(s.next) else {
            return std::ptr::null_mut();
        };
        s.next += 1;
        let name = name.as_bytes();
        let ent = &mut s.ent;
        ent.d_ino = *ino;
        ent.d_off = s.next as i64;
        ent.d_reclen = std::mem::size_of::<libc::dirent64>() as u16;
        ent.d_type = *kind;
        let n = name.len().min(ent.d_name.len() - 1);
        for (d, &b) in ent.d_name.iter_mut().zip(&name[..n]) {
            *d = b as c_char;
        }
        ent.d_name[n] = 0;
        return ent;
    }
    // SAFETY: glibc's `readdir64`, the argument passes through.
    unsafe { real!(REAL_READDIR as fn(*mut libc::DIR) -> *mut libc::dirent64)(dir) }
}

/// # Safety
///
/// The C contract of `readdir` (on x86_64 `dirent` and `dirent64` are
/// one layout).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    // SAFETY: the same contract.
    unsafe { readdir64(dir) }
}

/// # Safety
///
/// The C contract of `dirfd`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dirfd(dir: *mut libc::DIR) -> c_int {
    if ours(dir) {
        // SAFETY: one of our live streams.
        return unsafe { (*dir.cast::<Stream>()).fd };
    }
    // SAFETY: glibc's `dirfd`, the argument passes through.
    unsafe { real!(REAL_DIRFD as fn(*mut libc::DIR) -> c_int)(dir) }
}

/// # Safety
///
/// The C contract of `rewinddir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rewinddir(dir: *mut libc::DIR) {
    if ours(dir) {
        // SAFETY: one of our live streams, used by this call alone.
        let s = unsafe { &mut *dir.cast::<Stream>() };
        if let Ok(e) = listing(s.fd) {
            s.entries = e;
        }
        s.next = 0;
        return;
    }
    // SAFETY: glibc's `rewinddir`, the argument passes through.
    unsafe { real!(REAL_REWINDDIR as fn(*mut libc::DIR) -> ())(dir) }
}

/// # Safety
///
/// The C contract of `closedir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    if ours(dir) {
        let _ = STREAMS.try_with(|s| s.borrow_mut().remove(&(dir as usize)));
        // SAFETY: made by `Box::into_raw` in `new_stream`, and just taken
        // out of the set, so freed once.
        let s = unsafe { Box::from_raw(dir.cast::<Stream>()) };
        return int(filefd::close(s.fd));
    }
    // SAFETY: glibc's `closedir`, the argument passes through.
    unsafe { real!(REAL_CLOSEDIR as fn(*mut libc::DIR) -> c_int)(dir) }
}
