//! The free functions of `tokio::fs`. Each is one operation: one gate (a
//! yield, or the node's latency), then the whole call against the model,
//! as Tokio runs each in one `spawn_blocking` call.

use super::metadata::{self, Metadata};
use super::{op, std_op};
use sim_fs::{FileKind, Fs, OpenFlags};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

fn read_all(fs: &mut Fs, path: &Path, now: SystemTime) -> io::Result<Vec<u8>> {
    let flags = OpenFlags {
        read: true,
        ..OpenFlags::default()
    };
    let fd = fs.open(path, flags, now)?;
    let out = (|| {
        let mut out = vec![0; fs.fstat(fd)?.len as usize];
        let mut filled = 0;
        loop {
            if filled == out.len() {
                out.resize(filled + 4096, 0);
            }
            let n = fs.read(fd, &mut out[filled..])?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        out.truncate(filled);
        Ok(out)
    })();
    fs.close(fd).expect("sim: closing a descriptor just opened");
    out
}

fn write_all(fs: &mut Fs, path: &Path, mode: u32, data: &[u8], now: SystemTime) -> io::Result<()> {
    let flags = OpenFlags {
        write: true,
        create: true,
        truncate: true,
        mode,
        ..OpenFlags::default()
    };
    let fd = fs.open(path, flags, now)?;
    let out = (|| {
        let mut done = 0;
        while done < data.len() {
            done += fs.write(fd, &data[done..], now)?;
        }
        Ok(())
    })();
    fs.close(fd).expect("sim: closing a descriptor just opened");
    out
}

/// std's `create_dir_all`, against the model.
pub(crate) fn create_dir_all_in(
    fs: &mut Fs,
    path: &Path,
    mode: u32,
    now: SystemTime,
) -> io::Result<()> {
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    let is_dir = |fs: &Fs| fs.stat(path, true).is_ok_and(|s| s.kind == FileKind::Dir);
    match fs.create_dir(path, mode, now) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(_) if is_dir(fs) => return Ok(()),
        Err(e) => return Err(e),
    }
    match path.parent() {
        Some(p) => create_dir_all_in(fs, p, mode, now)?,
        None => return Err(io::Error::other("failed to create whole tree")),
    }
    match fs.create_dir(path, mode, now) {
        Ok(()) => Ok(()),
        Err(_) if is_dir(fs) => Ok(()),
        Err(e) => Err(e),
    }
}

pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, now| read_all(fs, &path, now)).await
}

pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let bytes = read(path).await?;
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    let contents = contents.as_ref().to_vec();
    op(move |fs, now| write_all(fs, &path, 0o666, &contents, now)).await
}

/// Copies a file's bytes and permission bits, as std's `copy`.
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<u64, std::io::Error> {
    let from = from.as_ref().to_path_buf();
    let to = to.as_ref().to_path_buf();
    op(move |fs, now| {
        let st = fs.stat(&from, true)?;
        if st.kind != FileKind::File {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the source path is neither a regular file nor a symlink to a regular file",
            ));
        }
        let data = read_all(fs, &from, now)?;
        write_all(fs, &to, st.mode, &data, now)?;
        fs.set_mode(&to, st.mode, now)?;
        Ok(data.len() as u64)
    })
    .await
}

pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let from = from.as_ref().to_path_buf();
    let to = to.as_ref().to_path_buf();
    op(move |fs, now| fs.rename(&from, &to, now)).await
}

pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, now| fs.remove_file(&path, now)).await
}

pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, now| fs.remove_dir(&path, now)).await
}

pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, now| fs.remove_dir_all(&path, now)).await
}

pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, now| fs.create_dir(&path, 0o777, now)).await
}

pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, now| create_dir_all_in(fs, &path, 0o777, now)).await
}

/// std's `metadata`, which the interposers serve from the node's disk
/// (`stat` of the model, as Tokio's `spawn_blocking` of it would be).
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref().to_path_buf();
    std_op("tokio::fs::metadata", move || metadata::stat(&path, true)).await
}

/// std's `symlink_metadata` (`lstat`), as [`metadata`].
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref().to_path_buf();
    std_op("tokio::fs::symlink_metadata", move || {
        metadata::stat(&path, false)
    })
    .await
}

pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, _| fs.canonicalize(&path)).await
}

pub async fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let original = original.as_ref().to_path_buf();
    let link = link.as_ref().to_path_buf();
    op(move |fs, now| fs.hard_link(&original, &link, now)).await
}

pub async fn symlink(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let original = original.as_ref().to_path_buf();
    let link = link.as_ref().to_path_buf();
    op(move |fs, now| fs.symlink(&original, &link, now)).await
}

pub async fn read_link(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, _| fs.read_link(&path)).await
}

pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    let path = path.as_ref().to_path_buf();
    op(move |fs, _| match fs.stat(&path, true) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    })
    .await
}

pub async fn set_permissions(path: impl AsRef<Path>, perm: std::fs::Permissions) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = path.as_ref().to_path_buf();
    op(move |fs, now| fs.set_mode(&path, perm.mode(), now)).await
}
