//! A directory's tree, as fs-err's `tokio` module sees it: every call
//! returns std's types (`Metadata`, `FileType`, `Permissions`) and every
//! error names its path.

use fs_err::tokio as fs;
use std::fs::{FileType, Metadata};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What an entry is (a symlink is listed, not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Dir,
    File,
    Symlink,
}

impl Kind {
    fn of(t: FileType) -> io::Result<Kind> {
        if t.is_dir() {
            Ok(Kind::Dir)
        } else if t.is_file() {
            Ok(Kind::File)
        } else if t.is_symlink() {
            Ok(Kind::Symlink)
        } else {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("a manifest lists files, directories and symlinks, not {t:?}"),
            ))
        }
    }

    fn letter(self) -> char {
        match self {
            Kind::Dir => 'd',
            Kind::File => 'f',
            Kind::Symlink => 'l',
        }
    }
}

/// One entry of a manifest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// Relative to the manifest's root.
    pub path: PathBuf,
    pub kind: Kind,
    /// Permission bits (`0o644`).
    pub mode: u32,
    /// A file's length (read from the open file), a symlink's target, a
    /// directory's entry count.
    pub size: String,
}

/// Every entry under `root`, in path order (listing order is the file
/// system's own). A `root` that is not a directory is an error naming it.
pub async fn manifest(root: impl AsRef<Path>) -> io::Result<Vec<Entry>> {
    let root = root.as_ref();
    let meta: Metadata = fs::metadata(root).await?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("`{}` is not a directory", root.display()),
        ));
    }
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let mut listing = fs::read_dir(&dir).await?;
        while let Some(e) = listing.next_entry().await? {
            let kind = Kind::of(e.file_type().await?)?;
            let path = e.path();
            let size = match kind {
                Kind::File => {
                    let file = fs::File::open(&path).await?;
                    file.metadata().await?.len().to_string()
                }
                Kind::Symlink => {
                    let link: Metadata = fs::symlink_metadata(&path).await?;
                    debug_assert!(link.file_type().is_symlink());
                    format!("-> {}", fs::read_link(&path).await?.display())
                }
                Kind::Dir => {
                    dirs.push(path.clone());
                    let mut n = 0;
                    let mut inner = fs::read_dir(&path).await?;
                    while inner.next_entry().await?.is_some() {
                        n += 1;
                    }
                    format!("{n} entries")
                }
            };
            out.push(Entry {
                path: path
                    .strip_prefix(root)
                    .expect("a listed entry is under its root")
                    .to_path_buf(),
                kind,
                mode: e.metadata().await?.permissions().mode() & 0o7777,
                size,
            });
        }
    }
    out.sort();
    Ok(out)
}

/// One line per entry: kind, mode, path, size (`f 644 a/b.txt 5`).
pub fn render(entries: &[Entry]) -> String {
    let mut s = String::new();
    for e in entries {
        s.push_str(&format!(
            "{} {:o} {} {}\n",
            e.kind.letter(),
            e.mode,
            e.path.display(),
            e.size
        ));
    }
    s
}
