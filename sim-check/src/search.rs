//! The search for a linearization of one partition: Wing & Gong's
//! backtracking over the operations that may go next, with Lowe's memo of
//! configurations already explored.
//!
//! The events (calls and returns) are a doubly linked list in event order.
//! Walking it from the head, a call is a candidate: its operation may go
//! next if the model accepts it; it is then *lifted* (its call and return
//! unlinked) and the walk restarts from the head. Reaching a return means an
//! operation that had to be linearized before that event was not: the last
//! choice is undone (its events relinked) and the walk goes on after that
//! choice's call. The list running out means every operation is placed.
//!
//! Operations without an answer come in two kinds. An *unknown* one has no
//! return event, so it never forces anything: it may be linearized anywhere
//! after its call, or never. A *maybe* one (a completed operation the
//! shrinker treats as possibly without effect) keeps its return event: when
//! the walk reaches it, "it never happened" is one more choice, made like a
//! linearization that leaves the state as it was, and undone like one.

use crate::memo::{hash_one, Bits, Memo};
use crate::model::Model;

/// One operation as the search sees it.
pub(crate) struct SearchOp<'a, M: Model> {
    pub input: &'a M::Input,
    /// `None`: the answer is not known, and the operation may also have
    /// had no effect at all.
    pub output: Option<&'a M::Output>,
    /// Event positions. With no `output`, `ret` is `None` for an unknown
    /// outcome (the effect may come at any time after the call) and `Some`
    /// for a maybe (the effect comes before `ret`, or never).
    pub call: u64,
    pub ret: Option<u64>,
}

impl<M: Model> Clone for SearchOp<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M: Model> Copy for SearchOp<'_, M> {}

/// What a search found. Operations are indices into the slice searched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Linearizable,
    /// No order works. `prefix` is the longest sequence the search could
    /// linearize (the first such, in search order), and `unplaced` the
    /// completed operation whose return came before it could be placed
    /// after that prefix; `state` the model's state after `prefix`.
    Violation {
        prefix: Vec<usize>,
        unplaced: usize,
        state: String,
    },
    /// The step budget ran out first; `longest` is the most operations
    /// linearized at once so far.
    OutOfSteps {
        longest: usize,
    },
}

/// The result of one search, the model steps it took, and its work
/// ([`Searcher::work`]).
pub(crate) struct Search {
    pub found: Found,
    #[cfg_attr(not(test), allow(dead_code))] // the tests count steps
    pub steps: u64,
    pub work: u64,
}

const NIL: u32 = u32::MAX;

/// The event list: node 0 is the head; each operation has a call node and,
/// if it returned, a return node.
struct List {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// The operation of each node, with the top bit set on return nodes.
    node: Vec<u32>,
    call: Vec<u32>,
    ret: Vec<u32>,
}

const RET: u32 = 1 << 31;

impl List {
    fn new<M: Model>(ops: &[SearchOp<'_, M>]) -> Self {
        assert!(
            ops.len() < RET as usize,
            "at most 2^31 operations per partition"
        );
        // (position, node tag); an unknown outcome has no return event.
        let mut events: Vec<(u64, u32)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            events.push((op.call, i as u32));
            if let Some(ret) = op.ret {
                assert!(
                    ret > op.call,
                    "operation {i} returns (event {ret}) before its call (event {})",
                    op.call
                );
                events.push((ret, i as u32 | RET));
            }
        }
        events.sort_unstable();
        for w in events.windows(2) {
            assert_ne!(w[0].0, w[1].0, "two events share position {}", w[0].0);
        }
        let n = events.len() + 1;
        let mut list = List {
            next: Vec::with_capacity(n),
            prev: Vec::with_capacity(n),
            node: Vec::with_capacity(n),
            call: vec![NIL; ops.len()],
            ret: vec![NIL; ops.len()],
        };
        list.node.push(NIL);
        for &(_, tag) in &events {
            let index = list.node.len() as u32;
            if tag & RET != 0 {
                list.ret[(tag & !RET) as usize] = index;
            } else {
                list.call[tag as usize] = index;
            }
            list.node.push(tag);
        }
        for i in 0..n as u32 {
            list.prev.push(if i == 0 { NIL } else { i - 1 });
            list.next.push(if i + 1 == n as u32 { NIL } else { i + 1 });
        }
        list
    }

    fn unlink(&mut self, n: u32) {
        let (p, x) = (self.prev[n as usize], self.next[n as usize]);
        self.next[p as usize] = x;
        if x != NIL {
            self.prev[x as usize] = p;
        }
    }

