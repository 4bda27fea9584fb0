//! A fake's rows with their history, so that a stale read can return an
//! older version; and the draws a fake makes.

use crate::fake_env::clock;
use std::collections::VecDeque;
use std::time::Duration;

/// Versions kept per row (older ones are forgotten).
pub(crate) const KEEP: usize = 64;

/// How old a stale read may be: at most `writes` writes behind the latest
/// version and, with an age bound, a version replaced at most that long ago
/// (virtual time under simulation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staleness {
    writes: usize,
    age: Option<Duration>,
}

impl Staleness {
    /// At most `n` writes behind.
    pub fn writes(n: usize) -> Staleness {
        Staleness {
            writes: n,
            age: None,
        }
    }

    /// At most `age` old: a version replaced at most `age` ago.
    pub fn within(age: Duration) -> Staleness {
        Staleness {
            writes: KEEP,
            age: Some(age),
        }
    }

    /// Both bounds: at most `self`'s writes behind and `age` old.
    pub fn and_within(self, age: Duration) -> Staleness {
        Staleness {
            age: Some(age),
            ..self
        }
    }
}

/// One row of a fake with its recent history (the latest 64
/// versions, each with when it was written). [`crate::fake::Faults::write`]
/// sets it, [`crate::fake::Faults::read`] reads it, stale or not.
#[derive(Clone, Debug)]
pub struct Versioned<T> {
    /// Oldest first: the last is the latest. Each with when it was
    /// written (virtual time under simulation).
    versions: VecDeque<(Duration, T)>,
}

impl<T> Versioned<T> {
    /// A row whose only version is `initial` (for a map's rows, `None`: a
    /// stale read of a row written once may then say it does not exist).
    pub fn new(initial: T) -> Versioned<T> {
        Versioned {
            versions: VecDeque::from([(clock(), initial)]),
        }
    }

    /// Writes a new version.
    pub fn set(&mut self, value: T) {
        if self.versions.len() == KEEP {
            self.versions.pop_front();
        }
        self.versions.push_back((clock(), value));
    }

    /// The latest version.
    pub fn latest(&self) -> &T {
        &self.versions.back().expect("a row has a version").1
    }

    /// How many versions the row keeps (1 + the older ones).
    pub fn len(&self) -> usize {
        self.versions.len()
    }

    /// Never: a row always has its latest version.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// How many older versions a stale read within `bound` may return
    /// (those 1, 2, …, n writes behind).
    pub(crate) fn stale_candidates(&self, bound: Staleness) -> usize {
        let now = clock();
        let len = self.versions.len();
        (1..len.min(bound.writes.saturating_add(1)))
            .take_while(|back| {
                // Version `back` behind was replaced by the one after it.
                let replaced = self.versions[len - back].0;
                bound
                    .age
                    .is_none_or(|age| now.saturating_sub(replaced) <= age)
            })
            .count()
    }

    /// The version `back` writes behind the latest.
    pub(crate) fn back(&self, back: usize) -> &T {
        &self.versions[self.versions.len() - 1 - back].1
    }
}

/// Draws from a stream seeded by a fake's name (FNV-1a, then splitmix64):
/// deterministic, for a fake used outside a simulation's run.
pub(crate) struct NamedDraws(u64);

impl NamedDraws {
    pub(crate) fn new(name: &str) -> NamedDraws {
        let h = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        NamedDraws(h)
    }

    /// A draw in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((u128::from(z) * u128::from(n)) >> 64) as u64
    }
}
