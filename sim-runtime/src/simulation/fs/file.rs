//! `File`: a descriptor on the disk of the node that opened it.

use super::inflight::{self, close_when_landed, hand_over, land_own, take_error};
use super::metadata::{FileTimes, Metadata};
use super::options::OpenOptions;
use super::{with_disk, Gate};
use crate::simulation::core::executor::{current, expect_current};
use crate::simulation::core::node::NodeId;
use sim_fs::{Fd, OpenFlags};
use std::fmt;
use std::fs::File as StdFile;
use std::future::Future;
use std::io::{self, SeekFrom};
use std::path::Path;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

/// Tokio's default cap on one read or write (2 MiB).
const DEFAULT_MAX_BUF_SIZE: usize = 2 * 1024 * 1024;

/// A reference to an open file on the simulated disk, as Tokio's `File`.
///
/// As Tokio's, a write is handed over and lands later (inflight.rs): the
/// file's next operation lands it first, `flush` waits for it and returns
/// its error, and another handle may look before it lands. Reads and seeks
/// go straight to the node's page cache. Durability needs
/// `sync_all`/`sync_data`, as on a real disk.
pub struct File {
    exec_id: u64,
    node: NodeId,
    fd: Fd,
    /// The gate of the operation in progress (a yield or the latency).
    gate: Option<Pin<Box<Gate>>>,
    /// A seek started by `start_seek`, done by `poll_complete`.
    seek: Option<SeekFrom>,
    max_buf_size: usize,
    /// The number `AsRawFd` lends out (fs/fd.rs), once asked for.
    raw: std::sync::OnceLock<i32>,
}

const REFUSE_STD: &str = "sim: this std::fs::File is not on a simulated disk (it was opened \
     outside the simulation, or through sim::fs::on_real_disk), so it cannot become a simulated \
     tokio::fs::File. Open the file inside the simulation, with std::fs or tokio::fs.";

const REFUSE_OUTSIDE: &str = "sim: a simulated tokio::fs::File becomes a std::fs::File only \
     inside its simulation (the descriptor names the node's simulated disk).";

impl File {
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        Self::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    pub async fn create_new<P: AsRef<Path>>(path: P) -> std::io::Result<File> {
        Self::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    pub(crate) async fn open_with(path: &Path, flags: OpenFlags) -> io::Result<File> {
        super::check_running()?;
        // In a block, not `drop(exec)`: a dropped local still counts as
        // held across the await, which would make this future `!Send`.
        let (node, exec_id) = {
            let exec = expect_current();
            (exec.current_node(), exec.id)
        };
        Gate::new(node).await;
        let fd = with_disk(Some(node), |fs, now| fs.open(path, flags, now))?;
        Ok(File {
            exec_id,
            node,
            fd,
            gate: None,
            seek: None,
            max_buf_size: DEFAULT_MAX_BUF_SIZE,
            raw: std::sync::OnceLock::new(),
        })
    }

    /// The `File` of a `std::fs::File` opened inside the simulation (on the
    /// node's simulated disk: libc/fs/): the same open file, its
    /// cursor included. A real file (opened outside, or inside
    /// `sim::fs::on_real_disk`) is refused with a panic saying so.
    pub fn from_std(std: StdFile) -> File {
        use std::os::fd::IntoRawFd;
        let raw = std.into_raw_fd();
        let exec = crate::simulation::core::executor::current();
        match (exec, crate::simulation::fs::fd::take_model(raw)) {
            (Some(exec), Ok((node, fd))) => File {
                exec_id: exec.id,
                node,
                fd,
                gate: None,
                seek: None,
                max_buf_size: DEFAULT_MAX_BUF_SIZE,
                raw: std::sync::OnceLock::new(),
            },
            _ => {
                // SAFETY: `raw` was just released by `into_raw_fd`: this
                // closes the descriptor the caller handed over.
                drop(unsafe { <StdFile as std::os::fd::FromRawFd>::from_raw_fd(raw) });
                panic!("{REFUSE_STD}");
            }
        }
    }

    /// Gives this open file to a `std::fs::File` (the simulation's
    /// descriptor of it), or `None` outside its simulation.
    /// `wait`: land a write in flight first (`into_std`); else a write in
    /// flight keeps the file a `File` (`try_into_std`: Tokio's blocking
    /// pool still holds the std file).
    fn into_std_now(mut self, wait: bool) -> Result<StdFile, File> {
        let exec = crate::simulation::core::executor::current().filter(|e| e.id == self.exec_id);
        let Some(exec) = exec else {
            return Err(self);
        };
        if wait {
            land_own(self.node, self.fd);
        } else if inflight::in_flight(&exec, self.node, self.fd) {
            return Err(self);
        }
        drop(exec);
        // What a pending operation would have waited for: nothing has
        // happened yet, and nothing will.
        self.gate = None;
        let this = std::mem::ManuallyDrop::new(self);
        if let Some(&lent) = this.raw.get() {
            crate::simulation::fs::fd::forget(lent);
        }
        match crate::simulation::fs::fd::adopt(this.node, this.fd, false) {
            // SAFETY: `fd` is a new simulated descriptor that owns the
            // model's descriptor; the std file takes it over.
            Ok(fd) => Ok(unsafe { <StdFile as std::os::fd::FromRawFd>::from_raw_fd(fd) }),
            Err(_) => Err(std::mem::ManuallyDrop::into_inner(this)),
        }
    }

    /// Runs one operation of this file: its gate, then `f` on its disk.
    /// Tokio's waits for a write in flight first: it lands.
    async fn op<R>(
        &self,
        f: impl FnOnce(&mut sim_fs::Fs, Fd, std::time::SystemTime) -> io::Result<R>,
    ) -> io::Result<R> {
        super::check_running()?;
        Gate::new(self.node).await;
        let fd = self.fd;
        land_own(self.node, fd);
        with_disk(Some(self.node), |fs, now| f(fs, fd, now))
    }

    pub async fn sync_all(&self) -> io::Result<()> {
        self.op(|fs, fd, _| fs.sync(fd, false)).await
    }

    pub async fn sync_data(&self) -> io::Result<()> {
        self.op(|fs, fd, _| fs.sync(fd, true)).await
    }

    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        self.op(|fs, fd, now| fs.set_len(fd, size, now)).await
    }

