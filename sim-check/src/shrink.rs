//! Shrinking a non-linearizable partition to the few operations that show
//! why.
//!
//! Removing operations is the obvious way to shrink, and the wrong one:
//! without the write a read saw, the read alone becomes "a read of a value
//! never written", a violation the service never committed. So shrinking
//! here only ever *weakens* what was recorded, which can never create a
//! violation:
//!
//! 1. **Cut** the history at the earliest return event `end` such that the
//!    history up to `end` is already not linearizable (ops called later
//!    dropped, ops still open at `end` treated as unknown). The operation
//!    returning at `end` is the one whose answer could not be placed.
//! 2. **Core**: a set of completed operations whose answers cannot all be
//!    explained, even when every other operation up to `end` is a *maybe*
//!    (it took effect between its call and return, or never, with any
//!    answer); made 1-minimal by delta debugging: treating any one core
//!    operation as a maybe too makes the cut history linearizable.
//! 3. **Context**: the maybes worth showing beside the core: a 1-minimal set
//!    of them such that every core operation stays needed — taking it as a
//!    maybe too, with only the context beside, is linearizable — typically
//!    the writes the core's reads saw. Dropping a maybe only removes
//!    possibilities, so core plus context is still not linearizable.

use crate::model::Model;
use crate::search::{search_within, Found, SearchOp};

/// What shrinking kept, as indices into the partition's operations.
pub(crate) struct Shrunk {
    /// The history was cut after this event.
    pub end: u64,
    /// The core, in call order.
    pub core: Vec<usize>,
    /// The maybes shown beside it, in call order.
    pub context: Vec<usize>,
    /// Whether the core was proven 1-minimal (no search ran out of budget).
    pub minimal: bool,
    /// The search of core plus context: its longest linearizable prefix,
    /// the core operation that could not follow it, the state after it.
    pub prefix: Vec<usize>,
    pub unplaced: usize,
    pub state: String,
    /// The work shrinking took, as `Searcher::work` counts it.
    pub work: u64,
}

enum Trial {
    Violates {
        prefix: Vec<usize>,
        unplaced: usize,
        state: String,
    },
    Passes,
    Undecided,
}

struct Shrinker<'m, 'a, M: Model> {
    model: &'m M,
    ops: &'m [SearchOp<'a, M>],
    steps_max: u64,
    /// Work left, and work done.
    budget: u64,
    work: u64,
}

impl<M: Model> Shrinker<'_, '_, M> {
    /// Searches the history cut at `end`, made of `recorded` (as recorded)
    /// and `maybe` (answers forgotten, possibly without effect).
    fn trial(&mut self, end: u64, recorded: &[usize], maybe: &[usize]) -> Trial {
        let mut index: Vec<usize> = Vec::with_capacity(recorded.len() + maybe.len());
        let mut sub: Vec<SearchOp<'_, M>> = Vec::with_capacity(index.capacity());
        for (&i, weak) in recorded
            .iter()
            .map(|i| (i, false))
            .chain(maybe.iter().map(|i| (i, true)))
        {
            let op = self.ops[i];
            assert!(
                op.call < end,
                "a cut history holds only operations called before its end"
            );
            let (output, ret) = match (op.output, op.ret) {
                (Some(output), Some(ret)) if ret <= end => {
                    (Some(output).filter(|_| !weak), Some(ret))
                }
                // Unknown, or still open at the cut: its effect may come at
                // any time after its call.
                _ => (None, None),
            };
            index.push(i);
            sub.push(SearchOp {
                input: op.input,
                output,
                call: op.call,
                ret,
            });
        }
        // Handing the operations over is work (`Searcher::work`), even
        // when no search follows.
        let setup = sub.len() as u64;
        if self.budget <= setup {
            self.budget = 0;
            return Trial::Undecided;
        }
        if sub.iter().all(|op| op.output.is_none()) {
            self.budget -= setup;
            self.work += setup;
            return Trial::Passes;
        }
        let s = search_within(self.model, &sub, self.steps_max, self.budget);
        self.budget = self.budget.saturating_sub(s.work);
        self.work += s.work;
        match s.found {
            Found::Linearizable => Trial::Passes,
            Found::OutOfSteps { .. } => Trial::Undecided,
            Found::Violation {
                prefix,
                unplaced,
                state,
            } => Trial::Violates {
                prefix: prefix.into_iter().map(|i| index[i]).collect(),
                unplaced: index[unplaced],
                state,
            },
        }
    }

    /// The operations called before `end`.
    fn called_before(&self, end: u64) -> Vec<usize> {
        (0..self.ops.len())
            .filter(|&i| self.ops[i].call < end)
            .collect()
    }
}

