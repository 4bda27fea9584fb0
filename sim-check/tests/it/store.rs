//! A simulated correct store: a sequential ground truth that clients reach
//! concurrently, so every history it records is linearizable by
//! construction. Shared with `benches/check.rs` (by `#[path]`).
//!
//! Deterministic: a SplitMix64 stream from a fixed seed drives every choice.

use sim_check::{
    Counter, CounterOp, CounterRet, History, Kv, KvOp, KvRet, Model, OpId, Queue, QueueOp,
    QueueRet, Register, RegisterOp, RegisterRet, Set, SetOp, SetRet,
};
use std::collections::BTreeSet;

/// SplitMix64: small, fast, and the same everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A model the store can run: the answer and next state of an operation.
pub trait Exec: Model {
    fn exec(&self, state: &Self::State, input: &Self::Input) -> (Self::State, Self::Output);
    /// A random operation over a small domain.
    fn input(&self, rng: &mut Rng, keys: u64) -> Self::Input;
    /// A random answer of the right kind (to corrupt a history).
    fn output(&self, rng: &mut Rng, input: &Self::Input) -> Self::Output;
}

/// How the store behaves.
pub struct Shape {
    pub clients: u32,
    pub ops: usize,
    /// Keys (or values) to draw from.
    pub keys: u64,
    /// Percent of operations that end unknown.
    pub unknown: u64,
    /// Percent that fail (no effect).
    pub fail: u64,
    /// Whether operations still open at the end stay pending.
    pub pending: bool,
}

enum Client<I, O> {
    Idle,
    Called {
        id: OpId,
        input: I,
        answer: Option<O>,
    },
}

/// Runs the store and records its history.
pub fn run<M: Exec>(model: &M, rng: &mut Rng, shape: &Shape) -> History<M::Input, M::Output>
where
    M::Input: Clone,
{
    let mut h = History::with_capacity(shape.ops);
    let mut state = model.init();
    let mut clients: Vec<Client<M::Input, M::Output>> =
        (0..shape.clients).map(|_| Client::Idle).collect();
    // Unknown operations that have not taken effect yet and still may.
    let mut in_flight: Vec<M::Input> = Vec::new();
    let mut issued = 0;
    loop {
        let busy = clients.iter().any(|c| matches!(c, Client::Called { .. }));
        if issued == shape.ops && !busy {
            break;
        }
        if issued == shape.ops && shape.pending && rng.percent(5) {
            break;
        }
        if !in_flight.is_empty() && rng.percent(10) {
            let input = in_flight.swap_remove(rng.below(in_flight.len() as u64) as usize);
            if rng.percent(50) {
                state = model.exec(&state, &input).0;
            }
            continue;
        }
        let c = rng.below(u64::from(shape.clients)) as usize;
        match &mut clients[c] {
            Client::Idle => {
                if issued < shape.ops {
                    issued += 1;
                    let input = model.input(rng, shape.keys);
                    let id = h.invoke(c as u32, input.clone(), None);
                    clients[c] = Client::Called {
                        id,
                        input,
                        answer: None,
                    };
                }
            }
            Client::Called {
                id,
                input,
                answer: answer @ None,
            } => {
                let id = *id;
                if rng.percent(shape.fail) {
                    h.fail(id, None);
                    clients[c] = Client::Idle;
                } else if rng.percent(shape.unknown / 2) {
                    // Ends unknown before taking effect; may still take
                    // effect later.
                    in_flight.push(input.clone());
                    h.unknown(id, None);
                    clients[c] = Client::Idle;
                } else {
                    let (next, out) = model.exec(&state, input);
                    state = next;
                    *answer = Some(out);
                }
            }
            Client::Called {
                id,
                answer: Some(_),
                ..
            } => {
                let id = *id;
                let Client::Called {
                    answer: Some(out), ..
                } = std::mem::replace(&mut clients[c], Client::Idle)
                else {
                    unreachable!()
                };
                if rng.percent(shape.unknown / 2) {
                    h.unknown(id, None);
                } else {
                    h.ok(id, out, None);
                }
            }
        }
    }
    h
}

