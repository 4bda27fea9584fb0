//! Swarm testing: each seed draws its own configuration — which fault
//! families are on, their rates, latencies, node counts, the workload mix —
//! each dimension from its own labelled stream, so adding or re-bounding a
//! dimension never reshuffles the others. Ranges include their ends (put 0
//! in a range to keep "no faults" and "zero latency" among the draws).
//!
//! ```ignore
//! let crashes = sim::swarm::range("crashes", 0..=3);
//! let latency = sim::swarm::duration_ms("latency", 0..=50);
//! let partitions = sim::swarm::flag("partitions");
//! let mix = sim::swarm::pick("workload", &["reads", "writes", "mixed"]);
//! ```
//!
//! The drawn configuration goes into the trace and the failure report.

use std::cell::RefCell;
use std::ops::RangeInclusive;
use std::time::Duration;

thread_local! {
    /// This seed's draws, in the order the test made them.
    static DRAWN: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
}

fn stream(name: &str) -> u64 {
    super::fork_seed(&format!("swarm.{name}"))
}

fn record(name: &str, value: String) {
    tracing::info!(target: "sim::swarm", dimension = name, value = %value, "swarm draw");
    DRAWN.with(|d| d.borrow_mut().push((name.to_string(), value)));
}

/// An integer in `bounds` (both ends included), drawn for dimension `name`.
#[track_caller]
pub fn range(name: &str, bounds: RangeInclusive<u64>) -> u64 {
    let (lo, hi) = (*bounds.start(), *bounds.end());
    assert!(
        lo <= hi,
        "sim::swarm::range({name:?}): the range {lo}..={hi} is empty"
    );
    let span = hi - lo;
    let v = if span == u64::MAX {
        stream(name)
    } else {
        lo + stream(name) % (span + 1)
    };
    record(name, v.to_string());
    v
}

/// A duration of `bounds` milliseconds (both ends included).
#[track_caller]
pub fn duration_ms(name: &str, bounds: RangeInclusive<u64>) -> Duration {
    Duration::from_millis(range(name, bounds))
}

/// On or off, with even odds.
pub fn flag(name: &str) -> bool {
    let v = stream(name) & 1 == 1;
    record(name, v.to_string());
    v
}

/// On with probability `num / den`.
#[track_caller]
pub fn chance(name: &str, num: u64, den: u64) -> bool {
    assert!(
        den > 0 && num <= den,
        "sim::swarm::chance({name:?}): {num}/{den} is not a probability"
    );
    let v = stream(name) % den < num;
    record(name, v.to_string());
    v
}

/// One of `choices`.
#[track_caller]
pub fn pick<T: Clone + std::fmt::Debug>(name: &str, choices: &[T]) -> T {
    assert!(
        !choices.is_empty(),
        "sim::swarm::pick({name:?}): no choices"
    );
    let v = choices[(stream(name) % choices.len() as u64) as usize].clone();
    record(name, format!("{v:?}"));
    v
}

/// This seed's configuration so far, `name=value` pairs in draw order.
pub fn drawn() -> Vec<(String, String)> {
    DRAWN.with(|d| d.borrow().clone())
}

/// Takes (and clears) this thread's draws: the runner calls it once a
/// seed's run is over.
pub(crate) fn take() -> Vec<(String, String)> {
    DRAWN.with(|d| std::mem::take(&mut *d.borrow_mut()))
}
