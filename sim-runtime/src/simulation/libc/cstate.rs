//! State a C library keeps once per process, seeded from the OS: reset at
//! the start of every simulation, so that one seed replays the same after
//! another in the same process.
//!
//! - SQLite's random number generator, below; rayon-core's counter that
//!   seeds its workers' stealing order (a Rust static, found by its mangled
//!   name the same way).
//! - antithesis_sdk's per-site trackers (antithesis.rs): found here, in
//!   the same read of the symbol table, and reset and swapped there.
//! - AWS-LC's entropy source, pointed once per process at one that reads
//!   `getrandom` (aws_lc.rs): set, never reset. AWS-LC's static locks are
//!   shared by every run, so its runs take turns too.
//! - rayon-core's global pool (`THE_REGISTRY`, set once per process
//!   through a `std::sync::Once`). Each node is a process of its own, so
//!   each node incarnation gets its own: whenever the node that runs
//!   changes ([`switch_node`], the core's node-switch hook), the two
//!   statics are saved for the node that stops and the next node's are put
//!   back (none yet: the `Once` incomplete, so its first `par_iter` builds
//!   a pool, with the node's CPU count, whose workers are threads of that
//!   node). A pool shared by the nodes would die with the node that made
//!   it (its workers are that node's threads), and every other node's, or
//!   its own next incarnation's, `par_iter` would then wait forever on a
//!   job no thread takes; a pool kept across runs would do the same to the
//!   next run. They are forgotten (leaked, never freed: ended threads may
//!   still point into them) when a run starts and when it ends.
//!
//! SQLite seeds its random number generator (temporary file names, the
//! rollback journal's nonce, the WAL's salts, `randomblob()`) on first use
//! from `/dev/urandom` and keeps it for the process. Inside a simulation
//! that read is the seed's (fs/fd.rs), but only the first simulation of
//! the process would make it: the next one would continue the generator
//! where the last left it, and a seed would not replay after another.
//! `sqlite3_randomness(0, NULL)` makes SQLite reseed on its next use, so
//! each simulation starts by calling it, when the executable has SQLite.
//!
//! The executable is asked through its symbol table (`.symtab`, read once
//! per process with the `object` crate from a read-only mapping of
//! `/proc/self/exe`), since a library linked statically into it exports
//! nothing `dlsym` could find. A stripped executable has no table: nothing
//! is found, nothing is reset.
//!
//! Such state is one per process, shared by every thread: two simulations
//! running side by side would draw from one generator in an order no seed
//! decides. So when the executable has any, simulations take turns: each
//! holds one process-wide lock from its start to its end ([`enter`],
//! [`leave`]), whichever runner started it (the harness's jobs, libtest's
//! threads); [`process_global`] names the state, and the harness says why
//! its seeds run one at a time.

use crate::simulation::core::hooks;
use crate::simulation::thread::spin::SpinCell;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Held by the simulation running now, when the executable has
/// per-process state.
static TURN: Mutex<()> = Mutex::new(());

thread_local! {
    static HELD: RefCell<Option<MutexGuard<'static, ()>>> = const { RefCell::new(None) };
}

crate::simulation::core::hooks::carried!(
    HELD_CARRIED: Option<MutexGuard<'static, ()>>,
    take: || HELD.with(|h| h.borrow_mut().take()),
    put: |v| HELD.with(|h| *h.borrow_mut() = v),
);

/// A per-process state this module knows how to reset.
struct Known {
    /// Which one it is, for this module.
    id: &'static str,
    /// Whether a symbol's (mangled) name is the one that resets it or
    /// holds it.
    symbol: fn(&str) -> bool,
    /// What it is, for the harness's note.
    what: &'static str,
    /// Resets it, given the function's address.
    reset: fn(usize),
    /// Reset again when the run ends: the state then refers to the run's
    /// own threads, which end with it.
    at_end: bool,
    /// Simulations take turns while the executable has it (it is shared
    /// by every run and reset by each); `false`: set once (aws_lc.rs).
    turns: bool,
}

