//! A seeded random stream for tests and generators: ChaCha8, so the same
//! seed gives the same draws on every platform, build and release. Made
//! inside a run with a tape on, its draws go through the tape like the
//! simulator's own (sim-runtime's tape.rs).

use rand_core::RngCore;
use sim_runtime::__private::harness::Stream;
use std::ops::RangeInclusive;

/// A deterministic random stream (ChaCha8) seeded from a `u64`: the same
/// seed gives the same draws everywhere. It implements
/// [`rand_core::RngCore`], so `rand`'s distributions accept it, and has the
/// few draws tests need without importing a trait.
#[derive(Clone)]
pub struct Rng(Stream);

impl std::fmt::Debug for Rng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rng { .. }")
    }
}

impl Rng {
    /// The stream of `seed`.
    pub fn from_seed(seed: u64) -> Rng {
        Rng(Stream::from_seed(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    /// A draw in `0..n` (Lemire's multiply-shift: one draw, a bias below
    /// `n / 2^64`).
    ///
    /// # Panics
    /// If `n` is 0.
    #[track_caller]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "sim::Rng::below(0): the range 0..0 is empty");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A draw in `range` (both ends included).
    ///
    /// # Panics
    /// If the range is empty.
    #[track_caller]
    pub fn in_range(&mut self, range: RangeInclusive<u64>) -> u64 {
        let (lo, hi) = (*range.start(), *range.end());
        assert!(
            lo <= hi,
            "sim::Rng::in_range({lo}..={hi}): the range is empty"
        );
        match (hi - lo).checked_add(1) {
            Some(n) => lo + self.below(n),
            None => self.next_u64(),
        }
    }

    /// `true` with probability `numerator / denominator`.
    ///
    /// # Panics
    /// If `denominator` is 0 or smaller than `numerator`.
    #[track_caller]
    pub fn ratio(&mut self, numerator: u64, denominator: u64) -> bool {
        assert!(
            denominator > 0 && numerator <= denominator,
            "sim::Rng::ratio({numerator}, {denominator}): a probability is a ratio in 0..=1"
        );
        self.below(denominator) < numerator
    }

    /// Fills `dest` with random bytes.
    pub fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
}

impl RngCore for Rng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
}
