//! The timer queue: a binary heap of deadlines with real cancellation.
//!
//! A timer is a slot (with a generation, so a stale key can never touch a
//! reused slot) plus a heap entry. Cancelling frees the slot at once; its
//! heap entry becomes stale and is skipped when it reaches the top, so a
//! dropped `Sleep` neither wakes anybody nor pulls the clock forward. The
//! heap is rebuilt when stale entries outnumber live ones, so memory stays
//! proportional to the live timers.

use super::node::NodeId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::task::Waker;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    slot: u32,
    gen: u32,
}

enum State {
    Free,
    Pending {
        waker: Option<Waker>,
        node: NodeId,
        seq: u64,
    },
    Fired,
}

struct Slot {
    gen: u32,
    /// The heap entry of the pending timer.
    entry: u128,
    state: State,
}

/// Heap entry: deadline ns << 64 | the high half of the seeded tie-break << 32
/// | slot, one integer so that a sift compares once and moves 16 bytes. The
/// slot remembers its entry: an entry is stale unless its slot is pending
/// with that very entry (a reused slot gets a new one; an identical one
/// would stand for the same deadline, tie and slot, so it is the same timer
/// position anyway).
type Entry = Reverse<u128>;

fn entry(deadline: u64, tie: u64, slot: u32) -> u128 {
    u128::from(deadline) << 64 | u128::from(tie >> 32) << 32 | u128::from(slot)
}

#[derive(Default)]
pub(crate) struct Timers {
    slots: Vec<Slot>,
    free: Vec<u32>,
    heap: BinaryHeap<Entry>,
    live: usize,
    next_seq: u64,
}

fn is_live(slots: &[Slot], e: u128) -> bool {
    let s = &slots[e as u32 as usize];
    s.entry == e && matches!(s.state, State::Pending { .. })
}

/// A timer that fired, as the executor needs it.
pub(crate) struct Fired {
    pub waker: Option<Waker>,
    pub node: NodeId,
    pub seq: u64,
}

impl Timers {
    /// Registers a timer. `tie` orders timers with the same deadline; the
    /// executor draws it from the seed.
    pub(crate) fn insert(
        &mut self,
        deadline: u64,
        tie: u64,
        waker: Waker,
        node: NodeId,
    ) -> TimerKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        let state = State::Pending {
            waker: Some(waker),
            node,
            seq,
        };
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    entry: 0,
                    state: State::Free,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let e = entry(deadline, tie, slot);
        let s = &mut self.slots[slot as usize];
        debug_assert!(matches!(s.state, State::Free));
        s.state = state;
        s.entry = e;
        let gen = s.gen;
        self.heap.push(Reverse(e));
        self.live += 1;
        TimerKey { slot, gen }
    }

    fn slot(&self, key: TimerKey) -> Option<&Slot> {
        self.slots
            .get(key.slot as usize)
            .filter(|s| s.gen == key.gen)
    }

    /// Whether the timer fired. A key that is no longer valid counts as fired
    /// (its owner will re-check the deadline against the clock anyway).
    pub(crate) fn is_fired(&self, key: TimerKey) -> bool {
        !matches!(
            self.slot(key).map(|s| &s.state),
            Some(State::Pending { .. })
        )
    }

    pub(crate) fn set_waker(&mut self, key: TimerKey, new: &Waker) {
        if let Some(s) = self
            .slots
            .get_mut(key.slot as usize)
            .filter(|s| s.gen == key.gen)
        {
            if let State::Pending { waker, .. } = &mut s.state {
                match waker {
                    Some(w) if w.will_wake(new) => {}
                    _ => *waker = Some(new.clone()),
                }
            }
        }
    }

    /// Frees the timer's slot. Returns the waker it held, which the caller
    /// drops outside any borrow of the executor.
    pub(crate) fn remove(&mut self, key: TimerKey) -> Option<Waker> {
        let s = self
            .slots
            .get_mut(key.slot as usize)
            .filter(|s| s.gen == key.gen)?;
        let old = std::mem::replace(&mut s.state, State::Free);
        s.gen = s.gen.wrapping_add(1);
        self.free.push(key.slot);
        let waker = match old {
            State::Pending { waker, .. } => {
                self.live -= 1;
                waker
            }
            _ => None,
        };
        self.maybe_compact();
        waker
    }

    fn maybe_compact(&mut self) {
        if self.heap.len() > 64 && self.heap.len() > 2 * self.live.max(1) {
            let slots = &self.slots;
            self.heap.retain(|&Reverse(e)| is_live(slots, e));
        }
    }

    /// The earliest live deadline, dropping stale entries on the way.
    pub(crate) fn next_deadline(&mut self) -> Option<u64> {
        while let Some(&Reverse(e)) = self.heap.peek() {
            if is_live(&self.slots, e) {
                return Some((e >> 64) as u64);
            }
            self.heap.pop();
        }
        None
    }

    /// Pops the earliest live timer if its deadline is `<= now`, marking it
    /// fired. Timers with equal deadlines come out in tie-break order.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<Fired> {
        loop {
            let Reverse(e) = *self.heap.peek()?;
            if !is_live(&self.slots, e) {
                self.heap.pop();
                continue;
            }
            if (e >> 64) as u64 > now {
                return None;
            }
            self.heap.pop();
            let s = &mut self.slots[e as u32 as usize];
            let State::Pending {
                waker, node, seq, ..
            } = std::mem::replace(&mut s.state, State::Fired)
            else {
                unreachable!("live entry checked above")
            };
            self.live -= 1;
            return Some(Fired { waker, node, seq });
        }
    }

    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop() -> Waker {
        Waker::noop().clone()
    }

    #[test]
    fn cancelled_timer_never_fires_nor_sets_the_next_deadline() {
        let mut t = Timers::default();
        let a = t.insert(10, 0, noop(), NodeId::MAIN);
        let _b = t.insert(20, 0, noop(), NodeId::MAIN);
        t.remove(a);
        assert_eq!(t.next_deadline(), Some(20));
        assert!(t.pop_due(15).is_none());
        assert!(t.pop_due(20).is_some());
        assert_eq!(t.live(), 0);
    }

    #[test]
    fn equal_deadlines_fire_in_tie_order() {
        let mut t = Timers::default();
        // Ties are ordered by their high half.
        t.insert(5, 3 << 32, noop(), NodeId::MAIN);
        t.insert(5, 1 << 32, noop(), NodeId::MAIN);
        t.insert(5, 2 << 32, noop(), NodeId::MAIN);
        let seqs: Vec<u64> = std::iter::from_fn(|| t.pop_due(5)).map(|f| f.seq).collect();
        assert_eq!(seqs, vec![1, 2, 0]);
    }

    #[test]
    fn stale_key_cannot_touch_a_reused_slot() {
        let mut t = Timers::default();
        let a = t.insert(10, 0, noop(), NodeId::MAIN);
        t.remove(a);
        let b = t.insert(30, 0, noop(), NodeId::MAIN);
        assert!(t.remove(a).is_none());
        assert!(!t.is_fired(b));
        assert_eq!(t.next_deadline(), Some(30));
    }

    #[test]
    fn heap_is_compacted_when_mostly_stale() {
        let mut t = Timers::default();
        let keep = t.insert(1_000, 0, noop(), NodeId::MAIN);
        for i in 0..1_000 {
            let k = t.insert(i, 0, noop(), NodeId::MAIN);
            t.remove(k);
        }
        assert!(
            t.heap.len() < 200,
            "heap kept {} stale entries",
            t.heap.len()
        );
        assert!(!t.is_fired(keep));
    }
}
