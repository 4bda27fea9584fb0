//! A key-value map, checked one key at a time.

use super::mismatch;
use crate::Model;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;

/// A map from `K` to `V`, empty at first. Partitioned by key: each key's
/// operations are checked on their own.
///
/// Two flavours, which differ in [`KvOp::Append`] and in what a missing
/// key reads as:
///
/// - [`Kv::new`]: a missing key reads as `Get(None)`, and a key holding a
///   value never does. It has no append: a history with one panics (a
///   recording bug: build the model with [`Kv::with_append`]).
/// - [`Kv::with_append`] (values that are [`Appendable`]), the semantics of
///   MIT 6.824's key/value service and of Porcupine's `kv` model: `Append`
///   to a missing key creates it holding the suffix, and a missing key is
///   the same as a key holding the empty value ([`Default`]): `Get` of
///   either may be recorded as `Get(Some(empty))` (6.824's `""`) or
///   `Get(None)`, and `Put` of the empty value is a `Delete`.
#[derive(Clone, Debug, Default)]
pub struct Kv<K, V> {
    /// How `Append` extends a value; `None` for [`Kv::new`].
    append: Option<Appending<V>>,
    _types: std::marker::PhantomData<fn() -> K>,
}

impl<K, V> Kv<K, V> {
    /// An empty map, without [`KvOp::Append`].
    pub fn new() -> Self {
        Kv {
            append: None,
            _types: std::marker::PhantomData,
        }
    }
}

impl<K, V: Appendable + Eq> Kv<K, V> {
    /// An empty map with [`KvOp::Append`], in which a missing key reads as
    /// the empty value: MIT 6.824's semantics (see [`Kv`]).
    pub fn with_append() -> Self {
        Kv {
            append: Some(Appending {
                appended: V::appended,
                is_empty: |v| *v == V::default(),
            }),
            _types: std::marker::PhantomData,
        }
    }
}

/// What a [`Kv::with_append`] knows of its values, which the [`Model`]
/// implementation (for any value) cannot ask of `V` itself.
#[derive(Debug)]
struct Appending<V> {
    appended: fn(&V, &V) -> V,
    is_empty: fn(&V) -> bool,
}

// Not derived: that would ask `V: Copy`.
impl<V> Clone for Appending<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Appending<V> {}

/// A value [`KvOp::Append`] can extend. Its empty value is its
/// [`Default`]; appending the empty value changes nothing.
pub trait Appendable: Default {
    /// `self` followed by `suffix`, as a new value (the checker keeps
    /// every state it reaches, so a value is built once, to its size).
    fn appended(&self, suffix: &Self) -> Self;
}

impl Appendable for String {
    fn appended(&self, suffix: &Self) -> Self {
        let mut s = String::with_capacity(self.len() + suffix.len());
        s.push_str(self);
        s.push_str(suffix);
        s
    }
}

impl<T: Clone> Appendable for Vec<T> {
    fn appended(&self, suffix: &Self) -> Self {
        let mut v = Vec::with_capacity(self.len() + suffix.len());
        v.extend_from_slice(self);
        v.extend_from_slice(suffix);
        v
    }
}

/// An operation on a [`Kv`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOp<K, V> {
    Get(K),
    Put(K, V),
    Delete(K),
    /// Appends the value to the key's, creating the key if it is missing.
    /// Only in a [`Kv::with_append`].
    Append(K, V),
}

/// A [`Kv`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvRet<V> {
    /// The value, or `None` if the key is absent.
    Get(Option<V>),
    Put,
    Delete,
    Append,
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
            (KvOp::Get(k), Some(KvRet::Get(v))) => {
                let same = match (s.get(k), v, self.append) {
                    (held, v, None) => held == v.as_ref(),
                    // With append, a missing key holds the empty value
                    // (never stored: see `settle`).
                    (Some(held), Some(v), Some(_)) => held == v,
                    (Some(_), None, Some(_)) => false,
                    (None, Some(v), Some(a)) => (a.is_empty)(v),
                    (None, None, Some(_)) => true,
                };
                same.then(|| s.clone())
            }
            (KvOp::Put(k, v), None | Some(KvRet::Put)) => {
                let mut s = without(s, k);
                s.insert(k.clone(), v.clone());
                self.settle(&mut s, k);
                Some(s)
            }
            (KvOp::Delete(k), None | Some(KvRet::Delete)) => {
                let mut s = s.clone();
                s.remove(k);
                Some(s)
            }
            (KvOp::Append(k, suffix), None | Some(KvRet::Append)) => {
                let Some(Appending { appended, .. }) = self.append else {
                    panic!(
                        "kv: {input:?} in a Kv::new(), which has no append: \
                         build the model with Kv::with_append()"
                    )
                };
                let value = match s.get(k) {
                    Some(old) => appended(old, suffix),
                    None => suffix.clone(),
                };
                let mut s = without(s, k);
                s.insert(k.clone(), value);
                self.settle(&mut s, k);
                Some(s)
            }
            (input, Some(output)) => mismatch("kv", input, output),
        }
    }

    fn partition(&self, input: &KvOp<K, V>) -> Option<String> {
        let (KvOp::Get(k) | KvOp::Put(k, _) | KvOp::Delete(k) | KvOp::Append(k, _)) = input;
        Some(format!("{k:?}"))
    }

    fn describe(&self, input: &KvOp<K, V>, output: Option<&KvRet<V>>) -> String {
        match (input, output) {
            (KvOp::Get(k), Some(KvRet::Get(Some(v)))) => format!("get {k:?} -> {v:?}"),
            (KvOp::Get(k), Some(KvRet::Get(None))) => format!("get {k:?} -> none"),
            (KvOp::Get(k), _) => format!("get {k:?}"),
            (KvOp::Put(k, v), _) => format!("put {k:?}={v:?}"),
            (KvOp::Delete(k), _) => format!("delete {k:?}"),
            (KvOp::Append(k, v), _) => format!("append {k:?}+={v:?}"),
        }
    }
}

