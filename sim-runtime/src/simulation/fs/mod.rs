//! `tokio::fs` under simulation: each node's disk is a [`sim_fs::Fs`].
//!
//! Every operation acts on the disk of the node that runs it (a `File`
//! keeps acting on the disk of the node that opened it). As in Tokio, where
//! each operation runs on `spawn_blocking`, each one is a yield point: it
//! lets the scheduler run other tasks first (or sleeps for the node's
//! configured latency), then runs against the model in one step. Timestamps
//! come from the node's virtual wall clock. A simulated run never touches
//! the real disk, and neither does `std::fs` nor any libc file call made on
//! a node: they reach the same disk (fs/fd.rs, libc/fs/). What only std
//! can make (its `Metadata` and `FileType`, which Tokio returns) comes from
//! std's own calls on that disk (metadata.rs).
//!
//! What survives a kill or a crash is stated in `sim_fs`'s crate docs; the
//! disks are a driver (core/executor/driver.rs) that hears of both.

pub mod control;
mod dir;
pub(crate) mod fd;
mod file;
pub(crate) mod host;
pub(crate) mod inflight;
pub(crate) mod journal;
mod metadata;
mod ops;
mod options;

pub use dir::{read_dir, DirEntry, ReadDir};
pub use file::File;
pub use metadata::FileTimes;
pub use ops::{
    canonicalize, copy, create_dir, create_dir_all, hard_link, metadata, read, read_link,
    read_to_string, remove_dir, remove_dir_all, remove_file, rename, set_permissions, symlink,
    symlink_metadata, try_exists, write,
};
pub use options::{DirBuilder, OpenOptions};
pub use std::fs::Permissions;

use super::core::executor::{expect_current, Core, Death, Driver, Exec};
use super::core::node::NodeId;
use super::core::trace::Kind;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

/// Up to this many inodes, and this many bytes, debug builds check every
/// invariant of the disk model after each operation (the check is linear
/// in the disk's size, and copies each file's bytes: a store that
/// preallocates a 64 MiB journal, as fjall does, would spend seconds on
/// each write).
const CHECK_EVERY_OP_MAX_INODES: usize = 256;
const CHECK_EVERY_OP_MAX_BYTES: u64 = 4 << 20;

/// One node's disk and what the runtime adds to the model.
pub(crate) struct Disk {
    pub(crate) fs: sim_fs::Fs,
    /// Virtual time each operation takes (zero: it only yields).
    pub(crate) latency: Duration,
}

/// Every node's disk, created on first use.
pub(crate) struct Disks {
    disks: BTreeMap<NodeId, Disk>,
    /// The trace's events not yet emitted (journal.rs).
    held: Vec<journal::Held>,
    /// `tokio::fs::File` writes Tokio's blocking pool has not done yet, in
    /// the order handed over (inflight.rs).
    inflight: Vec<inflight::Inflight>,
    /// A landed write's error, until its `File`'s next write or flush.
    errors: BTreeMap<(NodeId, sim_fs::Fd), std::io::Error>,
    /// Whether the pool has done a write when another handle looks.
    coin: super::core::seed::Stream,
}

impl Disks {
    pub(crate) fn disk(&mut self, node: NodeId, now: SystemTime) -> &mut Disk {
        self.disks.entry(node).or_insert_with(|| Disk {
            fs: sim_fs::Fs::new(now),
            latency: Duration::ZERO,
        })
    }

    pub(crate) fn latency(&self, node: NodeId) -> Duration {
        self.disks
            .get(&node)
            .map(|d| d.latency)
            .unwrap_or(Duration::ZERO)
    }

    /// The node's process died: open handles close, the page cache stays.
    fn on_kill(&mut self, node: NodeId) {
        if let Some(d) = self.disks.get_mut(&node) {
            d.fs.kill();
        }
    }

