//! The thread-local view of the simulation that the libc interposers read.
//!
//! The executor writes these cells (when virtual time moves and when it
//! switches to a task on another node); `intercept` reads them from inside
//! `clock_gettime`, `getrandom` and friends. They are plain `Cell`s with
//! `const` initialisers so that reading them can never allocate, never
//! re-enter the executor and never panic on a borrow.

use rand_core::RngCore;
use std::cell::{Cell, RefCell};

/// Monotonic clock value (ns) that `Instant::now()` reports at virtual time 0
/// on a node without offset: about 11.6 days of "uptime", far enough from 0
/// that `Instant - Duration` does not underflow in ordinary code.
pub(crate) const MONO_BASE_NS: u64 = 1_000_000 * 1_000_000_000;

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// Global virtual time in ns since the simulation started.
    static NOW_NS: Cell<u64> = const { Cell::new(0) };
    /// The current node's clock: (monotonic offset ns, wall offset ns, drift ppm).
    static NODE_CLOCK: Cell<(i64, i64, i64)> = const { Cell::new((0, 0, 0)) };
    /// Wall clock (ns since the Unix epoch) at virtual time 0.
    static WALL_BASE_NS: Cell<u64> = const { Cell::new(0) };
    /// The stream that feeds `getrandom` & co. inside the simulation.
    static RNG: RefCell<Option<super::seed::Stream>> = const { RefCell::new(None) };
    /// The seed that stream started from.
    static RNG_SEED: Cell<Option<u64>> = const { Cell::new(None) };
    /// What simulated code tried that it may not (read once per poll).
    static FORBIDDEN: Cell<Forbidden> = const { Cell::new(Forbidden::NONE) };
    /// Whether `FORBIDDEN` holds anything: the one byte the executor reads
    /// after every poll.
    static FORBIDDEN_ANY: Cell<bool> = const { Cell::new(false) };
    /// Depth of [`on_real_disk`] scopes on this thread.
    static REAL_DISK: Cell<u32> = const { Cell::new(0) };
}

/// What a layer above the core keeps per simulation on a thread (a
/// descriptor table, a C library's per-process state): `start` runs each
/// time interception turns on for the thread, before it is on; `stop` each
/// time it turns off, while it still is. Each registers itself in
/// [`INTERPOSERS`] where it is defined, so every executor, whoever makes it,
/// starts them all, and the core names none of them.
pub(crate) struct Interposer {
    pub start: fn(),
    pub stop: fn(),
}

impl Interposer {
    /// Nothing to do at that end.
    pub(crate) fn nothing() {}
}

/// Every [`Interposer`], gathered by the linker. Each one's `start` and
/// `stop` touch only its own state, so their order does not matter.
#[linkme::distributed_slice]
pub(crate) static INTERPOSERS: [Interposer];

/// Called whenever the node whose code runs changes (a task or thread of
/// another node is about to run), with that node's id and incarnation,
/// before any of its code: for state a library keeps once per process that
/// in a simulation must be each node process's own (libc/cstate.rs swaps
/// rayon's global pool). Registered where the state is known.
#[linkme::distributed_slice]
pub(crate) static NODE_SWITCH: [fn(u32, u32)];

/// Each line an assertion SDK writes for its platform (antithesis_sdk's
/// JSON: assertions, guidance, the catalog of sites, events), handed over
/// by libc/antithesis.rs on the thread that wrote it, inside a simulation
/// only. Registered by the harness, which turns them into its own sites.
#[linkme::distributed_slice]
pub static SDK_OUTPUT: [fn(&str)];

/// A thread-local that belongs to the simulation rather than to the OS
/// thread it sits on (a descriptor table, the seeded stream, the entered
/// executor): it moves with the baton to whichever thread of the simulation
/// runs (thread/), so a simulated thread sees the same process as the
/// executor's thread. `out` moves this thread's value into the slot,
/// `into` moves the slot's value into this thread; neither runs user code.
/// Registered with [`carried!`] where the thread-local is defined.
pub(crate) struct Carried {
    pub out: fn(&mut Slot),
    pub into: fn(&mut Slot),
}

/// Where one [`Carried`] value waits while the baton changes hands. The box
/// is kept and refilled, so a hand-off allocates nothing after the first.
pub(crate) type Slot = Option<Box<dyn std::any::Any>>;

/// Every [`Carried`] thread-local, gathered by the linker.
#[linkme::distributed_slice]
pub(crate) static CARRIED: [Carried];

/// Puts `value` in `slot` (reusing its box).
pub(crate) fn stash<T: 'static>(slot: &mut Slot, value: T) {
    match slot.as_mut().and_then(|b| b.downcast_mut::<Option<T>>()) {
        Some(v) => *v = Some(value),
        None => *slot = Some(Box::new(Some(value))),
    }
}

