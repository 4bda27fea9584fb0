//! What happened: operations with their calls, returns and outcomes, in one
//! total order of events.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// An operation's place in its [`History`]: the order of its call among all
/// calls, from 0. Printed as `#3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u32);

impl OpId {
    /// The operation's index in [`History::ops`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// How an operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<O> {
    /// It completed and answered `O`: it took effect between its call and
    /// its return.
    Ok(O),
    /// It certainly did not take effect (a refusal the service guarantees
    /// had no effect). The checker ignores it.
    Fail,
    /// It may or may not have taken effect, at any time after its call,
    /// even after later operations of the same client (Jepsen's `:info`: a
    /// timeout, a lost connection). Its answer, if any, is unknown.
    Unknown,
    /// It never ended before the history was checked; treated as
    /// [`Outcome::Unknown`].
    Pending,
}

impl<O> Outcome<O> {
    /// Whether the operation ended without an answer ([`Outcome::Unknown`]
    /// or [`Outcome::Pending`]).
    pub fn is_uncertain(&self) -> bool {
        matches!(self, Outcome::Unknown | Outcome::Pending)
    }
}

/// A call or a return: its position in the history's one total order of
/// events, and the time it was recorded at, if the recorder gave one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Position among all calls and returns of the history, from 0. Two
    /// events never share a position.
    pub index: u64,
    /// The time given when the event was recorded (the simulation's virtual
    /// time, when the harness records), for display only: the order of
    /// events is `index`.
    pub at: Option<Duration>,
}

/// One operation of a [`History`].
#[derive(Clone, Debug)]
pub struct Op<I, O> {
    client: u32,
    input: I,
    outcome: Outcome<O>,
    call: Event,
    ret: Option<Event>,
    label: Option<Arc<str>>,
}

impl<I, O> Op<I, O> {
    /// The client that invoked it.
    pub fn client(&self) -> u32 {
        self.client
    }

    /// What was asked.
    pub fn input(&self) -> &I {
        &self.input
    }

    /// How it ended ([`Outcome::Pending`] while it has not).
    pub fn outcome(&self) -> &Outcome<O> {
        &self.outcome
    }

    /// The answer, if it completed with one.
    pub fn output(&self) -> Option<&O> {
        match &self.outcome {
            Outcome::Ok(o) => Some(o),
            _ => None,
        }
    }

    /// Its call event.
    pub fn call(&self) -> Event {
        self.call
    }

    /// Its return event: when it ended as ok, failed or unknown; `None`
    /// while pending.
    pub fn ret(&self) -> Option<Event> {
        self.ret
    }

    /// The display label given with [`History::label`] (a node's name).
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    pub(crate) fn label_shared(&self) -> Option<Arc<str>> {
        self.label.clone()
    }
}

/// A concurrent history: operations invoked by sequential clients, each
/// call and return placed in one total order of events.
///
/// Recording is a push onto a `Vec` plus an ordered-map update for the
/// client; nothing is boxed but what `I` and `O` hold. Misuse — ending an
/// operation twice, ending one that does not exist, a client invoking while
/// its previous operation is still open, a timestamp earlier than the
/// previous one — panics with the reason: a history that breaks these rules
/// was recorded wrongly, and no verdict about it would mean anything.
#[derive(Clone, Debug)]
pub struct History<I, O> {
    ops: Vec<Op<I, O>>,
    /// Events recorded so far: the next event's position.
    events: u64,
    /// The latest timestamp recorded, which the next one may not precede.
    last_at: Option<Duration>,
    /// Each client's open operation, if it has one.
    open: BTreeMap<u32, OpId>,
}

impl<I, O> Default for History<I, O> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I, O> History<I, O> {
    /// An empty history.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty history with room for `ops` operations.
    pub fn with_capacity(ops: usize) -> Self {
        History {
            ops: Vec::with_capacity(ops),
            events: 0,
            last_at: None,
            open: BTreeMap::new(),
        }
    }

    /// Records the call of an operation by `client`: the next event.
    /// `at` is an optional timestamp for display (`Duration` or `None`).
    ///
    /// Panics if the client's previous operation is still open: a client is
    /// sequential (give concurrent requests different client ids).
    pub fn invoke(&mut self, client: u32, input: I, at: impl Into<Option<Duration>>) -> OpId {
        let id =
            OpId(u32::try_from(self.ops.len()).expect("a history holds at most 2^32 operations"));
        if let Some(open) = self.open.insert(client, id) {
            panic!(
                "history: client {client} invoked a new operation while its operation {open} is still open; \
                 a client is sequential: end {open} first (ok, fail or unknown), or use another client id \
                 for concurrent requests"
            );
        }
        let call = self.event(at.into());
        self.ops.push(Op {
            client,
            input,
            outcome: Outcome::Pending,
            call,
            ret: None,
            label: None,
        });
        id
    }

    /// Records that `id` completed and answered `output`.
    pub fn ok(&mut self, id: OpId, output: O, at: impl Into<Option<Duration>>) {
        self.end(id, Outcome::Ok(output), at.into());
    }

    /// Records that `id` certainly did not take effect.
    pub fn fail(&mut self, id: OpId, at: impl Into<Option<Duration>>) {
        self.end(id, Outcome::Fail, at.into());
    }