/// Copies `h`, replacing each completed answer by a random one with
/// probability `percent` (which may happen to be the right one).
pub fn corrupt<M: Exec>(
    model: &M,
    rng: &mut Rng,
    h: &History<M::Input, M::Output>,
    percent: u64,
) -> History<M::Input, M::Output>
where
    M::Input: Clone,
    M::Output: Clone,
{
    // Replays the events in order: calls and returns interleave as before.
    let mut events: Vec<(u64, usize, bool)> = Vec::new();
    for (i, op) in h.ops().iter().enumerate() {
        events.push((op.call().index, i, true));
        if let Some(r) = op.ret() {
            events.push((r.index, i, false));
        }
    }
    events.sort_unstable();
    let mut out = History::with_capacity(h.len());
    let mut ids = vec![None; h.len()];
    for (_, i, call) in events {
        let op = &h.ops()[i];
        if call {
            ids[i] = Some(out.invoke(op.client(), op.input().clone(), None));
            continue;
        }
        let id = ids[i].unwrap();
        match op.outcome() {
            sim_check::Outcome::Ok(_) if rng.percent(percent) => {
                out.ok(id, model.output(rng, op.input()), None)
            }
            sim_check::Outcome::Ok(o) => out.ok(id, o.clone(), None),
            sim_check::Outcome::Fail => out.fail(id, None),
            _ => out.unknown(id, None),
        }
    }
    out
}

impl Exec for Register<u8> {
    fn exec(&self, s: &u8, input: &RegisterOp<u8>) -> (u8, RegisterRet<u8>) {
        match input {
            RegisterOp::Read => (*s, RegisterRet::Read(*s)),
            RegisterOp::Write(v) => (*v, RegisterRet::Write),
            RegisterOp::Cas { expect, new } if s == expect => (*new, RegisterRet::Cas(true)),
            RegisterOp::Cas { .. } => (*s, RegisterRet::Cas(false)),
        }
    }

    fn input(&self, rng: &mut Rng, keys: u64) -> RegisterOp<u8> {
        let v = rng.below(keys) as u8;
        match rng.below(5) {
            0 | 1 => RegisterOp::Read,
            2 | 3 => RegisterOp::Write(v),
            _ => RegisterOp::Cas {
                expect: rng.below(keys) as u8,
                new: v,
            },
        }
    }

    fn output(&self, rng: &mut Rng, input: &RegisterOp<u8>) -> RegisterRet<u8> {
        match input {
            RegisterOp::Read => RegisterRet::Read(rng.below(3) as u8),
            RegisterOp::Write(_) => RegisterRet::Write,
            RegisterOp::Cas { .. } => RegisterRet::Cas(rng.percent(50)),
        }
    }
}

impl Exec for Kv<u8, u8> {
    fn exec(&self, s: &Self::State, input: &KvOp<u8, u8>) -> (Self::State, KvRet<u8>) {
        let mut s = s.clone();
        match input {
            KvOp::Get(k) => {
                let v = s.get(k).copied();
                (s, KvRet::Get(v))
            }
            KvOp::Put(k, v) => {
                s.insert(*k, *v);
                (s, KvRet::Put)
            }
            KvOp::Delete(k) => {
                s.remove(k);
                (s, KvRet::Delete)
            }
            KvOp::Append(..) => unreachable!("a Kv::new() has no append"),
        }
    }

    fn input(&self, rng: &mut Rng, keys: u64) -> KvOp<u8, u8> {
        let k = rng.below(keys) as u8;
        match rng.below(5) {
            0 | 1 => KvOp::Get(k),
            2 | 3 => KvOp::Put(k, rng.below(3) as u8),
            _ => KvOp::Delete(k),
        }
    }

    fn output(&self, rng: &mut Rng, input: &KvOp<u8, u8>) -> KvRet<u8> {
        match input {
            KvOp::Get(_) if rng.percent(25) => KvRet::Get(None),
            KvOp::Get(_) => KvRet::Get(Some(rng.below(3) as u8)),
            KvOp::Put(..) => KvRet::Put,
            KvOp::Delete(_) => KvRet::Delete,
            KvOp::Append(..) => KvRet::Append,
        }
    }
}

/// A 6.824 store (`Kv::with_append`): a missing key reads as "".
impl Exec for Kv<u8, String> {
    fn exec(&self, s: &Self::State, input: &KvOp<u8, String>) -> (Self::State, KvRet<String>) {
        let mut s = s.clone();
        let r = match input {
            KvOp::Get(k) => KvRet::Get(Some(s.get(k).cloned().unwrap_or_default())),
            KvOp::Put(k, v) => {
                s.insert(*k, v.clone());
                KvRet::Put
            }
            KvOp::Delete(k) => {
                s.remove(k);
                KvRet::Delete
            }
            KvOp::Append(k, v) => {
                s.entry(*k).or_default().push_str(v);
                KvRet::Append
            }
        };
        (s, r)
    }

