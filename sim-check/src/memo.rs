//! Lowe's memo: the configurations (operations decided, state) the search
//! has entered, so that it never explores one twice — nor one that an
//! entered configuration *dominates*.
//!
//! Operations are *bound* (with an answer, or a maybe with a deadline) or
//! *free* (unknown: no deadline, may never take effect). A configuration
//! (bound set `B`, free set `F`, state `s`) dominates (`B`, `F'`, `s`) for
//! any `F'` ⊇ `F`: every way to finish from the second finishes from the
//! first, leaving the extra free operations out. So a lookup matches on the
//! bound bits and the state, and on the free bits by inclusion. The hash
//! covers only the bound bits and the state.
//!
//! A configuration is stored once, in arenas (no allocation per entry): its
//! bitset in one `Vec<u64>`, its state in one `Vec<S>`, found through an
//! open-addressing table of indices. The search refers to states by index,
//! so it never clones one. Nothing here is iterated in hash order, and the
//! hash is a fixed function, so the search is the same on every run.

use std::hash::{Hash, Hasher};

/// The bitset of decided operations, with a hash of its bound part kept up
/// to date as bits flip (each operation has a fixed random-looking key; the
/// hash is the xor of the keys of the bound bits set).
pub(crate) struct Bits {
    words: Vec<u64>,
    /// The free operations' bits.
    free: Vec<u64>,
    hash: u64,
}

impl Bits {
    /// A bitset over `ops` operations, `free(op)` telling which are free.
    pub(crate) fn new(ops: usize, free: impl Fn(usize) -> bool) -> Self {
        let len = ops.div_ceil(64).max(1);
        let mut mask = vec![0; len];
        for op in (0..ops).filter(|&op| free(op)) {
            mask[op / 64] |= 1 << (op % 64);
        }
        Bits {
            words: vec![0; len],
            free: mask,
            hash: 0,
        }
    }

    pub(crate) fn set(&mut self, op: usize) {
        let (w, b) = (op / 64, 1u64 << (op % 64));
        assert_eq!(self.words[w] & b, 0, "operation {op} decided twice");
        self.words[w] |= b;
        if self.free[w] & b == 0 {
            self.hash ^= key(op);
        }
    }

    pub(crate) fn get(&self, op: usize) -> bool {
        self.words[op / 64] & (1 << (op % 64)) != 0
    }

    pub(crate) fn clear(&mut self, op: usize) {
        let (w, b) = (op / 64, 1u64 << (op % 64));
        assert_ne!(
            self.words[w] & b,
            0,
            "operation {op} undone but not decided"
        );
        self.words[w] &= !b;
        if self.free[w] & b == 0 {
            self.hash ^= key(op);
        }
    }

    /// Whether `old` (a stored bitset) dominates these bits: the same bound
    /// bits, and free bits included in these.
    fn dominated_by(&self, old: &[u64]) -> bool {
        self.words
            .iter()
            .zip(old)
            .zip(&self.free)
            .all(|((&new, &old), &free)| (new ^ old) & !free == 0 && old & free & !new == 0)
    }
}

fn key(op: usize) -> u64 {
    mix(op as u64 ^ 0x6a09_e667_f3bc_c909)
}

/// The configurations seen, and every state the search has reached.
pub(crate) struct Memo<S> {
    words: usize,
    /// Per entry: its hash (bound bits and state), its bitset (`words`
    /// words), the index of its state in `states`.
    hashes: Vec<u64>,
    bits: Vec<u64>,
    state_of: Vec<u32>,
    /// The states, each with its hash. A step that leaves the state as it
    /// was (a read, a "never happened") enters a configuration that shares
    /// its parent's state: nothing is cloned, stored or hashed again.
    states: Vec<S>,
    state_hashes: Vec<u64>,
    /// Open addressing, linear probing: an entry index, or 0 for an empty
    /// slot (entry 0 is the initial state, which is never looked up).
    slots: Vec<u32>,
}

impl<S: Eq + Hash> Memo<S> {
    /// A memo whose entry 0 is the initial configuration (nothing
    /// decided, `init`).
    pub(crate) fn new(bits: &Bits, init: S) -> Self {
        Memo {
            words: bits.words.len(),
            hashes: vec![0],
            bits: bits.words.clone(),
            state_of: vec![0],
            state_hashes: vec![hash_one(&init)],
            states: vec![init],
            slots: vec![0; 1024],
        }
    }

    /// The configurations entered, the initial one included.
    pub(crate) fn len(&self) -> usize {
        self.hashes.len()
    }

    /// The state of entry `index`.
    pub(crate) fn state(&self, index: u32) -> &S {
        &self.states[self.state_of[index as usize] as usize]
    }

    /// Adds the configuration (`bits`, `state`) and returns its index, or
    /// `None` if an entered configuration dominates it.
    pub(crate) fn insert(&mut self, bits: &Bits, state: S) -> Option<u32> {
        let hash = hash_one(&state);
        let index = self.enter(bits, hash, |memo, e| {
            memo.states[memo.state_of[e] as usize] == state
        })?;
        let id = u32::try_from(self.states.len()).expect("at most 2^32 states");
        self.states.push(state);
        self.state_hashes.push(hash);
        self.state_of.push(id);
        Some(index)
    }