/// A copy of `s` without `k`: its old value is not cloned only to be
/// replaced (the checker keeps every state it reaches, and a partition's
/// map holds one key).
fn without<K: Ord + Clone, V: Clone>(s: &BTreeMap<K, V>, k: &K) -> BTreeMap<K, V> {
    s.iter()
        .filter(|&(key, _)| key != k)
        .map(|(key, v)| (key.clone(), v.clone()))
        .collect()
}

impl<K: Ord, V> Kv<K, V> {
    /// With append, a key holding the empty value is the same as a missing
    /// one: it is removed, so that equal maps are equal states.
    fn settle(&self, s: &mut BTreeMap<K, V>, k: &K) {
        if let Some(a) = self.append {
            if s.get(k).is_some_and(a.is_empty) {
                s.remove(k);
            }
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
        // Without append, a missing key is not a default value.
        assert_eq!(
            m.step(&s, &KvOp::Get("b"), Some(&KvRet::Get(Some(0)))),
            None
        );
        let s = m.step(&s, &KvOp::Delete("a"), None).unwrap();
        assert!(s.is_empty());
        assert_eq!(m.partition(&KvOp::Put("a", 1)), Some("\"a\"".into()));
        assert_eq!(m.partition(&KvOp::Append("b", 1)), Some("\"b\"".into()));
        assert_eq!(
            m.describe(&KvOp::Get("a"), Some(&KvRet::Get(None))),
            "get \"a\" -> none"
        );
    }

    fn s(v: &str) -> String {
        v.to_string()
    }

    #[test]
    fn append_has_the_semantics_of_6_824() {
        let m = Kv::<&str, String>::with_append();
        let get = |st: &BTreeMap<&str, String>, v: Option<&str>| {
            m.step(st, &KvOp::Get("k"), Some(&KvRet::Get(v.map(s))))
                .is_some()
        };
        // A missing key reads as "" (or as absent).
        let empty = m.init();
        assert!(get(&empty, Some("")) && get(&empty, None));
        assert!(!get(&empty, Some("x")));
        // Append to a missing key creates it.
        let one = m
            .step(&empty, &KvOp::Append("k", s("x")), Some(&KvRet::Append))
            .unwrap();
        assert!(get(&one, Some("x")));
        assert!(!get(&one, Some("")) && !get(&one, None));
        // Append extends; an unknown one has its effect.
        let two = m.step(&one, &KvOp::Append("k", s("yz")), None).unwrap();
        assert!(get(&two, Some("xyz")) && !get(&two, Some("x")));
        // Put replaces; Put of "" is the same state as a missing key.
        let put = m.step(&two, &KvOp::Put("k", s("p")), None).unwrap();
        assert!(get(&put, Some("p")));
        let cleared = m.step(&put, &KvOp::Put("k", s("")), None).unwrap();
        assert_eq!(cleared, empty);
        assert_eq!(
            m.step(&empty, &KvOp::Append("k", s("")), None),
            Some(empty.clone()),
            "appending nothing to a missing key leaves it missing"
        );
        assert_eq!(
            m.describe(&KvOp::Append("k", s("x")), None),
            "append \"k\"+=\"x\""
        );
        // Lists append too.
        let l = Kv::<u8, Vec<u8>>::with_append();
        let st = l.step(&l.init(), &KvOp::Append(0, vec![1]), None).unwrap();
        let st = l.step(&st, &KvOp::Append(0, vec![2, 3]), None).unwrap();
        assert_eq!(st.get(&0), Some(&vec![1, 2, 3]));
    }

    #[test]
    #[should_panic(expected = "build the model with Kv::with_append()")]
    fn append_in_a_map_without_it_panics() {
        let m = Kv::<u8, String>::new();
        m.step(&m.init(), &KvOp::Append(0, s("x")), None);
    }
}
