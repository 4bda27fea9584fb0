//! The harness under `--cfg simulation`.

mod antithesis;
pub(crate) mod coverage;
pub(crate) mod explore;
pub(crate) mod fake;
pub mod fs;
pub mod fuzz;
mod gen;
mod history;
mod liveness;
pub mod net;
mod node;
mod replay;
mod results;
mod rng;
mod rollout;
pub(crate) mod run;
pub(crate) mod seed;
mod shrink;
pub mod swarm;
mod tape;
mod timeline;
mod trace;
mod workload;
mod world;

pub use history::{Call, History};
pub use liveness::{heal_after, heal_at, healed};
pub use node::{node, AsNode, Node, NodeBuilder};
pub use rng::Rng;
pub use rollout::{rollout, rollout_with, RolloutOptions};
pub use sim_runtime::signal::unix::SignalKind;
pub use sim_runtime::sim::{at, elapsed, fingerprint, fork_seed, seed, step};
pub use workload::{Op, Summary, Workload};
pub use world::World;

/// What a service promises, checked on a [`History`]: the models and the
/// linearizability checker of the `sim-check` crate.
pub mod check {
    pub use sim_check::*;
}

/// Fault plans drawn from the seed within an envelope the test bounds:
/// [`faults::schedule`] draws and applies one, [`faults::draw`] only draws.
pub mod faults {
    pub use super::gen::{draw, schedule, schedule_as, Envelope, Fault, FaultKind, Plan};
}

/// Runs `action` after `delay` of virtual time from now (the scripted form
/// of any lifecycle or fault call).
#[track_caller]
pub fn after(
    delay: std::time::Duration,
    action: impl FnOnce() + 'static,
) -> sim_runtime::task::JoinHandle<()> {
    at(elapsed() + delay, action)
}

/// The prefix of the panic `eventually` raises, by which the runner tells
/// a liveness failure from an assertion.
pub(crate) const LIVENESS_MARKER: &str = "sim liveness: ";

/// Liveness: waits until `progress()` holds, checking every `every` of
/// virtual time, for at most `bound`; past the bound the run fails with
/// class `liveness`, naming `what`. Use it after healing the faults a test
/// injected: "once the cluster is whole again, writes succeed within 30 s".
pub async fn eventually<F, Fut>(what: &str, bound: std::time::Duration, mut progress: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let every = (bound / 100).max(std::time::Duration::from_millis(1));
    // In a run with a liveness phase the bound counts from the heal.
    let heal = liveness::wait_for_heal().await;
    let start = elapsed();
    loop {
        if progress().await {
            return;
        }
        if elapsed() - start >= bound {
            let healed = heal
                .as_ref()
                .map(|(at, what)| format!("; the heal at {at:?}: {what}"))
                .unwrap_or_default();
            panic!(
                "{LIVENESS_MARKER}{what}: no progress within {bound:?} of virtual time (checked \
                 every {every:?} since {start:?}){healed}"
            );
        }
        sim_runtime::time::sleep(every).await;
    }
}
