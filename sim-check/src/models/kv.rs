//! A key-value map, checked one key at a time.

use super::mismatch;
use crate::Model;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;

/// A map from `K` to `V`, empty at first. Partitioned by key: each key's
/// operations are checked on their own.
#[derive(Clone, Debug, Default)]
pub struct Kv<K, V> {
    _types: std::marker::PhantomData<fn() -> (K, V)>,
}

impl<K, V> Kv<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Kv {
            _types: std::marker::PhantomData,
        }
    }
}

/// An operation on a [`Kv`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOp<K, V> {
    Get(K),
    Put(K, V),
    Delete(K),
}

/// A [`Kv`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvRet<V> {
    /// The value, or `None` if the key is absent.
    Get(Option<V>),
    Put,
    Delete,
}

impl<K: Clone + Ord + Hash + Debug, V: Clone + Eq + Hash + Debug> Model for Kv<K, V> {
    type State = BTreeMap<K, V>;
    type Input = KvOp<K, V>;
    type Output = KvRet<V>;

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn step(
        &self,
        s: &Self::State,
        input: &KvOp<K, V>,
        output: Option<&KvRet<V>>,
    ) -> Option<Self::State> {
        match (input, output) {
            (KvOp::Get(_), None) => Some(s.clone()),
            (KvOp::Get(k), Some(KvRet::Get(v))) => (s.get(k) == v.as_ref()).then(|| s.clone()),
            (KvOp::Put(k, v), None | Some(KvRet::Put)) => {
                let mut s = s.clone();
                s.insert(k.clone(), v.clone());
                Some(s)
            }
            (KvOp::Delete(k), None | Some(KvRet::Delete)) => {
                let mut s = s.clone();
                s.remove(k);
                Some(s)
            }
            (input, Some(output)) => mismatch("kv", input, output),
        }
    }

    fn partition(&self, input: &KvOp<K, V>) -> Option<String> {
        let (KvOp::Get(k) | KvOp::Put(k, _) | KvOp::Delete(k)) = input;
        Some(format!("{k:?}"))
    }

    fn describe(&self, input: &KvOp<K, V>, output: Option<&KvRet<V>>) -> String {
        match (input, output) {
            (KvOp::Get(k), Some(KvRet::Get(Some(v)))) => format!("get {k:?} -> {v:?}"),
            (KvOp::Get(k), Some(KvRet::Get(None))) => format!("get {k:?} -> none"),
            (KvOp::Get(k), _) => format!("get {k:?}"),
            (KvOp::Put(k, v), _) => format!("put {k:?}={v:?}"),
            (KvOp::Delete(k), _) => format!("delete {k:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_partitions() {
        let m = Kv::<&str, u8>::new();
        let s = m
            .step(&m.init(), &KvOp::Put("a", 1), Some(&KvRet::Put))
            .unwrap();
        assert_eq!(
            m.step(&s, &KvOp::Get("a"), Some(&KvRet::Get(Some(1)))),
            Some(s.clone())
        );
        assert_eq!(
            m.step(&s, &KvOp::Get("b"), Some(&KvRet::Get(Some(1)))),
            None
        );
        assert_eq!(
            m.step(&s, &KvOp::Get("b"), Some(&KvRet::Get(None))),
            Some(s.clone())
        );
        let s = m.step(&s, &KvOp::Delete("a"), None).unwrap();
        assert!(s.is_empty());
        assert_eq!(m.partition(&KvOp::Put("a", 1)), Some("\"a\"".into()));
        assert_eq!(
            m.describe(&KvOp::Get("a"), Some(&KvRet::Get(None))),
            "get \"a\" -> none"
        );
    }
}
