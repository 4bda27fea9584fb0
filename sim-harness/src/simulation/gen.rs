//! Seeded generators: fault plans drawn from the seed within an envelope
//! the test bounds (`sim::faults`).
//!
//! # How a plan is drawn
//!
//! Each dimension (crashes, kills, partitions, clogs) draws from its own
//! stream, `H(plan seed, dimension)`: first its count (uniform in the
//! envelope's range, which may include zero), then the start times (uniform
//! in the window, at least `min_gap` apart, whole milliseconds), then for
//! each event in time order its target and how long it lasts. So changing
//! one dimension's bounds never changes another dimension's draws, and the
//! same seed, nodes and envelope always give the same plan.
//!
//! # How a plan is applied
//!
//! Each fault starts at its time (`sim::at`) and ends `lasts` later. Faults
//! that overlap compose: a node is down while any crash or kill covers it
//! (it dies when the first begins and restarts, with its current service,
//! when the last ends); a link is cut while any partition covers it and
//! clogged while any clog does (a partition wins over a clog).

use super::node::Node;
use super::rng::Rng;
use sim_runtime::__private::harness;
use sim_runtime::sim as rt;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::RangeInclusive;
use std::rc::Rc;
use std::time::Duration;

/// The bounds a test puts on a drawn fault plan. Every count is a range
/// that may include zero; the defaults draw nothing.
///
/// ```ignore
/// let plan = sim::faults::schedule(&nodes, &sim::faults::Envelope {
///     crashes: 0..=2,
///     partitions: 0..=1,
///     window: Duration::from_secs(30),
///     ..Default::default()
/// });
/// println!("{plan}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// Machine crashes (the disk keeps only what was synced), each followed
    /// by a restart after a downtime in `min_down..=max_down`.
    pub crashes: RangeInclusive<u32>,
    /// Process kills (the disk keeps its page cache), each followed by a
    /// restart after a downtime in `min_down..=max_down`.
    pub kills: RangeInclusive<u32>,
    /// Partitions: a minority of the nodes (one up to half) cut from the
    /// rest, both ways, healed after `min_cut..=max_cut`.
    pub partitions: RangeInclusive<u32>,
    /// Clogs: the link between two nodes queues every byte (none are
    /// lost) for `min_cut..=max_cut`.
    pub clogs: RangeInclusive<u32>,
    /// Every fault starts within this long after the plan is scheduled (it
    /// may end later).
    pub window: Duration,
    /// Two faults of the same dimension start at least this far apart.
    pub min_gap: Duration,
    /// The shortest downtime of a crash or kill.
    pub min_down: Duration,
    /// The longest downtime of a crash or kill.
    pub max_down: Duration,
    /// The shortest partition or clog.
    pub min_cut: Duration,
    /// The longest partition or clog.
    pub max_cut: Duration,
}

impl Default for Envelope {
    /// No faults; when counts are raised, they start within 10 s, nodes
    /// stay down 100 ms–5 s and links stay cut 100 ms–5 s.
    fn default() -> Envelope {
        Envelope {
            crashes: 0..=0,
            kills: 0..=0,
            partitions: 0..=0,
            clogs: 0..=0,
            window: Duration::from_secs(10),
            min_gap: Duration::ZERO,
            min_down: Duration::from_millis(100),
            max_down: Duration::from_secs(5),
            min_cut: Duration::from_millis(100),
            max_cut: Duration::from_secs(5),
        }
    }
}

