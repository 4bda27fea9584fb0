//! `tokio::fs::File` writes behind, as Tokio's does.
//!
//! Tokio's `File::poll_write` copies the bytes into the file's buffer,
//! hands the write to the blocking pool and returns `Ok(n)` at once: the
//! bytes reach the kernel later. The file's next operation (another write,
//! `flush`, a read, a seek, a sync) waits for them first, and a failed
//! write's error is what the next `write` or `flush` returns. A `File`
//! dropped with a write in flight closes once the write is done.
//!
//! Here a write in flight is an [`Inflight`] in the node's [`Disks`]:
//!
//! - the `File`'s next operation lands it first ([`land_own`]), with no
//!   decision, as Tokio's waits for it;
//! - any other operation on the node's disk (another handle, a path call,
//!   std's and libc's calls) at a later virtual time finds it landed: the
//!   pool had the time;
//! - at the same virtual time it is a seeded decision whether the pool has
//!   written it yet ([`land_others`]): the race a `File` dropped or left
//!   without `flush` has with a reader, which a real machine loses now and
//!   then and the schedule now explores;
//! - a dying node's writes land before its tasks go (a kill keeps the page
//!   cache they reach; a crash then keeps what was synced).

use super::{record, Disks};
use crate::simulation::core::executor::{current, expect_current, Core, Exec};
use crate::simulation::core::node::NodeId;
use rand_core::RngCore;
use sim_fs::Fd;
use std::io;
use std::time::SystemTime;

/// A write Tokio's blocking pool has not done yet.
pub(crate) struct Inflight {
    node: NodeId,
    fd: Fd,
    bytes: Vec<u8>,
    /// Virtual time (global ns) it was handed over.
    at_ns: u64,
    /// Its `File` is gone: the descriptor closes once the write lands.
    close: bool,
}

/// The fingerprint's tag of a landing decision.
const TAG_LANDED: u8 = 0x20;

/// Hands `bytes` to the pool for `fd` of `node` (a `File`'s `poll_write`).
pub(crate) fn hand_over(node: NodeId, fd: Fd, bytes: Vec<u8>) {
    let exec = expect_current();
    let mut core = exec.core_mut();
    let at_ns = core.now();
    core.driver::<Disks>().inflight.push(Inflight {
        node,
        fd,
        bytes,
        at_ns,
        close: false,
    });
}

/// Lands the write in flight of `fd` (its `File`'s next operation waits
/// for it), if there is one; an error waits for [`take_error`].
pub(crate) fn land_own(node: NodeId, fd: Fd) {
    let exec = expect_current();
    let mut core = exec.core_mut();
    let disks = core.driver::<Disks>();
    let Some(i) = disks
        .inflight
        .iter()
        .position(|w| w.node == node && w.fd == fd)
    else {
        return;
    };
    let w = disks.inflight.remove(i);
    // The one path of disk operations, less its landing of others' writes
    // (this is no access of theirs).
    if let Err(e) = super::apply_only(&exec, &mut core, node, |fs, now| land(fs, &w, now)) {
        core.driver::<Disks>().errors.insert((node, fd), e);
    }
    drop(core);
    super::journal::flush(&exec);
}

/// The error of `fd`'s last write, once landed (what its `File`'s next
/// `write`, `flush` or `shutdown` returns, as Tokio's does).
pub(crate) fn take_error(node: NodeId, fd: Fd) -> Option<io::Error> {
    let exec = expect_current();
    let mut core = exec.core_mut();
    core.driver::<Disks>().errors.remove(&(node, fd))
}

/// Whether `fd` has a write in flight.
pub(crate) fn in_flight(exec: &Exec, node: NodeId, fd: Fd) -> bool {
    exec.core_mut()
        .driver::<Disks>()
        .inflight
        .iter()
        .any(|w| w.node == node && w.fd == fd)
}

