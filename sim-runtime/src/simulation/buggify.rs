//! Fault points (FoundationDB's BUGGIFY): `sim::buggify(site, num, den)`.
//!
//! Per run, buggify is on or off (on for three seeds in four when the
//! harness runs the seed; `SIM_BUGGIFY=on|off` forces it). Per site, keyed
//! by its name, activation is decided once per run with p = 1/4, from
//! `H(seed, "buggify.site.<name>")`, so the order in which sites are first
//! reached changes nothing. Each evaluation of an active site fires with
//! p = num/den, drawn from the run's own buggify stream — never from the
//! schedule's — so adding a site never shifts the schedule. Activations and
//! firings are folded into the fingerprint.

use super::core::executor::{Core, Driver};
use super::core::seed;
use rand_core::RngCore;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Site {
    pub active: bool,
    pub reached: u64,
    pub fired: u64,
}

pub(crate) struct Buggify {
    pub on: bool,
    root: u64,
    fire: seed::Stream,
    pub sites: BTreeMap<&'static str, Site>,
}

impl Buggify {
    pub(crate) fn new(run_seed: u64, on: bool) -> Buggify {
        Buggify {
            on,
            root: run_seed,
            fire: seed::stream(run_seed, "buggify.fire"),
            sites: BTreeMap::new(),
        }
    }

    /// Evaluates `site`; returns whether it fires, and the fingerprint
    /// values of what was decided (activation on first reach, firing).
    pub(crate) fn eval(&mut self, site: &'static str, num: u32, den: u32) -> (bool, Option<u64>) {
        if !self.on {
            return (false, None);
        }
        let root = self.root;
        let mut first = None;
        let entry = self.sites.entry(site).or_insert_with(|| {
            let h = seed::decide(root, &format!("buggify.site.{site}"));
            let active = h % 4 == 0;
            first = Some(h ^ u64::from(active));
            Site {
                active,
                ..Site::default()
            }
        });
        entry.reached += 1;
        if !entry.active || den == 0 {
            return (false, first);
        }
        let fires = self.fire.next_u64() % u64::from(den) < u64::from(num);
        if fires {
            entry.fired += 1;
        }
        (
            fires,
            Some(first.unwrap_or(0) ^ u64::from(fires) << 1 ^ entry.reached << 2),
        )
    }
}

/// Fault points are a driver: made on the first fault point a run reaches.
impl Driver for Buggify {
    fn create(core: &Core) -> Buggify {
        Buggify::new(core.seed(), core.config().buggify)
    }
}

impl Core {
    /// Evaluates a fault point and folds what it decided into the
    /// fingerprint. `Some(draw)` when it fires (`draw`: a value fixed by the
    /// seed, for sizing the fault); `None` otherwise, and always when fault
    /// points are off for the run.
    #[inline]
    pub(crate) fn fault_point(&mut self, site: &'static str, num: u32, den: u32) -> Option<u64> {
        // Off for most runs: the check is inlined into the hot paths (every
        // timer registration), the evaluation is not.
        if !self.config().buggify {
            return None;
        }
        self.fault_point_on(site, num, den)
    }

    #[inline(never)]
    fn fault_point_on(&mut self, site: &'static str, num: u32, den: u32) -> Option<u64> {
        let (fires, decided) = self.driver::<Buggify>().eval(site, num, den);
        if let Some(v) = decided {
            self.decide(super::core::trace::Kind::Buggify, v);
        }
        fires.then(|| decided.unwrap_or(0))
    }
}