/// Shrinks `ops` (a partition already found not linearizable; `found` is
/// that search's prefix, unplaced operation and state) within `budget`
/// model steps, no search taking more than `steps_max`.
pub(crate) fn shrink<M: Model>(
    model: &M,
    ops: &[SearchOp<'_, M>],
    found: (Vec<usize>, usize, String),
    steps_max: u64,
    budget: u64,
) -> Shrunk {
    let mut s = Shrinker {
        model,
        ops,
        steps_max,
        budget,
        work: 0,
    };
    let completed: Vec<usize> = (0..ops.len())
        .filter(|&i| ops[i].output.is_some())
        .collect();
    let (prefix, unplaced, state) = found;
    let last = completed
        .iter()
        .filter_map(|&i| ops[i].ret)
        .max()
        .expect("a violation has a completed operation");
    let mut best = Shrunk {
        end: last,
        core: s.called_before(last),
        context: Vec::new(),
        minimal: false,
        prefix,
        unplaced,
        state,
        work: 0,
    };
    let mut decided = true;

    // 1. The earliest cut that is still a violation (a later cut keeps all
    //    of an earlier one's constraints, so this is a binary search; the
    //    last cut is the whole partition, known to fail).
    let mut returns: Vec<u64> = completed.iter().filter_map(|&i| ops[i].ret).collect();
    returns.sort_unstable();
    let (mut lo, mut hi) = (0, returns.len() - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let end = returns[mid];
        match s.trial(end, &s.called_before(end), &[]) {
            Trial::Violates {
                prefix,
                unplaced,
                state,
            } => {
                best = Shrunk {
                    end,
                    core: s.called_before(end),
                    prefix,
                    unplaced,
                    state,
                    ..best
                };
                hi = mid;
            }
            Trial::Passes => lo = mid + 1,
            Trial::Undecided => {
                decided = false;
                lo = mid + 1;
            }
        }
    }
    let end = best.end;
    let within = std::mem::take(&mut best.core);
    best.core = within
        .iter()
        .copied()
        .filter(|&i| ops[i].output.is_some() && ops[i].ret.is_some_and(|r| r <= end))
        .collect();
    let mut member = vec![false; ops.len()];
    let mut others = |core: &[usize]| -> Vec<usize> {
        for &i in core {
            member[i] = true;
        }
        let rest = within.iter().copied().filter(|&i| !member[i]).collect();
        for &i in core {
            member[i] = false;
        }
        rest
    };

    // 2. The core: weaken chunks of halving size, then single operations
    //    until a whole pass weakens none.
    let mut adopt = |best: &mut Shrunk, core: Vec<usize>, t: Trial| match t {
        Trial::Violates {
            prefix,
            unplaced,
            state,
        } => {
            (best.core, best.prefix, best.unplaced, best.state) = (core, prefix, unplaced, state);
            true
        }
        Trial::Passes => false,
        Trial::Undecided => {
            decided = false;
            false
        }
    };
    let mut chunk = best.core.len() / 2;
    while chunk >= 2 && s.budget > 0 {
        let mut at = 0;
        while at < best.core.len() && s.budget > 0 {
            let stop = (at + chunk).min(best.core.len());
            let core: Vec<usize> = best.core[..at]
                .iter()
                .chain(&best.core[stop..])
                .copied()
                .collect();
            let t = s.trial(end, &core, &others(&core));
            if !adopt(&mut best, core, t) {
                at = stop;
            }
        }
        chunk /= 2;
    }
    let mut proven = false;
    while s.budget > 0 {
        let mut changed = false;
        let mut all_decided = true;
        let mut at = 0;
        while at < best.core.len() {
            let core: Vec<usize> = best
                .core
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != at)
                .map(|(_, &i)| i)
                .collect();
            let t = s.trial(end, &core, &others(&core));
            all_decided &= !matches!(t, Trial::Undecided);
            if adopt(&mut best, core, t) {
                changed = true;
            } else {
                at += 1;
            }
        }
        if !changed {
            proven = all_decided;
            break;
        }
    }
    best.minimal = proven && decided;

    // 3. The context: drop maybes (chunks, then one by one) while every
    //    core operation stays needed.
    let core = best.core.clone();
    let needed = |s: &mut Shrinker<'_, '_, M>, context: &[usize]| {
        core.iter().all(|&c| {
            let rest: Vec<usize> = core.iter().copied().filter(|&x| x != c).collect();
            let maybe: Vec<usize> = context.iter().copied().chain([c]).collect();
            matches!(s.trial(end, &rest, &maybe), Trial::Passes)
        })
    };
    let mut context = others(&core);
    let mut chunk = context.len().div_ceil(2);
    while chunk >= 1 && s.budget > 0 {
        let mut at = 0;
        while at < context.len() && s.budget > 0 {
            let stop = (at + chunk).min(context.len());
            let cand: Vec<usize> = context[..at]
                .iter()
                .chain(&context[stop..])
                .copied()
                .collect();
            if needed(&mut s, &cand) {
                context = cand;
            } else {
                at = stop;
            }
        }
        chunk /= 2;
    }
    match s.trial(end, &core, &context) {
        Trial::Violates {
            prefix,
            unplaced,
            state,
        } => {
            (best.context, best.prefix, best.unplaced, best.state) =
                (context, prefix, unplaced, state);
        }
        // Out of budget: the last proven set is the core with every other
        // operation as a maybe.
        _ => best.context = others(&core),
    }
    best.work = s.work;
    best
}

