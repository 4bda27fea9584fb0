//! Histories of operations on a shared object, and a checker that decides
//! whether a history is linearizable.
//!
//! A pure, synchronous library: no clock, no threads, no thread-locals, no
//! randomness, no hash-order iteration. The same history always gets the
//! same verdict and the same report. It is meant to be re-exported by the
//! harness as `sim::check`, which records histories in virtual time; here
//! a timestamp is only a value to print, and event order is what counts.
//!
//! ```
//! use sim_check::{linearizable, History, Register, RegisterOp, RegisterRet};
//!
//! let mut h = History::new();
//! // Client 0 writes 1; while the write is in flight, client 1 reads 1.
//! let w = h.invoke(0, RegisterOp::Write(1), None);
//! let r1 = h.invoke(1, RegisterOp::Read, None);
//! h.ok(r1, RegisterRet::Read(1), None);
//! h.ok(w, RegisterRet::Write, None);
//! assert!(linearizable(&Register::new(0), &h).is_ok());
//!
//! // Then client 1 reads 0: after reading 1, with nothing writing 0, stale.
//! let r2 = h.invoke(1, RegisterOp::Read, None);
//! h.ok(r2, RegisterRet::Read(0), None);
//! let err = linearizable(&Register::new(0), &h).unwrap_err();
//! let v = err.violation().unwrap();
//! // The two reads contradict each other whether or not the write took
//! // effect; the write is shown as context: where the 1 came from.
//! assert_eq!(v.core(), [r1, r2]);
//! assert_eq!(v.context(), [w]);
//! assert_eq!(v.unplaced(), r2);
//! assert!(v.is_minimal());
//! println!("{v}"); // the timeline
//! ```
//!
//! # Semantics (normative)
//!
//! **Histories.** A [`History`] is a sequence of events in one total order:
//! each [`History::invoke`] is a call, each [`History::ok`],
//! [`History::fail`] or [`History::unknown`] the return of an earlier
//! call. Positions in that order, not timestamps, decide what precedes
//! what: operation A *precedes* B when A returned before B was called. A
//! client is sequential: it invokes only when its previous operation has
//! ended. Misuse (ending twice, invoking while open, a timestamp going
//! back) panics.
//!
//! **Outcomes.** An operation that ended [`Outcome::Ok`] took effect
//! exactly once, at one instant between its call and its return, and
//! answered what was recorded. [`Outcome::Fail`] means it certainly took no
//! effect: the checker ignores it. [`Outcome::Unknown`] (a timeout, a lost
//! connection: Jepsen's `:info`) means it took effect at most once, at any
//! instant after its call — even after its recorded return and after its
//! client's later operations, as a request still in flight does — or never,
//! and its answer is not known. [`Outcome::Pending`] (never ended) is the
//! same as unknown.
//!
//! **Linearizable.** A history is linearizable with respect to a [`Model`]
//! when there is a sequence holding every completed operation, and any
//! subset of the unknown ones, such that (1) if A precedes B and both are
//! in it, A comes first, and (2) replaying it through [`Model::step`] from
//! [`Model::init`] accepts every operation: a completed one with its
//! recorded answer, an unknown one with no answer (its effect). Models
//! must be deterministic.
//!
//! **Partitions.** When [`Model::partition`] gives every operation a key,
//! each key's operations are a history of their own, checked from the
//! initial state, in turns (below). For models that are independent objects
//! per key (the [`Kv`] map) this decides exactly the same as checking the
//! whole (linearizability is compositional), much faster.
//!
//! **The search** is Wing & Gong's, with Lowe's memo, as in Porcupine: it
//! extends a linearization one operation at a time, trying the operations
//! that may go next in event order and backtracking on a dead end, and never
//! explores a (set of operations linearized, state) configuration twice.
//! Unknown operations get four reductions, each exact (it never changes a
//! verdict; the tests compare every verdict with a brute force):
//!
//! - they are tried only after the answered operations that may go next,
//!   so they are placed where something needs them;
//! - one whose effect would leave the state as it is (a read, a
//!   compare-and-set that fails) is never placed: "never happened" stands
//!   for it;
//! - unknown operations with equal inputs are interchangeable (the one
//!   called earlier can stand in for the later anywhere), so only the
//!   earliest undecided is tried ([`Model::Input`] is `Eq + Hash` for this);
//! - having placed more unknown operations to reach the same state with the
//!   same answered ones never helps: a configuration is skipped when the
//!   memo holds one with the same answered set and state and a subset of
//!   its unknown ones, and so is an unknown operation placed on top of
//!   other unknown placements when placing it before them reaches the same
//!   state (a write overwriting unknown writes).
//!
//! **Limits.** Every limit counts model steps, never time, so the verdict
//! does not depend on the machine. A partition whose search would take more
//! than [`Options::steps_max`] steps is *undecided*; the check then returns
//! [`CheckError::Timeout`] — never `Ok` — unless another partition is a
//! violation, which is returned instead. The default (5,000,000 steps) is
//! about a second and at most a few hundred MB for a thousand-operation
//! partition.
//!
//! **Turns.** Partitions are searched in turns, so that a hard partition
//! never starves the others. In round *r* (0, 1, 2, …) every partition not
//! yet decided goes on, in key order, until its search has taken
//! min(1,024 × 2^*r*, `steps_max`) steps in all; a partition left alone
//! (every other one decided) goes on to `steps_max` at once. A paused
//! search resumes exactly where it stopped, so each partition's verdict and
//! steps are those of searching it alone. The first violation found ends
//! the check. Hence:
//!
//! - `steps_max` is a budget *per partition*: the check as a whole takes at
//!   most (number of partitions) × `steps_max` search steps, plus
//!   shrinking's ([`Options::shrink_steps_max`], below);
//! - if a partition's search proves a violation in *s* steps, the check
//!   ends before any other partition has taken more than max(1,024, 2*s*)
//!   steps: [`Violation::steps`] counts the steps of all partitions up to
//!   then. The budget is checked before each placement; deciding whether
//!   an unknown operation's placement is covered by an earlier one (above)
//!   counts steps too and may go a few past it;
//! - which violation is reported depends on step counts only: the same
//!   history gets the same one on every run and machine, though not
//!   necessarily the one in the first partition in key order;
//! - a paused search keeps its memo, so the memory is that of every
//!   undecided partition's search at once (as when partitions are searched
//!   concurrently).
//!
//! The search is exponential at worst; what makes it so is ambiguity that
//! only later operations resolve:
//!
//! - many concurrent operations on one partition (partition by key when the
//!   model allows it);
//! - unknown operations whose effects do not overwrite one another
//!   (additions to a counter: which subset took effect?);
//! - a [`Queue`]: its state holds the order of every element not yet
//!   dequeued, and concurrent enqueues reveal their order only when
//!   dequeued, possibly much later. Long queues under concurrency, above all
//!   with unknown outcomes, can exceed the default budget (a 200-operation
//!   queue history from three clients with 30% unknown outcomes does).
//!
//! **Violations.** [`CheckError::Violation`] carries a [`Violation`],
//! shrunk from the failing partition in three steps, each proven by a
//! search:
//!
//! 1. *The cut.* The history is cut after the earliest return event `end`
//!    such that the history up to `end` (operations called later dropped,
//!    operations still open at `end` taken as unknown) is already not
//!    linearizable. [`Violation::end`] is that event.
//! 2. *The core* ([`Violation::core`]): completed operations whose recorded
//!    answers cannot all be explained, even with every other operation of
//!    the cut history taken as a *maybe* — it took effect between its call
//!    and return or never, with any answer. Shrinking only ever weakens what
//!    was recorded, never removes it: removing the write a read saw would
//!    make "a read of a value never written" out of a correct read. An
//!    unknown operation is never in the core. **Minimal** means
//!    1-minimal: when [`Violation::is_minimal`] is true, taking any single
//!    core operation as a maybe too makes the cut history linearizable. It
//!    is not necessarily the smallest core there is. If shrinking's budget
//!    (below) runs out, the core is still a proven violation, and
//!    `is_minimal` is false.
//! 3. *The context* ([`Violation::context`]): the maybes shown beside the
//!    core, a 1-minimal set of them such that every core operation stays
//!    needed with only them beside it: taking it as a maybe too makes core
//!    plus context linearizable. Typically the writes the core's reads saw.
//!    Core plus context (as maybes) is itself not linearizable.
//!
//! **Shrinking is bounded.** Its searches count *work*, a measure of time
//! that, like the steps, does not depend on the machine: one unit per
//! operation handed to a search (setting it up), per event the search's
//! walk visits (each step is one), per configuration it enters in the memo,
//! and per model step deciding whether an unknown operation's placement is
//! covered. The *verdict's work* ([`Violation::work`]) counts the same for
//! the check's own searches, every partition's up to the violation.
//! Shrinking takes at most max(10 × the verdict's work, 50,000) units — the
//! floor shrinks a small history fully, in a millisecond or two — and never
//! more than the cap, [`Options::shrink_steps_max`].
//! [`Violation::shrink_work`] is what it took. The budget is checked before
//! each search and at each event a search visits, so it may be passed by the
//! few units of one step. A unit of shrinking costs more time than one of
//! the verdict (its searches weaken most answers, so more of their steps
//! succeed and are kept): on Porcupine's published histories up to about 3
//! times as much; see docs/perf.md.
//!
//! **The verdict alone.** [`linearizable_verdict`] does not shrink: a
//! violation is reported as the search found it, with the whole partition
//! up to its last return as the core (every completed operation), the other
//! operations called before then as context, not minimal, and
//! [`Violation::shrink_work`] 0. Its verdict, partition and
//! [`Violation::steps`] are those of [`linearizable`].
//!
//! [`Violation::linearized`] is the longest order of core and context
//! operations the search could build, and [`Violation::unplaced`] the core
//! operation that could not follow it. `Display` draws the timeline: one
//! line per client, each operation a bar over the event order, the
//! unplaceable one marked.
//!
//! # Models
//!
//! [`Register`] (read, write, compare-and-set), [`Kv`] (get, put, delete,
//! and append with MIT 6.824's semantics; partitioned by key), [`Counter`] (add, read), [`Set`] (add, contains,
//! read all), [`Queue`] (FIFO enqueue, dequeue). Any other object is a
//! [`Model`]: a state, and a step that accepts or refuses an operation and
//! its answer.

mod check;
mod history;
mod memo;
mod model;
mod models;
mod render;
mod search;
mod shrink;
mod violation;

pub use check::{
    linearizable, linearizable_verdict, linearizable_verdict_with, linearizable_with, Options,
};
pub use history::{Event, History, Op, OpId, Outcome};
pub use model::Model;
pub use models::{
    Appendable, Counter, CounterOp, CounterRet, Kv, KvOp, KvRet, Queue, QueueOp, QueueRet,
    Register, RegisterOp, RegisterRet, Set, SetOp, SetRet,
};
pub use violation::{CheckError, Timeout, Undecided, Violation};
