//! lsm-tree: fjall's single-tree LSM engine, in directory `<dir>/lsm`.
//!
//! lsm-tree has no journal: a write goes to the in-memory memtable, and
//! becomes durable only when the memtable is flushed to a table file
//! (which lsm-tree writes, fsyncs, and makes durable with a directory
//! fsync, then records in a new version file written the same way). So a
//! durable put is insert + rotate + flush; a volatile put is the insert
//! alone, which lives only in the process's memory. (fjall adds the
//! journal, and with it writes that reach the page cache without fsync:
//! [`crate::fjall_store`].)

use crate::{Durability, Store};
use lsm_tree::{AbstractTree, AnyTree, Config, SequenceNumberCounter};
use std::path::{Path, PathBuf};

/// The tree's directory of a store kept in `dir`.
pub fn folder(dir: &Path) -> PathBuf {
    dir.join("lsm")
}

/// An LSM tree with its sequence-number counter.
pub struct Lsm {
    tree: AnyTree,
    seqno: SequenceNumberCounter,
}

impl Store for Lsm {
    type Error = lsm_tree::Error;
    const NAME: &'static str = "lsm-tree";

    fn open(dir: &Path) -> Result<Lsm, lsm_tree::Error> {
        crate::durable_dir(dir)?;
        let seqno = SequenceNumberCounter::default();
        let tree = Config::new(folder(dir), seqno.clone(), seqno.clone()).open()?;
        // The tree's folder's name (lsm-tree fsyncs the folder itself).
        crate::sync_dir(dir)?;
        // Sequence numbers continue after what the tables hold.
        if let Some(highest) = tree.get_highest_seqno() {
            seqno.fetch_max(highest + 1);
        }
        Ok(Lsm { tree, seqno })
    }

    fn put(&self, key: &str, value: &str, durability: Durability) -> Result<(), lsm_tree::Error> {
        let s = self.seqno.next();
        self.tree.insert(key, value, s);
        if durability == Durability::Durable {
            let lock = self.tree.get_flush_lock();
            self.tree.rotate_memtable();
            self.tree.flush(&lock, 0)?;
        }
        Ok(())
    }

    fn get(&self, key: &str) -> Result<Option<String>, lsm_tree::Error> {
        Ok(self
            .tree
            .get(key, self.seqno.get())?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }
}
