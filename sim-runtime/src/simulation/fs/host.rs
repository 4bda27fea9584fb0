//! Host files: the host's CA roots, read-only, on every node.
//!
//! A TLS client that trusts the platform's roots (reqwest's default,
//! rustls-platform-verifier, rustls-native-certs, tonic's native roots)
//! reads them from the files openssl-probe names, first of all
//! `/etc/ssl/certs/ca-certificates.crt`. A node's simulated disk starts
//! empty, so without this such a client cannot be built on a node ("No CA
//! certificates were loaded from the system").
//!
//! One bundle is read from the real disk once per process, the first time
//! a simulation starts, and served at [`BUNDLE_PATH`] (and at
//! `$SSL_CERT_FILE`, where rustls-native-certs looks when that is set),
//! with its directory `/etc/ssl/certs` (`/etc` and `/etc/ssl` stay the
//! node's, so a service makes its own `/etc/myapp`):
//!
//! - the bundle is `$SIM_CA_BUNDLE` when set (a file that cannot be read
//!   fails every simulation with a message saying so), else
//!   `$SSL_CERT_FILE`, else the first of openssl-probe's files the host
//!   has; a host with none serves no host files;
//! - the same bytes for every node and every seed of the process; stat
//!   answers are constants (device [`HOST_DEV`], fixed inode numbers, mode
//!   `0444` or `0555`, times at the epoch);
//! - served only where the node's own disk has no such name (a node that
//!   writes its own `/etc/ssl/certs/ca-certificates.crt` reads its own), and
//!   only to the libc file interface (std::fs, C libraries), which is how
//!   every root loader reads them;
//! - read-only: opening one for writing, creating a name in a host
//!   directory, removing, renaming or changing one is `EROFS`;
//! - outside the node's disk model: no crash, kill, fault or latency
//!   touches them, and reading them makes no decision, so nothing about
//!   them reaches the fingerprint.
//!
//! A descriptor of a host file (fs/fd.rs `Kind::Host`) names an open file
//! description here, with its own offset; `dup` shares it, as Linux does.
//! The descriptions are the simulation thread's, emptied when a simulation
//! starts.

use crate::simulation::core::hooks;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// The variable that pins the bundle.
pub(crate) const BUNDLE_VAR: &str = "SIM_CA_BUNDLE";

/// Where the bundle is served: Debian's path, the first openssl-probe tries.
pub(crate) const BUNDLE_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The `st_dev` of every host file: a major number no real block device
/// uses, and none of the nodes' disks (fs/fd.rs) either.
pub(crate) const HOST_DEV: u64 = 0x5200_0000_0000;

/// Where a host's bundle is looked for when nothing pins one: the files
/// openssl-probe 0.2 tries on Linux, in its order.
const HOST_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/tls/cacert.pem",
    "/etc/ssl/cert.pem",
    "/opt/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/certs/cacert.pem",
];

/// What a host path is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum What {
    /// A directory, with its names in order.
    Dir(Vec<OsString>),
    /// The bundle.
    File,
}

/// One host file or directory.
#[derive(Debug)]
pub(crate) struct Entry {
    path: PathBuf,
    pub(crate) ino: u64,
    pub(crate) what: What,
}

/// The host files of this process.
#[derive(Debug, Default)]
pub(crate) struct Host {
    entries: Vec<Entry>,
    bundle: Vec<u8>,
    /// Why `$SIM_CA_BUNDLE` could not be served.
    problem: Option<String>,
}

/// The host files, read on first use.
pub(crate) fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| hooks::on_real_disk(load))
}

fn load() -> Host {
    let ssl_cert_file = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    if let Some(pin) = std::env::var_os(BUNDLE_VAR) {
        let pin = PathBuf::from(pin);
        return match std::fs::read(&pin) {
            Ok(bytes) => Host::serving(bytes, ssl_cert_file),
            Err(e) => Host {
                problem: Some(format!(
                    "sim: {BUNDLE_VAR}={} cannot be read ({e}): set it to a PEM bundle of CA \
                     certificates, or unset it to serve the host's own",
                    pin.display()
                )),
                ..Host::default()
            },
        };
    }
    let candidates = ssl_cert_file
        .iter()
        .cloned()
        .chain(HOST_BUNDLES.iter().map(PathBuf::from));
    for p in candidates {
        if let Ok(bytes) = std::fs::read(&p) {
            return Host::serving(bytes, ssl_cert_file);
        }
    }
    Host::default()
}

