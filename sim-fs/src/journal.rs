//! What an observer can be told of durability: the operations a crash can
//! undo, as they happen (the journal), and what a crash now would take
//! away ([`Fs::at_risk`]). Both only read the model: keeping the journal
//! or asking what is at risk changes no state and no answer.

use crate::inode::{Body, FileKind, Ino, Pending};
use crate::Fs;
use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};

/// An operation a crash can undo: a change of a directory's entries, or a
/// sync that makes changes durable. Paths are absolute, as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `open` with `O_CREAT` made a new file.
    Create(PathBuf),
    /// `mkdir`.
    Mkdir(PathBuf),
    /// `symlink`: the link made.
    Symlink(PathBuf),
    /// A Unix socket's `bind` made its socket file.
    Bind(PathBuf),
    /// `link`: a second name for `original`.
    Link { original: PathBuf, link: PathBuf },
    /// `rename`.
    Rename { from: PathBuf, to: PathBuf },
    /// `unlink`.
    Unlink(PathBuf),
    /// `rmdir`.
    Rmdir(PathBuf),
    /// `fsync` (`data_only = false`) or `fdatasync` of what `path` opened,
    /// a directory or a file; `ok` is whether it succeeded (a failed sync
    /// made nothing durable).
    Sync {
        path: PathBuf,
        data_only: bool,
        dir: bool,
        ok: bool,
    },
}

impl Op {
    /// The call's name: `create`, `mkdir`, …, `sync_all`, `sync_data`.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Create(_) => "create",
            Op::Mkdir(_) => "mkdir",
            Op::Symlink(_) => "symlink",
            Op::Bind(_) => "bind",
            Op::Link { .. } => "link",
            Op::Rename { .. } => "rename",
            Op::Unlink(_) => "unlink",
            Op::Rmdir(_) => "rmdir",
            Op::Sync {
                data_only: false, ..
            } => "sync_all",
            Op::Sync {
                data_only: true, ..
            } => "sync_data",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match self {
            Op::Create(p)
            | Op::Mkdir(p)
            | Op::Symlink(p)
            | Op::Bind(p)
            | Op::Unlink(p)
            | Op::Rmdir(p) => {
                write!(f, "{name} {}", p.display())
            }
            Op::Link { original, link } => {
                write!(f, "{name} {} → {}", original.display(), link.display())
            }
            Op::Rename { from, to } => write!(f, "{name} {} → {}", from.display(), to.display()),
            Op::Sync { path, dir, ok, .. } => {
                write!(f, "{name} {}", path.display())?;
                if *dir {
                    f.write_str(" (directory: its entries)")?;
                }
                if !ok {
                    f.write_str(" failed: nothing became durable")?;
                }
                Ok(())
            }
        }
    }
}

/// Something a crash now would take away (or bring back).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AtRisk {
    /// A name its directory has not synced since it was made (created,
    /// linked or renamed here): a crash takes the name away, and with it
    /// whatever only it reaches.
    Entry { path: PathBuf, kind: FileKind },
    /// A name that names another inode than it did at its directory's
    /// last sync (renamed or linked over): a crash brings back the old one.
    Replaced { path: PathBuf },
    /// A name removed (or renamed away) since its directory's last sync: a
    /// crash brings back what it named.
    Removed { path: PathBuf },
    /// A durably named file with changes since its last sync: `bytes`
    /// written in `changes` changes (writes and length changes), which a
    /// crash loses (a torn crash may keep a prefix). `lost_writeback`: a
    /// failed sync already dropped some that the page cache still shows.
    Unsynced {
        path: PathBuf,
        changes: u64,
        bytes: u64,
        lost_writeback: bool,
    },
}

impl fmt::Display for AtRisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtRisk::Entry { path, kind } => {
                let kind = match kind {
                    FileKind::File => "file",
                    FileKind::Dir => "directory",
                    FileKind::Symlink => "symlink",
                    FileKind::Socket => "socket file",
                };
                write!(
                    f,
                    "{}: a new {kind}, its directory not synced since",
                    path.display()
                )
            }
            AtRisk::Replaced { path } => write!(
                f,
                "{}: replaced, its directory not synced since (the old one comes back)",
                path.display()
            ),
            AtRisk::Removed { path } => write!(
                f,
                "{}: removed, its directory not synced since (it comes back)",
                path.display()
            ),
            AtRisk::Unsynced {
                path,
                changes,
                bytes,
                lost_writeback,
            } => {
                write!(
                    f,
                    "{}: {bytes} unsynced byte(s) in {changes} change(s)",
                    path.display()
                )?;
                if *lost_writeback {
                    f.write_str(" (and earlier ones a failed sync dropped)")?;
                }
                Ok(())
            }
        }
    }
}

impl Fs {
    /// Keeps a journal of the operations a crash can undo ([`Op`]) from now
    /// on, or stops (and drops what it held).
    pub fn set_journal(&mut self, on: bool) {
        match (on, self.journal.is_some()) {
            (true, false) => self.journal = Some(Vec::new()),
            (false, true) => self.journal = None,
            _ => {}
        }
    }

