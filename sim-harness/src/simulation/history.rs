//! `sim::History`: what clients saw, recorded in virtual time, and checked
//! against what the service promises (`sim::check`).
//!
//! A thin handle over [`sim_check::History`]: each call is stamped with the
//! run's virtual time and labelled with the node it was made on; the
//! [`Call`] it returns ends the operation. A `Call` dropped without an end
//! (its task was cancelled, its node crashed) records the outcome as
//! unknown: the request may have reached the service. Each ended operation
//! is a line of the trace (target `sim::history`), so a failing seed's trace
//! shows what the clients saw among the service's own events.
//!
//! ```ignore
//! let history = sim::History::new();
//! let call = history.invoke(client, KvOp::Put(k, v));
//! match store.put(k, v).await {
//!     Ok(()) => call.ok(KvRet::Put),
//!     Err(e) if e.kind() == ErrorKind::ConnectionRefused => call.fail(),
//!     Err(_) => call.unknown(), // a timeout: it may have happened
//! }
//! // …
//! history.assert_linearizable(&sim::check::Kv::new());
//! ```

use sim_check::{CheckError, Model, OpId, Outcome};
use sim_runtime::sim as rt;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::rc::Rc;
use std::sync::Arc;

struct Inner<I, O> {
    history: sim_check::History<I, O>,
    /// Writes one ended operation as a trace line.
    line: fn(&sim_check::Op<I, O>) -> String,
    /// Each node's label, made once.
    labels: BTreeMap<rt::Node, Arc<str>>,
}

/// A run's history of operations; cloning shares it. See the module docs.
pub struct History<I, O> {
    inner: Rc<RefCell<Inner<I, O>>>,
}

impl<I, O> Clone for History<I, O> {
    fn clone(&self) -> Self {
        History {
            inner: self.inner.clone(),
        }
    }
}

impl<I: Debug, O: Debug> Default for History<I, O> {
    fn default() -> Self {
        History {
            inner: Rc::new(RefCell::new(Inner {
                history: sim_check::History::new(),
                line: |op| {
                    let outcome = match op.outcome() {
                        Outcome::Ok(o) => format!("ok {o:?}"),
                        Outcome::Fail => "failed".into(),
                        Outcome::Unknown => "unknown".into(),
                        Outcome::Pending => "pending".into(),
                    };
                    format!("client {} {:?} -> {outcome}", op.client(), op.input())
                },
                labels: BTreeMap::new(),
            })),
        }
    }
}

/// An operation under way: end it with [`Call::ok`], [`Call::fail`] or
/// [`Call::unknown`]. Dropped unended, it is unknown.
#[must_use = "end the operation with ok, fail or unknown"]
pub struct Call<I, O> {
    history: History<I, O>,
    id: Option<OpId>,
}

impl<I: Debug, O: Debug> History<I, O> {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<I, O> History<I, O> {
    /// Records that `client` calls with `input`, now, on the current node.
    /// A client is sequential: its previous call must have ended.
    #[track_caller]
    pub fn invoke(&self, client: u32, input: I) -> Call<I, O> {
        let now = rt::elapsed();
        let node = rt::current_node();
        let mut inner = self.inner.borrow_mut();
        let label = inner
            .labels
            .entry(node)
            .or_insert_with(|| Arc::from(rt::node_name(node)))
            .clone();
        let id = inner.history.invoke(client, input, now);
        inner.history.label(id, label);
        Call {
            history: self.clone(),
            id: Some(id),
        }
    }

    /// How many operations were invoked.
    pub fn len(&self) -> usize {
        self.inner.borrow().history.len()
    }

    /// Whether nothing was invoked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads the recorded history.
    pub fn with<R>(&self, f: impl FnOnce(&sim_check::History<I, O>) -> R) -> R {
        f(&self.inner.borrow().history)
    }

    /// Checks the history against `model` ([`sim_check::linearizable`]),
    /// and says the verdict in the trace.
    pub fn check<M>(&self, model: &M) -> Result<(), CheckError>
    where
        M: Model<Input = I, Output = O>,
    {
        let inner = self.inner.borrow();
        let verdict = sim_check::linearizable(model, &inner.history);
        let ops = inner.history.len();
        match &verdict {
            Ok(()) => tracing::info!(target: "sim", ops, "history: linearizable"),
            Err(CheckError::Violation(v)) => {
                tracing::info!(target: "sim", ops, core = v.core().len(), "history: NOT linearizable")
            }
            Err(CheckError::Timeout(_)) => {
                tracing::info!(target: "sim", ops, "history: undecided (the search ran out of steps)")
            }
        }
        verdict
    }

    /// Fails the run (class assertion) unless the history is linearizable
    /// with respect to `model`; the failure shows the violation's smallest
    /// operations as a timeline. A search that runs out of steps fails too:
    /// an undecided history is never a pass.
    #[track_caller]
    pub fn assert_linearizable<M>(&self, model: &M)
    where
        M: Model<Input = I, Output = O>,
    {
        match self.check(model) {
            Ok(()) => {}
            Err(e @ CheckError::Violation(_)) => {
                panic!(
                    "the history of {} operations is not linearizable:\n{e}",
                    self.len()
                )
            }
            Err(e @ CheckError::Timeout(_)) => panic!(
                "the history of {} operations could not be checked (the search ran out of \
                 steps; check fewer operations per key, or use sim_check::linearizable_with \
                 and a larger Options::steps_max):\n{e}",
                self.len()
            ),
        }
    }

    fn end(&self, id: OpId, how: impl FnOnce(&mut sim_check::History<I, O>, OpId)) {
        let mut inner = self.inner.borrow_mut();
        how(&mut inner.history, id);
        // Each ended operation is one line of the trace.
        let line = (inner.line)(inner.history.op(id));
        tracing::debug!(target: "sim::history", "{line}");
    }
}

impl<I, O> Call<I, O> {
    /// It took effect and answered `output`.
    #[track_caller]
    pub fn ok(mut self, output: O) {
        let id = self.id.take().expect("a call ends once");
        let now = rt::elapsed();
        self.history.end(id, |h, id| h.ok(id, output, now));
    }

    /// It certainly took no effect (refused before it reached the service,
    /// or the service answered that it did nothing).
    #[track_caller]
    pub fn fail(mut self) {
        let id = self.id.take().expect("a call ends once");
        let now = rt::elapsed();
        self.history.end(id, |h, id| h.fail(id, now));
    }

    /// It may or may not have taken effect (a timeout, a reset connection).
    #[track_caller]
    pub fn unknown(mut self) {
        let id = self.id.take().expect("a call ends once");
        let now = rt::elapsed();
        self.history.end(id, |h, id| h.unknown(id, now));
    }

    /// The operation's id in the history.
    pub fn id(&self) -> OpId {
        self.id.expect("a call that has not ended")
    }
}

impl<I, O> Drop for Call<I, O> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            // The task was dropped mid-call (cancelled, or its node died):
            // the request may have been received.
            // Outside the simulation (the run is being torn down) there is
            // no clock to read: the return has no time.
            let now = rt::is_simulation().then(rt::elapsed);
            if let Ok(mut inner) = self.history.inner.try_borrow_mut() {
                inner.history.unknown(id, now);
                let line = (inner.line)(inner.history.op(id));
                tracing::debug!(target: "sim::history", "{line} (the call was dropped)");
            }
        }
    }
}
