//! State a C library keeps once per process, seeded from the OS: reset at
//! the start of every simulation, so that one seed replays the same after
//! another in the same process.
//!
//! - SQLite's random number generator, below; rayon-core's counter that
//!   seeds its workers' stealing order (a Rust static, found by its mangled
//!   name the same way).
//! - rayon-core's global pool (`THE_REGISTRY`, set once per process
//!   through a `std::sync::Once`): a pool made inside a run has simulated
//!   threads of that run, which end with it, so a later run (or code
//!   outside any) that found it would wait forever on a job no thread
//!   takes. The registry is forgotten when a run starts and again when it
//!   ends (the old one is leaked, never freed, since threads may still
//!   point into it), so each run's first `par_iter` builds a pool of its
//!   own, with the node's CPU count, as a fresh process would.
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
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
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
}

const KNOWN: &[Known] = &[
    Known {
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
    },
    Known {
        // rayon-core seeds each worker's choice of whom to steal from with
        // a hash of a process-wide counter (`XorShift64Star::new`'s
        // `COUNTER`), so a pool made in a later run of the process steals
        // in another order: it starts from 0 again in every run.
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
    },
    Known {
        // `static mut THE_REGISTRY: Option<Arc<Registry>>`: `None` is a null
        // pointer (`Arc` is never null). Forgetting the old one leaks it.
        symbol: |name| name.contains("rayon_core") && name.contains("12THE_REGISTRY17h"),
        what: "rayon-core's global thread pool",
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
    },
    Known {
        // `static THE_REGISTRY_SET: Once`: made incomplete again, so the
        // next `global_registry()` builds a new pool.
        symbol: |name| name.contains("rayon_core") && name.contains("16THE_REGISTRY_SET17h"),
        what: "rayon-core's global thread pool",
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

/// The known states this executable has, with their resets' addresses.
fn found() -> &'static [(&'static Known, usize)] {
    static FOUND: OnceLock<Vec<(&'static Known, usize)>> = OnceLock::new();
    FOUND.get_or_init(|| hooks::on_real_disk(scan).unwrap_or_default())
}

/// Reads the executable's symbol table for the known functions.
fn scan() -> Option<Vec<(&'static Known, usize)>> {
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
        }
        let bias = anchor.wrapping_sub(anchor_at?);
        Some(
            hits.into_iter()
                .map(|(k, at)| (k, at.wrapping_add(bias)))
                .collect(),
        )
    })();
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(map, len) };
    out
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
    if found.is_empty() {
        return;
    }
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(guard));
    for (k, addr) in found {
        (k.reset)(*addr);
    }
}

/// The simulation of this thread ended: the next one may start.
fn leave() {
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
    for (k, _) in found() {
        if !names.contains(&k.what) {
            names.push(k.what);
        }
    }
    names
}