    /// std's `File::metadata` (`statx`/`fstat`) through the number this
    /// file lends (`AsRawFd`), which the interposers serve from the model's
    /// `fstat` of its descriptor.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        Gate::new(self.node).await;
        super::metadata::assert_std_reaches_disk("tokio::fs::File::metadata");
        // A descriptor its process's death closed is `EBADF`, as for every
        // other call of this `File` (the interposers answer a dead
        // process's own calls, its destructors', with `EIO`).
        let fd = self.fd;
        if !with_disk(Some(self.node), |fs, _| fs.is_open(fd)) {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        super::metadata::fstat(std::os::unix::io::AsFd::as_fd(self))
    }

    /// A new handle sharing this one's cursor, as `dup(2)`.
    pub async fn try_clone(&self) -> io::Result<File> {
        let fd = self.op(|fs, fd, _| fs.dup(fd)).await?;
        Ok(File {
            exec_id: self.exec_id,
            node: self.node,
            fd,
            gate: None,
            seek: None,
            max_buf_size: self.max_buf_size,
            raw: std::sync::OnceLock::new(),
        })
    }

    /// The same open file as a `std::fs::File`, whose calls reach the same
    /// simulated disk. Panics outside the file's simulation.
    pub async fn into_std(self) -> StdFile {
        match self.into_std_now(true) {
            Ok(f) => f,
            Err(_) => panic!("{REFUSE_OUTSIDE}"),
        }
    }

    /// As [`File::into_std`]; `Err(self)` outside the file's simulation.
    #[allow(clippy::result_large_err)]
    pub fn try_into_std(self) -> Result<StdFile, Self> {
        self.into_std_now(false)
    }

    pub async fn set_permissions(&self, perm: std::fs::Permissions) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        self.op(|fs, fd, now| fs.fset_mode(fd, perm.mode(), now))
            .await
    }

    pub async fn set_times(&self, times: FileTimes) -> io::Result<()> {
        self.op(|fs, fd, now| fs.fset_times(fd, times.accessed, times.modified, now))
            .await
    }

    pub async fn set_modified(&self, time: std::time::SystemTime) -> io::Result<()> {
        self.set_times(FileTimes::new().set_modified(time)).await
    }

    pub fn set_max_buf_size(&mut self, max_buf_size: usize) {
        // Tokio's check, word for word.
        assert!(max_buf_size > 0, "`max_buf_size` must be greater than 0");
        self.max_buf_size = max_buf_size;
    }

    pub fn max_buf_size(&self) -> usize {
        self.max_buf_size
    }

    /// What a write, `flush` or `shutdown` does first: an error a landed
    /// write left, else the write in flight lands and its error is this
    /// call's.
    fn land_before_write(&mut self) -> io::Result<()> {
        if let Some(e) = take_error(self.node, self.fd) {
            return Err(e);
        }
        land_own(self.node, self.fd);
        match take_error(self.node, self.fd) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Polls the gate of the next data operation.
    fn poll_gate(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let node = self.node;
        let gate = self.gate.get_or_insert_with(|| Box::pin(Gate::new(node)));
        ready!(gate.as_mut().poll(cx));
        self.gate = None;
        Poll::Ready(())
    }
}

impl From<StdFile> for File {
    /// As [`File::from_std`].
    fn from(std: StdFile) -> Self {
        Self::from_std(std)
    }
}

impl From<std::os::fd::OwnedFd> for File {
    /// As [`File::from_std`].
    fn from(fd: std::os::fd::OwnedFd) -> Self {
        Self::from_std(StdFile::from(fd))
    }
}