const KNOWN: &[Known] = &[
    Known {
        id: "sqlite3_randomness",
        symbol: |name| name == "sqlite3_randomness",
        what: "SQLite's random number generator (sqlite3_randomness)",
        reset: |addr| {
            // SAFETY: `addr` is the executable's `sqlite3_randomness`, whose C
            // signature is `void (int N, void *P)`; N = 0 with P = NULL is its
            // documented reset (SQLite reseeds on the next draw).
            unsafe {
                let f = std::mem::transmute::<usize, unsafe extern "C" fn(i32, *mut u8)>(addr);
                f(0, std::ptr::null_mut());
            }
        },
        at_end: false,
        turns: true,
    },
    Known {
        // rayon-core seeds each worker's choice of whom to steal from with
        // a hash of a process-wide counter (`XorShift64Star::new`'s
        // `COUNTER`), so a pool made in a later run of the process steals
        // in another order: it starts from 0 again in every run.
        id: "rayon COUNTER",
        symbol: |name| {
            name.contains("rayon_core")
                && name.contains("XorShift64Star")
                && name.contains("7COUNTER")
        },
        what: "rayon-core's counter that seeds its workers' stealing order",
        reset: |addr| {
            // SAFETY: `addr` is rayon-core's `static COUNTER: AtomicUsize`,
            // which lives for the whole process; an atomic store is how
            // rayon itself writes it.
            unsafe {
                (*(addr as *const std::sync::atomic::AtomicUsize))
                    .store(0, std::sync::atomic::Ordering::Relaxed)
            }
        },
        at_end: false,
        turns: true,
    },
    Known {
        // `static mut THE_REGISTRY: Option<Arc<Registry>>`: `None` is a null
        // pointer (`Arc` is never null). Forgetting the old one leaks it.
        id: "rayon THE_REGISTRY",
        symbol: |name| name.contains("rayon_core") && name.contains("12THE_REGISTRY17h"),
        what: RAYON_POOL,
        reset: |addr| {
            if once_layout_is_std() {
                // SAFETY: `addr` is rayon-core's `THE_REGISTRY`, a pointer-sized
                // `Option<Arc<_>>` static for the whole process; no thread of a
                // simulation runs now (a run is starting or has ended), and a
                // run's threads that still point into the registry keep it,
                // leaked, alive.
                unsafe { (addr as *mut usize).write_volatile(0) }
            }
        },
        at_end: true,
        turns: true,
    },
    Known {
        // `static THE_REGISTRY_SET: Once`: made incomplete again, so the
        // next `global_registry()` builds a new pool.
        id: "rayon THE_REGISTRY_SET",
        symbol: |name| name.contains("rayon_core") && name.contains("16THE_REGISTRY_SET17h"),
        what: RAYON_POOL,
        reset: |addr| {
            if once_layout_is_std() {
                // SAFETY: `addr` is rayon-core's `THE_REGISTRY_SET`, a
                // `std::sync::Once` (one futex word, checked by
                // `once_layout_is_std`) static for the whole process; only a
                // completed one is reset, and no call on it is in progress.
                let word = unsafe { &*(addr as *const AtomicU32) };
                let _ = word.compare_exchange(ONCE_COMPLETE, ONCE_INCOMPLETE, SeqCst, SeqCst);
            }
        },
        at_end: true,
        turns: true,
    },
    Known {
        // AWS-LC's entropy source hook (aws_lc.rs): set once, not reset.
        // Its presence also says the executable has AWS-LC, whose static
        // locks (the generators' thread list, the ex-data classes) every
        // run of the process shares: two runs at once met them held by
        // each other, and one was declared deadlocked at its first step
        // (fs-compat, in CI). So runs take turns.
        id: "aws-lc methods",
        symbol: |name| name == "entropy_source_methods_override",
        what: AWS_LC,
        reset: |_| {},
        at_end: false,
        turns: true,
    },
    Known {
        id: "aws-lc allow",
        symbol: |name| name == "allow_entropy_source_methods_override",
        what: AWS_LC,
        reset: |_| {},
        at_end: false,
        turns: true,
    },
];

