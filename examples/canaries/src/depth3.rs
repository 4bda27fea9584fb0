//! A routing table read without locks and replaced read-copy-update
//! style: readers announce themselves on a counter (odd while reading),
//! load the current table and read routes from it over a few steps of
//! work; the updater publishes a rebuilt table, waits a grace period (every
//! reader that was reading has moved on), and hands the old table's memory
//! back to a pool. The buggy updater snapshots the readers' counters
//! *before* it publishes: a reader that starts between the snapshot and
//! the publication loads the old table, yet counts as moved on, and reads a
//! route from a table already returned to the pool.
//!
//! Three orders must line up (snapshot → reader starts → publication, then
//! the publication, [`REBUILD`] steps and the free before the reader's next
//! two steps): a bug of depth 3. The work is cooperative (`yield_now`
//! between steps), as on a multi-thread runtime where the reader's worker
//! may be busy while the updater runs: only seeds with yields ahead can
//! run the updater that far ahead. Uniform random finds it; PCT cannot,
//! since the task its first change point demotes runs only when no other
//! can, so "updater, reader, updater" with both runnable is beyond it.
//! The updater marks its progress (`sim::state!`): how many rebuild steps
//! it has run beside a read that began mid-update, before the
//! publication. An exploration climbs those steps one branch at a time,
//! where a seed must draw the whole order at once.

use super::Variant;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use tokio::task::yield_now;

/// Routes in a table.
pub const ROUTES: usize = 3;
/// Steps of work the updater does between publishing and the grace period.
pub const REBUILD: usize = 8;

pub struct Table {
    routes: Vec<u64>,
    /// Given back to the pool: its memory may hold anything now.
    freed: AtomicBool,
}

impl Table {
    fn new(version: u64) -> Arc<Table> {
        Arc::new(Table {
            routes: (0..ROUTES as u64).map(|r| version * 100 + r).collect(),
            freed: AtomicBool::new(false),
        })
    }

    fn route(&self, i: usize) -> u64 {
        assert!(
            !self.freed.load(SeqCst),
            "a reader read route {i} from a table already returned to the pool"
        );
        self.routes[i]
    }
}

pub struct Router {
    current: Mutex<Arc<Table>>,
    /// One counter per reader: odd while it reads.
    readers: Vec<AtomicU64>,
}

impl Router {
    pub fn new(readers: usize) -> Router {
        Router {
            current: Mutex::new(Table::new(1)),
            readers: (0..readers).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Reader `me` looks up every route of the current table, one step of
    /// work each.
    pub async fn lookup(&self, me: usize) -> u64 {
        self.readers[me].fetch_add(1, SeqCst);
        let table = self.current.lock().unwrap().clone();
        let mut sum = 0;
        for i in 0..ROUTES {
            sum += table.route(i);
            yield_now().await;
        }
        self.readers[me].fetch_add(1, SeqCst);
        sum
    }

    /// Publishes table `version` and frees the one it replaces.
    pub async fn update(&self, version: u64, variant: Variant) {
        let snapshot = |router: &Router| -> Vec<u64> {
            router.readers.iter().map(|c| c.load(SeqCst)).collect()
        };
        // BUG (buggy): the snapshot before the publication misses a reader
        // that starts in between.
        let at_start = snapshot(self);
        let mut seen = (variant == Variant::Buggy).then(|| at_start.clone());
        yield_now().await;
        let new = Table::new(version);
        let old = std::mem::replace(&mut *self.current.lock().unwrap(), new);
        let at_publication = snapshot(self);
        for step in 1..=REBUILD {
            yield_now().await; // rebuilding the indexes around the new table
                               // A read that began while the update was under way, before the
                               // publication, and still goes on holds the old table: how long
                               // the update has run beside it is how close the grace period
                               // comes to cutting it short.
            let beside = (0..self.readers.len()).any(|r| {
                let (start, then) = (at_start[r], at_publication[r]);
                start % 2 == 0 && then == start + 1 && self.readers[r].load(SeqCst) == then
            });
            if beside {
                sim::state!("rebuild steps beside a read begun mid-update", step);
            }
        }
        let seen = seen.get_or_insert_with(|| snapshot(self));
        // The grace period: every reader that was reading has finished.
        for (reader, &before) in self.readers.iter().zip(seen.iter()) {
            while before % 2 == 1 && reader.load(SeqCst) == before {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
        old.freed.store(true, SeqCst);
    }
}

/// Lookups by one reader while the updater replaces the table twice.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    let router = Arc::new(Router::new(1));
    let r = router.clone();
    let reader = tokio::spawn(async move {
        for _ in 0..3 {
            r.lookup(0).await;
            yield_now().await;
        }
    });
    let r = router.clone();
    let updater = tokio::spawn(async move {
        for version in 2..=3 {
            r.update(version, variant).await;
        }
    });
    reader.await.expect("the reader");
    updater.await.expect("the updater");
}
