//! `sim_runtime::sim::fs`: disk faults, one call each.
//!
//! Every call takes effect at once on the node's disk and is recorded in
//! the run's fingerprint, as is every fault that fires. Each has a
//! scripted form through [`sim::at`](crate::simulation::control::at):
//!
//! ```
//! use sim_runtime::{fs, sim};
//! use std::time::Duration;
//!
//! let rt = sim_runtime::runtime::Builder::new_current_thread()
//!     .enable_all()
//!     .build()
//!     .unwrap();
//! rt.block_on(async {
//!     let me = sim::current_node();
//!     // The disk fills up five seconds into the run.
//!     sim::at(Duration::from_secs(5), move || sim::fs::set_capacity(me, Some(0)));
//!     fs::write("/tmp/early", b"fits").await.unwrap();
//!     sim_runtime::time::sleep(Duration::from_secs(6)).await;
//!     let full = fs::write("/tmp/late", b"does not").await.unwrap_err();
//!     assert_eq!(full.raw_os_error(), Some(28)); // ENOSPC
//! });
//! ```
//!
//! The fault plan is the plain struct [`Faults`]; its default is no faults.
//! What each fault does is stated in `sim_fs`'s crate docs (a failed sync,
//! for one, drops the file's pending writes from the writeback, as Linux
//! does).

use super::{record, with_disk, with_disk_of};
use crate::simulation::control::AsNode;
use crate::simulation::core::executor::expect_current;
use crate::simulation::core::node::NodeId;
use crate::simulation::observe::{announce, Fault};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use sim_fs::{Eio, IoOp};

/// A node's disk fault plan. The default is no faults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Persistent `EIO` rules (by operation, for a path prefix or the whole
    /// disk).
    pub eio: Vec<Eio>,
    /// Bytes of file data the disk holds before writes fail with `ENOSPC`
    /// (`None`: unlimited).
    pub capacity_bytes: Option<u64>,
    /// The next this-many syncs fail with `EIO`.
    pub failing_syncs: u32,
    /// A crash keeps a seeded prefix of each file's unsynced writes.
    pub torn_writes: bool,
    /// Virtual time every operation takes (zero: each only yields to the
    /// scheduler).
    pub latency: Duration,
}

/// Tags of fs records in the fingerprint.
const TAG_PLAN: u8 = 0x01;

fn plan_digest(f: &Faults) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut put = |x: u64| {
        h ^= x;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for r in &f.eio {
        put(r.op as u64);
        match &r.path {
            Some(p) => p
                .as_os_str()
                .as_encoded_bytes()
                .iter()
                .for_each(|&b| put(u64::from(b))),
            None => put(u64::MAX),
        }
    }
    put(f.capacity_bytes.unwrap_or(u64::MAX));
    put(u64::from(f.failing_syncs));
    put(u64::from(f.torn_writes));
    put(f.latency.as_nanos() as u64);
    h
}

/// The node's fault plan.
#[track_caller]
pub fn faults(node: impl AsNode) -> Faults {
    let node = node.node_id();
    let exec = expect_current();
    check_node(node);
    let latency = exec.core_mut().driver::<super::Disks>().latency(node);
    with_disk_of(&exec, Some(node), |fs, _| {
        let f = fs.faults();
        Faults {
            eio: f.eio.clone(),
            capacity_bytes: f.capacity_bytes,
            failing_syncs: f.failing_syncs,
            torn_writes: f.torn_writes,
            latency,
        }
    })
}

/// Replaces the node's fault plan.
#[track_caller]
pub fn set_faults(node: impl AsNode, faults: Faults) {
    let node = node.node_id();
    check_node(node);
    let injects = faults != Faults::default();
    let what = if injects {
        Fault::DiskFaultPlan
    } else {
        Fault::DiskClearFaults
    };
    announce_disk(what, node, vec![], injects);
    set_plan(node, faults);
}

#[track_caller]
fn set_plan(node: NodeId, faults: Faults) {
    for r in &faults.eio {
        if let Some(p) = &r.path {
            assert!(
                p.is_absolute(),
                "sim::fs: an EIO rule's path must be absolute (relative paths resolve from `/`), \
                 got {p:?}"
            );
        }
    }
    let exec = expect_current();
    check_node(node);
    let digest = plan_digest(&faults);
    let now = {
        let core = exec.core();
        super::wall_now(&exec, &core, node)
    };
    let mut core = exec.core_mut();
    let disk = core.driver::<super::Disks>().disk(node, now);
    disk.latency = faults.latency;
    disk.fs.set_faults(sim_fs::Faults {
        eio: faults.eio,
        capacity_bytes: faults.capacity_bytes,
        failing_syncs: faults.failing_syncs,
        torn_writes: faults.torn_writes,
    });
    record(&mut core, TAG_PLAN, node, digest);
}

#[track_caller]
fn check_node(node: NodeId) {
    let exec = expect_current();
    let n = exec.core().nodes().len();
    assert!(
        node.index() < n,
        "sim: {node} does not exist in this simulation"
    );
}

