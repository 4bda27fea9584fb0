//! The seed tree: every consumer of randomness gets its own stream, derived
//! from the root seed and a label, so adding a consumer never shifts the
//! draws of the others.

use super::tape;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// A child seed: `H(root, label)`. The hash is a fixed function (FNV-1a over
/// the label folded into SplitMix64), identical on every platform and build.
pub(crate) fn child(root: u64, label: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    splitmix(root ^ splitmix(h))
}

pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The stream for `label` under `root`.
pub(crate) fn stream(root: u64, label: &str) -> Stream {
    Stream::from_seed(child(root, label))
}

/// A decision derived from the seed alone (`child(root, label)`): a swarm
/// choice, a consumer's own seed. Through the tape when one is on
/// (tape.rs), like every other draw.
pub(crate) fn decide(root: u64, label: &str) -> u64 {
    let v = child(root, label);
    if tape::on() {
        tape::u64(v)
    } else {
        v
    }
}

/// A ChaCha8 stream whose draws go through the tape when one was on as it
/// was made (tape.rs); otherwise exactly ChaCha8's.
#[derive(Clone, Debug)]
pub struct Stream {
    rng: ChaCha8Rng,
    taped: bool,
}

impl Stream {
    /// The stream seeded with `seed`.
    pub fn from_seed(seed: u64) -> Stream {
        Stream {
            rng: ChaCha8Rng::seed_from_u64(seed),
            taped: tape::on(),
        }
    }
}

impl RngCore for Stream {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        let v = self.rng.next_u32();
        if self.taped {
            tape::u32(v)
        } else {
            v
        }
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        let v = self.rng.next_u64();
        if self.taped {
            tape::u64(v)
        } else {
            v
        }
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.rng.fill_bytes(dest);
        if self.taped {
            tape::bytes(dest);
        }
    }
}

/// Uniform draw in `0..n` without modulo bias worth caring about at our `n`
/// (Lemire's multiply-shift).
#[inline]
pub(crate) fn below(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// A cheap pseudo-random sequence for tests that drive a data structure
/// with random operations (not the simulation's randomness: no seed tree).
#[cfg(test)]
pub(crate) fn test_draws(seed: u64) -> impl FnMut() -> usize {
    let mut x = seed;
    move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_differ_by_label_and_root() {
        assert_ne!(child(1, "sched"), child(1, "timer"));
        assert_ne!(child(1, "sched"), child(2, "sched"));
        assert_eq!(child(7, "sched"), child(7, "sched"));
    }

    #[test]
    fn below_stays_in_range() {
        for x in [0, 1, u64::MAX / 2, u64::MAX] {
            assert!(below(x, 5) < 5);
        }
        assert_eq!(below(u64::MAX, 1), 0);
    }
}