    /// The operations journaled since the last call, oldest first.
    pub fn take_journal(&mut self) -> Vec<Op> {
        self.journal
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Journals `op` when the journal is on (`op` is not built otherwise).
    pub(crate) fn journal(&mut self, op: impl FnOnce() -> Op) {
        if let Some(j) = &mut self.journal {
            j.push(op());
        }
    }

    /// What a crash now would take away or bring back, walking the names
    /// the page cache shows from `/` (breadth first, in name order): names
    /// not yet durable or replaced since (nothing below one is listed: it
    /// goes with it), removed names that are still durable, and durably
    /// named files with unsynced changes. Empty when everything is durable.
    pub fn at_risk(&self) -> Vec<AtRisk> {
        let mut out = Vec::new();
        let mut files: BTreeSet<Ino> = BTreeSet::new();
        let mut queue: VecDeque<(Ino, PathBuf)> = VecDeque::from([(self.root, PathBuf::from("/"))]);
        while let Some((dir, path)) = queue.pop_front() {
            let d = self.dir(dir);
            for (name, &ino) in &d.entries {
                let child = path.join(name);
                let kind = self.inode(ino).kind();
                match d.durable.get(name) {
                    None => {
                        out.push(AtRisk::Entry { path: child, kind });
                        continue;
                    }
                    Some(&old) if old != ino => {
                        out.push(AtRisk::Replaced { path: child });
                        continue;
                    }
                    Some(_) => {}
                }
                match &self.inode(ino).body {
                    Body::Dir(_) => queue.push_back((ino, child)),
                    // A file named twice is told once.
                    Body::File(f)
                        if (!f.pending.is_empty() || f.lost_writeback) && files.insert(ino) =>
                    {
                        out.push(unsynced(child, &f.pending, f.lost_writeback));
                    }
                    _ => {}
                }
            }
            for name in d.durable.keys() {
                if !d.entries.contains_key(name) {
                    out.push(AtRisk::Removed {
                        path: path.join(name),
                    });
                }
            }
        }
        out
    }
}

fn unsynced(path: PathBuf, pending: &[Pending], lost_writeback: bool) -> AtRisk {
    let bytes = pending
        .iter()
        .map(|p| match p {
            Pending::Write { bytes, .. } => bytes.len() as u64,
            Pending::SetLen(_) => 0,
        })
        .sum();
    AtRisk::Unsynced {
        path,
        changes: pending.len() as u64,
        bytes,
        lost_writeback,
    }
}

/// `path`, absolute (the model resolves relative paths from `/`).
pub(crate) fn abs(path: &Path) -> PathBuf {
    crate::path::absolute(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Faults, OpenFlags};
    use std::time::{Duration, SystemTime};

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    fn create() -> OpenFlags {
        OpenFlags {
            write: true,
            create: true,
            mode: 0o644,
            ..OpenFlags::default()
        }
    }

    fn sync(fs: &mut Fs, path: &str, data_only: bool) -> std::io::Result<()> {
        let flags = OpenFlags {
            read: true,
            ..OpenFlags::default()
        };
        let fd = fs.open(Path::new(path), flags, now()).unwrap();
        let r = fs.sync(fd, data_only);
        fs.close(fd).unwrap();
        r
    }

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn the_journal_keeps_what_a_crash_can_undo_only_when_on() {
        let mut fs = Fs::new(now());
        fs.create_dir(Path::new("/unseen"), 0o755, now()).unwrap();
        assert_eq!(fs.take_journal(), [], "off: nothing kept");
        fs.set_journal(true);
        fs.create_dir(Path::new("/data"), 0o755, now()).unwrap();
        let fd = fs.open(Path::new("data/a.tmp"), create(), now()).unwrap();
        fs.write(fd, b"acked", now()).unwrap();
        fs.sync(fd, true).unwrap();
        fs.close(fd).unwrap();
        fs.rename(Path::new("/data/a.tmp"), Path::new("/data/a"), now())
            .unwrap();
        sync(&mut fs, "/data", false).unwrap();
        fs.hard_link(Path::new("/data/a"), Path::new("/data/b"), now())
            .unwrap();
        fs.symlink(Path::new("a"), Path::new("/data/c"), now())
            .unwrap();
        fs.remove_file(Path::new("/data/b"), now()).unwrap();
        fs.bind_socket(Path::new("/data/sock"), now()).unwrap();
        fs.remove_dir(Path::new("/unseen"), now()).unwrap();
        let ops = fs.take_journal();
        assert_eq!(
            ops,
            [
                Op::Mkdir(p("/data")),
                Op::Create(p("/data/a.tmp")),
                Op::Sync {
                    path: p("/data/a.tmp"),
                    data_only: true,
                    dir: false,
                    ok: true
                },
                Op::Rename {
                    from: p("/data/a.tmp"),
                    to: p("/data/a")
                },
                Op::Sync {
                    path: p("/data"),
                    data_only: false,
                    dir: true,
                    ok: true
                },
                Op::Link {
                    original: p("/data/a"),
                    link: p("/data/b")
                },
                Op::Symlink(p("/data/c")),
                Op::Unlink(p("/data/b")),
                Op::Bind(p("/data/sock")),
                Op::Rmdir(p("/unseen")),
            ]
        );
        assert_eq!(
            ops[4].to_string(),
            "sync_all /data (directory: its entries)"
        );
        assert_eq!(ops[3].to_string(), "rename /data/a.tmp → /data/a");
        assert_eq!(fs.take_journal(), [], "taken");
        // A failed sync is journaled as failed.
        fs.set_faults(Faults {
            failing_syncs: 1,
            ..Faults::default()
        });
        assert!(sync(&mut fs, "/data/a", false).is_err());
        assert_eq!(
            fs.take_journal()[0].to_string(),
            "sync_all /data/a failed: nothing became durable"
        );
        fs.set_journal(false);
        fs.create_dir(Path::new("/later"), 0o755, now()).unwrap();
        assert_eq!(fs.take_journal(), []);
    }

    /// The lost directory of issue 36: `create_dir_all` never followed by a
    /// sync of the parent. What `at_risk` names is exactly what the crash
    /// takes away.
    #[test]
    fn at_risk_names_what_a_crash_takes_away() {
        let mut fs = Fs::new(now());
        assert_eq!(fs.at_risk(), [], "a fresh disk is durable");
        fs.create_dir(Path::new("/db"), 0o755, now()).unwrap();
        fs.create_dir(Path::new("/db/wal"), 0o755, now()).unwrap();
        sync(&mut fs, "/", false).unwrap();
        // /db is durable, /db/wal is not: /db was never synced.
        let fd = fs.open(Path::new("/db/wal/0001"), create(), now()).unwrap();
        fs.write(fd, b"entry", now()).unwrap();
        fs.sync(fd, false).unwrap();
        fs.close(fd).unwrap();
        let fd = fs.open(Path::new("/db/meta"), create(), now()).unwrap();
        fs.close(fd).unwrap();
        sync(&mut fs, "/db", false).unwrap();
        let fd = fs.open(Path::new("/db/meta"), create(), now()).unwrap();
        fs.write(fd, b"v2", now()).unwrap();
        fs.close(fd).unwrap();
        fs.create_dir(Path::new("/db/snap"), 0o755, now()).unwrap();
        sync(&mut fs, "/db", false).unwrap();
        fs.remove_dir(Path::new("/db/snap"), now()).unwrap();
        let fd = fs.open(Path::new("/tmp/x"), create(), now()).unwrap();
        fs.close(fd).unwrap();
        assert_eq!(
            fs.at_risk(),
            [
                AtRisk::Unsynced {
                    path: p("/db/meta"),
                    changes: 1,
                    bytes: 2,
                    lost_writeback: false
                },
                AtRisk::Removed {
                    path: p("/db/snap")
                },
                AtRisk::Entry {
                    path: p("/tmp/x"),
                    kind: FileKind::File
                },
                AtRisk::Entry {
                    path: p("/db/wal/0001"),
                    kind: FileKind::File
                },
            ]
        );
        assert_eq!(
            fs.at_risk()[3].to_string(),
            "/db/wal/0001: a new file, its directory not synced since"
        );
        fs.crash(1);
        assert!(fs.stat(Path::new("/db/wal/0001"), true).is_err());
        assert!(fs.stat(Path::new("/tmp/x"), true).is_err());
        assert!(fs.stat(Path::new("/db/snap"), true).is_ok());
        assert_eq!(fs.stat(Path::new("/db/meta"), true).unwrap().len, 0);
        assert_eq!(fs.at_risk(), [], "after a crash everything left is durable");
    }

    #[test]
    fn a_rename_over_a_durable_name_brings_the_old_file_back() {
        let mut fs = Fs::new(now());
        let fd = fs.open(Path::new("/tmp/meta"), create(), now()).unwrap();
        fs.close(fd).unwrap();
        let fd = fs
            .open(Path::new("/tmp/meta.new"), create(), now())
            .unwrap();
        fs.close(fd).unwrap();
        sync(&mut fs, "/tmp", true).unwrap();
        fs.rename(Path::new("/tmp/meta.new"), Path::new("/tmp/meta"), now())
            .unwrap();
        assert_eq!(
            fs.at_risk(),
            [
                AtRisk::Replaced {
                    path: p("/tmp/meta")
                },
                AtRisk::Removed {
                    path: p("/tmp/meta.new")
                },
            ]
        );
        let ino = fs.stat(Path::new("/tmp/meta"), true).unwrap().ino;
        fs.crash(1);
        assert_ne!(fs.stat(Path::new("/tmp/meta"), true).unwrap().ino, ino);
        assert!(fs.stat(Path::new("/tmp/meta.new"), true).is_ok());
    }
}