/// The simulation's descriptor of this open file: std and libc calls made
/// through it reach the same simulated disk; the `File` keeps owning the
/// open file (closing the number does not close it). Panics outside the
/// file's simulation.
impl std::os::unix::io::AsRawFd for File {
    fn as_raw_fd(&self) -> std::os::unix::io::RawFd {
        *self.raw.get_or_init(|| {
            let same =
                crate::simulation::core::executor::current().is_some_and(|e| e.id == self.exec_id);
            let lent = same
                .then(|| crate::simulation::fs::fd::adopt(self.node, self.fd, true).ok())
                .flatten();
            lent.unwrap_or_else(|| panic!("{REFUSE_OUTSIDE}"))
        })
    }
}

/// As [`AsRawFd`](std::os::unix::io::AsRawFd).
impl std::os::unix::io::AsFd for File {
    fn as_fd(&self) -> std::os::unix::io::BorrowedFd<'_> {
        // SAFETY: the number names this open file for as long as the
        // `File` lives (it is forgotten when the `File` drops), and is
        // never -1.
        unsafe {
            std::os::unix::io::BorrowedFd::borrow_raw(std::os::unix::io::AsRawFd::as_raw_fd(self))
        }
    }
}

/// As [`File::from_std`]: the descriptor must be a simulated one.
impl std::os::unix::io::FromRawFd for File {
    unsafe fn from_raw_fd(fd: std::os::unix::io::RawFd) -> Self {
        // SAFETY: the caller hands over ownership of an open descriptor.
        Self::from_std(unsafe { <StdFile as std::os::unix::io::FromRawFd>::from_raw_fd(fd) })
    }
}

impl AsyncRead for File {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_gate(cx));
        let want = buf.remaining().min(me.max_buf_size);
        let fd = me.fd;
        land_own(me.node, fd);
        let n = with_disk(Some(me.node), |fs, _| {
            fs.read(fd, buf.initialize_unfilled_to(want))
        })?;
        assert!(n <= want, "sim-fs read more than asked");
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        src: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        ready!(me.poll_gate(cx));
        me.land_before_write()?;
        let n = src.len().min(me.max_buf_size);
        hand_over(me.node, me.fd, src[..n].to_vec());
        Poll::Ready(Ok(n))
    }

    /// As Tokio's: the slices are written as one, up to `max_buf_size`
    /// bytes in all (Tokio copies them into its buffer, then writes that).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        ready!(me.poll_gate(cx));
        me.land_before_write()?;
        let mut joined = Vec::new();
        for b in bufs {
            let room = me.max_buf_size - joined.len();
            if room == 0 {
                break;
            }
            joined.extend_from_slice(&b[..b.len().min(room)]);
        }
        let n = joined.len();
        hand_over(me.node, me.fd, joined);
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Waits for the write in flight and returns its error (or one an
    /// earlier operation landed), as Tokio's does.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().land_before_write())
    }

    /// As `poll_flush` (Tokio's shutdown of a file is its flush).
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().land_before_write())
    }
}

impl AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let me = self.get_mut();
        if me.seek.is_some() {
            return Err(io::Error::other(
                "other file operation is pending, call poll_complete before start_seek",
            ));
        }
        me.seek = Some(position);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let me = self.get_mut();
        let fd = me.fd;
        let Some(to) = me.seek else {
            land_own(me.node, fd);
            return Poll::Ready(with_disk(Some(me.node), |fs, _| fs.position(fd)));
        };
        ready!(me.poll_gate(cx));
        me.seek = None;
        land_own(me.node, fd);
        Poll::Ready(with_disk(Some(me.node), |fs, _| fs.seek(fd, to)))
    }
}

impl Drop for File {
    fn drop(&mut self) {
        if let Some(&lent) = self.raw.get() {
            crate::simulation::fs::fd::forget(lent);
        }
        // Closed on the disk it was opened on, if that simulation is still
        // the one running here (a file outliving its runtime has nothing
        // left to close). A descriptor a kill or crash already closed is
        // gone: nothing to do.
        if let Some(exec) = current() {
            if exec.id == self.exec_id && !close_when_landed(&exec, self.node, self.fd) {
                let fd = self.fd;
                super::with_disk_of(&exec, Some(self.node), |fs, _| {
                    if fs.is_open(fd) {
                        fs.close(fd).expect("sim: closing an open descriptor");
                    }
                });
            }
        }
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// What Tokio shows as its `std::fs::File`: the descriptor std
        /// calls would use (the simulation's, lent while in the file's
        /// simulation; -1 outside it), and the model's.
        struct Std<'a>(&'a File);
        impl fmt::Debug for Std<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let same = crate::simulation::core::executor::current()
                    .is_some_and(|e| e.id == self.0.exec_id);
                let fd = if same {
                    std::os::unix::io::AsRawFd::as_raw_fd(self.0)
                } else {
                    -1
                };
                f.debug_struct("File")
                    .field("fd", &fd)
                    .field("node", &self.0.node)
                    .field("model_fd", &self.0.fd.0)
                    .finish()
            }
        }
        f.debug_struct("tokio::fs::File")
            .field("std", &Std(self))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_is_send_and_sync_as_in_tokio() {
        fn check<T: Send + Sync>() {}
        check::<super::File>();
        check::<super::super::ReadDir>();
        check::<super::super::DirEntry>();
        check::<super::super::FileTimes>();
    }
}