    /// The node's machine died: only durable state survives (plus, when the
    /// fault plan says so, a torn prefix of unsynced writes drawn from
    /// `rng_seed`). Returns a digest of what survived, for the fingerprint
    /// (0 when the node never used its disk).
    fn on_crash(&mut self, node: NodeId, name: &str, rng_seed: u64) -> u64 {
        let Some(d) = self.disks.get_mut(&node) else {
            return 0;
        };
        let lost = journal::on().then(|| d.fs.at_risk());
        let report = d.fs.crash(rng_seed);
        if let Some(lost) = lost {
            self.held.push(journal::Held::Crash {
                node: name.to_string(),
                lost,
                report,
            });
        }
        report.digest
    }
}

impl Driver for Disks {
    fn create(core: &Core) -> Disks {
        Disks {
            disks: BTreeMap::new(),
            held: Vec::new(),
            inflight: Vec::new(),
            errors: BTreeMap::new(),
            coin: super::core::seed::stream(core.seed(), "fs.inflight"),
        }
    }

    /// Before the node's tasks go: the writes its `File`s handed to the
    /// blocking pool land (inflight.rs).
    fn node_dying(&mut self, core: &mut Core, node: NodeId, _: Death, _: &mut Vec<Waker>) {
        inflight::land_all(self, core, node);
    }

    /// After the node's tasks are gone: a kill keeps the page cache, a
    /// crash keeps only what was durable (what survived goes into the
    /// fingerprint).
    fn node_died(&mut self, core: &mut Core, node: NodeId, death: Death, _: &mut Vec<Waker>) {
        match death {
            Death::Kill => self.on_kill(node),
            Death::Crash => {
                let incarnation = core.node(node).incarnation;
                let seed = super::core::seed::decide(
                    core.seed(),
                    &format!("fs.crash.{}.{incarnation}", node.0),
                );
                let survived = self.on_crash(node, &core.node(node).name, seed);
                core.decide(Kind::Fs, survived);
            }
        }
    }
}

/// The node's wall clock (what its `SystemTime::now()` reads).
pub(crate) fn wall_now(exec: &Exec, core: &Core, node: NodeId) -> SystemTime {
    let n = core.node(node);
    let local = super::core::hooks::local_elapsed_ns(core.now(), n.drift_ppm) as i128
        + i128::from(exec.wall_base_ns)
        + i128::from(n.wall_offset_ns);
    SystemTime::UNIX_EPOCH + Duration::from_nanos(local.max(0) as u64)
}

/// A record of the fs in the fingerprint: `tag` in the top byte, the node
/// next, then the value.
pub(crate) fn record(core: &mut Core, tag: u8, node: NodeId, value: u64) {
    let v =
        u64::from(tag) << 56 | u64::from(node.as_u32() & 0xff) << 48 | (value & ((1 << 48) - 1));
    core.decide(Kind::Fs, v);
}

/// Runs `f` on `node`'s disk (the current node's when `None`) with the
/// node's wall-clock time, and records the faults that fired. No user code
/// runs inside, so holding the core borrow is fine.
pub(crate) fn with_disk<R>(
    node: Option<NodeId>,
    f: impl FnOnce(&mut sim_fs::Fs, SystemTime) -> R,
) -> R {
    let exec = expect_current();
    with_disk_of(&exec, node, f)
}

pub(crate) fn with_disk_of<R>(
    exec: &Exec,
    node: Option<NodeId>,
    f: impl FnOnce(&mut sim_fs::Fs, SystemTime) -> R,
) -> R {
    let node = node.unwrap_or_else(|| exec.current_node());
    let out = apply(exec, &mut exec.core_mut(), node, f);
    journal::flush(exec);
    out
}

/// Runs `f` on `node`'s disk with the node's wall-clock time, checks the
/// model and records the faults that fired: the one path every disk
/// operation takes, `tokio::fs`'s and the libc interposers' (`filefd`).
/// When the trace wants the disk's events, the operations a crash can undo
/// are held for [`journal::flush`], which the caller runs once it has let
/// go of `core`.
pub(crate) fn apply<R>(
    exec: &Exec,
    core: &mut Core,
    node: NodeId,
    f: impl FnOnce(&mut sim_fs::Fs, SystemTime) -> R,
) -> R {
    let now = wall_now(exec, core, node);
    inflight::land_others(core, node, now);
    apply_only(exec, core, node, f)
}