/// Takes the value [`stash`] put in `slot`.
pub(crate) fn unstash<T: 'static>(slot: &mut Slot) -> Option<T> {
    slot.as_mut()?.downcast_mut::<Option<T>>()?.take()
}

/// Registers a [`Carried`] in `$slice` ([`CARRIED`] or [`KEPT`]): the body
/// [`carried!`] and [`kept!`] share.
macro_rules! registered {
    ($slice:ident, $name:ident: $ty:ty, take: $take:expr, put: $put:expr) => {
        #[linkme::distributed_slice($crate::simulation::core::hooks::$slice)]
        static $name: $crate::simulation::core::hooks::Carried =
            $crate::simulation::core::hooks::Carried {
                out: |slot| $crate::simulation::core::hooks::stash::<$ty>(slot, ($take)()),
                into: |slot| {
                    if let Some(v) = $crate::simulation::core::hooks::unstash::<$ty>(slot) {
                        ($put)(v)
                    }
                },
            };
    };
}
pub(crate) use registered;

/// Registers a [`Carried`] thread-local: `carried!(NAME: Type, take: || .., put: |v| ..)`.
/// `take` moves (or copies) the value out of this thread's cell, `put`
/// writes one in.
macro_rules! carried {
    ($name:ident: $ty:ty, take: $take:expr, put: $put:expr $(,)?) => {
        $crate::simulation::core::hooks::registered!(CARRIED, $name: $ty, take: $take, put: $put);
    };
}
pub(crate) use carried;

/// The simulator's own per-thread caches that a fresh thread's reset
/// (libc/tls.rs) keeps from one seed to the next, as one long-lived thread
/// would: the executor's emptied containers, the task allocator's free
/// lists, the reaper's stack. Each holds capacity, never state of a run
/// (spare.rs, mem.rs, reap.rs), and making it draws nothing from the run's
/// stream, so a seed's run stays the same whatever ran before it on the
/// thread (not so the bare Tokio runtime: context.rs).
#[linkme::distributed_slice]
pub(crate) static KEPT: [Carried];

/// Registers a [`KEPT`] thread-local, as [`carried!`] does a carried one.
macro_rules! kept {
    ($name:ident: $ty:ty, take: $take:expr, put: $put:expr $(,)?) => {
        $crate::simulation::core::hooks::registered!(KEPT, $name: $ty, take: $take, put: $put);
    };
}
pub(crate) use kept;

/// The simulation's carried thread-locals while no thread holds them: one
/// slot per [`Carried`].
pub(crate) struct Bag(Vec<Slot>);

impl Bag {
    pub(crate) fn new() -> Bag {
        Bag((0..CARRIED.len()).map(|_| None).collect())
    }

    /// Moves this thread's carried values into the bag (it is giving up the
    /// baton).
    pub(crate) fn take_from_thread(&mut self) {
        for (c, slot) in CARRIED.iter().zip(&mut self.0) {
            (c.out)(slot);
        }
    }

    /// Moves the bag's values into this thread (it took the baton).
    pub(crate) fn give_to_thread(&mut self) {
        for (c, slot) in CARRIED.iter().zip(&mut self.0) {
            (c.into)(slot);
        }
    }
}

carried!(ACTIVE_CARRIED: bool, take: active, put: |v| ACTIVE.with(|c| c.set(v)));
carried!(NOW_CARRIED: u64, take: || NOW_NS.with(Cell::get), put: |v| NOW_NS.with(|c| c.set(v)));
carried!(
    NODE_CLOCK_CARRIED: (i64, i64, i64),
    take: || NODE_CLOCK.with(Cell::get),
    put: |v| NODE_CLOCK.with(|c| c.set(v)),
);
carried!(
    WALL_BASE_CARRIED: u64,
    take: || WALL_BASE_NS.with(Cell::get),
    put: |v| WALL_BASE_NS.with(|c| c.set(v)),
);
carried!(RNG_SEED_CARRIED: Option<u64>, take: || RNG_SEED.with(Cell::get), put: |v| RNG_SEED.with(|c| c.set(v)));
carried!(
    RNG_CARRIED: Option<super::seed::Stream>,
    take: || RNG.with(|r| r.borrow_mut().take()),
    put: |v| RNG.with(|r| *r.borrow_mut() = v),
);
carried!(
    FORBIDDEN_CARRIED: (Forbidden, bool),
    take: || (
        FORBIDDEN.with(|c| c.replace(Forbidden::NONE)),
        FORBIDDEN_ANY.with(|c| c.replace(false)),
    ),
    put: |(f, any): (Forbidden, bool)| {
        FORBIDDEN.with(|c| c.set(f));
        FORBIDDEN_ANY.with(|c| c.set(any));
    },
);