impl Host {
    /// The tree that serves `bundle`.
    fn serving(bundle: Vec<u8>, ssl_cert_file: Option<PathBuf>) -> Host {
        let dir = |path: &str, ino, names: &[&str]| Entry {
            path: PathBuf::from(path),
            ino,
            what: What::Dir(names.iter().map(OsString::from).collect()),
        };
        // Only the certificates' own directory and file: `/etc` and
        // `/etc/ssl` stay the node's, so a service can make `/etc/myapp`
        // on its disk (a host `/etc` would answer "exists" to std's
        // `create_dir_all` while the disk has no `/etc` to create in).
        let mut entries = vec![
            dir("/etc/ssl/certs", 4, &["ca-certificates.crt"]),
            Entry {
                path: PathBuf::from(BUNDLE_PATH),
                ino: 5,
                what: What::File,
            },
        ];
        // rustls-native-certs reads `$SSL_CERT_FILE` instead of probing:
        // the same bundle (the same inode) is there too.
        if let Some(p) = ssl_cert_file.filter(|p| p.is_absolute() && normal(p).is_some()) {
            if entries.iter().all(|e| e.path != p) {
                entries.push(Entry {
                    path: p,
                    ino: 5,
                    what: What::File,
                });
            }
        }
        Host {
            entries,
            bundle,
            problem: None,
        }
    }

    /// The host entry at the absolute `path`, if any.
    pub(crate) fn find(&self, path: &Path) -> Option<&Entry> {
        let p = normal(path)?;
        self.entries.iter().find(|e| e.path == p)
    }

    /// Whether `path` names a host entry or a name directly in a host
    /// directory: what a write there would meet (`EROFS`).
    pub(crate) fn covers(&self, path: &Path) -> bool {
        let Some(p) = normal(path) else {
            return false;
        };
        self.find(&p).is_some()
            || p.parent()
                .and_then(|d| self.find(d))
                .is_some_and(|e| matches!(e.what, What::Dir(_)))
    }

    /// The entry `name` in the host directory `dir`.
    pub(crate) fn child(&self, dir: &Entry, name: &std::ffi::OsStr) -> Option<&Entry> {
        self.find(&dir.path.join(name))
    }

    /// Why the pinned bundle cannot be served, if it cannot.
    pub(crate) fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// `st_size` of `e`.
    pub(crate) fn size(&self, e: &Entry) -> u64 {
        match e.what {
            What::File => self.bundle.len() as u64,
            What::Dir(_) => 4096,
        }
    }
}

/// `path` with `.` components and repeated slashes gone, or `None` when it
/// has a `..` (which a host path never needs).
fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Normal(_) => out.push(c),
            Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// `st_mode` of `e`.
pub(crate) fn mode(e: &Entry) -> u32 {
    match e.what {
        What::Dir(_) => libc::S_IFDIR | 0o555,
        What::File => libc::S_IFREG | 0o444,
    }
}

/// `st_nlink` of `e`.
pub(crate) fn nlink(e: &Entry) -> u64 {
    match &e.what {
        What::Dir(names) => 2 + names.len() as u64,
        What::File => 1,
    }
}

/// An open file description of a host entry.
#[derive(Clone, Copy, Debug)]
struct Open {
    entry: usize,
    offset: u64,
    /// Descriptors naming it (`dup` adds one).
    refs: u32,
}

thread_local! {
    static OPEN: RefCell<BTreeMap<u32, Open>> = const { RefCell::new(BTreeMap::new()) };
    static NEXT: Cell<u32> = const { Cell::new(0) };
}

hooks::carried!(
    OPEN_CARRIED: (BTreeMap<u32, Open>, u32),
    take: || (OPEN.with(|t| std::mem::take(&mut *t.borrow_mut())), NEXT.with(Cell::get)),
    put: |(t, n): (BTreeMap<u32, Open>, u32)| {
        OPEN.with(|c| *c.borrow_mut() = t);
        NEXT.with(|c| c.set(n));
    },
);

#[linkme::distributed_slice(hooks::INTERPOSERS)]
static HOST_PER_SIMULATION: hooks::Interposer = hooks::Interposer {
    start,
    stop: hooks::Interposer::nothing,
};

/// Reads the host files (once per process) and forgets the descriptions of
/// the last simulation. A pinned bundle that cannot be read fails here,
/// before any of the simulation's code runs.
fn start() {
    if let Some(p) = host().problem() {
        panic!("{p}");
    }
    let _ = OPEN.try_with(|o| o.borrow_mut().clear());
    let _ = NEXT.try_with(|n| n.set(0));
}

/// Errno.
type Res<T> = Result<T, i32>;

/// `open(2)` of the absolute `path` with `flags`, which the node's disk
/// does not have: `None` when no host entry is there either (and the open
/// creates nothing in a host directory), else a new description or the
/// errno Linux gives on a read-only file system.
pub(crate) fn open(path: &Path, flags: i32) -> Option<Res<u32>> {
    let h = host();
    let Some(e) = h.find(path) else {
        return (flags & libc::O_CREAT != 0 && h.covers(path)).then_some(Err(libc::EROFS));
    };
    let writes = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
    let dir = matches!(e.what, What::Dir(_));
    let r = if flags & libc::O_CREAT != 0 && flags & libc::O_EXCL != 0 {
        Err(libc::EEXIST)
    } else if dir && writes {
        Err(libc::EISDIR)
    } else if writes {
        Err(libc::EROFS)
    } else if !dir && flags & libc::O_DIRECTORY != 0 {
        Err(libc::ENOTDIR)
    } else {
        let entry = h
            .entries
            .iter()
            .position(|x| std::ptr::eq(x, e))
            .expect("sim: a host entry found is in the list");
        describe(entry)
    };
    Some(r)
}