/// Whole milliseconds of `d` (plans are drawn on Tokio's timer grain).
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Envelope {
    /// Checks the bounds, with a message naming the field at fault.
    #[track_caller]
    fn validate(&self, nodes: usize) {
        for (name, r) in self.dimensions() {
            assert!(
                r.start() <= r.end(),
                "sim::faults::Envelope: {name} is the empty range {}..={}",
                r.start(),
                r.end()
            );
            let most = u64::from(*r.end());
            if most > 0 {
                assert!(
                    ms(self.window) >= 1,
                    "sim::faults::Envelope: window must be at least 1 ms when {name} may be drawn"
                );
                assert!(
                    (most - 1).saturating_mul(ms(self.min_gap)) < ms(self.window),
                    "sim::faults::Envelope: {most} {name} at least {:?} apart do not fit in a \
                     window of {:?}",
                    self.min_gap,
                    self.window
                );
            }
        }
        assert!(
            self.min_down <= self.max_down,
            "sim::faults::Envelope: min_down ({:?}) is above max_down ({:?})",
            self.min_down,
            self.max_down
        );
        assert!(
            self.min_cut <= self.max_cut,
            "sim::faults::Envelope: min_cut ({:?}) is above max_cut ({:?})",
            self.min_cut,
            self.max_cut
        );
        let lifecycle = *self.crashes.start() > 0 || *self.kills.start() > 0;
        assert!(
            !lifecycle || nodes >= 1,
            "sim::faults: crashes or kills are required but there are no nodes to fault"
        );
        let links = *self.partitions.start() > 0 || *self.clogs.start() > 0;
        assert!(
            !links || nodes >= 2,
            "sim::faults: partitions or clogs are required but a link needs two nodes ({nodes} \
             given)"
        );
    }

    fn dimensions(&self) -> [(&'static str, &RangeInclusive<u32>); 4] {
        [
            ("crashes", &self.crashes),
            ("kills", &self.kills),
            ("partitions", &self.partitions),
            ("clogs", &self.clogs),
        ]
    }
}

/// What a drawn fault does.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    /// The node's machine crashes, and restarts when the fault ends.
    Crash {
        /// The node's name.
        node: String,
    },
    /// The node's process is killed, and restarts when the fault ends.
    Kill {
        /// The node's name.
        node: String,
    },
    /// Every link between `minority` and `majority` is cut, both ways,
    /// until the fault ends.
    Partition {
        /// One up to half of the nodes, in the order they were given.
        minority: Vec<String>,
        /// The other nodes, in the order they were given.
        majority: Vec<String>,
    },
    /// The link between `a` and `b` queues every byte, both ways, until
    /// the fault ends.
    Clog {
        /// One end (the one given first).
        a: String,
        /// The other end.
        b: String,
    },
}

/// One drawn fault: what, when, for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// When it starts, after the plan's origin (whole milliseconds).
    pub at: Duration,
    /// How long it lasts (whole milliseconds; may be zero).
    pub lasts: Duration,
    /// What it does.
    pub kind: FaultKind,
}

impl Fault {
    /// When it ends, after the plan's origin.
    pub fn ends(&self) -> Duration {
        self.at + self.lasts
    }
}

/// A drawn fault plan: the faults in the order they start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The global virtual time the plan was scheduled at (zero for a plan
    /// that was only drawn); fault times count from here.
    pub origin: Duration,
    /// The faults, by start time (ties: crashes, kills, partitions, clogs,
    /// each in drawing order).
    pub faults: Vec<Fault>,
}

impl Plan {
    /// How many faults the plan holds.
    pub fn len(&self) -> usize {
        self.faults.len()
    }

    /// Whether the plan holds no fault.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// The crashes, in start order.
    pub fn crashes(&self) -> impl Iterator<Item = &Fault> {
        self.faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Crash { .. }))
    }

    /// The kills, in start order.
    pub fn kills(&self) -> impl Iterator<Item = &Fault> {
        self.faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Kill { .. }))
    }

    /// The partitions, in start order.
    pub fn partitions(&self) -> impl Iterator<Item = &Fault> {
        self.faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Partition { .. }))
    }

    /// The clogs, in start order.
    pub fn clogs(&self) -> impl Iterator<Item = &Fault> {
        self.faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Clog { .. }))
    }

    /// Cuts the plan at the run time `heal` (a liveness phase's heal):
    /// faults that would start at or after it are dropped, and faults under
    /// way then end at it. The draws themselves do not change.
    fn cut_at(&mut self, heal: Duration) {
        let end = heal.saturating_sub(self.origin);
        self.faults.retain(|f| f.at < end);
        for f in &mut self.faults {
            f.lasts = f.lasts.min(end - f.at);
        }
    }

    /// The global virtual time by which every fault has ended (every node
    /// restarted, every link healed): `origin` plus the latest end. In a
    /// run with a liveness phase, no later than its heal.
    pub fn quiet_at(&self) -> Duration {
        self.origin
            + self
                .faults
                .iter()
                .map(Fault::ends)
                .max()
                .unwrap_or_default()
    }
}