/// [`apply`] without landing other handles' writes in flight first.
pub(crate) fn apply_only<R>(
    exec: &Exec,
    core: &mut Core,
    node: NodeId,
    f: impl FnOnce(&mut sim_fs::Fs, SystemTime) -> R,
) -> R {
    let now = wall_now(exec, core, node);
    let traced = journal::on();
    let disk = core.driver::<Disks>().disk(node, now);
    disk.fs.set_journal(traced);
    let out = f(&mut disk.fs, now);
    // The model's own oracle after every operation, while it is cheap.
    if cfg!(debug_assertions)
        && disk.fs.inode_count() <= CHECK_EVERY_OP_MAX_INODES
        && disk.fs.used_bytes() <= CHECK_EVERY_OP_MAX_BYTES
    {
        disk.fs.check();
    }
    let fired = disk.fs.take_fired();
    let ops = if traced {
        disk.fs.take_journal()
    } else {
        Vec::new()
    };
    for x in fired {
        let code = x.code();
        record(core, 0x10 | (code >> 56) as u8, node, code);
    }
    if !ops.is_empty() {
        let name = core.node(node).name.clone();
        let held = ops.into_iter().map(|op| journal::Held::Op {
            node: name.clone(),
            op,
        });
        core.driver::<Disks>().held.extend(held);
    }
    out
}

/// What each operation waits before it runs: a turn of the scheduler, or
/// the node's disk latency.
pub(crate) struct Gate {
    state: GateState,
}

enum GateState {
    Yield { yielded: bool },
    Sleep(Pin<Box<super::time::Sleep>>),
}

impl Gate {
    pub(crate) fn new(node: NodeId) -> Gate {
        let exec = expect_current();
        let latency = exec.core_mut().driver::<Disks>().latency(node);
        // Tokio's fs needs no timer driver; without one, latency is only a
        // yield.
        let state = if latency.is_zero() || !exec.compat.timers_enabled() {
            GateState::Yield { yielded: false }
        } else {
            GateState::Sleep(Box::pin(super::time::sleep(latency)))
        };
        Gate { state }
    }
}

impl Future for Gate {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.state {
            GateState::Yield { yielded } => {
                if *yielded {
                    return Poll::Ready(());
                }
                // Back in the run queue at once: the seeded schedule decides
                // who runs before the operation does.
                *yielded = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            GateState::Sleep(s) => s.as_mut().poll(cx),
        }
    }
}

/// Waits for the gate of the current node, then runs `f` on its disk.
pub(crate) async fn op<R>(
    f: impl FnOnce(&mut sim_fs::Fs, SystemTime) -> std::io::Result<R>,
) -> std::io::Result<R> {
    check_running()?;
    let node = expect_current().current_node();
    Gate::new(node).await;
    with_disk(Some(node), f)
}

/// Tokio's error for a file operation once its runtime has shut down: each
/// runs on the blocking pool, which is gone, so the operation never starts.
pub(crate) fn check_running() -> std::io::Result<()> {
    if expect_current().compat.shut_down() {
        return Err(std::io::Error::other("background task failed"));
    }
    Ok(())
}

/// Waits for the gate of the current node, then runs `f`: std calls that
/// the interposers serve from the same disk, through [`apply`] (what only
/// std can make: its `Metadata`, `FileType`). `call` names the `tokio::fs`
/// call, for the panic if std would not reach the simulated disk.
pub(crate) async fn std_op<R>(
    call: &str,
    f: impl FnOnce() -> std::io::Result<R>,
) -> std::io::Result<R> {
    check_running()?;
    let node = expect_current().current_node();
    Gate::new(node).await;
    metadata::assert_std_reaches_disk(call);
    f()
}
