//! The entry points: split a history into partitions, search each, and
//! turn the first failure into a [`Violation`].

use crate::history::{History, Op, OpId, Outcome};
use crate::model::Model;
use crate::search::{Found, SearchOp, Searcher};
use crate::shrink::{shrink, unshrunk};
use crate::violation::{CheckError, Shown, Timeout, Undecided, Violation};
use std::collections::BTreeMap;

/// Limits on a check. Every limit counts model steps (calls of
/// [`Model::step`]), never time, so a verdict is a function of the history
/// alone: the same on every machine and every run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The most steps the search of one partition may take. A search that
    /// needs more ends the check with [`CheckError::Timeout`] (unless
    /// another partition is a violation). Memory grows with the steps
    /// taken: each may remember one configuration (a bitset of the
    /// partition's operations and a state).
    pub steps_max: u64,
    /// The cap on shrinking a violation: the most work ([`Violation::work`]
    /// says what it counts) all of shrinking's searches may take together.
    /// Shrinking is also bounded by a multiple of the verdict's own work
    /// (see "Shrinking is bounded" in the crate docs); when its budget runs
    /// out, the violation is reported as found so far, not marked minimal.
    pub shrink_steps_max: u64,
}

impl Default for Options {
    /// 5,000,000 steps per partition (seconds, and a few hundred MB at
    /// worst for a thousand-operation partition), 5,000,000 units of work
    /// for shrinking (about a tenth of a second to a second).
    fn default() -> Self {
        Options {
            steps_max: 5_000_000,
            shrink_steps_max: 5_000_000,
        }
    }
}

/// Checks that `history` is linearizable with respect to `model`, with the
/// default [`Options`].
pub fn linearizable<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
) -> Result<(), CheckError> {
    linearizable_with(model, history, &Options::default())
}

/// Checks that `history` is linearizable with respect to `model`, with the
/// default [`Options`], and does not shrink a violation: the verdict only,
/// at the verdict's cost. A violation is returned as the search found it:
/// [`Violation::core`] is every completed operation of its partition,
/// [`Violation::context`] the others, and it is not marked minimal.
pub fn linearizable_verdict<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
) -> Result<(), CheckError> {
    linearizable_verdict_with(model, history, &Options::default())
}

/// [`linearizable_verdict`] with these [`Options`]
/// ([`Options::shrink_steps_max`] is not used).
pub fn linearizable_verdict_with<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
    options: &Options,
) -> Result<(), CheckError> {
    check(model, history, options, false)
}

/// Checks that `history` is linearizable with respect to `model`.
///
/// Partitions are searched in turns (see "Limits" in the crate docs): each
/// round lets every undecided partition go on for twice as many steps as
/// the round before, in key order. The first violation found ends the
/// check: it is shrunk and returned. A partition whose search runs out of
/// steps is remembered and the others are still searched: a violation
/// anywhere wins over a timeout, and `Ok` means every partition was
/// searched to the end.
pub fn linearizable_with<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
    options: &Options,
) -> Result<(), CheckError> {
    check(model, history, options, true)
}

/// The most work shrinking may take: [`SHRINK_MULTIPLE`] times the
/// verdict's work, or [`SHRINK_FLOOR`] if more, and never more than `cap`.
pub(crate) fn shrink_budget(verdict: u64, cap: u64) -> u64 {
    verdict
        .saturating_mul(SHRINK_MULTIPLE)
        .max(SHRINK_FLOOR)
        .min(cap)
}

/// Shrinking may take this many times the verdict's work...
pub(crate) const SHRINK_MULTIPLE: u64 = 10;
/// ... or this much if more: enough to shrink a small history fully
/// (a millisecond or two).
pub(crate) const SHRINK_FLOOR: u64 = 50_000;

