//! The run's fingerprint: a hash of every decision the simulation makes.
//!
//! Each decision is `(kind, value)` at a step and a virtual time. The
//! fingerprint folds them in order, so two runs with equal fingerprints made
//! the same decisions in the same order. In determinism-check mode the first
//! run also keeps the whole list, and the second run compares against it
//! as it goes, so a divergence is named at the first decision that differs.

use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A task was chosen and polled (value: task id; 0 is the main future).
    Poll = 1,
    /// The clock jumped (value: new virtual time in ns).
    Advance = 2,
    /// A timer fired (value: its registration number).
    Fire = 3,
    /// A task was spawned (value: task id).
    Spawn = 4,
    /// A node lifecycle event (value: node id << 8 | event).
    Node = 5,
    /// A wake came from outside the executor's thread (value: task id).
    RemoteWake = 6,
    /// A `select!` fairness draw (value: the drawn start branch).
    Select = 7,
    /// A network decision or fault (value: model-defined).
    #[allow(dead_code)] // until sim-net is bound
    Net = 8,
    /// A disk decision or fault (value: model-defined).
    Fs = 9,
    /// A fault point's activation or firing.
    Buggify = 10,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub step: u64,
    pub now_ns: u64,
    pub kind: Kind,
    pub value: u64,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "step {} at {} : {:?} {}",
            self.step,
            super::report::fmt_ns(self.now_ns),
            self.kind,
            self.value
        )
    }
}

/// Where a replay first differed from the recording.
#[derive(Clone, Debug)]
pub(crate) struct Divergence {
    pub index: usize,
    pub expected: Option<Decision>,
    pub actual: Option<Decision>,
}

#[derive(Default)]
pub(crate) struct Trace {
    fingerprint: u64,
    count: u64,
    record: Option<Vec<Decision>>,
    compare: Option<Arc<Vec<Decision>>>,
    divergence: Option<Divergence>,
}

impl Trace {
    pub(crate) fn new(record: bool, compare: Option<Arc<Vec<Decision>>>) -> Trace {
        Trace {
            fingerprint: 0x6a09_e667_f3bc_c908,
            count: 0,
            record: record.then(Vec::new),
            compare,
            divergence: None,
        }
    }

    #[inline]
    pub(crate) fn decide(&mut self, step: u64, now_ns: u64, kind: Kind, value: u64) {
        let x = (kind as u64) << 56 ^ value;
        self.fingerprint =
            (self.fingerprint.rotate_left(23) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let index = self.count as usize;
        self.count += 1;
        if self.record.is_none() && self.compare.is_none() {
            return;
        }
        let d = Decision {
            step,
            now_ns,
            kind,
            value,
        };
        if let Some(log) = &mut self.record {
            log.push(d);
        }
        if self.divergence.is_none() {
            if let Some(expected) = &self.compare {
                let e = expected.get(index).copied();
                if e != Some(d) {
                    self.divergence = Some(Divergence {
                        index,
                        expected: e,
                        actual: Some(d),
                    });
                }
            }
        }
    }

    /// At the end of a compared run: a recording longer than the replay is a
    /// divergence too.
    pub(crate) fn finish(&mut self) {
        if self.divergence.is_none() {
            if let Some(expected) = &self.compare {
                let index = self.count as usize;
                if expected.len() > index {
                    self.divergence = Some(Divergence {
                        index,
                        expected: Some(expected[index]),
                        actual: None,
                    });
                }
            }
        }
    }

    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub(crate) fn decisions(&self) -> u64 {
        self.count
    }

    pub(crate) fn take_record(&mut self) -> Option<Vec<Decision>> {
        self.record.take()
    }

    pub(crate) fn divergence(&self) -> Option<&Divergence> {
        self.divergence.as_ref()
    }
}
