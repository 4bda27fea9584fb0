//! The disk in the trace: every operation a crash can undo (create, mkdir,
//! link, symlink, a Unix socket's bind, rename, unlink, rmdir, and each
//! sync of a file or a directory) as
//! a `sim::fs` event at DEBUG, and at a crash what it took away (names
//! never made durable, removed names that come back, unsynced bytes) at
//! INFO, each with the node and the paths.
//!
//! Only when a subscriber wants them: otherwise the disk keeps no journal
//! and nothing is built (one `tracing::enabled!` check per operation). The
//! events only read the model, so a traced run makes the same decisions
//! and has the same fingerprint as an untraced one.
//!
//! A subscriber stamps each event with the virtual time and the node, which
//! it reads from the simulation's state; the disk is used while that state
//! is borrowed, so the events are held on the disks' driver and emitted by
//! [`flush`] once it is not (after each operation, after a crash).

use super::Disks;
use crate::simulation::core::executor::Exec;
use sim_fs::{AtRisk, CrashReport, Op};

/// Whether a subscriber wants the disk's events (checked before each
/// operation; a sweep's untraced seeds answer no at once).
pub(crate) fn on() -> bool {
    tracing::enabled!(target: "sim::fs", tracing::Level::DEBUG)
}

/// An event waiting for [`flush`].
pub(crate) enum Held {
    Op {
        node: String,
        op: Op,
    },
    Crash {
        node: String,
        lost: Vec<AtRisk>,
        report: CrashReport,
    },
    /// Another look at the disk found a `tokio::fs::File` write still in
    /// flight (inflight.rs): it does not see it.
    Behind {
        node: String,
        path: String,
        bytes: usize,
    },
}

/// Emits the events held since the last flush. Call where the
/// simulation's state is not borrowed.
pub(crate) fn flush(exec: &Exec) {
    if !on() {
        return;
    }
    let held = match exec.try_core_mut() {
        Some(mut core) => match core.driver_if_used::<Disks>() {
            Some(disks) => std::mem::take(&mut disks.held),
            None => return,
        },
        None => return,
    };
    for h in held {
        emit(h);
    }
}

fn emit(h: Held) {
    match h {
        Held::Op { node, op } => match &op {
            Op::Rename { from, to } => tracing::debug!(
                target: "sim::fs",
                node = %node,
                from = %from.display(),
                to = %to.display(),
                "rename"
            ),
            Op::Link { original, link } => tracing::debug!(
                target: "sim::fs",
                node = %node,
                path = %link.display(),
                original = %original.display(),
                "link"
            ),
            Op::Sync {
                path,
                dir,
                ok: true,
                ..
            } => tracing::debug!(
                target: "sim::fs",
                node = %node,
                path = %path.display(),
                directory = dir,
                "{}",
                op.name()
            ),
            Op::Sync {
                path, ok: false, ..
            } => tracing::debug!(
                target: "sim::fs",
                node = %node,
                path = %path.display(),
                "{} failed: nothing became durable",
                op.name()
            ),
            Op::Create(path)
            | Op::Mkdir(path)
            | Op::Symlink(path)
            | Op::Bind(path)
            | Op::Unlink(path)
            | Op::Rmdir(path) => tracing::debug!(
                target: "sim::fs",
                node = %node,
                path = %path.display(),
                "{}",
                op.name()
            ),
        },
        Held::Behind { node, path, bytes } => tracing::info!(
            target: "sim::fs",
            node = %node,
            path = %path,
            bytes,
            "unseen: a tokio::fs::File write is still in Tokio's blocking pool, and this look \
             at the disk does not see it (flush the File before another handle reads it)"
        ),
        Held::Crash { node, lost, report } => {
            let what = if lost.is_empty() {
                "nothing: every name and byte was durable".to_string()
            } else {
                lost.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            tracing::info!(
                target: "sim::fs",
                node = %node,
                inodes_lost = report.lost_inodes,
                torn_bytes_kept = report.torn_bytes,
                lost = %what,
                "crash"
            );
        }
    }
}