fn check<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
    options: &Options,
    shrinking: bool,
) -> Result<(), CheckError> {
    assert!(options.steps_max > 0, "Options::steps_max must be positive");
    let parts = partitions(model, history);
    let ops: Vec<Vec<SearchOp<'_, M>>> = parts
        .iter()
        .map(|(_, ids)| {
            ids.iter()
                .map(|&id| search_op::<M>(history.op(id)))
                .collect()
        })
        .collect();
    let mut searchers: Vec<Option<Searcher<'_, '_, M>>> = parts.iter().map(|_| None).collect();
    let mut undecided = Vec::new();
    let mut live: Vec<usize> = (0..parts.len()).collect();
    let mut grant = FIRST_GRANT.min(options.steps_max);
    // The steps taken by every partition's search so far, and their work
    // (the verdict's).
    let mut spent = 0u64;
    let mut work = 0u64;
    while !live.is_empty() {
        // Alone, a partition needs no turns: it gets the rest of its budget.
        if live.len() == 1 {
            grant = options.steps_max;
        }
        let mut next = Vec::with_capacity(live.len());
        for p in live {
            let s = searchers[p].get_or_insert_with(|| Searcher::new(model, &ops[p]));
            let before = (s.steps(), s.work());
            let found = s.run(grant);
            spent += s.steps() - before.0;
            work += s.work() - before.1;
            match found {
                None if s.steps() < options.steps_max => next.push(p),
                None => {
                    undecided.push((
                        p,
                        Undecided {
                            partition: parts[p].0.clone(),
                            ops: ops[p].len(),
                            steps: s.steps(),
                            longest: s.longest(),
                        },
                    ));
                    searchers[p] = None;
                }
                Some(Found::Linearizable) => searchers[p] = None,
                Some(Found::OutOfSteps { .. }) => unreachable!("a searcher pauses instead"),
                Some(Found::Violation {
                    prefix,
                    unplaced,
                    state,
                }) => {
                    let (key, ids) = &parts[p];
                    let ops = &ops[p];
                    let found = (prefix, unplaced, state);
                    let found = if shrinking {
                        let budget = shrink_budget(work, options.shrink_steps_max);
                        shrink(model, ops, found, options.steps_max, budget)
                    } else {
                        unshrunk(ops, found)
                    };
                    let show = |i: usize| Shown::new(model, ids[i], history.op(ids[i]));
                    return Err(CheckError::Violation(Box::new(Violation {
                        partition: key.clone(),
                        partition_ops: ops.len(),
                        end: found.end,
                        core: found.core.iter().map(|&i| show(i)).collect(),
                        context: found.context.iter().map(|&i| show(i)).collect(),
                        minimal: found.minimal,
                        linearized: found.prefix.iter().map(|&i| ids[i]).collect(),
                        unplaced: ids[found.unplaced],
                        state: found.state,
                        steps: spent,
                        work,
                        shrink_work: found.work,
                    })));
                }
            }
        }
        live = next;
        grant = grant.saturating_mul(2).min(options.steps_max);
    }
    if undecided.is_empty() {
        Ok(())
    } else {
        undecided.sort_by_key(|u| u.0);
        Err(CheckError::Timeout(Timeout {
            steps_max: options.steps_max,
            partitions: undecided.into_iter().map(|u| u.1).collect(),
        }))
    }
}

/// The steps every partition may take in the first round; each round
/// doubles it.
pub(crate) const FIRST_GRANT: u64 = 1 << 10;

/// The operations to check (all but the failed), by partition key in key
/// order; one partition with no key if the model does not split them all.
fn partitions<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
) -> Vec<(Option<String>, Vec<OpId>)> {
    let ids = (0..history.len())
        .map(|i| OpId(i as u32))
        .filter(|&id| !matches!(history.op(id).outcome(), Outcome::Fail));
    let mut keyed: BTreeMap<String, Vec<OpId>> = BTreeMap::new();
    for id in ids.clone() {
        match model.partition(history.op(id).input()) {
            Some(key) => keyed.entry(key).or_default().push(id),
            None => {
                let all: Vec<OpId> = ids.collect();
                return if all.is_empty() {
                    Vec::new()
                } else {
                    vec![(None, all)]
                };
            }
        }
    }
    keyed
        .into_iter()
        .map(|(key, ids)| (Some(key), ids))
        .collect()
}

