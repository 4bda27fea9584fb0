//! Sometimes-assertions and coverage: every `sometimes!`, `always!`,
//! `reachable!` and `unreachable!` site is registered at link time (the
//! `linkme` crate), so a sweep can report the sites that never held or were
//! never reached — including those no seed came near.

use std::cell::RefCell;
use std::collections::BTreeMap;

/// What a site asserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SiteKind {
    Sometimes,
    Always,
    Reachable,
    Unreachable,
}

/// One site, as registered at link time.
#[derive(Debug)]
pub struct Site {
    pub kind: SiteKind,
    pub name: &'static str,
    pub file: &'static str,
    pub line: u32,
}

/// Every site linked into this binary.
#[linkme::distributed_slice]
pub static SITES: [Site];

/// A site's identity (name, file, line).
pub(crate) type Key = (&'static str, &'static str, u32);

/// How a site fared: reached how often, and how often its condition held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub reached: u64,
    pub held: u64,
}

thread_local! {
    /// This seed's tallies.
    static SEEN: RefCell<BTreeMap<Key, Tally>> = const { RefCell::new(BTreeMap::new()) };
}

fn key(site: &Site) -> Key {
    (site.name, site.file, site.line)
}

/// Records a site's evaluation; `always!`/`unreachable!` fail the seed.
#[track_caller]
pub fn hit(site: &'static Site, cond: bool) {
    SEEN.with(|s| {
        let mut s = s.borrow_mut();
        let t = s.entry(key(site)).or_default();
        t.reached += 1;
        if cond {
            t.held += 1;
        }
    });
    match site.kind {
        SiteKind::Always if !cond => panic!(
            "always!({:?}) did not hold at {}:{}",
            site.name, site.file, site.line
        ),
        SiteKind::Unreachable => panic!(
            "unreachable!({:?}) was reached at {}:{}",
            site.name, site.file, site.line
        ),
        _ => {}
    }
}

/// Takes this thread's tallies (the runner, once a seed is over).
pub(crate) fn take() -> BTreeMap<Key, Tally> {
    SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

/// The sites a sweep's totals leave unsatisfied: `sometimes!` that never
/// held, `reachable!` never reached. Sorted by file and line.
pub(crate) fn missing(totals: &BTreeMap<Key, Tally>) -> Vec<String> {
    let mut out: Vec<&Site> = SITES
        .iter()
        .filter(|site| {
            let t = totals.get(&key(site)).copied().unwrap_or_default();
            match site.kind {
                SiteKind::Sometimes => t.held == 0,
                SiteKind::Reachable => t.reached == 0,
                _ => false,
            }
        })
        .collect();
    out.sort_by_key(|s| (s.file, s.line));
    out.dedup_by_key(|s| (s.file, s.line, s.name));
    out.iter()
        .map(|s| {
            let what = match s.kind {
                SiteKind::Sometimes => "never held",
                _ => "never reached",
            };
            format!("{:?} at {}:{} ({what})", s.name, s.file, s.line)
        })
        .collect()
}