    fn input(&self, rng: &mut Rng, keys: u64) -> KvOp<u8, String> {
        let k = rng.below(keys) as u8;
        let v = ["", "a", "b", "ab"][rng.below(4) as usize].to_string();
        match rng.below(7) {
            0..=2 => KvOp::Get(k),
            3 => KvOp::Put(k, v),
            4 => KvOp::Delete(k),
            _ => KvOp::Append(k, v),
        }
    }

    fn output(&self, rng: &mut Rng, input: &KvOp<u8, String>) -> KvRet<String> {
        match input {
            KvOp::Get(_) if rng.percent(15) => KvRet::Get(None),
            KvOp::Get(_) => {
                let v = ["", "a", "b", "ab", "ba", "aab"][rng.below(6) as usize];
                KvRet::Get(Some(v.to_string()))
            }
            KvOp::Put(..) => KvRet::Put,
            KvOp::Delete(_) => KvRet::Delete,
            KvOp::Append(..) => KvRet::Append,
        }
    }
}

impl Exec for Counter {
    fn exec(&self, s: &i64, input: &CounterOp) -> (i64, CounterRet) {
        match input {
            CounterOp::Add(n) => (s + n, CounterRet::Add),
            CounterOp::Read => (*s, CounterRet::Read(*s)),
        }
    }

    fn input(&self, rng: &mut Rng, keys: u64) -> CounterOp {
        if rng.percent(50) {
            CounterOp::Read
        } else {
            CounterOp::Add(1 + rng.below(keys) as i64)
        }
    }

    fn output(&self, rng: &mut Rng, input: &CounterOp) -> CounterRet {
        match input {
            CounterOp::Add(_) => CounterRet::Add,
            CounterOp::Read => CounterRet::Read(rng.below(8) as i64),
        }
    }
}

impl Exec for Set<u8> {
    fn exec(&self, s: &BTreeSet<u8>, input: &SetOp<u8>) -> (BTreeSet<u8>, SetRet<u8>) {
        let mut s = s.clone();
        match input {
            SetOp::Add(x) => {
                s.insert(*x);
                (s, SetRet::Add)
            }
            SetOp::Contains(x) => {
                let b = s.contains(x);
                (s, SetRet::Contains(b))
            }
            SetOp::Read => {
                let all = s.clone();
                (s, SetRet::Read(all))
            }
        }
    }

    fn input(&self, rng: &mut Rng, keys: u64) -> SetOp<u8> {
        let x = rng.below(keys) as u8;
        match rng.below(3) {
            0 => SetOp::Add(x),
            1 => SetOp::Contains(x),
            _ => SetOp::Read,
        }
    }

    fn output(&self, rng: &mut Rng, input: &SetOp<u8>) -> SetRet<u8> {
        match input {
            SetOp::Add(_) => SetRet::Add,
            SetOp::Contains(_) => SetRet::Contains(rng.percent(50)),
            SetOp::Read => SetRet::Read((0..3).filter(|_| rng.percent(40)).collect()),
        }
    }
}

impl Exec for Queue<u8> {
    fn exec(&self, s: &Self::State, input: &QueueOp<u8>) -> (Self::State, QueueRet<u8>) {
        let mut s = s.clone();
        match input {
            QueueOp::Enqueue(x) => {
                s.push_back(*x);
                (s, QueueRet::Enqueue)
            }
            QueueOp::Dequeue => {
                let x = s.pop_front();
                (s, QueueRet::Dequeue(x))
            }
        }
    }

    fn input(&self, rng: &mut Rng, keys: u64) -> QueueOp<u8> {
        if rng.percent(50) {
            QueueOp::Enqueue(rng.below(keys) as u8)
        } else {
            QueueOp::Dequeue
        }
    }

    fn output(&self, rng: &mut Rng, input: &QueueOp<u8>) -> QueueRet<u8> {
        match input {
            QueueOp::Enqueue(_) => QueueRet::Enqueue,
            QueueOp::Dequeue if rng.percent(25) => QueueRet::Dequeue(None),
            QueueOp::Dequeue => QueueRet::Dequeue(Some(rng.below(3) as u8)),
        }
    }
}