    /// Relinks `n` where it was; undoes `unlink` when done in reverse order.
    fn relink(&mut self, n: u32) {
        let (p, x) = (self.prev[n as usize], self.next[n as usize]);
        self.next[p as usize] = n;
        if x != NIL {
            self.prev[x as usize] = n;
        }
    }

    fn lift(&mut self, op: usize) {
        self.unlink(self.call[op]);
        if self.ret[op] != NIL {
            self.unlink(self.ret[op]);
        }
    }

    fn unlift(&mut self, op: usize) {
        if self.ret[op] != NIL {
            self.relink(self.ret[op]);
        }
        self.relink(self.call[op]);
    }
}

/// Which alternatives of a configuration a choice came from, in the order
/// they are tried: the operations with an answer that may go next, then
/// those without (unknowns, maybes), then "it never happened" for the
/// maybe whose return was reached. Trying the answered ones first keeps
/// unknown operations from being placed before anything needs them, which
/// matters when a history has many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Answered,
    Optional,
    Never,
}

/// Searches for a linearization of `ops` under `model`, taking at most
/// `steps_max` model steps (the tests' entry point).
#[cfg(test)]
pub(crate) fn search<M: Model>(model: &M, ops: &[SearchOp<'_, M>], steps_max: u64) -> Search {
    search_within(model, ops, steps_max, u64::MAX)
}

/// [`search`], stopping also when its work ([`Searcher::work`]) reaches
/// `work_max` (checked before each step, as `steps_max` is).
pub(crate) fn search_within<M: Model>(
    model: &M,
    ops: &[SearchOp<'_, M>],
    steps_max: u64,
    work_max: u64,
) -> Search {
    let mut s = Searcher::new(model, ops);
    let found = s
        .run_within(steps_max, work_max)
        .unwrap_or_else(|| Found::OutOfSteps {
            longest: s.longest(),
        });
    Search {
        found,
        steps: s.steps(),
        work: s.work(),
    }
}

/// A search that can stop after any number of steps and go on later from
/// exactly where it stopped: paused and resumed, it takes the same steps
/// in the same order and finds the same thing as run in one go.
pub(crate) struct Searcher<'s, 'a, M: Model> {
    model: &'s M,
    ops: &'s [SearchOp<'a, M>],
    list: List,
    twin: Vec<u32>,
    bits: Bits,
    memo: Memo<M::State>,
    /// The choices made: (operation, index of the state before it, phase).
    stack: Vec<(usize, u32, Phase)>,
    /// The longest prefix seen at a dead end, and what could not follow it.
    best: Option<(Vec<usize>, usize, u32)>,
    state: u32,
    steps: u64,
    /// Events the walk has visited (steps included), and the model steps
    /// of checking whether an unknown placement is covered.
    visits: u64,
    phase: Phase,
    entry: u32,
}

impl<'s, 'a, M: Model> Searcher<'s, 'a, M> {
    pub(crate) fn new(model: &'s M, ops: &'s [SearchOp<'a, M>]) -> Self {
        let list = List::new(ops);
        let free = |k: usize| ops[k].output.is_none() && ops[k].ret.is_none();
        let twin = twins(ops, free);
        let bits = Bits::new(ops.len(), free);
        let memo = Memo::new(&bits, model.init());
        let entry = list.next[0];
        Searcher {
            model,
            ops,
            list,
            twin,
            bits,
            memo,
            stack: Vec::new(),
            best: None,
            state: 0,
            steps: 0,
            visits: 0,
            phase: Phase::Answered,
            entry,
        }
    }

    /// The model steps taken so far.
    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }

    /// The work done so far, a measure of time that does not depend on
    /// the machine: one unit per operation handed over (the set-up), per
    /// event the walk visits (each step is one), per configuration entered
    /// in the memo (the initial one aside), and per model step checking
    /// whether an unknown placement is covered.
    pub(crate) fn work(&self) -> u64 {
        self.ops.len() as u64 + self.visits + self.memo.len() as u64 - 1
    }

    /// The most operations linearized at once so far.
    pub(crate) fn longest(&self) -> usize {
        let best = self.best.as_ref().map_or(0, |b| b.0.len());
        best.max(self.stack.len())
    }

    /// Goes on searching until the search ends (`Some`) or `until` steps
    /// have been taken in all (`None`: paused; `run` again to go on).
    /// Once it has ended, it must not be run again.
    pub(crate) fn run(&mut self, until: u64) -> Option<Found> {
        self.run_within(until, u64::MAX)
    }

    /// [`Searcher::run`], pausing also when the work reaches `work_until`
    /// (checked at every visit, so it goes past by at most the few units of
    /// one step: its configuration, and the checks of whether an unknown
    /// placement is covered).
    pub(crate) fn run_within(&mut self, until: u64, work_until: u64) -> Option<Found> {
        let (model, ops) = (self.model, self.ops);
        let free = |k: usize| ops[k].output.is_none() && ops[k].ret.is_none();
        // The set-up's work; with the visits and the memo's entries (the
        // initial one is not work: hence `>`), `work()`.
        let fixed = ops.len() as u64;
        // The hot variables live in locals while the loop runs.
        let (mut state, mut steps, mut visits, mut phase, mut entry) =
            (self.state, self.steps, self.visits, self.phase, self.entry);
        let Searcher {
            list,
            twin,
            bits,
            memo,
            stack,
            best,
            ..
        } = self;
        macro_rules! pause {
            () => {{
                (self.state, self.steps, self.visits, self.phase, self.entry) =
                    (state, steps, visits, phase, entry);
                return None;
            }};
        }
        macro_rules! end {
            ($found:expr) => {{
                (self.steps, self.visits) = (steps, visits);
                return Some($found);
            }};
        }
        loop {
            // Every transition comes back here with the search's whole
            // state in `entry`, `phase`, `state` and the stack: a pause
            // here resumes exactly.
            if fixed + visits + memo.len() as u64 > work_until {
                pause!();
            }
            visits += 1;
            if entry == NIL {
                assert_eq!(
                    phase,
                    Phase::Answered,
                    "the optional walk stops at a return"
                );
                end!(Found::Linearizable);
            }
            let tag = list.node[entry as usize];
            let k = (tag & !RET) as usize;
            let op = &ops[k];
            if tag & RET == 0 {
                // A call: a candidate if it belongs to this phase.
                // Free operations with equal inputs are interchangeable (the
                // earlier called can stand in for the later anywhere), so only
                // the earliest undecided of them is a candidate.
                let waits = twin[k] != NIL && !bits.get(twin[k] as usize);
                if op.output.is_some() != (phase == Phase::Answered) || waits {
                    entry = list.next[entry as usize];
                    continue;
                }
                if steps >= until {
                    pause!();
                }
                steps += 1;
                let current = memo.state(state);
                if let Some(next) = model.step(current, op.input, op.output) {
                    // Without an answer, an effect that changes nothing is the
                    // same as no effect, which is tried anyway.
                    let same = next == *current;
                    let useful = op.output.is_some() || !same;
                    let before = steps;
                    let covered = useful
                        && free(k)
                        && absorbed(model, op, &next, stack, memo, free, &mut steps);
                    // Its checks are model steps: work too.
                    visits += steps - before;
                    if useful && !covered {
                        bits.set(k);
                        let entered = if same {
                            memo.insert_same(bits, state)
                        } else {
                            memo.insert(bits, next)
                        };
                        if let Some(index) = entered {
                            stack.push((k, state, phase));
                            (state, phase, entry) = (index, Phase::Answered, take(list, k));
                            continue;
                        }
                        bits.clear(k);
                    }
                }
                entry = list.next[entry as usize];
                continue;
            }
            // A return: nothing called after it may go before its operation.
            if phase == Phase::Answered {
                (phase, entry) = (Phase::Optional, list.next[0]);
                continue;
            }
            if op.output.is_none() {
                // A maybe whose time is up: it never happened.
                if steps >= until {
                    pause!();
                }
                steps += 1;
                bits.set(k);
                if let Some(index) = memo.insert_same(bits, state) {
                    stack.push((k, state, Phase::Never));
                    (state, phase, entry) = (index, Phase::Answered, take(list, k));
                    continue;
                }
                bits.clear(k);
            } else if best.as_ref().is_none_or(|b| stack.len() > b.0.len()) {
                // A completed operation that had to be linearized by now.
                let prefix = stack
                    .iter()
                    .filter(|c| c.2 != Phase::Never)
                    .map(|c| c.0)
                    .collect();
                *best = Some((prefix, k, state));
            }
            // Undo the last choice and try its configuration's next
            // alternative; after "never", there is none.
            loop {
                let Some((j, before, how)) = stack.pop() else {
                    let (prefix, unplaced, at) = best
                        .take()
                        .expect("a dead end at a completed operation was recorded");
                    let state = model.describe_state(memo.state(at));
                    end!(Found::Violation {
                        prefix,
                        unplaced,
                        state,
                    });
                };
                state = before;
                bits.clear(j);
                list.unlift(j);
                if how != Phase::Never {
                    (phase, entry) = (how, list.next[list.call[j] as usize]);
                    break;
                }
            }
        }
    }
}

/// For each free operation, the latest free operation called before it
/// with an equal input (`NIL` if none).
fn twins<M: Model>(ops: &[SearchOp<'_, M>], free: impl Fn(usize) -> bool) -> Vec<u32> {
    let mut twin = vec![NIL; ops.len()];
    // Free operations by input hash, then call order; equal inputs are
    // found by comparing within a run of equal hashes.
    let mut order: Vec<(u64, usize)> = (0..ops.len())
        .filter(|&k| free(k))
        .map(|k| (hash_one(ops[k].input), k))
        .collect();
    order.sort_unstable_by_key(|&(h, k)| (h, ops[k].call));
    for (i, &(h, k)) in order.iter().enumerate() {
        let mut earlier = order[..i].iter().rev().take_while(|&&(g, _)| g == h);
        if let Some(&(_, j)) = earlier.find(|&&(_, j)| ops[j].input == ops[k].input) {
            twin[k] = j as u32;
        }
    }
    twin
}

/// Whether placing the free operation `op` now, reaching `next`, is
/// covered by placing it earlier: if the choices since some earlier
/// configuration were all free placements, and `op` placed right there
/// reaches the same state, those placements made no difference, and that
/// sibling (free operations never block one another, so `op` was a
/// candidate there too) finishes wherever this would, by domination. A
/// write of a register that overwrites unknown writes is the common case.
fn absorbed<M: Model>(
    model: &M,
    op: &SearchOp<'_, M>,
    next: &M::State,
    stack: &[(usize, u32, Phase)],
    memo: &Memo<M::State>,
    free: impl Fn(usize) -> bool,
    steps: &mut u64,
) -> bool {
    for &(j, before, _) in stack.iter().rev() {
        if !free(j) {
            return false;
        }
        *steps += 1;
        if model.step(memo.state(before), op.input, None).as_ref() == Some(next) {
            return true;
        }
    }
    false
}

/// Lifts `op` and returns where the walk restarts: the head.
fn take(list: &mut List, op: usize) -> u32 {
    list.lift(op);
    list.next[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{Register, RegisterOp, RegisterRet};

    type M = Register<u8>;

    fn op<'a>(
        input: &'a RegisterOp<u8>,
        output: Option<&'a RegisterRet<u8>>,
        call: u64,
        ret: Option<u64>,
    ) -> SearchOp<'a, M> {
        SearchOp {
            input,
            output,
            call,
            ret,
        }
    }

    #[test]
    fn a_read_overlapping_a_write_may_see_it() {
        let (w, r) = (RegisterOp::Write(1), RegisterOp::Read);
        let (wo, ro) = (RegisterRet::Write, RegisterRet::Read(1));
        let ops = [op(&w, Some(&wo), 0, Some(3)), op(&r, Some(&ro), 1, Some(2))];
        let s = search(&Register::new(0), &ops, 100);
        assert_eq!(s.found, Found::Linearizable);
    }

    #[test]
    fn a_stale_read_is_a_violation_with_its_prefix() {
        let (w, r) = (RegisterOp::Write(1), RegisterOp::Read);
        let (wo, ro) = (RegisterRet::Write, RegisterRet::Read(0));
        let ops = [op(&w, Some(&wo), 0, Some(1)), op(&r, Some(&ro), 2, Some(3))];
        let s = search(&Register::new(0), &ops, 100);
        assert_eq!(
            s.found,
            Found::Violation {
                prefix: vec![0],
                unplaced: 1,
                state: "1".into()
            }
        );
    }

    #[test]
    fn the_budget_is_a_distinct_answer() {
        let (w, r) = (RegisterOp::Write(1), RegisterOp::Read);
        let (wo, ro) = (RegisterRet::Write, RegisterRet::Read(1));
        let ops = [op(&w, Some(&wo), 0, Some(3)), op(&r, Some(&ro), 1, Some(2))];
        let s = search(&Register::new(0), &ops, 1);
        assert_eq!(s.found, Found::OutOfSteps { longest: 1 });
        assert_eq!(s.steps, 1);
    }

    #[test]
    fn an_unknown_write_may_never_happen() {
        let (w, r) = (RegisterOp::Write(1), RegisterOp::Read);
        let ro = RegisterRet::Read(0);
        let ops = [op(&w, None, 0, None), op(&r, Some(&ro), 1, Some(2))];
        assert_eq!(
            search(&Register::new(0), &ops, 100).found,
            Found::Linearizable
        );
        let ro = RegisterRet::Read(1);
        let ops = [op(&w, None, 0, None), op(&r, Some(&ro), 1, Some(2))];
        assert_eq!(
            search(&Register::new(0), &ops, 100).found,
            Found::Linearizable
        );
        let ops = [op(&r, Some(&ro), 0, Some(1)), op(&w, None, 2, None)];
        assert!(matches!(
            search(&Register::new(0), &ops, 100).found,
            Found::Violation { .. }
        ));
    }

    #[test]
    fn equal_unknown_operations_are_tried_once() {
        // Twenty unknown writes of 1, then a read of 2: 2^20 subsets of
        // writes, one of which matters.
        let (w, r, ro) = (RegisterOp::Write(1), RegisterOp::Read, RegisterRet::Read(2));
        let mut ops: Vec<SearchOp<'_, M>> = (0..20).map(|c| op(&w, None, c, None)).collect();
        ops.push(op(&r, Some(&ro), 20, Some(21)));
        let s = search(&Register::new(0), &ops, 1_000_000);
        assert!(matches!(s.found, Found::Violation { .. }));
        assert!(s.steps < 100, "{} steps", s.steps);
    }

    #[test]
    fn overwritten_unknown_writes_are_not_explored() {
        // Unknown writes of 0..20, then reads that need the last one: placing
        // any others before it makes no difference.
        let writes: Vec<RegisterOp<u8>> = (0..20).map(RegisterOp::Write).collect();
        let (r, ro) = (RegisterOp::Read, RegisterRet::Read(19));
        let mut ops: Vec<SearchOp<'_, M>> = writes
            .iter()
            .zip(0..)
            .map(|(w, c)| op(w, None, c, None))
            .collect();
        ops.push(op(&r, Some(&ro), 20, Some(21)));
        ops.push(op(&r, Some(&ro), 22, Some(23)));
        let s = search(&Register::new(0), &ops, 1_000_000);
        assert_eq!(s.found, Found::Linearizable);
        assert!(s.steps < 1_000, "{} steps", s.steps);
        // A read of a value nobody wrote, after them: every subset of the
        // writes would be tried without the reductions.
        let bad = RegisterRet::Read(99);
        ops.push(op(&r, Some(&bad), 24, Some(25)));
        let s = search(&Register::new(0), &ops, 1_000_000);
        assert!(matches!(s.found, Found::Violation { .. }));
        assert!(s.steps < 10_000, "{} steps", s.steps);
    }

    #[test]
    fn a_paused_search_goes_on_exactly_where_it_stopped() {
        // Unknown and concurrent writes, then reads: thousands of steps,
        // with dead ends and backtracking; once linearizable, once not.
        let writes: Vec<RegisterOp<u8>> = (0..12).map(RegisterOp::Write).collect();
        let (wo, r) = (RegisterRet::Write, RegisterOp::Read);
        let reads: Vec<RegisterRet<u8>> = [3, 7, 99].map(RegisterRet::Read).to_vec();
        for last in [1, 2] {
            let mut ops: Vec<SearchOp<'_, M>> = writes
                .iter()
                .zip(0..)
                .map(|(w, c)| {
                    let known = c % 3 != 0;
                    op(w, known.then_some(&wo), c, known.then_some(100 + c))
                })
                .collect();
            ops.push(op(&r, Some(&reads[0]), 200, Some(201)));
            ops.push(op(&r, Some(&reads[last]), 202, Some(203)));
            let whole = search(&Register::new(0), &ops, u64::MAX);
            assert!(whole.steps > 100, "{} steps", whole.steps);
            let model = Register::new(0);
            for chunk in [1, 7, 64] {
                let mut s = Searcher::new(&model, &ops);
                let found = loop {
                    // Checks that an unknown placement makes count too, so
                    // a pause may come a few steps past its grant.
                    let until = s.steps() + chunk;
                    if let Some(found) = s.run(until) {
                        break found;
                    }
                    assert!(s.steps() >= until, "paused early");
                };
                assert_eq!(found, whole.found);
                assert_eq!(s.steps(), whole.steps);
                // Paused by work instead: the same again, each pause within
                // one step's few units of its limit.
                let mut s = Searcher::new(&model, &ops);
                let found = loop {
                    let until = s.work() + chunk;
                    if let Some(found) = s.run_within(u64::MAX, until) {
                        break found;
                    }
                    assert!(s.work() >= until, "paused early");
                    assert!(s.work() <= until + 1 + ops.len() as u64, "{}", s.work());
                };
                assert_eq!(found, whole.found);
                assert_eq!(s.steps(), whole.steps);
                assert!(s.work() > s.steps());
            }
        }
    }
}
