//! The timer queue: deadlines in buckets, with real cancellation.
//!
//! A timer is a slot (with a generation, so a stale key can never touch a
//! reused slot) plus an entry in the bucket of its deadline. Buckets live in
//! a `BTreeMap` keyed by deadline, so the next deadline is the first key and
//! the many timers that share a deadline (a millisecond's worth of
//! `sleep(1ms)`, the heartbeat of every node) cost one map entry between
//! them: registering one is a push, firing them is a walk. Timers with the
//! same deadline fire in an order drawn from the seed when the bucket fires
//! (a Fisher–Yates shuffle of its live entries).
//!
//! Cancelling frees the slot at once; its bucket entry becomes stale and is
//! skipped, so a dropped `Sleep` neither wakes anybody nor pulls the clock
//! forward. The buckets are compacted when stale entries outnumber live
//! ones, so memory stays proportional to the live timers.

use super::executor::WakeRef;
use super::node::NodeId;
use rand_core::RngCore;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    slot: u32,
    gen: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Free,
    Pending,
    Fired,
}

/// A slot's generation and state: eight bytes, so that checking a timer
/// (the owner's poll after it fired, the liveness checks of firing) reads a
/// small array that stays in the first-level cache; what a pending timer
/// holds is in `pending`, at the same index.
#[derive(Clone, Copy)]
struct Slot {
    gen: u32,
    state: State,
    /// A sleep's timer, whose owner looks at it when woken (counted in
    /// `unseen` while fired and not yet looked at); a socket's wake-up
    /// timer is not: its owner looks at the socket.
    watched: bool,
}

/// What a pending timer holds.
struct Pending {
    waker: Option<WakeRef>,
    node: NodeId,
    seq: u64,
}

/// The timers of one deadline, in registration order; the first inline, so
/// a deadline with one timer allocates nothing.
struct Bucket {
    first: TimerKey,
    rest: Vec<TimerKey>,
}

#[derive(Default)]
pub(crate) struct Timers {
    slots: Vec<Slot>,
    /// Same index as `slots`; meaningful while the slot is `Pending`.
    pending: Vec<Pending>,
    free: Vec<u32>,
    buckets: BTreeMap<u64, Bucket>,
    /// The bucket of the deadline registered last, kept out of `buckets`
    /// while registrations keep coming for that deadline (a millisecond's
    /// worth of `sleep(1ms)` all land in one): each is then a push, with no
    /// map search. It holds the entries registered after those the map
    /// holds for the same deadline, and goes into the map (appended, so
    /// registration order is kept) before anything reads the buckets,
    /// unless it is the earliest of them (`hot_is_first`).
    hot: Option<(u64, Bucket)>,
    /// Emptied `rest` vectors, kept for their capacity.
    spare: Vec<Vec<TimerKey>>,
    /// Entries in the buckets, live or stale.
    entries: usize,
    live: usize,
    /// Timers that fired and whose owner has not yet seen it (taken it or
    /// dropped it): deadlines that are still live for an early jump.
    unseen: usize,
    next_seq: u64,
    /// The bucket being fired, in its drawn order, and how far it got.
    firing: Vec<TimerKey>,
    fired_upto: usize,
}

/// A timer that fired, as the executor needs it.
pub(crate) struct Fired {
    pub waker: Option<WakeRef>,
    pub node: NodeId,
    pub seq: u64,
}

fn is_live(slots: &[Slot], k: TimerKey) -> bool {
    let s = &slots[k.slot as usize];
    s.gen == k.gen && s.state == State::Pending
}

impl Timers {
    /// Registers a timer.
    // Inlined: the waker arrives in registers; passed through memory, it is
    // read back in other widths than its builder wrote (a store-forwarding
    // stall that was a tenth of the `sleep` bench).
    #[inline(always)]
    pub(crate) fn insert(&mut self, deadline: u64, waker: WakeRef, node: NodeId) -> TimerKey {
        self.insert_as(deadline, waker, node, true)
    }

