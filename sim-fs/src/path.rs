//! Path resolution as Linux's `namei` does it: `.` and `..`, symlinks in
//! the middle of a path (and at its end when asked), at most
//! [`SYMLINK_FOLLOW_MAX`] of them, `NAME_MAX`, trailing slashes, and the
//! search (`x`) permission of every directory a lookup passes through.

use crate::errno::*;
use crate::inode::{Body, Ino};
use crate::Fs;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed in one resolution before `ELOOP` (Linux's `MAXSYMLINKS`).
pub const SYMLINK_FOLLOW_MAX: u32 = 40;
/// Longest file name, in bytes (Linux's `NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// Where a path leads.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// The directory holding the last component.
    pub parent: Ino,
    /// The last component's name; `None` when the path ends in `/`, `.` or
    /// `..` (it names a directory reached without an entry to change).
    pub name: Option<OsString>,
    /// The inode the path names, if it exists.
    pub ino: Option<Ino>,
    /// The path ended in a slash: it must name a directory.
    pub trailing_slash: bool,
}

#[derive(Debug)]
enum Step {
    Root,
    Cur,
    Parent,
    Name(OsString),
}

fn steps(path: &Path, out: &mut Vec<Step>) {
    // Pushed in reverse: the resolver pops from the end.
    let mut v: Vec<Step> = path
        .components()
        .map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Step::Root,
            Component::CurDir => Step::Cur,
            Component::ParentDir => Step::Parent,
            Component::Normal(n) => Step::Name(n.to_os_string()),
        })
        .collect();
    v.reverse();
    out.extend(v);
}

fn ends_with_slash(path: &Path) -> bool {
    let b = path.as_os_str().as_bytes();
    b.len() > 1 && b.ends_with(b"/")
}

impl Fs {
    /// Resolves `path` from the root (relative paths: from the working
    /// directory, which is the root). `follow_last` follows a symlink in
    /// the last component; a trailing slash always does.
    pub(crate) fn resolve(&self, path: &Path, follow_last: bool) -> io::Result<Resolved> {
        if path.as_os_str().is_empty() {
            return fail(ENOENT);
        }
        let trailing_slash = ends_with_slash(path);
        let follow_last = follow_last || trailing_slash;
        let mut todo = Vec::new();
        steps(path, &mut todo);
        let mut cur = self.root;
        let mut follows = 0u32;
        // The path "/" alone, or one made only of `.`/`..`.
        let mut last = Resolved {
            parent: cur,
            name: None,
            ino: Some(cur),
            trailing_slash,
        };
        while let Some(step) = todo.pop() {
            let is_last = todo.is_empty();
            // Every component is looked up in a directory the process must
            // be allowed to search (its owner's `x` bit), as Linux's
            // `may_lookup`: `/a/b/c` needs it on `/`, `/a` and `/a/b`.
            if !matches!(step, Step::Root) && self.inode(cur).meta.mode & 0o100 == 0 {
                return fail(EACCES);
            }
            match step {
                Step::Root => cur = self.root,
                Step::Cur => {}
                Step::Parent => cur = self.dir(cur).parent,
                Step::Name(name) => {
                    if name.as_bytes().len() > NAME_MAX {
                        return fail(ENAMETOOLONG);
                    }
                    let found = self.dir(cur).entries.get(&name).copied();
                    let Some(ino) = found else {
                        if is_last {
                            return Ok(Resolved {
                                parent: cur,
                                name: Some(name),
                                ino: None,
                                trailing_slash,
                            });
                        }
                        return fail(ENOENT);
                    };
                    match &self.inode(ino).body {
                        Body::Dir(_) => {
                            if is_last {
                                return Ok(Resolved {
                                    parent: cur,
                                    name: Some(name),
                                    ino: Some(ino),
                                    trailing_slash,
                                });
                            }
                            cur = ino;
                        }
                        Body::Symlink(target) if !is_last || follow_last => {
                            follows += 1;
                            if follows > SYMLINK_FOLLOW_MAX {
                                return fail(ELOOP);
                            }
                            if target.as_os_str().is_empty() {
                                return fail(ENOENT);
                            }
                            steps(target, &mut todo);
                            // A relative target resolves from the link's
                            // directory, which is `cur`.
                            continue;
                        }
                        _ => {
                            if is_last {
                                if trailing_slash {
                                    return fail(ENOTDIR);
                                }
                                return Ok(Resolved {
                                    parent: cur,
                                    name: Some(name),
                                    ino: Some(ino),
                                    trailing_slash,
                                });
                            }
                            return fail(ENOTDIR);
                        }
                    }
                    continue;
                }
            }
            if is_last {
                last = Resolved {
                    parent: self.dir(cur).parent,
                    name: None,
                    ino: Some(cur),
                    trailing_slash,
                };
            }
        }
        Ok(last)
    }

    /// The inode `path` names, following a final symlink if `follow`.
    pub(crate) fn lookup(&self, path: &Path, follow: bool) -> io::Result<Ino> {
        match self.resolve(path, follow)?.ino {
            Some(ino) => Ok(ino),
            None => fail(ENOENT),
        }
    }

    /// The absolute path of directory `dir`, by walking `..` up to the root.
    pub(crate) fn dir_path(&self, mut dir: Ino) -> PathBuf {
        let mut names: Vec<&OsStr> = Vec::new();
        while dir != self.root {
            let parent = self.dir(dir).parent;
            let name = self
                .dir(parent)
                .entries
                .iter()
                .find(|(_, &i)| i == dir)
                .map(|(n, _)| n.as_os_str())
                .expect("sim-fs: a directory is named by its parent");
            names.push(name);
            dir = parent;
        }
        let mut p = PathBuf::from("/");
        for n in names.iter().rev() {
            p.push(n);
        }
        p
    }
}

/// `path` made absolute against the working directory `/`, for matching
/// fault rules by prefix.
pub fn absolute(path: &Path) -> PathBuf {
    Path::new("/").join(path)
}