fn describe(entry: usize) -> Res<u32> {
    let id = NEXT.try_with(|n| {
        let id = n.get();
        n.set(id.wrapping_add(1));
        id
    });
    let id = id.map_err(|_| libc::EMFILE)?;
    OPEN.try_with(|o| {
        o.borrow_mut().insert(
            id,
            Open {
                entry,
                offset: 0,
                refs: 1,
            },
        )
    })
    .map_err(|_| libc::EMFILE)?;
    Ok(id)
}

fn with_open<R>(id: u32, f: impl FnOnce(&mut Open, &Entry, &Host) -> Res<R>) -> Res<R> {
    let h = host();
    OPEN.try_with(|o| {
        let mut o = o.try_borrow_mut().map_err(|_| libc::EBADF)?;
        let open = o.get_mut(&id).ok_or(libc::EBADF)?;
        let e = &h.entries[open.entry];
        f(open, e, h)
    })
    .map_err(|_| libc::EBADF)?
}

/// The entry description `id` opened.
pub(crate) fn entry(id: u32) -> Res<&'static Entry> {
    let h = host();
    with_open(id, |o, _, _| Ok(&h.entries[o.entry]))
}

/// `read(2)` (`at`: `pread(2)`, which leaves the offset).
pub(crate) fn read(id: u32, buf: &mut [u8], at: Option<u64>) -> Res<usize> {
    with_open(id, |o, e, h| {
        if matches!(e.what, What::Dir(_)) {
            return Err(libc::EISDIR);
        }
        let from = at.unwrap_or(o.offset).min(h.bundle.len() as u64) as usize;
        let n = buf.len().min(h.bundle.len() - from);
        buf[..n].copy_from_slice(&h.bundle[from..from + n]);
        if at.is_none() {
            o.offset += n as u64;
        }
        Ok(n)
    })
}

/// `lseek(2)`.
pub(crate) fn seek(id: u32, to: std::io::SeekFrom) -> Res<u64> {
    with_open(id, |o, e, h| {
        let base = match to {
            std::io::SeekFrom::Start(n) => return Ok(set(o, n)),
            std::io::SeekFrom::Current(d) => (o.offset, d),
            std::io::SeekFrom::End(d) => (h.size(e), d),
        };
        let to = base.0.checked_add_signed(base.1).ok_or(libc::EINVAL)?;
        Ok(set(o, to))
    })
}

fn set(o: &mut Open, to: u64) -> u64 {
    o.offset = to;
    to
}

/// `dup(2)`: the description gains a descriptor.
pub(crate) fn dup(id: u32) -> Res<()> {
    with_open(id, |o, _, _| {
        o.refs += 1;
        Ok(())
    })
}

/// `close(2)`: the description loses a descriptor, and goes with its last.
pub(crate) fn close(id: u32) {
    let _ = OPEN.try_with(|o| {
        let Ok(mut o) = o.try_borrow_mut() else {
            return;
        };
        let last = o.get_mut(&id).is_some_and(|x| {
            x.refs -= 1;
            x.refs == 0
        });
        if last {
            o.remove(&id);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Host {
        Host::serving(b"PEM".to_vec(), None)
    }

    #[test]
    fn paths_are_compared_as_paths() {
        let h = tree();
        assert_eq!(
            h.find(Path::new("/etc/ssl//certs/./ca-certificates.crt"))
                .map(|e| e.ino),
            Some(5)
        );
        assert!(h.find(Path::new("/etc/ssl/certs/../certs")).is_none());
        assert!(h.find(Path::new("/etc/ssl/other")).is_none());
        assert!(h.covers(Path::new("/etc/ssl/certs/new.pem")));
        // `/etc` and `/etc/ssl` are the node's: a service makes its own
        // directories there.
        assert!(!h.covers(Path::new("/etc/ssl")));
        assert!(!h.covers(Path::new("/etc/myapp")));
        assert!(!h.covers(Path::new("/etc/ssl/certs/sub/x")));
        assert!(!h.covers(Path::new("/var/lib/x")));
    }

    #[test]
    fn ssl_cert_file_serves_the_same_inode() {
        let h = Host::serving(
            b"PEM".to_vec(),
            Some(PathBuf::from("/nix/store/bundle.pem")),
        );
        assert_eq!(
            h.find(Path::new("/nix/store/bundle.pem")).map(|e| e.ino),
            Some(5)
        );
        let relative = Host::serving(b"".to_vec(), Some("b.pem".into()));
        assert_eq!(
            relative.entries.len(),
            2,
            "a relative SSL_CERT_FILE is not served"
        );
    }
}