    /// Registers a wake-up that nobody looks at as a timer (a socket's next
    /// delivery): it never holds back an early jump once fired.
    pub(crate) fn insert_unwatched(
        &mut self,
        deadline: u64,
        waker: WakeRef,
        node: NodeId,
    ) -> TimerKey {
        self.insert_as(deadline, waker, node, false)
    }

    #[inline(always)]
    fn insert_as(
        &mut self,
        deadline: u64,
        waker: WakeRef,
        node: NodeId,
        watched: bool,
    ) -> TimerKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    state: State::Free,
                    watched,
                });
                self.pending.push(Pending {
                    waker: None,
                    node,
                    seq,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.state == State::Free);
        s.state = State::Pending;
        s.watched = watched;
        let key = TimerKey { slot, gen: s.gen };
        let p = &mut self.pending[slot as usize];
        // A free slot holds no waker (firing and removal take it), so there
        // is nothing to drop: written without reading the old value (a read
        // that waited on the line, which the store buffer hides).
        debug_assert!(p.waker.is_none());
        // SAFETY: a valid place of this type; the old value needs no drop.
        unsafe {
            std::ptr::write(
                p,
                Pending {
                    waker: Some(waker),
                    node,
                    seq,
                },
            )
        };
        match &mut self.hot {
            Some((d, b)) if *d == deadline => {
                if b.rest.capacity() == 0 {
                    if let Some(v) = self.spare.pop() {
                        b.rest = v;
                    }
                }
                b.rest.push(key);
            }
            _ => {
                self.flush_hot();
                self.hot = Some((
                    deadline,
                    Bucket {
                        first: key,
                        rest: Vec::new(),
                    },
                ));
            }
        }
        self.entries += 1;
        self.live += 1;
        key
    }

    /// Puts the hot bucket into the map, after the entries the map already
    /// holds for its deadline.
    fn flush_hot(&mut self) {
        let Some((deadline, hot)) = self.hot.take() else {
            return;
        };
        match self.buckets.entry(deadline) {
            std::collections::btree_map::Entry::Occupied(mut b) => {
                let rest = &mut b.get_mut().rest;
                if rest.capacity() == 0 {
                    // A deadline met again (a socket's next delivery):
                    // a kept vector, not a new one.
                    if let Some(v) = self.spare.pop() {
                        *rest = v;
                    }
                }
                rest.push(hot.first);
                rest.extend_from_slice(&hot.rest);
                if hot.rest.capacity() > 0 {
                    let mut v = hot.rest;
                    v.clear();
                    self.spare.push(v);
                }
            }
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(hot);
            }
        }
    }

    /// Whether the hot bucket is the earliest of all, with no map entry at
    /// or before its deadline: it is then read and fired where it is, as
    /// the map's first bucket would be, without going through the map (a
    /// lone sleep or a socket's next delivery costs no map insert and
    /// remove, nor a map node allocated and freed).
    fn hot_is_first(&self) -> bool {
        match &self.hot {
            Some((d, _)) => self.buckets.first_key_value().is_none_or(|(k, _)| *k > *d),
            None => false,
        }
    }

    fn slot(&self, key: TimerKey) -> Option<&Slot> {
        self.slots
            .get(key.slot as usize)
            .filter(|s| s.gen == key.gen)
    }

    /// Whether the timer fired. A key that is no longer valid counts as fired
    /// (its owner will re-check the deadline against the clock anyway).
    pub(crate) fn is_fired(&self, key: TimerKey) -> bool {
        self.slot(key).map(|s| s.state) != Some(State::Pending)
    }

    /// For a timer's owner that saw it fire: whether it fired (as
    /// `is_fired`), freeing its slot if so.
    #[inline]
    pub(crate) fn take_fired(&mut self, key: TimerKey) -> bool {
        let Some(s) = self.slot(key) else {
            return true;
        };
        match s.state {
            State::Pending => false,
            State::Fired => {
                self.unseen -= usize::from(s.watched);
                self.free_slot(key.slot);
                true
            }
            State::Free => true,
        }
    }

    /// Timers that fired whose owners have not yet seen it. While there is
    /// one, the clock must not jump early: its owner would first look at a
    /// clock past a later deadline (a 600 ms sleep done before the 150 ms
    /// timeout around it, which fired first, was seen).
    pub(crate) fn unseen(&self) -> usize {
        self.unseen
    }

    /// Frees `slot` (a new generation, so its keys go stale); returns the
    /// state it had.
    fn free_slot(&mut self, slot: u32) -> State {
        let s = &mut self.slots[slot as usize];
        let old = std::mem::replace(&mut s.state, State::Free);
        s.gen = s.gen.wrapping_add(1);
        self.free.push(slot);
        old
    }

    /// Replaces the waker of a pending timer, unless it wakes the same task.
    pub(crate) fn set_waker(&mut self, key: TimerKey, new: WakeRef) {
        if self.slot(key).is_some_and(|s| s.state == State::Pending) {
            let waker = &mut self.pending[key.slot as usize].waker;
            match waker {
                Some(w) if w.will_wake(&new) => {}
                _ => *waker = Some(new),
            }
        }
    }

    /// Frees the timer's slot. Returns the waker it held, which the caller
    /// drops outside any borrow of the executor.
    pub(crate) fn remove(&mut self, key: TimerKey) -> Option<WakeRef> {
        let watched = self.slot(key)?.watched;
        let waker = match self.free_slot(key.slot) {
            State::Pending => {
                self.live -= 1;
                self.pending[key.slot as usize].waker.take()
            }
            State::Fired => {
                self.unseen -= usize::from(watched);
                None
            }
            State::Free => None,
        };
        self.maybe_compact();
        waker
    }

    fn maybe_compact(&mut self) {
        if self.entries <= 64 || self.entries <= 2 * self.live.max(1) {
            return;
        }
        self.flush_hot();
        let slots = &self.slots;
        let spare = &mut self.spare;
        let mut entries = 0;
        self.buckets.retain(|_, b| {
            b.rest.retain(|&k| is_live(slots, k));
            if !is_live(slots, b.first) {
                match b.rest.is_empty() {
                    true => {
                        if b.rest.capacity() > 0 {
                            spare.push(std::mem::take(&mut b.rest));
                        }
                        return false;
                    }
                    false => b.first = b.rest.remove(0),
                }
            }
            entries += 1 + b.rest.len();
            true
        });
        self.entries = entries;
    }

    /// The earliest live deadline, dropping stale entries on the way.
    pub(crate) fn next_deadline(&mut self) -> Option<u64> {
        if self.hot_is_first() {
            let Timers {
                hot,
                slots,
                entries,
                spare,
                ..
            } = self;
            let (d, b) = hot.as_mut().expect("hot_is_first");
            while let Some(&k) = b.rest.last() {
                if is_live(slots, k) {
                    return Some(*d);
                }
                b.rest.pop();
                *entries -= 1;
            }
            if is_live(slots, b.first) {
                return Some(*d);
            }
            let (_, b) = hot.take().expect("hot_is_first");
            *entries -= 1;
            if b.rest.capacity() > 0 {
                spare.push(b.rest);
            }
        }
        self.flush_hot();
        loop {
            let mut first = self.buckets.first_entry()?;
            let b = first.get_mut();
            // Stale entries at the back go; one live entry is enough.
            while let Some(&k) = b.rest.last() {
                if is_live(&self.slots, k) {
                    return Some(*first.key());
                }
                b.rest.pop();
                self.entries -= 1;
            }
            if is_live(&self.slots, b.first) {
                return Some(*first.key());
            }
            let b = first.remove();
            self.entries -= 1;
            if b.rest.capacity() > 0 {
                self.spare.push(b.rest);
            }
        }
    }

    /// Emptied for the next executor on this thread (core/executor/spare.rs):
    /// every timer dropped (its waker with it), every count back to its
    /// start, the vectors' capacity kept; `None` when they are too large to
    /// be worth keeping. The result behaves as `Timers::default()`.
    pub(crate) fn emptied(mut self, max: usize) -> Option<Timers> {
        if self.slots.capacity() > max || self.spare.len() > max {
            return None;
        }
        self.slots.clear();
        self.pending.clear();
        self.free.clear();
        self.firing.clear();
        for v in &mut self.spare {
            v.clear();
        }
        Some(Timers {
            slots: std::mem::take(&mut self.slots),
            pending: std::mem::take(&mut self.pending),
            free: std::mem::take(&mut self.free),
            firing: std::mem::take(&mut self.firing),
            spare: std::mem::take(&mut self.spare),
            ..Timers::default()
        })
    }

    /// Pops the next live timer due at `now` or before, marking it fired.
    /// Timers fire in deadline order; those of one deadline in an order
    /// drawn from `rng` when their bucket comes up.
    pub(crate) fn pop_due(&mut self, now: u64, rng: &mut impl RngCore) -> Option<Fired> {
        loop {
            while self.fired_upto < self.firing.len() {
                let k = self.firing[self.fired_upto];
                self.fired_upto += 1;
                if !is_live(&self.slots, k) {
                    continue;
                }
                let s = &mut self.slots[k.slot as usize];
                s.state = State::Fired;
                self.unseen += usize::from(s.watched);
                let p = &mut self.pending[k.slot as usize];
                self.live -= 1;
                return Some(Fired {
                    waker: p.waker.take(),
                    node: p.node,
                    seq: p.seq,
                });
            }
            self.firing.clear();
            self.fired_upto = 0;
            let bucket = if self.hot_is_first() {
                if self.hot.as_ref().is_some_and(|(d, _)| *d > now) {
                    return None;
                }
                self.hot.take().expect("hot_is_first").1
            } else {
                self.flush_hot();
                let first = self.buckets.first_entry()?;
                if *first.key() > now {
                    return None;
                }
                first.remove()
            };
            let Bucket { first, mut rest } = bucket;
            self.entries -= 1 + rest.len();
            // The bucket's own vector becomes the firing order (stale
            // entries included: they are skipped above, and a uniform
            // shuffle of all entries is a uniform order of the live ones).
            // A bucket of one timer (the usual case) has no vector: the
            // last firing order's, emptied above, is reused rather than a
            // new one allocated per deadline and the old one kept in
            // `spare` (which then grew by one vector per fire).
            if rest.capacity() == 0 {
                rest = std::mem::take(&mut self.firing);
            }
            rest.push(first);
            let n = rest.len();
            for i in (1..n).rev() {
                // 32-bit draws: half the stream per swap; a bucket holds
                // fewer than 2^32 timers.
                let j = (u64::from(rng.next_u32()) * (i as u64 + 1)) >> 32;
                rest.swap(i, j as usize);
            }
            let done = std::mem::replace(&mut self.firing, rest);
            if done.capacity() > 0 {
                self.spare.push(done);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Slots ever made (free ones included): what the queue holds on to.
    #[cfg(test)]
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::task::Waker;

    fn noop() -> WakeRef {
        WakeRef::Other(Waker::noop().clone())
    }

    /// Fires every timer due at `now`; their sequence numbers in firing order.
    fn fire(t: &mut Timers, now: u64, r: &mut ChaCha8Rng) -> Vec<u64> {
        std::iter::from_fn(|| t.pop_due(now, r))
            .map(|f| f.seq)
            .collect()
    }

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    #[test]
    fn cancelled_timer_never_fires_nor_sets_the_next_deadline() {
        let mut t = Timers::default();
        let a = t.insert(10, noop(), NodeId::MAIN);
        let _b = t.insert(20, noop(), NodeId::MAIN);
        t.remove(a);
        assert_eq!(t.next_deadline(), Some(20));
        assert!(t.pop_due(15, &mut rng()).is_none());
        assert!(t.pop_due(20, &mut rng()).is_some());
        assert_eq!(t.live(), 0);
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn a_cancelled_timer_in_a_shared_bucket_does_not_fire() {
        let mut t = Timers::default();
        let a = t.insert(10, noop(), NodeId::MAIN);
        let b = t.insert(10, noop(), NodeId::MAIN);
        let c = t.insert(10, noop(), NodeId::MAIN);
        t.remove(b);
        let mut r = rng();
        let seqs: Vec<u64> = fire(&mut t, 10, &mut r);
        assert_eq!(seqs.len(), 2);
        assert!(!seqs.contains(&1), "the cancelled timer fired: {seqs:?}");
        assert!(t.is_fired(a) && t.is_fired(c));
    }

    #[test]
    fn timers_fire_in_deadline_order() {
        let mut t = Timers::default();
        t.insert(30, noop(), NodeId::MAIN);
        t.insert(10, noop(), NodeId::MAIN);
        t.insert(20, noop(), NodeId::MAIN);
        let mut r = rng();
        let seqs: Vec<u64> = fire(&mut t, 30, &mut r);
        assert_eq!(seqs, vec![1, 2, 0]);
    }

    #[test]
    fn equal_deadlines_fire_in_an_order_drawn_from_the_rng() {
        let order = |seed: u64| {
            let mut t = Timers::default();
            for _ in 0..8 {
                t.insert(5, noop(), NodeId::MAIN);
            }
            let mut r = ChaCha8Rng::seed_from_u64(seed);
            fire(&mut t, 5, &mut r)
        };
        assert_eq!(order(1), order(1), "same stream, same order");
        let mut sorted = order(1);
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..8).collect::<Vec<u64>>(),
            "every timer fires once"
        );
        assert!(
            (2..20).any(|s| order(s) != order(1)),
            "the order never depends on the stream"
        );
    }

    #[test]
    fn a_deadline_registered_around_another_keeps_every_timer() {
        // 10 goes hot, then 20 (10 into the map), then 10 again (20 into the
        // map, 10 hot again): both parts of 10 fire, before 20.
        let mut t = Timers::default();
        t.insert(10, noop(), NodeId::MAIN);
        t.insert(10, noop(), NodeId::MAIN);
        t.insert(20, noop(), NodeId::MAIN);
        t.insert(10, noop(), NodeId::MAIN);
        let c = t.insert(10, noop(), NodeId::MAIN);
        t.remove(c);
        assert_eq!(t.next_deadline(), Some(10));
        let mut r = rng();
        let mut at_10: Vec<u64> = fire(&mut t, 10, &mut r);
        at_10.sort_unstable();
        assert_eq!(at_10, vec![0, 1, 3]);
        assert_eq!(t.next_deadline(), Some(20));
        assert!(t.take_fired(TimerKey { slot: 0, gen: 0 }));
    }

    #[test]
    fn stale_key_cannot_touch_a_reused_slot() {
        let mut t = Timers::default();
        let a = t.insert(10, noop(), NodeId::MAIN);
        t.remove(a);
        let b = t.insert(30, noop(), NodeId::MAIN);
        assert!(t.remove(a).is_none());
        assert!(!t.is_fired(b));
        assert_eq!(t.next_deadline(), Some(30));
    }

    #[test]
    fn buckets_are_compacted_when_mostly_stale() {
        let mut t = Timers::default();
        let keep = t.insert(1_000, noop(), NodeId::MAIN);
        for i in 0..1_000 {
            let k = t.insert(i % 7, noop(), NodeId::MAIN);
            t.remove(k);
        }
        assert!(t.entries < 200, "kept {} stale entries", t.entries);
        assert!(!t.is_fired(keep));
        assert_eq!(t.next_deadline(), Some(1_000));
    }

    /// The queue against a plain model, over random registrations (watched
    /// and not, many on shared deadlines so the hot bucket is exercised),
    /// cancellations, owners looking at fired timers, early jumps and
    /// ordinary advances. What must always hold: timers fire in deadline
    /// order, never before their deadline, each once, never after a
    /// cancellation; the next deadline is the model's earliest pending
    /// one; `unseen` counts the fired watched timers nobody has looked at;
    /// and an early jump (allowed only while `unseen` is 0) never passes a
    /// deadline some owner has not yet seen.
    #[test]
    fn the_queue_agrees_with_a_plain_model() {
        use std::collections::BTreeMap;
        #[derive(Clone, Copy, PartialEq, Debug)]
        enum M {
            Pending(u64),
            Fired(u64),
        }
        for seed in 0..40u64 {
            let mut draw = crate::simulation::core::seed::test_draws(seed);
            let mut t = Timers::default();
            let mut r = ChaCha8Rng::seed_from_u64(seed);
            // key -> (watched, state), in registration order.
            let mut model: BTreeMap<u64, (TimerKey, bool, M)> = BTreeMap::new();
            let mut now = 0u64;
            let mut last_fired = 0u64;
            for _ in 0..3_000 {
                match draw() % 10 {
                    0..=3 => {
                        // Deadlines in a narrow window: shared buckets.
                        let d = now + 1 + (draw() % 6) as u64 * 5;
                        let watched = draw() % 3 != 0;
                        let k = if watched {
                            t.insert(d, noop(), NodeId::MAIN)
                        } else {
                            t.insert_unwatched(d, noop(), NodeId::MAIN)
                        };
                        let seq = t.next_seq - 1;
                        model.insert(seq, (k, watched, M::Pending(d)));
                    }
                    4 | 5 => {
                        // An owner drops its timer (pending or fired).
                        if let Some(&seq) = model.keys().nth(draw() % model.len().max(1)) {
                            let (k, _, _) = model.remove(&seq).unwrap();
                            t.remove(k);
                        }
                    }
                    6 => {
                        // An owner looks at its fired timer.
                        let fired: Vec<u64> = model
                            .iter()
                            .filter(|(_, (_, _, m))| matches!(m, M::Fired(_)))
                            .map(|(s, _)| *s)
                            .collect();
                        if let Some(&seq) = fired.get(draw() % fired.len().max(1)) {
                            let (k, _, _) = model.remove(&seq).unwrap();
                            assert!(t.take_fired(k), "a fired timer reads as fired");
                        }
                    }
                    _ => {
                        // The clock moves to the next deadline and fires
                        // what is due: an ordinary advance, or an early
                        // jump (which the executor makes only while no
                        // fired timer is unseen).
                        let unseen = model
                            .values()
                            .filter(|(_, w, m)| *w && matches!(m, M::Fired(_)))
                            .count();
                        assert_eq!(t.unseen(), unseen, "seed {seed}: unseen");
                        let earliest = model
                            .values()
                            .filter_map(|(_, _, m)| match m {
                                M::Pending(d) => Some(*d),
                                M::Fired(_) => None,
                            })
                            .min();
                        assert_eq!(t.next_deadline(), earliest, "seed {seed}: next deadline");
                        let Some(next) = earliest else { continue };
                        let early = draw() % 2 == 0;
                        if early && t.unseen() > 0 {
                            continue;
                        }
                        if early {
                            // Nothing fired is older than the jump's start
                            // and still unseen.
                            assert!(model
                                .values()
                                .all(|(_, w, m)| !*w || !matches!(m, M::Fired(_))));
                        }
                        assert!(next >= now, "the clock never goes back");
                        now = next;
                        while let Some(f) = t.pop_due(now, &mut r) {
                            let (_, _, m) = model.get_mut(&f.seq).expect("a cancelled timer fired");
                            let M::Pending(d) = *m else {
                                panic!("seed {seed}: timer {} fired twice", f.seq)
                            };
                            assert!(d <= now, "seed {seed}: fired before its deadline");
                            assert!(d >= last_fired, "seed {seed}: fired out of deadline order");
                            last_fired = d;
                            *m = M::Fired(d);
                        }
                        assert!(
                            model.values().all(|(_, _, m)| match m {
                                M::Pending(d) => *d > now,
                                M::Fired(_) => true,
                            }),
                            "seed {seed}: a due timer did not fire"
                        );
                    }
                }
                assert_eq!(
                    t.live(),
                    model
                        .values()
                        .filter(|(_, _, m)| matches!(m, M::Pending(_)))
                        .count(),
                    "seed {seed}: live timers"
                );
            }
        }
    }
}
