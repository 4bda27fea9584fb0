//! The core's own bookkeeping: accessors, decisions, nodes' pause state,
//! the polls owed before an early jump.

use super::*;

impl Core {
    /// The run's settings.
    #[inline]
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The run's root seed.
    #[inline]
    pub(crate) fn seed(&self) -> u64 {
        self.config.seed
    }

    /// Global virtual time, ns since the start of the run.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.now
    }

    /// Steps (polls) taken so far.
    #[inline]
    pub(crate) fn step(&self) -> u64 {
        self.step
    }

    /// Times the run went idle and the clock jumped.
    pub(crate) fn parks(&self) -> u64 {
        self.clock.parks
    }

    /// A multi-thread runtime's worker as Tokio's metrics count it: times
    /// it unparked to run spawned tasks and parked again, and whether it is
    /// unparked now (a task ran since it last went idle).
    pub(crate) fn worker_cycles(&self) -> (u64, bool) {
        (self.clock.cycles, self.clock.busy)
    }

    /// The worker parks: the run went idle, or `block_on` returned.
    pub(super) fn worker_parks(&mut self) {
        if std::mem::take(&mut self.clock.busy) {
            self.clock.cycles += 1;
        }
    }

    /// The timer queue (every sleep, interval and delivery of the run).
    #[inline]
    pub(crate) fn timers(&self) -> &Timers {
        &self.clock.timers
    }

    /// [`Core::timers`], to change.
    #[inline]
    pub(crate) fn timers_mut(&mut self) -> &mut Timers {
        &mut self.clock.timers
    }

    /// The run's nodes, by index (`NodeId`).
    #[inline]
    pub(crate) fn nodes(&self) -> &super::super::node::Nodes {
        &self.nodes
    }

    /// Adds a node; every driver hears of it.
    pub(crate) fn add_node(&mut self, state: NodeState) -> NodeId {
        let id = self.nodes.push(state);
        self.each_driver(|d, core| d.node_created(core, id));
        id
    }

    /// The decision log and fingerprint.
    #[inline]
    pub(crate) fn trace(&self) -> &Trace {
        &self.trace
    }

    /// [`Core::trace`], to change (finish it, take its record).
    pub(crate) fn trace_mut(&mut self) -> &mut Trace {
        &mut self.trace
    }

    /// What a report says of the run at this point.
    pub(crate) fn snapshot(&self) -> report::Snapshot {
        report::Snapshot {
            seed: self.config.seed,
            schedule: self.config.schedule,
            step: self.step,
            now: self.clock.now,
        }
    }

    #[inline]
    pub(crate) fn decide(&mut self, kind: Kind, value: u64) {
        self.trace.decide(self.step, self.clock.now, kind, value);
    }

    pub(crate) fn select_draw(&mut self, n: u32) -> u32 {
        let v = seed::below(self.select_rng.next_u64(), u64::from(n)) as u32;
        self.decide(Kind::Select, u64::from(v));
        v
    }

    pub(crate) fn fail(&mut self, class: Class, message: String) {
        if self.failure.is_none() {
            self.failure = Some(Failure { class, message });
        }
    }

    pub(crate) fn node(&self, id: NodeId) -> &NodeState {
        &self.nodes[id.index()]
    }

    pub(crate) fn node_mut(&mut self, id: NodeId) -> &mut NodeState {
        &mut self.nodes[id.index()]
    }

    /// Pauses or resumes a node's scheduling (the one writer of `paused`).
    pub(crate) fn set_paused(&mut self, id: NodeId, paused: bool) {
        self.node_mut(id).paused = paused;
        self.any_paused = self.nodes.iter().any(|n| n.paused);
    }

    /// Whether `id` is paused, with no load of the node when none is.
    #[inline]
    pub(super) fn is_paused(&self, id: NodeId) -> bool {
        self.any_paused && self.node(id).paused
    }

    /// Notes that this task must be polled before the next early jump
    /// (schedule/early.rs).
    pub(super) fn owe_poll(&mut self, slot: u32, id: u64) {
        if slot == MAIN_SLOT {
            if !self.main.owed {
                self.main.owed = true;
                self.sched.owe();
            }
            return;
        }
        if let Some(Some(t)) = self.slab.tasks.get_mut(slot as usize) {
            if t.id == id && !t.owed_poll {
                t.owed_poll = true;
                self.sched.owe();
            }
        }
    }
}