/// A violation as the search found it, not shrunk: the whole partition up
/// to its last return, every completed operation in the core, the others
/// as context; not minimal.
pub(crate) fn unshrunk<M: Model>(
    ops: &[SearchOp<'_, M>],
    (prefix, unplaced, state): (Vec<usize>, usize, String),
) -> Shrunk {
    let end = ops
        .iter()
        .filter(|op| op.output.is_some())
        .filter_map(|op| op.ret)
        .max()
        .expect("a violation has a completed operation");
    let (core, context) = (0..ops.len())
        .filter(|&i| ops[i].call < end)
        .partition(|&i| ops[i].output.is_some());
    Shrunk {
        end,
        core,
        context,
        minimal: false,
        prefix,
        unplaced,
        state,
        work: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{Register, RegisterOp, RegisterRet};
    use crate::search::search;

    type M = Register<u8>;

    fn first(m: &M, ops: &[SearchOp<'_, M>]) -> (Vec<usize>, usize, String) {
        match search(m, ops, 10_000).found {
            Found::Violation {
                prefix,
                unplaced,
                state,
            } => (prefix, unplaced, state),
            other => panic!("not a violation: {other:?}"),
        }
    }

    #[test]
    fn a_stale_read_shrinks_to_the_write_and_the_read() {
        let m = Register::new(0u8);
        let (w1, w2, r) = (RegisterOp::Write(1), RegisterOp::Write(2), RegisterOp::Read);
        let (w, r0, r1, r2) = (
            RegisterRet::Write,
            RegisterRet::Read(0),
            RegisterRet::Read(1),
            RegisterRet::Read(2),
        );
        // write 2 | read -> 2 | write 1 (unknown) | write 1 | read -> 1 | read -> 0 | read -> 1
        let ops = [
            SearchOp::<M> {
                input: &w2,
                output: Some(&w),
                call: 0,
                ret: Some(1),
            },
            SearchOp {
                input: &r,
                output: Some(&r2),
                call: 2,
                ret: Some(3),
            },
            SearchOp {
                input: &w1,
                output: None,
                call: 4,
                ret: None,
            },
            SearchOp {
                input: &w1,
                output: Some(&w),
                call: 5,
                ret: Some(6),
            },
            SearchOp {
                input: &r,
                output: Some(&r1),
                call: 7,
                ret: Some(8),
            },
            SearchOp {
                input: &r,
                output: Some(&r0),
                call: 9,
                ret: Some(10),
            },
            SearchOp {
                input: &r,
                output: Some(&r1),
                call: 11,
                ret: Some(12),
            },
        ];
        let s = shrink(&m, &ops, first(&m, &ops), 1000, 100_000);
        assert!(s.minimal);
        assert_eq!(s.end, 10);
        // The history is cut at the stale read's return. Reading 1 then 0,
        // when nothing writes 0, is enough; a write of 1 explains the first
        // read.
        assert_eq!(s.core, [4, 5]);
        assert_eq!(s.context, [3]);
        assert_eq!(s.unplaced, 5);
    }

    #[test]
    fn the_write_a_read_saw_is_context_not_a_missing_value() {
        let m = Register::new(0u8);
        let (w1, r) = (RegisterOp::Write(1), RegisterOp::Read);
        let (w, r0, r1) = (
            RegisterRet::Write,
            RegisterRet::Read(0),
            RegisterRet::Read(1),
        );
        // write 1 || read -> 1, then read -> 0: the second read is stale.
        // Removing the write would leave "read -> 1" unexplained; weakening
        // it keeps the read explained, so the core is the two reads.
        let ops = [
            SearchOp::<M> {
                input: &w1,
                output: Some(&w),
                call: 0,
                ret: Some(3),
            },
            SearchOp {
                input: &r,
                output: Some(&r1),
                call: 1,
                ret: Some(2),
            },
            SearchOp {
                input: &r,
                output: Some(&r0),
                call: 4,
                ret: Some(5),
            },
        ];
        let s = shrink(&m, &ops, first(&m, &ops), 1000, 100_000);
        assert!(s.minimal);
        assert_eq!(s.core, [1, 2]);
        assert_eq!(s.context, [0]);
        assert_eq!(s.unplaced, 2);
        assert_eq!(s.prefix, [0, 1]);
    }

    #[test]
    fn an_exhausted_budget_is_not_called_minimal() {
        let m = Register::new(0u8);
        let (w1, r) = (RegisterOp::Write(1), RegisterOp::Read);
        let (w, r0) = (RegisterRet::Write, RegisterRet::Read(0));
        let ops = [
            SearchOp::<M> {
                input: &w1,
                output: Some(&w),
                call: 0,
                ret: Some(1),
            },
            SearchOp {
                input: &r,
                output: Some(&r0),
                call: 2,
                ret: Some(3),
            },
            SearchOp {
                input: &r,
                output: Some(&r0),
                call: 4,
                ret: Some(5),
            },
        ];
        let s = shrink(&m, &ops, first(&m, &ops), 1000, 0);
        assert!(!s.minimal);
        assert_eq!(s.core, [0, 1, 2]);
    }
}