impl fmt::Display for Plan {
    /// One line per fault: `+1.250s crash db (down 2.000s)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.faults.is_empty() {
            return write!(f, "no faults");
        }
        for (i, x) in self.faults.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let at = self.origin + x.at;
            write!(f, "+{}.{:03}s ", at.as_secs(), at.subsec_millis())?;
            let lasts = format!("{}.{:03}s", x.lasts.as_secs(), x.lasts.subsec_millis());
            match &x.kind {
                FaultKind::Crash { node } => write!(f, "crash {node} (down {lasts})")?,
                FaultKind::Kill { node } => write!(f, "kill {node} (down {lasts})")?,
                FaultKind::Partition { minority, majority } => write!(
                    f,
                    "partition {} | {} (for {lasts})",
                    minority.join(","),
                    majority.join(",")
                )?,
                FaultKind::Clog { a, b } => write!(f, "clog {a} <-> {b} (for {lasts})")?,
            }
        }
        Ok(())
    }
}

/// `count` start times in `0..window`, at least `gap` apart, sorted (ms).
fn draw_times(rng: &mut Rng, count: u64, window_ms: u64, gap_ms: u64) -> Vec<u64> {
    if count == 0 {
        return Vec::new();
    }
    // Draw in the window shrunk by the gaps, then spread the sorted points
    // apart by one gap each: uniform over the valid placements' order
    // statistics, and no rejection loop.
    let slack = window_ms - (count - 1) * gap_ms;
    let mut points: Vec<u64> = (0..count).map(|_| rng.below(slack)).collect();
    points.sort_unstable();
    points
        .iter()
        .enumerate()
        .map(|(i, p)| p + i as u64 * gap_ms)
        .collect()
}

/// Draws one dimension: its count, its times, then per event its target and
/// length (`target` draws from the same stream, after the times).
fn draw_dimension(
    seed: u64,
    label: &str,
    range: &RangeInclusive<u32>,
    env: &Envelope,
    lasts: (Duration, Duration),
    mut target: impl FnMut(&mut Rng) -> FaultKind,
) -> Vec<Fault> {
    let mut rng = Rng::from_seed(harness::child_seed(seed, label));
    let count = rng.in_range(u64::from(*range.start())..=u64::from(*range.end()));
    let times = draw_times(&mut rng, count, ms(env.window), ms(env.min_gap));
    times
        .into_iter()
        .map(|at| {
            let kind = target(&mut rng);
            let lasts = rng.in_range(ms(lasts.0)..=ms(lasts.1));
            Fault {
                at: Duration::from_millis(at),
                lasts: Duration::from_millis(lasts),
                kind,
            }
        })
        .collect()
}