/// Announces a disk call about `node` (observe.rs).
#[track_caller]
fn announce_disk(what: Fault, node: NodeId, mut args: Vec<(&'static str, String)>, injects: bool) {
    args.insert(0, ("node", super::super::control::node_name(node)));
    announce(what, &[node], &args, injects);
}

/// Changes one part of the node's plan, after announcing the call.
#[track_caller]
fn update(
    node: impl AsNode,
    what: Fault,
    args: Vec<(&'static str, String)>,
    injects: bool,
    f: impl FnOnce(&mut Faults),
) {
    let node = node.node_id();
    check_node(node);
    announce_disk(what, node, args, injects);
    let mut plan = faults(node);
    f(&mut plan);
    set_plan(node, plan);
}

/// Operations of kind `op` on files at or below `path` (every file of the
/// disk when `None`) fail with `EIO` until cleared.
#[track_caller]
pub fn fail_io(node: impl AsNode, op: IoOp, path: Option<&Path>) {
    let path = path.map(Path::to_path_buf);
    let args = vec![("op", format!("{op:?}")), ("path", format!("{path:?}"))];
    update(node, Fault::DiskFailIo, args, true, |f| {
        f.eio.push(Eio { op, path })
    });
}

/// Removes the `EIO` rules for `op` (for every path).
#[track_caller]
pub fn heal_io(node: impl AsNode, op: IoOp) {
    let args = vec![("op", format!("{op:?}"))];
    update(node, Fault::DiskHealIo, args, false, |f| {
        f.eio.retain(|r| r.op != op)
    });
}

/// Sets how many bytes of file data the disk holds (`None`: unlimited).
/// Writes past it are short, then fail with `ENOSPC`.
#[track_caller]
pub fn set_capacity(node: impl AsNode, capacity_bytes: Option<u64>) {
    let args = vec![("bytes", format!("{capacity_bytes:?}"))];
    update(
        node,
        Fault::DiskCapacity,
        args,
        capacity_bytes.is_some(),
        |f| f.capacity_bytes = capacity_bytes,
    );
}

/// Sets the virtual time each disk operation of the node takes.
#[track_caller]
pub fn set_latency(node: impl AsNode, latency: Duration) {
    let args = vec![("latency", format!("{latency:?}"))];
    update(node, Fault::DiskLatency, args, false, |f| {
        f.latency = latency
    });
}

/// The node's next `count` syncs fail with `EIO` (and lose their pending
/// writes from the writeback, as on Linux).
#[track_caller]
pub fn fail_syncs(node: impl AsNode, count: u32) {
    let args = vec![("count", count.to_string())];
    update(node, Fault::DiskFailSyncs, args, count > 0, |f| {
        f.failing_syncs = count
    });
}

/// Whether a crash of the node keeps a seeded prefix of unsynced writes.
#[track_caller]
pub fn set_torn_writes(node: impl AsNode, on: bool) {
    let args = vec![("on", on.to_string())];
    update(node, Fault::DiskTornWrites, args, on, |f| {
        f.torn_writes = on
    });
}

/// Removes every fault of the node's disk.
#[track_caller]
pub fn clear_faults(node: impl AsNode) {
    set_faults(node, Faults::default());
}

/// Bytes of file data on the node's disk (what the capacity limits).
#[track_caller]
pub fn used_bytes(node: impl AsNode) -> u64 {
    let node = node.node_id();
    check_node(node);
    with_disk(Some(node), |fs, _| fs.used_bytes())
}

/// Checks every invariant of the node's disk model (panics with the broken
/// one). Cheap enough for tests, not for every step.
#[track_caller]
pub fn check(node: impl AsNode) {
    let node = node.node_id();
    check_node(node);
    with_disk(Some(node), |fs, _| fs.check());
}

/// The absolute path a fault rule would match for `path` (relative paths
/// resolve from `/`, the working directory of every simulated process).
pub fn absolute(path: &Path) -> PathBuf {
    sim_fs::absolute(path)
}

/// Runs `f` with `std::fs` and every libc file call of this thread reaching
/// the real disk, even on a simulated node: for reading a fixture the test
/// ships. Everything else a node does with files goes to its simulated
/// disk. What `f` reads must be the same on every run (a file in the
/// repository, not one the test or the clock changes), or the run stops
/// being a function of its seed.
///
/// ```
/// use sim_runtime::sim;
///
/// let rt = sim_runtime::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
///     // The node's disk has no such file...
///     assert!(std::fs::read(manifest).is_err());
///     // ...the real one has.
///     let text = sim::fs::on_real_disk(|| std::fs::read_to_string(manifest)).unwrap();
///     assert!(text.contains("sim-runtime"));
/// });
/// ```
pub fn on_real_disk<R>(f: impl FnOnce() -> R) -> R {
    crate::simulation::core::hooks::on_real_disk(f)
}