fn search_op<M: Model>(op: &Op<M::Input, M::Output>) -> SearchOp<'_, M> {
    let call = op.call().index;
    match op.outcome() {
        Outcome::Ok(output) => SearchOp {
            input: op.input(),
            output: Some(output),
            call,
            ret: op.ret().map(|e| e.index),
        },
        // A failed operation is filtered out before; the others may take
        // effect at any time after their call, or never.
        Outcome::Fail | Outcome::Unknown | Outcome::Pending => SearchOp {
            input: op.input(),
            output: None,
            call,
            ret: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{Kv, KvOp, KvRet, Register, RegisterOp, RegisterRet};

    #[test]
    fn failed_operations_are_ignored() {
        let mut h = History::new();
        let w = h.invoke(0, RegisterOp::Write(1), None);
        h.fail(w, None);
        let r = h.invoke(0, RegisterOp::Read, None);
        h.ok(r, RegisterRet::Read(0), None);
        assert!(linearizable(&Register::new(0u8), &h).is_ok());
    }

    #[test]
    fn partitions_are_by_key_in_key_order() {
        let mut h = History::new();
        for (c, k) in [(0, "b"), (1, "a"), (2, "b")] {
            let id = h.invoke(c, KvOp::Put(k, 1u8), None);
            h.ok(id, KvRet::Put, None);
        }
        let p = partitions(&Kv::new(), &h);
        assert_eq!(
            p,
            [
                (Some("\"a\"".into()), vec![OpId(1)]),
                (Some("\"b\"".into()), vec![OpId(0), OpId(2)])
            ]
        );
        assert!(partitions(&Register::new(0u8), &History::new()).is_empty());
    }

    #[test]
    fn a_violation_in_any_partition_wins_over_a_timeout() {
        let mut h = History::new();
        // Key "a": concurrent writes and reads, to need more than 1 step.
        let a = h.invoke(0, KvOp::Put("a", 1u8), None);
        let b = h.invoke(1, KvOp::Get("a"), None);
        h.ok(b, KvRet::Get(Some(1)), None);
        h.ok(a, KvRet::Put, None);
        // Key "b": a read of a value never written.
        let c = h.invoke(0, KvOp::Get("b"), None);
        h.ok(c, KvRet::Get(Some(7)), None);
        let tight = Options {
            steps_max: 1,
            shrink_steps_max: 100,
        };
        match linearizable_with(&Kv::new(), &h, &tight) {
            Err(CheckError::Violation(v)) => assert_eq!(v.partition(), Some("\"b\"")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn running_out_of_steps_is_never_ok() {
        let mut h = History::new();
        let a = h.invoke(0, RegisterOp::Write(1u8), None);
        let b = h.invoke(1, RegisterOp::Read, None);
        h.ok(b, RegisterRet::Read(1), None);
        h.ok(a, RegisterRet::Write, None);
        let tight = Options {
            steps_max: 1,
            shrink_steps_max: 0,
        };
        match linearizable_with(&Register::new(0), &h, &tight) {
            Err(CheckError::Timeout(t)) => {
                assert_eq!(t.partitions().len(), 1);
                assert!(t.to_string().contains("not decided"), "{t}");
            }
            other => panic!("{other:?}"),
        }
        assert!(linearizable(&Register::new(0), &h).is_ok());
    }

    /// Key "a": `n` concurrent writes of distinct values, then a read of
    /// a value none wrote: a violation the search proves only after trying
    /// every order of the writes (about 2^n configurations). Key "b": a
    /// read of a value never written, proven in one step.
    fn hard_a_easy_b(n: u8, with_b: bool) -> History<KvOp<&'static str, u8>, KvRet<u8>> {
        let mut h = History::new();
        let writes: Vec<OpId> = (0..n)
            .map(|v| h.invoke(u32::from(v), KvOp::Put("a", v), None))
            .collect();
        for w in writes {
            h.ok(w, KvRet::Put, None);
        }
        let r = h.invoke(0, KvOp::Get("a"), None);
        h.ok(r, KvRet::Get(Some(99)), None);
        if with_b {
            let r = h.invoke(0, KvOp::Get("b"), None);
            h.ok(r, KvRet::Get(Some(7)), None);
        }
        h
    }

    #[test]
    fn a_hard_partition_does_not_delay_a_violation_in_another() {
        // "a" alone takes far more steps than a round's first grant.
        match linearizable(&Kv::new(), &hard_a_easy_b(14, false)) {
            Err(CheckError::Violation(v)) => {
                assert!(v.steps() > 100 * FIRST_GRANT, "{}", v.steps())
            }
            other => panic!("{other:?}"),
        }
        // Together, "b" is found in the first round, before "a" has had
        // more than its first grant.
        match linearizable(&Kv::new(), &hard_a_easy_b(14, true)) {
            Err(CheckError::Violation(v)) => {
                assert_eq!(v.partition(), Some("\"b\""));
                assert!(v.steps() <= FIRST_GRANT + 1, "{}", v.steps());
            }
            other => panic!("{other:?}"),
        }
    }

    /// A long sequential register history, each write read back, then a
    /// stale read: the verdict is a walk through it, shrinking it fully
    /// takes hundreds of searches of hundreds of operations.
    fn long_then_stale(n: u8) -> History<RegisterOp<u8>, RegisterRet<u8>> {
        let mut h = History::new();
        for v in 0..n {
            let w = h.invoke(0, RegisterOp::Write(v), None);
            h.ok(w, RegisterRet::Write, None);
            let r = h.invoke(1, RegisterOp::Read, None);
            h.ok(r, RegisterRet::Read(v), None);
        }
        let r = h.invoke(1, RegisterOp::Read, None);
        h.ok(r, RegisterRet::Read(3), None);
        h
    }

    #[test]
    fn shrinking_is_bounded_by_a_multiple_of_the_verdict() {
        let (model, h) = (Register::new(0u8), long_then_stale(200));
        let v = match linearizable(&model, &h) {
            Err(CheckError::Violation(v)) => v,
            other => panic!("{other:?}"),
        };
        let bound = (SHRINK_MULTIPLE * v.work()).max(SHRINK_FLOOR);
        assert_eq!(
            shrink_budget(v.work(), Options::default().shrink_steps_max),
            bound
        );
        assert!(v.shrink_work() <= bound, "{} > {bound}", v.shrink_work());
        assert!(!v.is_minimal(), "out of budget, so not proven minimal");
        // Unbounded, the same shrinking takes far more.
        let ops: Vec<SearchOp<'_, Register<u8>>> = h.ops().iter().map(search_op).collect();
        let found = match crate::search::search(&model, &ops, u64::MAX).found {
            Found::Violation {
                prefix,
                unplaced,
                state,
            } => (prefix, unplaced, state),
            other => panic!("{other:?}"),
        };
        let all = shrink(&model, &ops, found, u64::MAX, u64::MAX);
        assert!(all.minimal);
        assert!(all.work > 3 * bound, "{} vs {bound}", all.work);
        // The cap binds when lower.
        let capped = Options {
            shrink_steps_max: 700,
            ..Options::default()
        };
        match linearizable_with(&model, &h, &capped) {
            Err(CheckError::Violation(v)) => {
                assert!(v.shrink_work() <= 700, "{}", v.shrink_work());
                assert!(v.shrink_work() > 0);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_small_violation_is_shrunk_fully_whatever_its_verdict_cost() {
        // Verdict work of a few dozen units; shrinking needs more than
        // the multiple allows, which the floor gives.
        let v = linearizable(&Register::new(0), &long_then_stale(5)).unwrap_err();
        let v = v.violation().unwrap();
        assert!(v.is_minimal(), "{v}");
        assert!(
            v.shrink_work() > SHRINK_MULTIPLE * v.work(),
            "{} vs {}",
            v.shrink_work(),
            v.work()
        );
        assert!(v.shrink_work() <= SHRINK_FLOOR);
    }

    #[test]
    fn the_verdict_alone_does_not_shrink() {
        let (model, h) = (Register::new(0u8), long_then_stale(200));
        let shrunk = linearizable(&model, &h).unwrap_err();
        let shrunk = shrunk.violation().unwrap();
        let v = linearizable_verdict(&model, &h).unwrap_err();
        let v = v.violation().unwrap();
        assert_eq!(v.shrink_work(), 0);
        assert!(shrunk.shrink_work() > 0);
        // The same search found it.
        assert_eq!((v.steps(), v.work()), (shrunk.steps(), shrunk.work()));
        // Reported as found: every completed operation, not minimal.
        assert_eq!(v.core().len(), h.len());
        assert!(v.context().is_empty());
        assert!(!v.is_minimal());
        assert_eq!(v.unplaced(), OpId(400));
        assert_eq!(v.linearized().len(), 400);
        assert_eq!(v.state(), "199");
        let mut ok = History::new();
        let w = ok.invoke(0, RegisterOp::Write(1u8), None);
        ok.ok(w, RegisterRet::Write, None);
        assert!(linearizable_verdict(&model, &ok).is_ok());
    }
}
