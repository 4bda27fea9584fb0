//! Making an executor: its ids, its seeded clock bases, its core.

use super::*;
use std::sync::atomic::AtomicU64;

static NEXT_EXEC_ID: AtomicU64 = AtomicU64::new(1);

/// A new runtime id, from the space executors take theirs from (a
/// `LocalSet` has one too, as in Tokio). Ids are names, never decisions.
pub(crate) fn next_runtime_id() -> u64 {
    NEXT_EXEC_ID.fetch_add(1, Ordering::Relaxed)
}

/// 2026-01-01T00:00:00Z, ns since the Unix epoch: the earliest wall clock a
/// simulation starts at (the seed adds up to a year).
const WALL_EPOCH_NS: u64 = 1_767_225_600 * 1_000_000_000;

impl Exec {
    pub(crate) fn new(config: Config) -> Rc<Exec> {
        Self::with_trace(config, Trace::new(false, None))
    }

    pub(crate) fn with_trace(config: Config, trace: Trace) -> Rc<Exec> {
        let id = next_runtime_id();
        let shared = Arc::new(Shared::new(id));
        let main_task = raw::new_task(
            Header::new(id, MAIN_SLOT, 0, shared.clone()),
            std::future::pending::<()>(),
            None,
        );
        let root = config.seed;
        let wall_base_ns = WALL_EPOCH_NS
            + seed::below(seed::decide(root, "clock.epoch"), 365 * 86_400) * 1_000_000_000;
        // Before the interposers are on: registering may start the watchdog's
        // OS thread, which simulated code may not do.
        let progress = super::super::watchdog::register(root);
        let base_std = base_instant(root, wall_base_ns);
        // The last executor's containers on this thread, emptied.
        let spare = spare::take();
        let core = Core {
            slab: Slab {
                tasks: spare.tasks,
                meta: spare.meta,
                free: spare.free,
                alive: 0,
                next_id: 1,
                injected: Vec::new(),
            },
            run_queue: spare.run_queue,
            clock: Clock {
                now: 0,
                parks: 0,
                busy: false,
                cycles: 0,
                timers: spare.timers,
                timer_rng: seed::stream(root, "timer.ties"),
            },
            step: 0,
            // Draws from the seed (PCT's change points, early timers'
            // odds), after the clock's epoch above: the order of the tape.
            sched: Scheduler::new(&config),
            prefetch_min: PREFETCH_MIN_RUNNABLE,
            held: None,
            select_rng: seed::stream(root, "select"),
            nodes: super::super::node::Nodes::new(NodeState::new(
                "main".into(),
                Some(super::super::node::auto_ip(None)),
                false,
            )),
            any_paused: false,
            drivers: Default::default(),
            trace,
            failure: None,
            exec_id: id,
            main: Main {
                task: main_task,
                queued: false,
                owed: false,
                wait: None,
                polled_at: 0,
            },
            polling: (std::ptr::null(), 0, 0),
            block_ons: 0,
            left_destructors: Vec::new(),
            held_panics: Vec::new(),
            config,
        };
        Rc::new(Exec {
            id,
            core: RefCell::new(core),
            cur: Cell::new(Cur {
                task: None,
                node: NodeId::MAIN,
            }),
            clock_node: Cell::new(NodeId::MAIN),
            shared,
            base_std,
            standard_base: base_std == *STANDARD_BASE.get_or_init(|| base_std),
            wall_base_ns,
            last_failure: RefCell::new(None),
            in_block_on: Cell::new(false),
            compat: Compat::default(),
            yields: Yields::default(),
            spawning_thread: Cell::new(false),
            idle: Idle::default(),
            fired: Cell::new(Vec::new()),
            progress,
        })
    }
}
