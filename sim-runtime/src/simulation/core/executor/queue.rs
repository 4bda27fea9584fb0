//! The run queue: (slot, id) entries in wake order.
//!
//! A `Vec` with a moving head rather than a `VecDeque`: the random schedule
//! (the default) takes an entry from anywhere with a `swap_remove`, which on
//! a `Vec` is two plain index computations where a ring buffer needs four
//! wrap-arounds; FIFO takes from the head, which moves, and the dead prefix
//! is dropped once it outweighs the live entries.

use crate::simulation::core::mem::HugeVec;
use std::ops::Index;

/// The buffer is a [`HugeVec`]: the random pick reads it at random.
#[derive(Default)]
pub(crate) struct RunQueue {
    buf: HugeVec<(u32, u64)>,
    head: usize,
}

impl RunQueue {
    /// Emptied, its buffer kept (core/executor/spare.rs); `None` when the
    /// buffer is larger than `max` entries.
    pub(crate) fn emptied(mut self, max: usize) -> Option<RunQueue> {
        if self.buf.capacity() > max {
            return None;
        }
        self.buf.clear();
        Some(RunQueue {
            buf: std::mem::take(&mut self.buf),
            head: 0,
        })
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.head
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.len() == self.head
    }

    #[inline]
    pub(crate) fn push_back(&mut self, entry: (u32, u64)) {
        self.buf.push(entry);
    }

    /// The entry `i` places from the front.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&(u32, u64)> {
        self.buf.get(self.head + i)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &(u32, u64)> {
        self.buf[self.head..].iter()
    }

    pub(crate) fn pop_front(&mut self) -> Option<(u32, u64)> {
        let entry = *self.buf.get(self.head)?;
        self.head += 1;
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        } else if self.head > 64 && self.head * 2 > self.buf.len() {
            self.buf.remove_front(self.head);
            self.head = 0;
        }
        Some(entry)
    }

    /// Takes entry `i`; the last entry takes its place (as
    /// `VecDeque::swap_remove_back`).
    #[inline]
    pub(crate) fn swap_remove_back(&mut self, i: usize) -> Option<(u32, u64)> {
        if i >= self.len() {
            return None;
        }
        let entry = self.buf.swap_remove(self.head + i);
        if self.is_empty() {
            self.buf.clear();
            self.head = 0;
        }
        Some(entry)
    }

    /// Takes entry `i`, keeping the order of the others.
    pub(crate) fn remove(&mut self, i: usize) -> Option<(u32, u64)> {
        if i >= self.len() {
            return None;
        }
        if i == 0 {
            return self.pop_front();
        }
        Some(self.buf.remove(self.head + i))
    }
}

impl Index<usize> for RunQueue {
    type Output = (u32, u64);
    fn index(&self, i: usize) -> &(u32, u64) {
        &self.buf[self.head + i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The same operations on a `VecDeque` and a `RunQueue` give the same
    /// entries, in the same order.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut q = RunQueue::default();
        let mut d = VecDeque::new();
        let mut draw = crate::simulation::core::seed::test_draws(7);
        for step in 0..20_000u64 {
            let r = draw();
            match r % 5 {
                0 | 1 => {
                    q.push_back((step as u32, step));
                    d.push_back((step as u32, step));
                }
                2 => assert_eq!(q.pop_front(), d.pop_front()),
                3 => {
                    let i = r % (d.len() + 1);
                    assert_eq!(q.swap_remove_back(i), d.swap_remove_back(i));
                }
                _ => {
                    let i = r % (d.len() + 1);
                    assert_eq!(q.remove(i), d.remove(i));
                }
            }
            assert_eq!(q.len(), d.len());
            assert!(q.iter().eq(d.iter()));
            if !d.is_empty() {
                assert_eq!(q[d.len() - 1], d[d.len() - 1]);
                assert_eq!(q.get(0), d.front());
            }
        }
    }
}