    /// Records that `id` ended without telling whether it took effect. Its
    /// client may invoke again; the operation may still take effect later.
    pub fn unknown(&mut self, id: OpId, at: impl Into<Option<Duration>>) {
        self.end(id, Outcome::Unknown, at.into());
    }

    /// Gives `id` a label shown beside its client in a violation (the node
    /// it ran on). Not an event.
    pub fn label(&mut self, id: OpId, label: impl Into<Arc<str>>) {
        self.op_mut(id).label = Some(label.into());
    }

    /// Every operation, in call order (`OpId` is the index).
    pub fn ops(&self) -> &[Op<I, O>] {
        &self.ops
    }

    /// One operation. Panics if `id` is not in this history.
    pub fn op(&self, id: OpId) -> &Op<I, O> {
        self.check_id(id);
        &self.ops[id.index()]
    }

    /// The number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether nothing was invoked.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The number of events (calls and returns) recorded.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The operation `client` has open, if any.
    pub fn open_op(&self, client: u32) -> Option<OpId> {
        self.open.get(&client).copied()
    }

    fn end(&mut self, id: OpId, outcome: Outcome<O>, at: Option<Duration>) {
        let op = self.op_mut(id);
        if op.ret.is_some() {
            let was = match op.outcome {
                Outcome::Ok(_) => "ok",
                Outcome::Fail => "failed",
                _ => "unknown",
            };
            panic!(
                "history: operation {id} of client {} ended twice (it already ended {was})",
                op.client
            );
        }
        let client = op.client;
        let ret = self.event(at);
        let op = &mut self.ops[id.index()];
        op.outcome = outcome;
        op.ret = Some(ret);
        let open = self.open.remove(&client);
        assert_eq!(
            open,
            Some(id),
            "history: client {client}'s open operation is not {id}"
        );
    }

    fn event(&mut self, at: Option<Duration>) -> Event {
        if let (Some(at), Some(last)) = (at, self.last_at) {
            assert!(
                at >= last,
                "history: event {} is stamped {at:?}, before an earlier event's {last:?}; \
                 events are recorded in the order they happen, so their times may not go back",
                self.events
            );
        }
        if at.is_some() {
            self.last_at = at;
        }
        let index = self.events;
        self.events += 1;
        Event { index, at }
    }

    fn op_mut(&mut self, id: OpId) -> &mut Op<I, O> {
        self.check_id(id);
        &mut self.ops[id.index()]
    }

    fn check_id(&self, id: OpId) {
        assert!(
            id.index() < self.ops.len(),
            "history: there is no operation {id} (this history has {} operations)",
            self.ops.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_numbered_in_recording_order() {
        let mut h = History::<u8, u8>::new();
        let a = h.invoke(0, 1, None);
        let b = h.invoke(1, 2, Duration::from_millis(5));
        h.ok(b, 20, Duration::from_millis(7));
        h.unknown(a, None);
        let c = h.invoke(0, 3, None);
        assert_eq!((a, b, c), (OpId(0), OpId(1), OpId(2)));
        assert_eq!(h.op(a).call().index, 0);
        assert_eq!(
            h.op(b).call(),
            Event {
                index: 1,
                at: Some(Duration::from_millis(5))
            }
        );
        assert_eq!(h.op(b).ret().unwrap().index, 2);
        assert_eq!(h.op(a).ret().unwrap().index, 3);
        assert_eq!(h.op(c).call().index, 4);
        assert_eq!(h.op(b).output(), Some(&20));
        assert_eq!(h.op(a).outcome(), &Outcome::Unknown);
        assert_eq!(h.op(c).outcome(), &Outcome::Pending);
        assert_eq!(h.op(c).ret(), None);
        assert_eq!(h.open_op(0), Some(c));
        assert_eq!(h.open_op(1), None);
        assert_eq!(h.events(), 5);
    }

    #[test]
    fn labels_are_kept() {
        let mut h = History::<u8, u8>::new();
        let a = h.invoke(7, 1, None);
        h.label(a, "n1");
        assert_eq!(h.op(a).label(), Some("n1"));
        assert_eq!(h.op(a).client(), 7);
    }

    #[test]
    #[should_panic(expected = "ended twice")]
    fn ending_twice_panics() {
        let mut h = History::<u8, u8>::new();
        let a = h.invoke(0, 1, None);
        h.ok(a, 1, None);
        h.fail(a, None);
    }

    #[test]
    #[should_panic(expected = "a client is sequential")]
    fn a_client_is_sequential() {
        let mut h = History::<u8, u8>::new();
        h.invoke(0, 1, None);
        h.invoke(0, 2, None);
    }

    #[test]
    #[should_panic(expected = "there is no operation #3")]
    fn unknown_ids_panic() {
        let mut h = History::<u8, u8>::new();
        h.ok(OpId(3), 1, None);
    }

    #[test]
    #[should_panic(expected = "may not go back")]
    fn time_never_goes_back() {
        let mut h = History::<u8, u8>::new();
        h.invoke(0, 1, Duration::from_secs(2));
        h.invoke(1, 1, Duration::from_secs(1));
    }
}