/// Draws a plan for `nodes` (by name) within `envelope` from `seed`,
/// without a simulation: the same arguments always give the same plan.
/// [`schedule`] draws from the running simulation's seed and applies the
/// plan.
///
/// # Panics
/// If the envelope is inconsistent (an empty range, `min_down > max_down`,
/// counts whose gaps do not fit in the window), or requires faults that
/// `nodes` cannot have (a partition of fewer than two nodes).
#[track_caller]
pub fn draw<S: AsRef<str>>(seed: u64, nodes: &[S], envelope: &Envelope) -> Plan {
    let names: Vec<String> = nodes.iter().map(|n| n.as_ref().to_string()).collect();
    let n = names.len() as u64;
    envelope.validate(names.len());
    let mut env = envelope.clone();
    // Faults a node set cannot have are not drawn (and the validation
    // above made sure none was required).
    if n == 0 {
        env.crashes = 0..=0;
        env.kills = 0..=0;
    }
    if n < 2 {
        env.partitions = 0..=0;
        env.clogs = 0..=0;
    }
    let down = (env.min_down, env.max_down);
    let cut = (env.min_cut, env.max_cut);
    let pick = |rng: &mut Rng| names[rng.below(n) as usize].clone();
    let mut faults = Vec::new();
    faults.extend(draw_dimension(
        seed,
        "crashes",
        &env.crashes,
        &env,
        down,
        |r| FaultKind::Crash { node: pick(r) },
    ));
    faults.extend(draw_dimension(seed, "kills", &env.kills, &env, down, |r| {
        FaultKind::Kill { node: pick(r) }
    }));
    faults.extend(draw_dimension(
        seed,
        "partitions",
        &env.partitions,
        &env,
        cut,
        |r| {
            // A minority of 1..=n/2 nodes, chosen by a partial shuffle.
            let size = r.in_range(1..=n / 2) as usize;
            let mut order: Vec<usize> = (0..names.len()).collect();
            for i in 0..size {
                let j = i + r.below((order.len() - i) as u64) as usize;
                order.swap(i, j);
            }
            let mut inside = vec![false; names.len()];
            for &i in &order[..size] {
                inside[i] = true;
            }
            let side = |want: bool| {
                (0..names.len())
                    .filter(|&i| inside[i] == want)
                    .map(|i| names[i].clone())
                    .collect()
            };
            FaultKind::Partition {
                minority: side(true),
                majority: side(false),
            }
        },
    ));
    faults.extend(draw_dimension(seed, "clogs", &env.clogs, &env, cut, |r| {
        let a = r.below(n) as usize;
        let b = (a + 1 + r.below(n - 1) as usize) % names.len();
        let (a, b) = (a.min(b), a.max(b));
        FaultKind::Clog {
            a: names[a].clone(),
            b: names[b].clone(),
        }
    }));
    // Stable: equal times keep the dimension order, then the drawing order.
    faults.sort_by_key(|f| f.at);
    Plan {
        origin: Duration::ZERO,
        faults,
    }
}

/// Draws a plan for `nodes` within `envelope` from the run's seed (its
/// `"faults"` stream) and schedules every fault with `sim::at`, counting
/// from now. Returns the plan, to print or assert on.
///
/// Call it from inside a simulation (a `#[sim::test]` body or a
/// [`World`](crate::World)). A second plan in the same run needs its own
/// label: [`schedule_as`].
#[track_caller]
pub fn schedule(nodes: &[Node], envelope: &Envelope) -> Plan {
    schedule_as("faults", nodes, envelope)
}

/// As [`schedule`], drawing from the run's `label` stream.
#[track_caller]
pub fn schedule_as(label: &str, nodes: &[Node], envelope: &Envelope) -> Plan {
    let names: Vec<&str> = nodes.iter().map(Node::name).collect();
    let mut plan = draw(rt::fork_seed(label), &names, envelope);
    plan.origin = rt::elapsed();
    if let Some(heal) = super::liveness::heal_at() {
        plan.cut_at(heal);
    }
    tracing::info!(target: "sim", label, faults = plan.len(), "fault plan scheduled");
    apply(&plan, nodes);
    plan
}

/// What overlapping faults share: how many cover each node and link.
struct Applied {
    nodes: Vec<Node>,
    /// Crashes and kills covering each node (by index in `nodes`).
    down: Vec<u32>,
    /// Per link (node indices, low first): partitions and clogs covering it.
    links: BTreeMap<(usize, usize), (u32, u32)>,
}

impl Applied {
    fn index(&self, name: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| n.name() == name)
            .expect("a plan names only the nodes it was drawn for")
    }

    /// The links a fault covers.
    fn links_of(&self, kind: &FaultKind) -> Vec<(usize, usize)> {
        let pair = |a: usize, b: usize| (a.min(b), a.max(b));
        match kind {
            FaultKind::Partition { minority, majority } => minority
                .iter()
                .flat_map(|m| majority.iter().map(move |o| (m, o)))
                .map(|(m, o)| pair(self.index(m), self.index(o)))
                .collect(),
            FaultKind::Clog { a, b } => vec![pair(self.index(a), self.index(b))],
            _ => Vec::new(),
        }
    }
}

