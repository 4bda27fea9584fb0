//! What a failed check returns: a [`Violation`] (proven not linearizable)
//! or a [`Timeout`] (not decided). Both own their text (no type parameters),
//! so they travel as plain errors.

use crate::history::{Event, Op, OpId, Outcome};
use crate::model::Model;
use std::fmt;
use std::sync::Arc;

/// Why a check did not pass.
pub enum CheckError {
    /// The history is proven not linearizable (boxed: a violation is large,
    /// and `Ok` is the common case).
    Violation(Box<Violation>),
    /// Some partition's search ran out of steps and none was a violation:
    /// nothing is known. Never a pass.
    Timeout(Timeout),
}

impl CheckError {
    /// The violation, if this is one.
    pub fn violation(&self) -> Option<&Violation> {
        match self {
            CheckError::Violation(v) => Some(v),
            CheckError::Timeout(_) => None,
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Violation(v) => v.fmt(f),
            CheckError::Timeout(t) => t.fmt(f),
        }
    }
}

/// The text, so that `check(..).unwrap()` prints the timeline.
impl fmt::Debug for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for CheckError {}

/// A proof that a history is not linearizable, shrunk to the operations
/// that show it. See the crate docs for what [`Violation::core`] and
/// [`Violation::is_minimal`] guarantee. `Display` draws the timeline.
pub struct Violation {
    pub(crate) partition: Option<String>,
    pub(crate) partition_ops: usize,
    pub(crate) end: u64,
    pub(crate) core: Vec<Shown>,
    pub(crate) context: Vec<Shown>,
    pub(crate) minimal: bool,
    pub(crate) linearized: Vec<OpId>,
    pub(crate) unplaced: OpId,
    pub(crate) state: String,
    pub(crate) steps: u64,
    pub(crate) work: u64,
    pub(crate) shrink_work: u64,
}

impl Violation {
    /// The search steps the check took, over every partition, up to the
    /// moment it found this violation (shrinking aside). Partitions are
    /// searched in turns, so a hard partition does not delay a violation
    /// elsewhere: see "Limits" in the crate docs.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The verdict's work: one unit per operation handed to a search, per
    /// event a search's walk visited (each step is one) and per
    /// configuration entered, over every partition searched up to the
    /// violation. Shrinking is bounded by a multiple of it: see "Shrinking
    /// is bounded" in the crate docs.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// The work shrinking took, counted as [`Violation::work`] is (0 from
    /// [`crate::linearizable_verdict`], which does not shrink).
    pub fn shrink_work(&self) -> u64 {
        self.shrink_work
    }

    /// The partition's key, if the model partitions.
    pub fn partition(&self) -> Option<&str> {
        self.partition.as_deref()
    }

    /// How many operations (failed ones aside) the partition has.
    pub fn partition_ops(&self) -> usize {
        self.partition_ops
    }

    /// The event the history was cut after: the return of the earliest
    /// operation whose answer made the history so far non-linearizable.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The completed operations whose answers cannot all be explained, in
    /// call order.
    pub fn core(&self) -> Vec<OpId> {
        self.core.iter().map(|s| s.id).collect()
    }

    /// The other operations shown beside the core, taken as maybes (they
    /// took effect between their call and return, or never, whatever they
    /// answered): a 1-minimal set with which every core operation is still
    /// needed (typically the writes the core's reads saw). In call order.
    pub fn context(&self) -> Vec<OpId> {
        self.context.iter().map(|s| s.id).collect()
    }

    /// Whether the core was proven 1-minimal: treating any one of its
    /// operations as a maybe makes the cut history linearizable. `false`
    /// when shrinking ran out of steps; the core is then still a proven
    /// violation, only perhaps larger than needed.
    pub fn is_minimal(&self) -> bool {
        self.minimal
    }

    /// The longest sequence of the core and context operations the search
    /// could linearize, in linearization order ("took effect" choices only).
    pub fn linearized(&self) -> &[OpId] {
        &self.linearized
    }

    /// The core operation that could not follow [`Violation::linearized`].
    pub fn unplaced(&self) -> OpId {
        self.unplaced
    }

    /// The model's state after [`Violation::linearized`], as
    /// [`Model::describe_state`] wrote it.
    pub fn state(&self) -> &str {
        &self.state
    }
}

impl fmt::Debug for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A check that could not be decided within [`crate::Options::steps_max`].
#[derive(Debug)]
pub struct Timeout {
    pub(crate) steps_max: u64,
    pub(crate) partitions: Vec<Undecided>,
}

impl Timeout {
    /// The partitions whose search ran out of steps, in key order.
    pub fn partitions(&self) -> &[Undecided] {
        &self.partitions
    }

    /// The limit that was hit.
    pub fn steps_max(&self) -> u64 {
        self.steps_max
    }
}

/// One partition whose search ran out of steps.
#[derive(Clone, Debug)]
pub struct Undecided {
    /// Its key, if the model partitions.
    pub partition: Option<String>,
    /// Its operations.
    pub ops: usize,
    /// The steps taken.
    pub steps: u64,
    /// The most operations linearized at once before the search stopped.
    pub longest: usize,
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "linearizability not decided: {} partition(s) needed more than {} search steps (Options::steps_max). \
             This is not a pass; raise the limit or check shorter histories.",
            self.partitions.len(),
            self.steps_max
        )?;
        for p in &self.partitions {
            let name = p
                .partition
                .as_deref()
                .map_or_else(|| "the history".to_string(), |k| format!("key {k}"));
            writeln!(
                f,
                "  {name}: {} operations, at most {} linearized at once",
                p.ops, p.longest
            )?;
        }
        Ok(())
    }
}

/// An operation as a violation shows it.
pub(crate) struct Shown {
    pub id: OpId,
    pub client: u32,
    pub label: Option<Arc<str>>,
    pub call: Event,
    pub ret: Option<Event>,
    /// `Ok`, `Unknown` or `Pending`, as recorded.
    pub outcome: &'static str,
    pub text: String,
}

impl Shown {
    pub(crate) fn new<M: Model>(model: &M, id: OpId, op: &Op<M::Input, M::Output>) -> Self {
        let outcome = match op.outcome() {
            Outcome::Ok(_) => "ok",
            Outcome::Fail => "failed",
            Outcome::Unknown => "unknown",
            Outcome::Pending => "pending",
        };
        Shown {
            id,
            client: op.client(),
            label: op.label_shared(),
            call: op.call(),
            ret: op.ret(),
            outcome,
            text: model.describe(op.input(), op.output()),
        }
    }
}
