//! A set: add, membership, read everything.

use super::mismatch;
use crate::Model;
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;

/// A set of `T`, empty at first.
#[derive(Clone, Debug, Default)]
pub struct Set<T> {
    _types: std::marker::PhantomData<fn() -> T>,
}

impl<T> Set<T> {
    /// An empty set.
    pub fn new() -> Self {
        Set {
            _types: std::marker::PhantomData,
        }
    }
}

/// An operation on a [`Set`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SetOp<T> {
    Add(T),
    Contains(T),
    /// Reads the whole set.
    Read,
}

/// A [`Set`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SetRet<T> {
    Add,
    Contains(bool),
    Read(BTreeSet<T>),
}

impl<T: Clone + Ord + Hash + Debug> Model for Set<T> {
    type State = BTreeSet<T>;
    type Input = SetOp<T>;
    type Output = SetRet<T>;

    fn init(&self) -> BTreeSet<T> {
        BTreeSet::new()
    }

    fn step(
        &self,
        s: &BTreeSet<T>,
        input: &SetOp<T>,
        output: Option<&SetRet<T>>,
    ) -> Option<BTreeSet<T>> {
        match (input, output) {
            (SetOp::Add(x), None | Some(SetRet::Add)) => {
                let mut s = s.clone();
                s.insert(x.clone());
                Some(s)
            }
            (SetOp::Contains(_) | SetOp::Read, None) => Some(s.clone()),
            (SetOp::Contains(x), Some(SetRet::Contains(b))) => {
                (s.contains(x) == *b).then(|| s.clone())
            }
            (SetOp::Read, Some(SetRet::Read(all))) => (all == s).then(|| s.clone()),
            (input, Some(output)) => mismatch("set", input, output),
        }
    }

    fn describe(&self, input: &SetOp<T>, output: Option<&SetRet<T>>) -> String {
        match (input, output) {
            (SetOp::Add(x), _) => format!("add {x:?}"),
            (SetOp::Contains(x), Some(SetRet::Contains(b))) => format!("contains {x:?} -> {b}"),
            (SetOp::Contains(x), _) => format!("contains {x:?}"),
            (SetOp::Read, Some(SetRet::Read(all))) => format!("read -> {all:?}"),
            (SetOp::Read, _) => "read".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        let m = Set::<u8>::new();
        let s = m
            .step(&m.init(), &SetOp::Add(1), Some(&SetRet::Add))
            .unwrap();
        assert!(m
            .step(&s, &SetOp::Contains(1), Some(&SetRet::Contains(true)))
            .is_some());
        assert!(m
            .step(&s, &SetOp::Contains(2), Some(&SetRet::Contains(true)))
            .is_none());
        assert!(m
            .step(&s, &SetOp::Read, Some(&SetRet::Read([1].into())))
            .is_some());
        assert!(m
            .step(&s, &SetOp::Read, Some(&SetRet::Read([].into())))
            .is_none());
    }
}