/// Schedules a drawn plan's faults (their times count from `plan.origin`).
fn apply(plan: &Plan, nodes: &[Node]) {
    let state = Rc::new(RefCell::new(Applied {
        nodes: nodes.to_vec(),
        down: vec![0; nodes.len()],
        links: BTreeMap::new(),
    }));
    for fault in &plan.faults {
        let state = state.clone();
        let fault = fault.clone();
        rt::at(plan.origin + fault.at, move || {
            // The heal of a liveness phase ends every plan: what has not
            // started never starts, and what is under way was ended.
            if super::liveness::healed() {
                return;
            }
            begin(&state, &fault.kind);
            // The end is scheduled once the start has happened, so a fault
            // that lasts zero time still starts before it ends.
            let lasts = fault.lasts;
            rt::at(rt::elapsed() + lasts, move || {
                if !super::liveness::healed() {
                    end(&state, &fault.kind);
                }
            });
        });
    }
}

fn begin(state: &Rc<RefCell<Applied>>, kind: &FaultKind) {
    match kind {
        FaultKind::Crash { node } | FaultKind::Kill { node } => {
            let target = {
                let mut s = state.borrow_mut();
                let i = s.index(node);
                s.down[i] += 1;
                // Already down under another fault: this one only extends
                // the outage.
                (s.down[i] == 1).then(|| s.nodes[i].clone())
            };
            match (target, kind) {
                (Some(n), FaultKind::Crash { .. }) if n.is_alive() => n.crash(),
                (Some(n), FaultKind::Kill { .. }) if n.is_alive() => n.kill(),
                _ => {}
            }
        }
        FaultKind::Partition { .. } | FaultKind::Clog { .. } => {
            let partition = matches!(kind, FaultKind::Partition { .. });
            let changes: Vec<(Node, Node)> = {
                let mut s = state.borrow_mut();
                let links = s.links_of(kind);
                let mut changes = Vec::new();
                for l in links {
                    let c = s.links.entry(l).or_default();
                    if partition {
                        c.0 += 1;
                    } else {
                        c.1 += 1;
                    }
                    let (p, k) = *c;
                    // The first partition cuts the link; the first clog
                    // clogs it unless a partition already cuts it.
                    let first = if partition { p == 1 } else { k == 1 && p == 0 };
                    if first {
                        changes.push((s.nodes[l.0].clone(), s.nodes[l.1].clone()));
                    }
                }
                changes
            };
            for (a, b) in changes {
                if partition {
                    super::net::partition(&a, &b);
                } else {
                    super::net::clog(&a, &b);
                }
            }
        }
    }
}

fn end(state: &Rc<RefCell<Applied>>, kind: &FaultKind) {
    match kind {
        FaultKind::Crash { node } | FaultKind::Kill { node } => {
            let target = {
                let mut s = state.borrow_mut();
                let i = s.index(node);
                s.down[i] -= 1;
                (s.down[i] == 0).then(|| s.nodes[i].clone())
            };
            if let Some(n) = target {
                // The last outage is over: the node's current service starts
                // again on the same host.
                n.restart();
            }
        }
        FaultKind::Partition { .. } | FaultKind::Clog { .. } => {
            let partition = matches!(kind, FaultKind::Partition { .. });
            // Per changed link: whether it stays clogged after the heal.
            let changes: Vec<(Node, Node, bool)> = {
                let mut s = state.borrow_mut();
                let links = s.links_of(kind);
                let mut changes = Vec::new();
                for l in links {
                    let c = s.links.get_mut(&l).expect("a fault ends after it began");
                    if partition {
                        c.0 -= 1;
                    } else {
                        c.1 -= 1;
                    }
                    let (p, k) = *c;
                    // A heal clears both flags: heal when the link's state
                    // changes (no partition left, or no fault left), and
                    // clog again if clogs remain.
                    let changed = if partition { p == 0 } else { p == 0 && k == 0 };
                    if changed {
                        changes.push((s.nodes[l.0].clone(), s.nodes[l.1].clone(), k > 0));
                    }
                    if p == 0 && k == 0 {
                        s.links.remove(&l);
                    }
                }
                changes
            };
            for (a, b, clogged) in changes {
                super::net::heal(&a, &b);
                if clogged {
                    super::net::clog(&a, &b);
                }
            }
        }
    }
}
