//! One register: read, write, compare-and-set.

use super::mismatch;
use crate::Model;
use std::fmt::Debug;
use std::hash::Hash;

/// A single register holding a `V`, starting at `initial`.
///
/// A compare-and-set may be recorded either way: completed with
/// `Cas(false)` when the comparison failed, or as a [`fail`] (certainly no
/// effect, Jepsen's convention).
///
/// [`fail`]: crate::History::fail
#[derive(Clone, Debug, Default)]
pub struct Register<V> {
    initial: V,
}

impl<V> Register<V> {
    /// A register holding `initial` before any write.
    pub fn new(initial: V) -> Self {
        Register { initial }
    }
}

/// An operation on a [`Register`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOp<V> {
    Read,
    Write(V),
    /// Sets `new` if the register holds `expect`.
    Cas {
        expect: V,
        new: V,
    },
}

/// A [`Register`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterRet<V> {
    Read(V),
    Write,
    /// Whether the comparison held (and the value was set).
    Cas(bool),
}

impl<V: Clone + Eq + Hash + Debug> Model for Register<V> {
    type State = V;
    type Input = RegisterOp<V>;
    type Output = RegisterRet<V>;

    fn init(&self) -> V {
        self.initial.clone()
    }

    fn step(&self, s: &V, input: &RegisterOp<V>, output: Option<&RegisterRet<V>>) -> Option<V> {
        match (input, output) {
            (RegisterOp::Read, None) => Some(s.clone()),
            (RegisterOp::Read, Some(RegisterRet::Read(v))) => (v == s).then(|| s.clone()),
            (RegisterOp::Write(v), None | Some(RegisterRet::Write)) => Some(v.clone()),
            (RegisterOp::Cas { expect, new }, None) => {
                Some(if s == expect { new.clone() } else { s.clone() })
            }
            (RegisterOp::Cas { expect, new }, Some(RegisterRet::Cas(true))) => {
                (s == expect).then(|| new.clone())
            }
            (RegisterOp::Cas { expect, .. }, Some(RegisterRet::Cas(false))) => {
                (s != expect).then(|| s.clone())
            }
            (input, Some(output)) => mismatch("register", input, output),
        }
    }

    fn describe(&self, input: &RegisterOp<V>, output: Option<&RegisterRet<V>>) -> String {
        match (input, output) {
            (RegisterOp::Read, Some(RegisterRet::Read(v))) => format!("read -> {v:?}"),
            (RegisterOp::Read, _) => "read".into(),
            (RegisterOp::Write(v), _) => format!("write {v:?}"),
            (RegisterOp::Cas { expect, new }, Some(RegisterRet::Cas(ok))) => {
                format!("cas {expect:?}->{new:?} -> {ok}")
            }
            (RegisterOp::Cas { expect, new }, _) => format!("cas {expect:?}->{new:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        let m = Register::new(0u8);
        assert_eq!(
            m.step(&0, &RegisterOp::Read, Some(&RegisterRet::Read(0))),
            Some(0)
        );
        assert_eq!(
            m.step(&0, &RegisterOp::Read, Some(&RegisterRet::Read(1))),
            None
        );
        assert_eq!(
            m.step(&0, &RegisterOp::Write(3), Some(&RegisterRet::Write)),
            Some(3)
        );
        assert_eq!(m.step(&0, &RegisterOp::Write(3), None), Some(3));
        let cas = RegisterOp::Cas { expect: 0, new: 2 };
        assert_eq!(m.step(&0, &cas, Some(&RegisterRet::Cas(true))), Some(2));
        assert_eq!(m.step(&1, &cas, Some(&RegisterRet::Cas(true))), None);
        assert_eq!(m.step(&1, &cas, Some(&RegisterRet::Cas(false))), Some(1));
        assert_eq!(m.step(&0, &cas, Some(&RegisterRet::Cas(false))), None);
        assert_eq!(m.step(&0, &cas, None), Some(2));
        assert_eq!(m.step(&1, &cas, None), Some(1));
        assert_eq!(
            m.describe(&cas, Some(&RegisterRet::Cas(true))),
            "cas 0->2 -> true"
        );
    }

    #[test]
    #[should_panic(expected = "register: Read cannot answer Write")]
    fn a_mismatched_answer_panics() {
        Register::new(0u8).step(&0, &RegisterOp::Read, Some(&RegisterRet::Write));
    }
}