/// Runs `f` with file calls reaching the real disk, on this thread, even
/// inside a simulation: for the simulator's own files (symbols for a
/// report) and, through `sim::fs::on_real_disk`, a test's fixtures.
pub(crate) fn on_real_disk<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            let _ = REAL_DISK.try_with(|d| d.set(d.get() - 1));
        }
    }
    let _ = REAL_DISK.try_with(|d| d.set(d.get() + 1));
    let _leave = Leave;
    f()
}

/// Whether file calls on this thread go to the real disk now: no
/// simulation on it, or inside [`on_real_disk`].
#[inline]
pub(crate) fn real_disk() -> bool {
    !active() || REAL_DISK.try_with(Cell::get).unwrap_or(1) > 0
}

/// Turns interception on for this thread. `rng_seed` seeds the stream that
/// answers `getrandom`; `wall_base_ns` is the wall clock at virtual time 0.
pub(crate) fn activate(rng_seed: u64, wall_base_ns: u64) {
    NOW_NS.with(|c| c.set(0));
    NODE_CLOCK.with(|c| c.set((0, 0, 0)));
    WALL_BASE_NS.with(|c| c.set(wall_base_ns));
    RNG.with(|r| *r.borrow_mut() = Some(super::seed::Stream::from_seed(rng_seed)));
    RNG_SEED.with(|c| c.set(Some(rng_seed)));
    FORBIDDEN.with(|c| c.set(Forbidden::default()));
    FORBIDDEN_ANY.with(|c| c.set(false));
    for interposer in INTERPOSERS {
        (interposer.start)();
    }
    ACTIVE.with(|c| c.set(true));
}

/// Turns interception off for this thread: every intercepted call behaves as
/// the real one again.
pub(crate) fn deactivate() {
    for interposer in INTERPOSERS {
        (interposer.stop)();
    }
    ACTIVE.with(|c| c.set(false));
    RNG.with(|r| *r.borrow_mut() = None);
    RNG_SEED.with(|c| c.set(None));
}

/// Whether this thread is inside a simulation. Safe to call from anywhere,
/// including while thread-locals are being destroyed (then: `false`).
#[inline]
pub(crate) fn active() -> bool {
    ACTIVE.try_with(|c| c.get()).unwrap_or(false)
}

#[inline]
pub(crate) fn set_now(now_ns: u64) {
    NOW_NS.with(|c| c.set(now_ns));
}

#[inline]
pub(crate) fn set_node_clock(mono_offset_ns: i64, wall_offset_ns: i64, drift_ppm: i64) {
    NODE_CLOCK.with(|c| c.set((mono_offset_ns, wall_offset_ns, drift_ppm)));
}

/// Node-local elapsed time: global time scaled by the node's drift.
#[inline]
pub(crate) fn local_elapsed_ns(global_ns: u64, drift_ppm: i64) -> u64 {
    if drift_ppm == 0 {
        return global_ns;
    }
    let scaled = global_ns as i128 + (global_ns as i128 * drift_ppm as i128) / 1_000_000;
    scaled.max(0) as u64
}

/// What `clock_gettime(CLOCK_MONOTONIC)` returns inside the simulation, in ns.
pub(crate) fn mono_ns() -> u64 {
    let now = NOW_NS.try_with(|c| c.get()).unwrap_or(0);
    let (mono_off, _, ppm) = NODE_CLOCK.try_with(|c| c.get()).unwrap_or((0, 0, 0));
    let local = local_elapsed_ns(now, ppm) as i128 + MONO_BASE_NS as i128 + mono_off as i128;
    local.max(0) as u64
}

/// What `clock_gettime(CLOCK_REALTIME)` returns inside the simulation, in ns
/// since the Unix epoch.
pub(crate) fn wall_ns() -> u64 {
    let now = NOW_NS.try_with(|c| c.get()).unwrap_or(0);
    let (_, wall_off, ppm) = NODE_CLOCK.try_with(|c| c.get()).unwrap_or((0, 0, 0));
    let base = WALL_BASE_NS.try_with(|c| c.get()).unwrap_or(0);
    let local = local_elapsed_ns(now, ppm) as i128 + base as i128 + wall_off as i128;
    local.max(0) as u64
}

/// Fills `buf` from the seeded stream. Returns `false` (and leaves `buf`
/// alone) when this thread is not in a simulation.
pub(crate) fn fill_random(buf: &mut [u8]) -> bool {
    if !active() {
        return false;
    }
    RNG.try_with(|r| match r.try_borrow_mut() {
        Ok(mut rng) => match rng.as_mut() {
            Some(rng) => {
                rng.fill_bytes(buf);
                true
            }
            None => false,
        },
        // Re-entered from inside fill_bytes: cannot happen with ChaCha, but
        // never fall back to real randomness silently.
        Err(_) => panic!("sim: getrandom re-entered while the seeded stream was in use"),
    })
    .unwrap_or(false)
}

