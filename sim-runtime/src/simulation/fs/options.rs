//! `OpenOptions` and `DirBuilder`.

use super::file::File;
use super::ops;
use std::io;
use std::path::Path;

/// Options for opening a file, as Tokio's (and std's) `OpenOptions`.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    flags: sim_fs::OpenFlags,
    custom_flags: i32,
}

impl OpenOptions {
    pub fn new() -> OpenOptions {
        OpenOptions {
            flags: sim_fs::OpenFlags {
                mode: 0o666,
                ..sim_fs::OpenFlags::default()
            },
            custom_flags: 0,
        }
    }

    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.flags.read = read;
        self
    }

    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.flags.write = write;
        self
    }

    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.flags.append = append;
        self
    }

    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.flags.truncate = truncate;
        self
    }

    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.flags.create = create;
        self
    }

    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.flags.create_new = create_new;
        self
    }

    /// The permission bits of a created file (before the umask); default
    /// `0o666`.
    pub fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        self.flags.mode = mode;
        self
    }

    /// Extra `open(2)` flags. The simulation models `O_DIRECTORY`,
    /// `O_NOFOLLOW`, `O_SYNC` and `O_DSYNC`; the others change nothing it
    /// models. As in std, the access-mode bits are ignored.
    pub fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        self.custom_flags = flags;
        self
    }

    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref().to_path_buf();
        let flags = self.flags.with_custom_flags(self.custom_flags);
        // std refuses these combinations itself, before any system call,
        // with these errors (no errno).
        let f = &self.flags;
        let writable = f.write || f.append;
        if !f.read && !writable {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "must specify at least one of read, write, or append access",
            ));
        }
        if (!writable && (f.truncate || f.create || f.create_new))
            || (f.append && f.truncate && !f.create_new)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "creating or truncating a file requires write or append access",
            ));
        }
        File::open_with(&path, flags).await
    }
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Tokio's conversion from std's builder. std's `OpenOptions` has no
/// getters; its `Debug` text names every setting (`read: true, …, mode:
/// 0o000600`), so that is read, strictly: every one of its eight settings,
/// nothing else. A text this version does not know fails the run with the
/// fix rather than guess (unsupported.rs).
impl From<std::fs::OpenOptions> for OpenOptions {
    #[track_caller]
    fn from(std: std::fs::OpenOptions) -> OpenOptions {
        match from_debug(&format!("{std:?}")) {
            Some(o) => o,
            None => crate::simulation::unsupported::refuse_panic(
                "tokio::fs::OpenOptions::from(std::fs::OpenOptions)",
                "std's OpenOptions has no getters, and its Debug text was not the one this \
                 version reads its settings from",
                "Build tokio::fs::OpenOptions directly",
            ),
        }
    }
}

/// The settings in std's `Debug` text, or `None` unless all eight are
/// there and nothing else.
fn from_debug(text: &str) -> Option<OpenOptions> {
    let body = text
        .strip_prefix("OpenOptions(OpenOptions { ")?
        .strip_suffix(" })")?;
    let mut o = OpenOptions::new();
    let mut seen = 0u32;
    for field in body.split(", ") {
        let (key, value) = field.split_once(": ")?;
        let flag = || match value {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        };
        let bit = match key {
            "read" => {
                o.flags.read = flag()?;
                0
            }
            "write" => {
                o.flags.write = flag()?;
                1
            }
            "append" => {
                o.flags.append = flag()?;
                2
            }
            "truncate" => {
                o.flags.truncate = flag()?;
                3
            }
            "create" => {
                o.flags.create = flag()?;
                4
            }
            "create_new" => {
                o.flags.create_new = flag()?;
                5
            }
            "custom_flags" => {
                o.custom_flags = value.parse().ok()?;
                6
            }
            "mode" => {
                o.flags.mode = u32::from_str_radix(value.strip_prefix("0o")?, 8).ok()?;
                7
            }
            _ => return None,
        };
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
    }
    (seen == 0xff).then_some(o)
}

/// A builder for creating directories, as Tokio's `DirBuilder`.
#[derive(Debug, Default)]
pub struct DirBuilder {
    recursive: bool,
    mode: Option<u32>,
}

impl DirBuilder {
    pub fn new() -> Self {
        DirBuilder::default()
    }

    pub fn recursive(&mut self, recursive: bool) -> &mut Self {
        self.recursive = recursive;
        self
    }

    /// The permission bits of created directories (before the umask);
    /// default `0o777`.
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = Some(mode);
        self
    }

    pub async fn create(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref().to_path_buf();
        let mode = self.mode.unwrap_or(0o777);
        let recursive = self.recursive;
        super::op(move |fs, now| {
            if recursive {
                ops::create_dir_all_in(fs, &path, mode, now)
            } else {
                fs.create_dir(&path, mode, now)
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn std_settings_carry_over() {
        let mut std = std::fs::OpenOptions::new();
        std.write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(0o40000);
        let o = OpenOptions::from(std);
        assert!(o.flags.write && o.flags.create_new);
        assert!(!o.flags.read && !o.flags.append && !o.flags.truncate && !o.flags.create);
        assert_eq!(o.flags.mode, 0o600);
        assert_eq!(o.custom_flags, 0o40000);
    }

    #[test]
    fn an_unknown_text_is_not_guessed() {
        assert!(from_debug("OpenOptions(OpenOptions { read: true })").is_none());
        assert!(from_debug("OpenOptions { read: true }").is_none());
        let all = "OpenOptions(OpenOptions { read: true, write: false, append: false, \
                   truncate: false, create: false, create_new: false, custom_flags: 0, mode: 0o000666 })";
        assert!(from_debug(all).is_some());
        assert!(from_debug(&all.replace("read: true", "read: yes")).is_none());
        assert!(from_debug(&all.replace(" })", ", extra: 1 })")).is_none());
    }
}