/// std's `Once` on Linux is one futex word: `ONCE_INCOMPLETE` when new,
/// `ONCE_COMPLETE` once run (std's own values, not a public contract).
const ONCE_INCOMPLETE: u32 = 3;
const ONCE_COMPLETE: u32 = 0;

/// Whether this std's `Once` is laid out as the rayon resets assume (see
/// above), checked on a `Once` of our own: if not, they touch nothing.
fn once_layout_is_std() -> bool {
    static PROBE: std::sync::Once = std::sync::Once::new();
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(|| {
        if std::mem::size_of::<std::sync::Once>() != 4 {
            return false;
        }
        // SAFETY: `PROBE` is 4 bytes (checked), read as the word std uses.
        let word = || unsafe { &*(&PROBE as *const std::sync::Once as *const AtomicU32) };
        let new = word().load(SeqCst);
        PROBE.call_once(|| {});
        new == ONCE_INCOMPLETE && word().load(SeqCst) == ONCE_COMPLETE
    })
}

/// What the executable's symbol table holds that this module and
/// antithesis.rs use.
#[derive(Default)]
struct Found {
    /// The known states, with their resets' addresses.
    known: Vec<(&'static Known, usize)>,
    /// antithesis_sdk's statics (antithesis.rs), with their addresses.
    sdk: Vec<super::antithesis::SdkSymbol>,
}

fn found_all() -> &'static Found {
    static FOUND: OnceLock<Found> = OnceLock::new();
    FOUND.get_or_init(|| hooks::on_real_disk(scan).unwrap_or_default())
}

/// The known states this executable has, with their resets' addresses.
fn found() -> &'static [(&'static Known, usize)] {
    &found_all().known
}

/// antithesis_sdk's per-site statics in this executable (antithesis.rs).
pub(crate) fn sdk_symbols() -> &'static [super::antithesis::SdkSymbol] {
    &found_all().sdk
}

/// Reads the executable's symbol table for the known functions.
fn scan() -> Option<Found> {
    use object::{Object, ObjectSymbol};
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open("/proc/self/exe").ok()?;
    let len = file.metadata().ok()?.len() as usize;
    // SAFETY: a read-only private mapping of a file we opened; it is only
    // read, and unmapped below before this function returns.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: the mapping is `len` readable bytes until the `munmap` below.
    let bytes = unsafe { std::slice::from_raw_parts(map.cast::<u8>(), len) };
    let out = (|| {
        let obj = object::File::parse(bytes).ok()?;
        // The load bias: where one of our own functions is, against where
        // the table says it is.
        let anchor = super::fs::open64 as *const () as usize;
        let mut anchor_at = None;
        let mut hits = Vec::new();
        let mut sdk = Vec::new();
        for sym in obj.symbols() {
            if sym.is_undefined() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if name == "open64" {
                anchor_at = Some(sym.address() as usize);
            }
            if let Some(k) = KNOWN.iter().find(|k| (k.symbol)(name)) {
                hits.push((k, sym.address() as usize));
            }
            if let Some(s) = super::antithesis::SdkSymbol::read(name, sym.address(), sym.size()) {
                sdk.push(s);
            }
        }
        let bias = anchor.wrapping_sub(anchor_at?);
        for s in &mut sdk {
            s.addr = s.addr.wrapping_add(bias);
        }
        Some(Found {
            known: hits
                .into_iter()
                .map(|(k, at)| (k, at.wrapping_add(bias)))
                .collect(),
            sdk,
        })
    })();
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(map, len) };
    out
}

const RAYON_POOL: &str = "rayon-core's global thread pool";
const AWS_LC: &str = "AWS-LC's state (its locks and generators)";

/// The addresses of rayon's `THE_REGISTRY` and `THE_REGISTRY_SET`, when
/// the executable has both and std's `Once` is as the swap assumes.
fn rayon_pool() -> Option<(usize, usize)> {
    static AT: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    *AT.get_or_init(|| {
        let at = |id: &str| found().iter().find(|(k, _)| k.id == id).map(|(_, a)| *a);
        let (registry, set) = (at("rayon THE_REGISTRY")?, at("rayon THE_REGISTRY_SET")?);
        once_layout_is_std().then_some((registry, set))
    })
}

