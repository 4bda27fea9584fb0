//! A service that keeps its state in one plain file through `std::fs`, the
//! classic way: write `state.tmp`, fsync it, rename it over `state`. The
//! promise: **an acknowledged state survives a crash of the machine**.
//!
//! [`Rename::WithoutDirSync`] is the planted bug, the most common one in
//! hand-written persistence: the rename replaces the name in the page
//! cache, but a new name (and a rename is one) is durable only once the
//! directory that holds it is fsynced. A crash after the acknowledgement
//! can bring back the previous `state` (or none). [`Rename::WithDirSync`]
//! is the fix: fsync the directory after the rename, before the ack (and,
//! at startup, every directory on the path, which `create_dir_all` may have
//! just created).
//!
//! Without a crash both behave identically, so ordinary tests pass.

use crate::sync_dir;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tokio::sync::{mpsc, oneshot};

/// How the state is replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rename {
    /// The planted bug: fsync the temporary file, rename it, acknowledge.
    WithoutDirSync,
    /// The fix: fsync the directory after the rename, then acknowledge.
    WithDirSync,
}

/// The state file of a service kept in `dir`.
pub fn state_path(dir: &Path) -> PathBuf {
    dir.join("state")
}

/// Makes `dir` exist; with the fix, makes every directory on its path
/// durable too (deepest first).
pub fn prepare(dir: &Path, rename: Rename) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    if rename == Rename::WithDirSync {
        for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
            sync_dir(d)?;
        }
    }
    Ok(())
}

/// Replaces the state with `bytes`: when this returns `Ok`, the service
/// acknowledges it.
pub fn save(dir: &Path, bytes: &[u8], rename: Rename) -> io::Result<()> {
    let tmp = dir.join("state.tmp");
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, state_path(dir))?;
    if rename == Rename::WithDirSync {
        sync_dir(dir)?;
    }
    Ok(())
}

/// The saved state, if any.
pub fn load(dir: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::read(state_path(dir)) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A request: the new state and where to acknowledge it.
pub type Save = (Vec<u8>, oneshot::Sender<()>);

/// The service: saves each request's state (the blocking file calls in
/// `spawn_blocking`), then acknowledges it. Returns when every client has
/// gone.
pub async fn serve(
    dir: PathBuf,
    rename: Rename,
    mut requests: mpsc::Receiver<Save>,
) -> io::Result<()> {
    let d = dir.clone();
    tokio::task::spawn_blocking(move || prepare(&d, rename))
        .await
        .expect("prepare does not panic")?;
    while let Some((bytes, ack)) = requests.recv().await {
        let d = dir.clone();
        tokio::task::spawn_blocking(move || save(&d, &bytes, rename))
            .await
            .expect("save does not panic")?;
        let _ = ack.send(());
    }
    Ok(())
}
