//! The entry points: split a history into partitions, search each, and
//! turn the first failure into a [`Violation`].

use crate::history::{History, Op, OpId, Outcome};
use crate::model::Model;
use crate::search::{search, Found, SearchOp};
use crate::shrink::shrink;
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
    /// The most steps all the searches of shrinking a violation may take
    /// together; when they run out, the violation is reported as found so
    /// far, not marked minimal.
    pub shrink_steps_max: u64,
}

impl Default for Options {
    /// 5,000,000 steps per partition (seconds, and a few hundred MB at
    /// worst for a thousand-operation partition), 5,000,000 for shrinking.
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

/// Checks that `history` is linearizable with respect to `model`.
///
/// Partitions are searched in key order; the first violation is shrunk and
/// returned at once. A partition whose search runs out of steps is
/// remembered and the others are still searched: a violation anywhere wins
/// over a timeout, and `Ok` means every partition was searched to the end.
pub fn linearizable_with<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
    options: &Options,
) -> Result<(), CheckError> {
    assert!(options.steps_max > 0, "Options::steps_max must be positive");
    let mut undecided = Vec::new();
    for (key, ids) in partitions(model, history) {
        let ops: Vec<SearchOp<'_, M>> = ids
            .iter()
            .map(|&id| search_op::<M>(history.op(id)))
            .collect();
        let s = search(model, &ops, options.steps_max);
        match s.found {
            Found::Linearizable => {}
            Found::OutOfSteps { longest } => {
                undecided.push(Undecided {
                    partition: key,
                    ops: ops.len(),
                    steps: s.steps,
                    longest,
                });
            }
            Found::Violation {
                prefix,
                unplaced,
                state,
            } => {
                let found = shrink(
                    model,
                    &ops,
                    (prefix, unplaced, state),
                    options.steps_max,
                    options.shrink_steps_max,
                );
                let show = |i: usize| Shown::new(model, ids[i], history.op(ids[i]));
                return Err(CheckError::Violation(Box::new(Violation {
                    partition: key,
                    partition_ops: ops.len(),
                    end: found.end,
                    core: found.core.iter().map(|&i| show(i)).collect(),
                    context: found.context.iter().map(|&i| show(i)).collect(),
                    minimal: found.minimal,
                    linearized: found.prefix.iter().map(|&i| ids[i]).collect(),
                    unplaced: ids[found.unplaced],
                    state: found.state,
                })));
            }
        }
    }
    if undecided.is_empty() {
        Ok(())
    } else {
        Err(CheckError::Timeout(Timeout {
            steps_max: options.steps_max,
            partitions: undecided,
        }))
    }
}

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
}
