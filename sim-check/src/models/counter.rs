//! A counter: add, read.

use super::mismatch;
use crate::Model;

/// A 64-bit counter starting at `initial`; additions wrap.
#[derive(Clone, Debug, Default)]
pub struct Counter {
    initial: i64,
}

impl Counter {
    /// A counter at `initial`.
    pub fn new(initial: i64) -> Self {
        Counter { initial }
    }
}

/// An operation on a [`Counter`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CounterOp {
    Add(i64),
    Read,
}

/// A [`Counter`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CounterRet {
    Add,
    Read(i64),
}

impl Model for Counter {
    type State = i64;
    type Input = CounterOp;
    type Output = CounterRet;

    fn init(&self) -> i64 {
        self.initial
    }

    fn step(&self, s: &i64, input: &CounterOp, output: Option<&CounterRet>) -> Option<i64> {
        match (input, output) {
            (CounterOp::Add(n), None | Some(CounterRet::Add)) => Some(s.wrapping_add(*n)),
            (CounterOp::Read, None) => Some(*s),
            (CounterOp::Read, Some(CounterRet::Read(v))) => (v == s).then_some(*s),
            (input, Some(output)) => mismatch("counter", input, output),
        }
    }

    fn describe(&self, input: &CounterOp, output: Option<&CounterRet>) -> String {
        match (input, output) {
            (CounterOp::Add(n), _) => format!("add {n}"),
            (CounterOp::Read, Some(CounterRet::Read(v))) => format!("read -> {v}"),
            (CounterOp::Read, _) => "read".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        let m = Counter::new(5);
        assert_eq!(
            m.step(&5, &CounterOp::Add(2), Some(&CounterRet::Add)),
            Some(7)
        );
        assert_eq!(m.step(&5, &CounterOp::Add(2), None), Some(7));
        assert_eq!(
            m.step(&7, &CounterOp::Read, Some(&CounterRet::Read(7))),
            Some(7)
        );
        assert_eq!(
            m.step(&7, &CounterOp::Read, Some(&CounterRet::Read(5))),
            None
        );
        assert_eq!(m.step(&i64::MAX, &CounterOp::Add(1), None), Some(i64::MIN));
    }
}
