//! The seam between the core and what it drives.
//!
//! The core owns tasks, the run queue, schedules, the clock and timers, and
//! nodes. Everything else a simulation has — the network, Unix sockets,
//! disks, signals, fault points — is a [`Driver`]: state of its own, kept in
//! the core's registry, reached by type (`core.driver::<Disks>()`), and told
//! about node lifecycle through the hooks below. The core names no driver:
//! a new subsystem is a new `impl Driver`, not an edit of the executor
//! (`cargo xtask tidy` checks that nothing under the core imports one).
//!
//! A driver is made on first use, from the run's settings ([`Driver::create`]
//! reads the core), and keeps its registration slot for the rest of the run.
//! Hooks run in registration order. That order is the order in which the
//! run first used each driver, so it is a function of the seed like every
//! other decision: two runs of one seed register the same drivers in the
//! same order and see the same hooks in the same order.
//!
//! Hooks run with the core borrowed: they may change the core and their
//! own state, and collect wakers to be woken once the core is released;
//! they never run user code.

use super::Core;
use crate::simulation::core::node::NodeId;
use std::any::{Any, TypeId};
use std::task::Waker;

/// How a node's process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Death {
    /// The process died (SIGKILL): the kernel and the machine survive.
    Kill,
    /// The machine died (power loss): nothing but what was durable survives.
    Crash,
}

/// A subsystem bound to the core. Every hook has a default that does
/// nothing, so a driver implements the ones its state depends on.
pub(crate) trait Driver: Any {
    /// Makes the driver on its first use in a run.
    fn create(core: &Core) -> Self
    where
        Self: Sized;

    /// A node was added to the run.
    fn node_created(&mut self, _core: &mut Core, _node: NodeId) {}

    /// `node` is about to lose its tasks; they are still there. For what
    /// must happen before any destructor of theirs runs (a crashed host
    /// goes silent before its sockets could say goodbye).
    fn node_dying(
        &mut self,
        _core: &mut Core,
        _node: NodeId,
        _death: Death,
        _wake: &mut Vec<Waker>,
    ) {
    }

    /// `node`'s tasks are gone (each dropped in the node's context).
    fn node_died(
        &mut self,
        _core: &mut Core,
        _node: NodeId,
        _death: Death,
        _wake: &mut Vec<Waker>,
    ) {
    }

    /// A dead node runs again as a fresh process on the same host.
    fn node_restarted(&mut self, _core: &mut Core, _node: NodeId, _wake: &mut Vec<Waker>) {}

    /// Says what a wait this driver noted (`Wait::Driver(what, id)`) is
    /// waiting for, for the deadlock report; `None` when it is another's.
    fn describe_wait(&mut self, _core: &Core, _what: &'static str, _id: u64) -> Option<String> {
        None
    }

    /// Nothing in the run can move (no task runnable, no timer): whether a
    /// thread outside the run (another seed's, the test's own) may still
    /// release one of this driver's waiters, such as a lock in a static
    /// that both use. It may block for a short while in real time; wakers
    /// of waiters it found released go to `wake`. `false`: nothing more
    /// can come from outside, the run is deadlocked.
    fn outside(&mut self, _wake: &mut Vec<Waker>) -> bool {
        false
    }

    /// A line the deadlock report adds, if this driver knows a likely
    /// cause the wait-for graph cannot show.
    fn deadlock_note(&mut self) -> Option<String> {
        None
    }
}

/// The registry: drivers in registration order. A slot is empty only while
/// its driver is lent out by [`Core::with_driver`] or a hook.
#[derive(Default)]
pub(crate) struct Drivers {
    slots: Vec<(TypeId, Option<Box<dyn Driver>>)>,
}

impl Drivers {
    #[inline(always)]
    fn index_of(&self, t: TypeId) -> Option<usize> {
        self.slots.iter().position(|(id, _)| *id == t)
    }
}

/// The driver in a slot whose `TypeId` is `D`'s (the callers look the slot
/// up by it). On the path of every socket operation, so no second check.
#[inline(always)]
fn downcast<D: Driver>(d: &mut dyn Driver) -> &mut D {
    debug_assert!(
        (d as &dyn Any).is::<D>(),
        "a driver's slot holds its own type"
    );
    // SAFETY: a slot holds the value registered under its `TypeId`
    // (`register` pushes `(TypeId::of::<D>(), Box<D>)` and nothing else
    // writes a slot but the lending functions, which put back what they
    // took), and every caller found this slot by `TypeId::of::<D>()`; so
    // the trait object's data pointer points at a live, exclusively
    // borrowed `D`.
    unsafe { &mut *(d as *mut dyn Driver).cast::<D>() }
}

