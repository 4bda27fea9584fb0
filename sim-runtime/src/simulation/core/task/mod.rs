//! The task internals, as Tokio keeps them in `runtime/task`: a task's one
//! allocation (`raw`), its join handle and abort handle (`join`), and its
//! [`Id`]. `tokio::task` (the api layer) re-exports the public ones.

pub(crate) mod join;
pub(crate) mod raw;

use std::fmt;

/// An opaque id that uniquely identifies a task relative to all other
/// currently running tasks.
#[derive(Clone, Copy, Debug, Hash, Eq, PartialEq, Ord, PartialOrd)]
pub struct Id(pub(crate) u64);

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
