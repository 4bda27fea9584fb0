//! What a crash keeps: the durable image, plus (with torn writes) a seeded
//! prefix of each file's unsynced writes.

use crate::inode::{Body, Ino, Pending};
use crate::Fs;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What a crash did to the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Inodes that survived (reachable from the root by durable entries).
    pub inodes: u64,
    /// Inodes lost: never durably named, or named only by entries that
    /// were not durable.
    pub lost_inodes: u64,
    /// Bytes of unsynced writes a torn crash kept.
    pub torn_bytes: u64,
    /// A digest of the surviving state (names, kinds, lengths, bytes), for
    /// the run's fingerprint.
    pub digest: u64,
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A draw in `0..n` from `x`.
fn below(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

fn fold(h: u64, x: u64) -> u64 {
    (h.rotate_left(23) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl Fs {
    /// The process died: every descriptor closes; the page cache survives.
    pub fn kill(&mut self) {
        self.close_all();
        self.check();
    }

    /// The machine died. Every descriptor is gone, and the disk becomes its
    /// durable image: directories hold their entries as of their last sync,
    /// files their bytes as of their last sync (metadata as of the last
    /// `sync_all`), and whatever no durable entry reaches is gone. With
    /// `torn_writes` on, each file also keeps a prefix of its unsynced
    /// writes, in the order they were made, the last one possibly cut
    /// short; the prefix is drawn from `seed` and the inode number, so it
    /// does not depend on the order of anything else.
    pub fn crash(&mut self, seed: u64) -> CrashReport {
        self.descs.clear();
        self.fds.clear();
        let before = self.inodes.len() as u64;
        // Walk the durable namespace from the root.
        let mut reached: BTreeSet<Ino> = BTreeSet::from([self.root]);
        let mut queue = VecDeque::from([self.root]);
        let mut entries: BTreeMap<Ino, BTreeMap<std::ffi::OsString, Ino>> = BTreeMap::new();
        while let Some(dir) = queue.pop_front() {
            let durable = self.dir(dir).durable.clone();
            let mut kept = BTreeMap::new();
            for (name, child) in durable {
                let c = self
                    .inodes
                    .get(&child)
                    .expect("sim-fs: a durable entry names a kept inode");
                if matches!(c.body, Body::Dir(_)) {
                    // A directory moved without syncing both parents can be
                    // durably named twice; the first name in walk order
                    // keeps it (a directory has one parent).
                    if !reached.insert(child) {
                        continue;
                    }
                    queue.push_back(child);
                } else {
                    reached.insert(child);
                }
                kept.insert(name, child);
            }
            entries.insert(dir, kept);
        }
        self.inodes.retain(|ino, _| reached.contains(ino));
        let mut links: BTreeMap<Ino, u32> = BTreeMap::from([(self.root, 1)]);
        for (&dir, kept) in &entries {
            for &child in kept.values() {
                *links.entry(child).or_default() += 1;
                if let Body::Dir(d) = &mut self.inode_mut(child).body {
                    d.parent = dir;
                }
            }
        }
        let torn = self.faults.torn_writes;
        let mut report = CrashReport {
            lost_inodes: before - reached.len() as u64,
            inodes: reached.len() as u64,
            ..CrashReport::default()
        };
        let mut used = 0;
        for (&ino, i) in self.inodes.iter_mut() {
            i.meta = i.durable_meta;
            i.open = 0;
            i.links = links.get(&ino).copied().unwrap_or(0);
            assert!(i.links > 0, "sim-fs: a surviving inode is named");
            match &mut i.body {
                Body::Dir(d) => {
                    d.entries = entries
                        .remove(&ino)
                        .expect("sim-fs: every kept directory was walked");
                    d.durable = d.entries.clone();
                }
                Body::File(f) => {
                    let mut data = std::mem::take(&mut f.durable);
                    if torn && !f.pending.is_empty() {
                        let x = mix(seed ^ mix(ino));
                        let n = f.pending.len() as u64;
                        let whole = below(x, n + 1) as usize;
                        for p in &f.pending[..whole] {
                            p.apply(&mut data);
                            if let Pending::Write { bytes, .. } = p {
                                report.torn_bytes += bytes.len() as u64;
                            }
                        }
                        if let Some(Pending::Write { offset, bytes }) = f.pending.get(whole) {
                            let cut = below(mix(x), bytes.len() as u64 + 1) as usize;
                            if cut > 0 {
                                Pending::Write {
                                    offset: *offset,
                                    bytes: bytes[..cut].to_vec(),
                                }
                                .apply(&mut data);
                            }
                            report.torn_bytes += cut as u64;
                        }
                    }
                    f.pending.clear();
                    f.lost_writeback = false;
                    f.durable = data.clone();
                    f.data = data;
                    used += f.data.len() as u64;
                }
                Body::Symlink(_) | Body::Socket => {}
            }
        }
        assert!(entries.is_empty());
        self.used_bytes = used;
        report.digest = self.digest();
        self.check();
        report
    }

    /// A digest of the namespace and every file's bytes.
    pub fn digest(&self) -> u64 {
        let mut h = 0x243f_6a88_85a3_08d3;
        for (&ino, i) in &self.inodes {
            h = fold(h, ino);
            h = fold(h, i.kind() as u64);
            match &i.body {
                Body::File(f) => {
                    h = fold(h, f.data.len() as u64);
                    for chunk in f.data.chunks(8) {
                        let mut w = [0u8; 8];
                        w[..chunk.len()].copy_from_slice(chunk);
                        h = fold(h, u64::from_le_bytes(w));
                    }
                }
                Body::Dir(d) => {
                    for (name, &c) in &d.entries {
                        h = fold(h, c);
                        h = fold(h, name.len() as u64);
                    }
                }
                Body::Symlink(t) => h = fold(h, t.as_os_str().len() as u64),
                Body::Socket => {}
            }
        }
        h
    }
}