#[track_caller]
fn lent<D>() -> ! {
    panic!(
        "sim: the driver {} is in use further up this call (a driver reached itself through \
         the core while it was lent out): pass it down instead",
        std::any::type_name::<D>()
    )
}

impl Core {
    /// The driver of type `D`, made now if the run has not used it yet.
    #[inline]
    pub(crate) fn driver<D: Driver>(&mut self) -> &mut D {
        let i = match self.drivers.index_of(TypeId::of::<D>()) {
            Some(i) => i,
            None => self.register::<D>(),
        };
        match self.drivers.slots[i].1.as_deref_mut() {
            Some(d) => downcast(d),
            None => lent::<D>(),
        }
    }

    /// The driver of type `D` if the run has used it.
    pub(crate) fn driver_if_used<D: Driver>(&mut self) -> Option<&mut D> {
        let i = self.drivers.index_of(TypeId::of::<D>())?;
        match self.drivers.slots[i].1.as_deref_mut() {
            Some(d) => Some(downcast(d)),
            None => lent::<D>(),
        }
    }

    /// `f` with the driver of type `D` and the rest of the core, for a
    /// driver that needs both at once (the driver is lent out of its slot
    /// meanwhile: reaching it again through the core panics).
    #[inline]
    pub(crate) fn with_driver<D: Driver, R>(
        &mut self,
        f: impl FnOnce(&mut D, &mut Core) -> R,
    ) -> R {
        let i = match self.drivers.index_of(TypeId::of::<D>()) {
            Some(i) => i,
            None => self.register::<D>(),
        };
        let Some(mut d) = self.drivers.slots[i].1.take() else {
            lent::<D>()
        };
        let r = f(downcast(&mut *d), self);
        self.drivers.slots[i].1 = Some(d);
        r
    }

    #[cold]
    fn register<D: Driver>(&mut self) -> usize {
        let d = D::create(self);
        self.drivers
            .slots
            .push((TypeId::of::<D>(), Some(Box::new(d))));
        self.drivers.slots.len() - 1
    }

    /// Runs `hook` on every driver, in registration order (drivers made by
    /// a hook come after the others and see the same call).
    pub(super) fn each_driver(&mut self, mut hook: impl FnMut(&mut dyn Driver, &mut Core)) {
        let mut i = 0;
        while i < self.drivers.slots.len() {
            if let Some(mut d) = self.drivers.slots[i].1.take() {
                hook(&mut *d, self);
                self.drivers.slots[i].1 = Some(d);
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulation::core::config::Config;
    use crate::simulation::core::executor::Exec;

    #[derive(Default)]
    struct Log(Vec<String>);

    struct A(u32);
    impl Driver for A {
        fn create(core: &Core) -> Self {
            A(core.nodes().len() as u32)
        }
        fn node_died(&mut self, core: &mut Core, node: NodeId, death: Death, _: &mut Vec<Waker>) {
            core.driver::<Logger>()
                .0
                 .0
                .push(format!("A {} {death:?}", node.0));
        }
    }
    struct B;
    impl Driver for B {
        fn create(_: &Core) -> Self {
            B
        }
        fn node_died(&mut self, core: &mut Core, node: NodeId, death: Death, _: &mut Vec<Waker>) {
            core.driver::<Logger>()
                .0
                 .0
                .push(format!("B {} {death:?}", node.0));
        }
    }
    struct Logger(Log);
    impl Driver for Logger {
        fn create(_: &Core) -> Self {
            Logger(Log::default())
        }
    }

    #[test]
    fn drivers_are_made_on_first_use_and_hooked_in_that_order() {
        let exec = Exec::new(Config::from_env(7));
        let mut core = exec.core_mut();
        core.driver::<B>();
        assert_eq!(core.driver::<A>().0, 1, "created from the core's state");
        core.each_driver(|d, core| d.node_died(core, NodeId::MAIN, Death::Kill, &mut Vec::new()));
        assert_eq!(core.driver::<Logger>().0 .0, ["B 0 Kill", "A 0 Kill"]);
        assert!(core.driver_if_used::<A>().is_some());
    }

    #[test]
    #[should_panic(expected = "is in use further up this call")]
    fn a_lent_driver_cannot_be_reached_twice() {
        let exec = Exec::new(Config::from_env(7));
        let mut core = exec.core_mut();
        core.with_driver::<B, _>(|_, core| {
            core.driver::<B>();
        });
    }
}
