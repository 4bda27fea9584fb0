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
