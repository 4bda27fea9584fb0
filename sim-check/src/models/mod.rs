//! Ready-made sequential specifications of the objects services most often
//! expose. Each is deterministic, so an unknown outcome has one effect (or
//! none, which the checker tries itself).

mod counter;
mod kv;
mod queue;
mod register;
mod set;

pub use counter::{Counter, CounterOp, CounterRet};
pub use kv::{Appendable, Kv, KvOp, KvRet};
pub use queue::{Queue, QueueOp, QueueRet};
pub use register::{Register, RegisterOp, RegisterRet};
pub use set::{Set, SetOp, SetRet};

/// The panic of a model given an answer of the wrong kind: a recording bug,
/// not a property of the service.
#[track_caller]
fn mismatch(model: &str, input: &dyn std::fmt::Debug, output: &dyn std::fmt::Debug) -> ! {
    panic!("{model}: {input:?} cannot answer {output:?} (the history recorded an answer of another operation)")
}