/// `fd`'s `File` is dropped: if a write is in flight, the descriptor
/// closes once it lands (returns `true`); else the caller closes it now.
pub(crate) fn close_when_landed(exec: &Exec, node: NodeId, fd: Fd) -> bool {
    let mut core = exec.core_mut();
    let disks = core.driver::<Disks>();
    disks.errors.remove(&(node, fd));
    match disks
        .inflight
        .iter_mut()
        .find(|w| w.node == node && w.fd == fd)
    {
        Some(w) => {
            w.close = true;
            true
        }
        None => false,
    }
}

/// Before an operation on `node`'s disk that is not the writing `File`'s
/// own: each write in flight there lands if virtual time has moved since it
/// was handed over, else as a seeded draw decides (see the module's docs).
pub(crate) fn land_others(core: &mut Core, node: NodeId, now: SystemTime) {
    let disks = core.driver::<Disks>();
    if !disks.inflight.iter().any(|w| w.node == node) {
        return;
    }
    let now_ns = core.now();
    let mut i = 0;
    while i < core.driver::<Disks>().inflight.len() {
        let w = &core.driver::<Disks>().inflight[i];
        if w.node != node {
            i += 1;
            continue;
        }
        let lands = w.at_ns < now_ns || {
            let landed = core.driver::<Disks>().coin.next_u64() & 1 == 0;
            record(core, TAG_LANDED, node, u64::from(landed));
            if !landed && super::journal::on() {
                behind(core, node, i, now);
            }
            landed
        };
        if lands {
            let disks = core.driver::<Disks>();
            let w = disks.inflight.remove(i);
            keep_error(disks, &w, now);
        } else {
            i += 1;
        }
    }
}

/// Holds the trace's event for the write in flight at `i` that a look at
/// `node`'s disk does not see (journal.rs emits it).
fn behind(core: &mut Core, node: NodeId, i: usize, now: SystemTime) {
    let name = core.node(node).name.clone();
    let disks = core.driver::<Disks>();
    let (fd, bytes) = (disks.inflight[i].fd, disks.inflight[i].bytes.len());
    let path = disks
        .disk(node, now)
        .fs
        .fd_path(fd)
        .map_or_else(|_| "(unlinked)".to_string(), |p| p.display().to_string());
    disks.held.push(super::journal::Held::Behind {
        node: name,
        path,
        bytes,
    });
}

/// `node` is dying: its writes in flight land first (the driver's own
/// callback: `disks` is out of the core's registry meanwhile).
pub(crate) fn land_all(disks: &mut Disks, core: &Core, node: NodeId) {
    let now = match current() {
        Some(exec) => super::wall_now(&exec, core, node),
        None => SystemTime::UNIX_EPOCH,
    };
    let mut i = 0;
    while i < disks.inflight.len() {
        if disks.inflight[i].node != node {
            i += 1;
            continue;
        }
        let w = disks.inflight.remove(i);
        keep_error(disks, &w, now);
    }
}

/// [`land`] on `w`'s disk, its error kept for its `File`.
fn keep_error(disks: &mut Disks, w: &Inflight, now: SystemTime) {
    let fs = &mut disks.disk(w.node, now).fs;
    if let Err(e) = land(fs, w, now) {
        disks.errors.insert((w.node, w.fd), e);
    }
}

/// Writes `w` whole (the pool's `write_all`) and closes a dropped
/// `File`'s descriptor; the write's error, if its `File` is still there
/// to hear of it.
fn land(fs: &mut sim_fs::Fs, w: &Inflight, now: SystemTime) -> io::Result<()> {
    let written = write_whole(fs, w, now);
    if w.close {
        if fs.is_open(w.fd) {
            fs.close(w.fd).expect("sim: closing an open descriptor");
        }
        return Ok(());
    }
    written
}

/// The pool's `write_all` of `w`'s bytes.
fn write_whole(fs: &mut sim_fs::Fs, w: &Inflight, now: SystemTime) -> io::Result<()> {
    let mut rest = &w.bytes[..];
    while !rest.is_empty() {
        match fs.write(w.fd, rest, now)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => rest = &rest[n..],
        }
    }
    Ok(())
}
