//! What the simulation does with `sim::fake`'s faults (crate::fake): each
//! fault that happens is logged (target `sim`), drawn on the timeline,
//! tallied for the failing seed's report, counted by coverage and seen by
//! exploration; drawn modes are fault points of the run; the harness's heal
//! heals every fake of the run.

use super::coverage;
use super::explore::{self, Feature};
use super::timeline::{self, Noted};
use crate::fake::versioned::NamedDraws;
use crate::fake::{Inner, Mode};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::Context;
use std::time::Duration;

/// Names made at run time (fault-point sites, coverage sites), leaked once
/// per distinct name for the process.
fn intern(s: String) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(s.as_str()) {
        return n;
    }
    let n: &'static str = Box::leak(s.into_boxed_str());
    names.insert(n);
    n
}

/// The fault point and coverage site of a fake's mode: `fake <name>: <mode>`.
fn site(fake: &str, mode: Mode) -> &'static str {
    intern(format!("fake {fake}: {mode}"))
}

fn key(fake: &str, at: &'static Location<'static>, mode: Mode) -> coverage::Key {
    (site(fake, mode), at.file(), at.line())
}

/// The run's fakes (the heal heals them) and what happened to them.
#[derive(Default)]
struct Run {
    fakes: Vec<Weak<Inner>>,
    /// (fake, mode) → (operation → (explicit, drawn) counts).
    tally: BTreeMap<(String, Mode), BTreeMap<String, (u64, u64)>>,
}

const RUN: &str = "sim.fake";

fn with_run<R>(f: impl FnOnce(&mut Run) -> R) -> R {
    sim_runtime::__private::harness::with_run_local(RUN, f)
}

/// A fake's handle was made in this run.
pub(crate) fn register(inner: &Arc<Inner>) {
    with_run(|r| {
        r.fakes.retain(|w| w.strong_count() > 0);
        r.fakes.push(Arc::downgrade(inner));
    });
}

/// The harness's heal (liveness.rs): every fake of the run heals.
pub(crate) fn heal_all() {
    let fakes: Vec<Arc<Inner>> = with_run(|r| r.fakes.iter().filter_map(Weak::upgrade).collect());
    for f in fakes {
        f.heal();
    }
}

/// `mode` of `fake` may happen from now on: its coverage site is reached.
/// In the quiet phase (after `sim::heal_after`'s heal) it fails the run,
/// as any fault injected then does.
#[track_caller]
pub(crate) fn armed(fake: &str, at: &'static Location<'static>, mode: Mode) {
    if !sim_runtime::sim::is_simulation() {
        return;
    }
    if let (true, Some(heal)) = (crate::healed(), crate::heal_at()) {
        panic!(
            "sim: fake {fake:?}: {mode} at {:?} is a fault in the quiet phase, which began with \
             the heal at {heal:?} (sim::heal_after): the liveness phase checks that the system \
             recovers without faults. Inject faults before the heal, or heal later.",
            sim_runtime::sim::elapsed()
        );
    }
    coverage::hit_dynamic(key(fake, at, mode), false);
}

/// `mode` happened to operation `op` of `fake`.
pub(crate) fn happened(
    fake: &str,
    at: &'static Location<'static>,
    mode: Mode,
    op: &str,
    drawn: bool,
    detail: &str,
) {
    let how = if drawn { "drawn" } else { "injected" };
    tracing::info!(target: "sim", fake, op, detail, how, "fake: {mode}");
    if !sim_runtime::sim::is_simulation() {
        return;
    }
    coverage::hit_dynamic(key(fake, at, mode), true);
    with_run(|r| {
        let t = r
            .tally
            .entry((fake.to_string(), mode))
            .or_default()
            .entry(op.to_string())
            .or_default();
        if drawn {
            t.1 += 1;
        } else {
            t.0 += 1;
        }
    });
    let node = sim_runtime::sim::current_node();
    explore::note(Feature::Fault {
        kind: mode.label(),
        nodes: vec![node.as_u32()],
    });
    if timeline::recording() {
        let name = sim_runtime::sim::node_name(node);
        timeline::note(Noted::Fake(mode.label()), &[&name, fake, op, detail, how]);
    }
}

/// Whether drawn `mode` of `fake` fires now: a fault point of the run
/// (`fake <name>: <mode>`), never once the harness has healed.
pub(crate) fn draw(fake: &str, mode: Mode, num: u32, den: u32) -> bool {
    if crate::healed() {
        return false;
    }
    sim_runtime::sim::buggify(site(fake, mode), num, den)
}

/// A fake's draws: inside a run, a stream of the run's seed tree
/// (`fake.<name>`, through the tape when one is on); outside, a stream
/// seeded by the name.
pub(crate) enum Draws {
    Seeded(Box<crate::Rng>),
    Named(NamedDraws),
}

impl Draws {
    /// A draw in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        match self {
            Draws::Seeded(r) => r.below(n),
            Draws::Named(d) => d.below(n),
        }
    }
}

pub(crate) fn draws(fake: &str) -> Draws {
    if sim_runtime::sim::is_simulation() {
        let seed = sim_runtime::sim::fork_seed(&format!("fake.{fake}"));
        Draws::Seeded(Box::new(crate::Rng::from_seed(seed)))
    } else {
        Draws::Named(NamedDraws::new(fake))
    }
}

/// When a row's version was written, for staleness bounds: the run's
/// virtual time (zero outside a run).
pub(crate) fn clock() -> Duration {
    if sim_runtime::sim::is_simulation() {
        sim_runtime::sim::elapsed()
    } else {
        Duration::ZERO
    }
}

/// A drawn hang's end: a virtual-time sleep.
pub(crate) struct Timer(Pin<Box<sim_runtime::time::Sleep>>);

impl Timer {
    pub(crate) fn after(d: Duration) -> Timer {
        Timer(Box::pin(sim_runtime::time::sleep(d)))
    }

    pub(crate) fn elapsed(&mut self, cx: &mut Context<'_>) -> bool {
        self.0.as_mut().poll(cx).is_ready()
    }
}

/// The run's fake faults, one line per fake and mode, for the report:
/// `users: partial failure: save ×2, find ×1 (drawn)`.
pub(crate) fn take() -> Vec<String> {
    let tally = with_run(|r| {
        r.fakes.clear();
        std::mem::take(&mut r.tally)
    });
    tally
        .into_iter()
        .map(|((fake, mode), ops)| {
            let ops: Vec<String> = ops
                .into_iter()
                .map(|(op, (explicit, drawn))| match (explicit, drawn) {
                    (e, 0) => format!("{op} ×{e}"),
                    (0, d) => format!("{op} ×{d} (drawn)"),
                    (e, d) => format!("{op} ×{e} + ×{d} (drawn)"),
                })
                .collect();
            format!("{fake}: {mode}: {}", ops.join(", "))
        })
        .collect()
}