/// Each node incarnation's rayon pool while another node runs: its
/// registry pointer and its `Once` word; and the node whose are in the
/// statics now. Only one simulation runs at a time when the executable has
/// rayon (`enter`), so one table serves the process.
struct Pools {
    saved: BTreeMap<(u32, u32), (usize, u32)>,
    current: Option<(u32, u32)>,
}

static POOLS: SpinCell<Pools> = SpinCell::new(Pools {
    saved: BTreeMap::new(),
    current: None,
});

/// The node that runs changes to incarnation `incarnation` of `node`: its
/// rayon pool goes into rayon's statics (see the module's docs).
fn switch_node(node: u32, incarnation: u32) {
    let Some((registry, set)) = rayon_pool() else {
        return;
    };
    // SAFETY: the addresses of rayon-core's `THE_REGISTRY` (a pointer-sized
    // `Option<Arc<_>>`) and `THE_REGISTRY_SET` (a `Once`, one `u32` word:
    // `once_layout_is_std`), statics for the whole process; only the code
    // of the simulation that holds the turn (`enter`) runs, and it runs
    // none of rayon's code during the switch.
    let (registry, set) = unsafe {
        (
            &*(registry as *const AtomicUsize),
            &*(set as *const AtomicU32),
        )
    };
    let next = (node, incarnation);
    POOLS.with(|p| {
        if p.current == Some(next) {
            return;
        }
        if let Some(was) = p.current {
            p.saved
                .insert(was, (registry.load(SeqCst), set.load(SeqCst)));
        }
        let (r, s) = p.saved.remove(&next).unwrap_or((0, ONCE_INCOMPLETE));
        registry.store(r, SeqCst);
        set.store(s, SeqCst);
        p.current = Some(next);
    });
}

#[linkme::distributed_slice(hooks::NODE_SWITCH)]
static SWITCHES_RAYON_POOLS: fn(u32, u32) = switch_node;

/// Forgets every node's rayon pool (a run starts or ends).
fn forget_pools() {
    POOLS.with(|p| {
        p.saved.clear();
        p.current = None;
    });
}

/// Simulations take turns while the executable has per-process state.
#[linkme::distributed_slice(hooks::INTERPOSERS)]
static TAKES_TURNS: hooks::Interposer = hooks::Interposer {
    start: enter,
    stop: leave,
};

/// A simulation starts on this thread: wait for its turn, then reset every
/// state found.
fn enter() {
    let found = found();
    if found.is_empty() && !super::antithesis::has_trackers() {
        return;
    }
    let at = |id: &str| -> Vec<usize> {
        found
            .iter()
            .filter(|(k, _)| k.id == id)
            .map(|(_, a)| *a)
            .collect()
    };
    // SAFETY: the addresses of AWS-LC's two statics, by their names in the
    // executable's symbol table.
    unsafe { super::aws_lc::install(&at("aws-lc methods"), &at("aws-lc allow")) };
    if !takes_turns() {
        return;
    }
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(guard));
    for (k, addr) in found {
        (k.reset)(*addr);
    }
    forget_pools();
    super::antithesis::run_starts();
}

/// Whether simulations take turns in this executable.
fn takes_turns() -> bool {
    found().iter().any(|(k, _)| k.turns) || super::antithesis::has_trackers()
}

/// The simulation of this thread ended: the next one may start.
fn leave() {
    if !takes_turns() {
        return;
    }
    forget_pools();
    super::antithesis::run_ends();
    for (k, addr) in found() {
        if k.at_end {
            (k.reset)(*addr);
        }
    }
    let _ = HELD.try_with(|h| h.borrow_mut().take());
}

/// The per-process states this executable has that two simulations
/// running at once would share, by name (empty: seeds may run in
/// parallel).
pub fn process_global() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for (k, _) in found().iter().filter(|(k, _)| k.turns) {
        if !names.contains(&k.what) {
            names.push(k.what);
        }
    }
    if super::antithesis::has_trackers() {
        names.push(super::antithesis::TRACKERS);
    }
    names
}
