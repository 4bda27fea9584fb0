//! The sequential specification a history is checked against.

use std::fmt::Debug;
use std::hash::Hash;

/// A sequential specification: what one operation at a time does to a state.
///
/// The checker looks for an order of the history's operations, consistent
/// with real time, in which replaying them through [`Model::step`] from
/// [`Model::init`] accepts every answer.
///
/// A model must be deterministic: `step` is a function of its arguments,
/// and equal states ([`Eq`], [`Hash`]) behave the same. The checker
/// memoizes on states, so a state must hold everything that decides later
/// answers.
pub trait Model {
    /// What the object holds between operations.
    type State: Clone + Eq + Hash + Debug;
    /// What an operation asks. Equal inputs must mean the same request:
    /// unknown operations with equal inputs are interchangeable, which the
    /// search uses to try only one of them.
    type Input: Debug + Eq + Hash;
    /// What an operation answers.
    type Output: Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `input` is applied to `state`, if that is possible.
    ///
    /// With `Some(output)` (the operation completed): `None` when the
    /// object, in `state`, could not have answered `output`.
    ///
    /// With `None` (the outcome is unknown: the operation timed out, or
    /// never ended): the state after the operation *took effect*, whatever
    /// it would have answered; `None` only if it could not take effect in
    /// `state` at all. Never taking effect is always possible and is tried
    /// by the checker itself, so `step` does not model it. An unknown
    /// operation whose step leaves the state as it was (a read, a
    /// compare-and-set whose comparison fails) constrains nothing and is
    /// skipped.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// The partition an operation belongs to, for a model that is a
    /// product of independent objects (a map is one register per key).
    ///
    /// When every operation of a history has `Some(key)`, each key's
    /// operations are checked alone, from [`Model::init`], which is exact
    /// for such models (linearizability is compositional: the whole is
    /// linearizable iff each part is) and turns one search exponential in
    /// the concurrency of the whole history into many small ones. If any
    /// operation answers `None` (the default), the history is checked as one.
    /// The key is also how a violation names its partition.
    fn partition(&self, input: &Self::Input) -> Option<String> {
        let _ = input;
        None
    }

    /// A short text for an operation in a violation's timeline: `output` is
    /// `None` when the outcome is unknown.
    fn describe(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(output) => format!("{input:?} -> {output:?}"),
            None => format!("{input:?}"),
        }
    }

    /// A short text for a state in a violation.
    fn describe_state(&self, state: &Self::State) -> String {
        format!("{state:?}")
    }
}