    /// Adds the configuration (`bits`, the state of entry `of`), as
    /// `insert` does, sharing that entry's state.
    pub(crate) fn insert_same(&mut self, bits: &Bits, of: u32) -> Option<u32> {
        let id = self.state_of[of as usize];
        let hash = self.state_hashes[id as usize];
        let index = self.enter(bits, hash, |memo, e| {
            let other = memo.state_of[e];
            other == id || memo.states[other as usize] == memo.states[id as usize]
        })?;
        self.state_of.push(id);
        Some(index)
    }

    /// Looks (`bits`, a state whose hash is `state_hash` and which `same`
    /// compares with an entry's) up; if no entry dominates it, takes a slot
    /// and the next entry index for it and pushes its hash and bits (the
    /// caller pushes its state).
    fn enter(
        &mut self,
        bits: &Bits,
        state_hash: u64,
        same: impl Fn(&Self, usize) -> bool,
    ) -> Option<u32> {
        assert_eq!(bits.words.len(), self.words);
        if (self.hashes.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let hash = mix(bits.hash ^ state_hash);
        let mask = self.slots.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            let e = self.slots[slot] as usize;
            if e == 0 {
                let index = u32::try_from(self.hashes.len()).expect("at most 2^32 configurations");
                self.hashes.push(hash);
                self.bits.extend_from_slice(&bits.words);
                self.slots[slot] = index;
                return Some(index);
            }
            if self.hashes[e] == hash
                && bits.dominated_by(&self.bits[e * self.words..(e + 1) * self.words])
                && same(self, e)
            {
                return None;
            }
            slot = (slot + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let len = self.slots.len() * 2;
        let mask = len - 1;
        let mut slots = vec![0u32; len];
        for (e, &hash) in self.hashes.iter().enumerate().skip(1) {
            let mut slot = hash as usize & mask;
            while slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            slots[slot] = e as u32;
        }
        self.slots = slots;
    }
}

/// A fixed hash of a state (no per-process random key: the same on every
/// run).
pub(crate) fn hash_one<T: Hash + ?Sized>(t: &T) -> u64 {
    let mut h = Fold(0x243f_6a88_85a3_08d3);
    t.hash(&mut h);
    h.finish()
}

/// A multiply-rotate hasher over 64-bit words, finished by `mix`.
struct Fold(u64);

impl Fold {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(23) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for Fold {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        mix(self.0)
    }
}

/// SplitMix64's finalizer: every input bit moves every output bit, so the
/// low bits that pick a slot are well spread.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_is_entered_once() {
        let mut bits = Bits::new(130, |_| false);
        let mut memo = Memo::new(&bits, 0u32);
        bits.set(129);
        assert_eq!(memo.insert(&bits, 5), Some(1));
        assert_eq!(memo.insert(&bits, 5), None);
        assert_eq!(memo.insert(&bits, 6), Some(2));
        bits.clear(129);
        bits.set(0);
        assert_eq!(memo.insert(&bits, 5), Some(3));
        assert_eq!(*memo.state(0), 0);
        assert_eq!(*memo.state(3), 5);
        // Sharing entry 3's state: the same configuration as a new copy.
        bits.set(1);
        assert_eq!(memo.insert_same(&bits, 3), Some(4));
        assert_eq!(*memo.state(4), 5);
        assert_eq!(memo.insert(&bits, 5), None);
        assert_eq!(memo.insert_same(&bits, 1), None, "entry 1 also holds 5");
        assert_eq!(memo.insert_same(&bits, 2), Some(5));
        assert_eq!(*memo.state(5), 6);
        assert_eq!(memo.states.len(), 4, "shared states are stored once");
    }

    #[test]
    fn the_table_grows_and_keeps_every_entry() {
        let mut bits = Bits::new(3000, |_| false);
        let mut memo = Memo::new(&bits, 0u64);
        for op in 0..3000 {
            bits.set(op);
            assert!(memo.insert(&bits, op as u64).is_some());
        }
        for op in (0..3000).rev() {
            assert!(memo.insert(&bits, op as u64).is_none());
            assert!(memo.insert(&bits, op as u64 + 1).is_some());
            bits.clear(op);
        }
    }

    #[test]
    fn the_bitset_hash_depends_on_the_set_only() {
        let mut a = Bits::new(10, |_| false);
        let mut b = Bits::new(10, |_| false);
        a.set(1);
        a.set(7);
        b.set(7);
        b.set(3);
        b.set(1);
        b.clear(3);
        assert_eq!(a.hash, b.hash);
        assert_eq!(a.words, b.words);
        assert_eq!(hash_one(&"abc"), hash_one(&"abc"));
        assert_eq!(hash_one(&"abc"), hash_one(&String::from("abc")));
        assert_ne!(hash_one(&1u64), hash_one(&2u64));
    }

    #[test]
    fn more_free_operations_decided_is_dominated() {
        // Operations 1 and 2 are free; 0 is bound.
        let mut bits = Bits::new(3, |op| op > 0);
        let mut memo = Memo::new(&bits, 0u8);
        bits.set(0);
        bits.set(1);
        assert!(memo.insert(&bits, 7).is_some());
        bits.set(2);
        assert!(
            memo.insert(&bits, 7).is_none(),
            "a superset of free bits, same state"
        );
        assert!(memo.insert(&bits, 8).is_some(), "another state");
        bits.clear(1);
        assert!(
            memo.insert(&bits, 7).is_some(),
            "{{2}} is not a superset of {{1}}"
        );
        bits.clear(0);
        bits.set(1);
        assert!(memo.insert(&bits, 7).is_some(), "other bound bits");
    }
}