/// The seed of this run's seeded stream (what [`activate`] was given),
/// while a simulation is on this thread: for a library generator seeded
/// from it without drawing from the stream, so that no other draw moves.
pub(crate) fn stream_seed() -> Option<u64> {
    RNG_SEED.try_with(Cell::get).ok().flatten()
}

/// Attempts at what a simulation forbids, since interception was turned
/// on: OS threads started, real OS sockets opened (std::net, real DNS, a
/// crate with its own networking), processes spawned (std::process), the
/// thread put to sleep in real time (std::thread::sleep). The executor
/// reports them after the poll that made them; a panic that follows one
/// (an `unwrap` of the refused call's error) is reported as it, not as an
/// assertion or a panic of its own.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Forbidden {
    pub threads: u32,
    pub sockets: u32,
    pub processes: u32,
    pub sleeps: u32,
    /// The C function of the last process or sleep attempt.
    pub call: &'static str,
}

impl Forbidden {
    const NONE: Forbidden = Forbidden {
        threads: 0,
        sockets: 0,
        processes: 0,
        sleeps: 0,
        call: "",
    };

    /// Whether anything was attempted.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.threads + self.sockets + self.processes + self.sleeps > 0
    }

    /// What each kind attempted means and what to do instead, one message
    /// per kind.
    pub(crate) fn messages(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.sockets > 0 {
            out.push(
                "a simulated task tried to open or use a real OS socket (std::net's own I/O, \
                 or a crate with its own networking); real sockets reach the host's network, \
                 outside the simulation's control. A socket made with socket(2) or std may be \
                 handed to tokio::net (TcpSocket::from_std_stream, TcpListener::from_std, \
                 UdpSocket::from_std); otherwise use tokio::net, which is simulated (see \
                 docs/breakage.md)."
                    .into(),
            );
        }
        if self.threads > 0 {
            out.push(
                "a simulated task tried to start an OS thread (std::thread::spawn, or a crate \
                 that spawns one); threads run outside the simulation's control. Use \
                 tokio::spawn or tokio::task::spawn_blocking instead."
                    .into(),
            );
        }
        if self.processes > 0 {
            out.push(format!(
                "a simulated task tried to start a process ({}: std::process::Command, or a \
                 crate that runs one); a child process runs outside the simulation's control, \
                 as tokio::process's does. Put the child behind a trait and fake it in the \
                 simulation (see docs/breakage.md, \"Child processes\").",
                self.call
            ));
        }
        if self.sleeps > 0 {
            out.push(format!(
                "a simulated task blocked its thread in real time ({}: std::thread::sleep, or \
                 a crate that sleeps); real time does not move the virtual clock, and the \
                 whole simulation stops while it sleeps. Use tokio::time::sleep.",
                self.call
            ));
        }
        out
    }
}

fn note(f: impl FnOnce(&mut Forbidden)) {
    let _ = FORBIDDEN.try_with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v)
    });
    let _ = FORBIDDEN_ANY.try_with(|c| c.set(true));
}

/// Whether anything forbidden was attempted since interception turned on:
/// one byte, read after every poll.
#[inline]
pub(crate) fn forbidden_any() -> bool {
    FORBIDDEN_ANY.try_with(Cell::get).unwrap_or(false)
}

pub(crate) fn note_thread_spawn_attempt() {
    note(|f| f.threads += 1);
}

pub(crate) fn note_real_socket_attempt() {
    note(|f| f.sockets += 1);
}

/// `call` (`posix_spawn`, `fork`, ...) tried to start a process.
pub(crate) fn note_process_attempt(call: &'static str) {
    note(|f| {
        f.processes += 1;
        f.call = call;
    });
}

/// `call` (`nanosleep`, ...) tried to block the thread in real time.
pub(crate) fn note_real_sleep_attempt(call: &'static str) {
    note(|f| {
        f.sleeps += 1;
        f.call = call;
    });
}

pub(crate) fn forbidden() -> Forbidden {
    FORBIDDEN.try_with(Cell::get).unwrap_or_default()
}

pub(crate) fn thread_spawn_attempts() -> u32 {
    forbidden().threads
}

/// Turns interception off for this thread without stopping the
/// interposers (their state is the simulation's, carried elsewhere): a
/// simulated thread that has given the baton back for good.
pub(crate) fn leave_thread() {
    let _ = ACTIVE.try_with(|c| c.set(false));
}
