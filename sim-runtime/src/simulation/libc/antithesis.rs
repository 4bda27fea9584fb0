//! antithesis_sdk, unmodified, inside a simulation: its assertions,
//! guidance and catalog become the harness's sites, and its randomness is
//! the seed's.
//!
//! The SDK (feature `full`, its default) loads its platform's library once
//! per process, `dlopen("/usr/lib/libvoidstar.so")`, takes three functions
//! from it with `dlsym` and writes every event to `fuzz_json_data` as a
//! line of JSON. Here [`dlopen`] of that path answers with a handle of our
//! own and [`dlsym`] on that handle with this module's functions:
//! - `fuzz_json_data`: inside a simulation the line goes to every
//!   [`hooks::SDK_OUTPUT`] sink (the harness's, which turns assertions into
//!   its sites, guidance into exploration features, the catalog into its
//!   coverage report); outside one it is dropped, as the SDK drops it with
//!   no platform.
//! - `fuzz_get_random`: `getrandom`, which inside a simulation draws from
//!   the seed's stream.
//! - `fuzz_flush`: nothing to flush.
//!
//! Every other `dlopen`, `dlsym` and `dlclose` goes to glibc unchanged.
//! The interposers are the executable's (not exported), so only its own
//! code, the SDK's included, calls them; `dlsym(RTLD_NEXT, ..)` keeps
//! meaning "after the executable", since glibc's is called from here.
//!
//! The SDK writes an assertion's line only the first time each site passes
//! and the first time it fails, in the whole process: each site's macro
//! keeps a `static TRACKER` (two counters), and numeric guidance a `static
//! GUARD` (the best value so far). On the platform each node is a process
//! of its own. Here every node incarnation of every run gets that too: the
//! statics are found by name in the executable's symbol table (cstate.rs's
//! scan), each beside its site's catalog entry in the same function; they
//! are reset when a run starts and ends, and swapped whenever the node that
//! runs changes ([`switch_node`]), as rayon's pool is. They are shared by
//! every thread of the process, so simulations take turns while the
//! executable has them (cstate.rs). The SDK's `assert_raw` keeps its
//! trackers in a map this cannot reset: an executable that calls it is told
//! so once, on stderr.

use super::sys::Real;
use crate::simulation::core::hooks;
use crate::simulation::thread::spin::SpinCell;
use libc::{c_char, c_int, c_void};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::SeqCst};
use std::sync::OnceLock;

/// Where the SDK looks for its platform's library.
const VOIDSTAR: &CStr = c"/usr/lib/libvoidstar.so";

/// What the process-wide note names (cstate.rs `process_global`).
pub(crate) const TRACKERS: &str = "the state of antithesis_sdk's assertions (a tracker per site)";

/// The handle [`dlopen`] gives for [`VOIDSTAR`]: the address of this byte,
/// which no library's handle can be.
static HANDLE: u8 = 0;

fn handle() -> *mut c_void {
    &HANDLE as *const u8 as *mut c_void
}

static REAL_DLOPEN: Real = Real::new(c"dlopen");
static REAL_DLCLOSE: Real = Real::new(c"dlclose");

/// glibc's `dlsym`, found with `dlvsym` (this module defines `dlsym`, so
/// `Real`, which finds functions with `dlsym`, cannot find it).
fn real_dlsym() -> unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void {
    static AT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    let mut at = AT.load(SeqCst);
    if at.is_null() {
        for version in [c"GLIBC_2.34", c"GLIBC_2.2.5"] {
            // SAFETY: both strings are NUL-terminated; RTLD_NEXT from this
            // executable names the objects after it, where glibc is.
            at = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
            if !at.is_null() {
                break;
            }
        }
        if at.is_null() {
            super::sys::fatal(&[b"sim: cannot find glibc's dlsym\n"]);
        }
        AT.store(at, SeqCst);
    }
    // SAFETY: `at` is glibc's `dlsym`, whose C signature this is.
    unsafe {
        std::mem::transmute::<
            *mut c_void,
            unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void,
        >(at)
    }
}

/// `dlopen(3)`: the SDK's platform library is this module; any other
/// file is glibc's to open.
///
/// # Safety
///
/// As `dlopen(3)`: `file` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void {
    // SAFETY: non-null `file` is NUL-terminated by the caller's contract.
    if !file.is_null() && unsafe { CStr::from_ptr(file) } == VOIDSTAR {
        return handle();
    }
    // SAFETY: glibc's `dlopen`, the arguments passed through unchanged.
    unsafe { real!(REAL_DLOPEN as fn(*const c_char, c_int) -> *mut c_void)(file, mode) }
}

/// `dlsym(3)`: on the handle [`dlopen`] gave for the SDK's library, this
/// module's functions; on any other, glibc's answer.
///
/// # Safety
///
/// As `dlsym(3)`: `handle` is a handle `dlopen` gave or a pseudo-handle,
/// `symbol` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn dlsym(h: *mut c_void, symbol: *const c_char) -> *mut c_void {
    if h == handle() {
        // SAFETY: NUL-terminated by the caller's contract.
        let name = unsafe { CStr::from_ptr(symbol) };
        // The SDK calls them through Rust function pointers of these types
        // (`unsafe fn(*const c_char, usize)`, `fn() -> u64`, `fn()`), so
        // they are Rust functions of exactly those types.
        let f: *const () = match name.to_bytes() {
            b"fuzz_json_data" => fuzz_json_data as unsafe fn(*const c_char, usize) as *const (),
            b"fuzz_get_random" => fuzz_get_random as fn() -> u64 as *const (),
            b"fuzz_flush" => fuzz_flush as fn() as *const (),
            _ => std::ptr::null(),
        };
        return f as *mut c_void;
    }
    // SAFETY: glibc's `dlsym`, the arguments passed through unchanged.
    unsafe { real_dlsym()(h, symbol) }
}

/// `dlclose(3)`: the SDK's library stays; any other goes to glibc.
///
/// # Safety
///
/// As `dlclose(3)`: `handle` is a handle `dlopen` gave.
#[no_mangle]
pub unsafe extern "C" fn dlclose(h: *mut c_void) -> c_int {
    if h == handle() {
        return 0;
    }
    // SAFETY: glibc's `dlclose`, the argument passed through unchanged.
    unsafe { real!(REAL_DLCLOSE as fn(*mut c_void) -> c_int)(h) }
}

/// One line of the SDK's JSON: to the harness, inside a simulation.
///
/// # Safety
///
/// `data` is valid for reading `len` bytes (the SDK passes a `&str`'s).
unsafe fn fuzz_json_data(data: *const c_char, len: usize) {
    if !hooks::active() || data.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
    let Ok(line) = std::str::from_utf8(bytes) else {
        return;
    };
    for sink in hooks::SDK_OUTPUT {
        sink(line);
    }
}

/// The SDK's randomness: `getrandom`, the seed's inside a simulation.
fn fuzz_get_random() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: `b` is 8 writable bytes; the call is this executable's
    // `getrandom` (sys.rs), glibc's outside a simulation.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        super::sys::fatal(&[b"sim: getrandom failed for antithesis_sdk's randomness\n"]);
    }
    u64::from_le_bytes(b)
}

fn fuzz_flush() {}

/// What a symbol of the SDK's macros is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SdkKind {
    /// `static TRACKER: TrackingInfo` (two `AtomicU64`: passes, failures).
    Tracker,
    /// `static GUARD: Guard<_, f64>` (one `AtomicU64`: the best value's bits).
    Guard,
    /// `ALWAYS_CATALOG_ITEM` or `GUIDANCE_CATALOG_ITEM`: says the function
    /// holds a site of the SDK's (its statics share the path before them).
    Catalog,
    /// `assert_raw`'s map of trackers, which cannot be reset.
    RawTracker,
}

/// One symbol of the SDK's macros, read from the symbol table.
pub(crate) struct SdkSymbol {
    pub(crate) kind: SdkKind,
    /// The mangled path before the static's own name: the function.
    prefix: String,
    /// Its address (after cstate.rs adds the load bias).
    pub(crate) addr: usize,
    size: u64,
}

impl SdkSymbol {
    /// The symbol `name`, if it is one of the SDK's (legacy mangling,
    /// `..7TRACKER17h<hash>E`, or v0, `..7TRACKER`).
    pub(crate) fn read(name: &str, addr: u64, size: u64) -> Option<SdkSymbol> {
        if !name.starts_with("_ZN") && !name.starts_with("_R") {
            return None;
        }
        // (the static's name as mangled, legacy with its hash's start)
        const NAMES: &[(&str, &str, SdkKind)] = &[
            ("7TRACKER", "7TRACKER17h", SdkKind::Tracker),
            ("5GUARD", "5GUARD17h", SdkKind::Guard),
            (
                "19ALWAYS_CATALOG_ITEM",
                "19ALWAYS_CATALOG_ITEM17h",
                SdkKind::Catalog,
            ),
            (
                "21GUIDANCE_CATALOG_ITEM",
                "21GUIDANCE_CATALOG_ITEM17h",
                SdkKind::Catalog,
            ),
        ];
        if !(name.contains("TRACKER") || name.contains("GUARD") || name.contains("CATALOG_ITEM")) {
            return None;
        }
        if name.contains("14antithesis_sdk") && name.contains("10assert_raw14ASSERT_TRACKER") {
            return Some(SdkSymbol {
                kind: SdkKind::RawTracker,
                prefix: String::new(),
                addr: addr as usize,
                size,
            });
        }
        NAMES.iter().find_map(|(ident, legacy, kind)| {
            let at = name
                .find(legacy)
                .or_else(|| name.ends_with(ident).then(|| name.len() - ident.len()))?;
            Some(SdkSymbol {
                kind: *kind,
                prefix: name[..at].to_string(),
                addr: addr as usize,
                size,
            })
        })
    }
}

/// The SDK's per-site statics in this executable.
struct Statics {
    /// Each `TRACKER`'s address.
    trackers: Vec<usize>,
    /// Each `GUARD`'s address.
    guards: Vec<usize>,
    /// Whether `assert_raw`'s map is linked in.
    raw: bool,
}

fn statics() -> &'static Statics {
    static AT: OnceLock<Statics> = OnceLock::new();
    AT.get_or_init(|| {
        let all = super::cstate::sdk_symbols();
        let sites: std::collections::BTreeSet<&str> = all
            .iter()
            .filter(|s| s.kind == SdkKind::Catalog)
            .map(|s| s.prefix.as_str())
            .collect();
        let of = |kind: SdkKind, size: u64| -> Vec<usize> {
            let mut v: Vec<usize> = all
                .iter()
                .filter(|s| s.kind == kind && s.size == size && sites.contains(s.prefix.as_str()))
                .map(|s| s.addr)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        Statics {
            trackers: of(SdkKind::Tracker, 16),
            guards: of(SdkKind::Guard, 8),
            raw: all.iter().any(|s| s.kind == SdkKind::RawTracker),
        }
    })
}

/// Whether the executable has any of the SDK's per-site statics.
pub(crate) fn has_trackers() -> bool {
    let s = statics();
    !s.trackers.is_empty() || !s.guards.is_empty()
}

/// A `GUARD` as new: NaN, which `f64::max`/`min` replace with any value,
/// and which compares with none, so its first value is always news.
const GUARD_NEW: u64 = 0x7ff8_0000_0000_0000;

/// The words of every static, in order: each tracker's two counters, then
/// each guard.
fn words() -> impl Iterator<Item = &'static AtomicU64> {
    let s = statics();
    // SAFETY: each address is a `static` of the SDK's macros found by name
    // in the executable's symbol table, beside its site's catalog entry,
    // and of the size checked in `statics`: a `TrackingInfo` (two
    // `AtomicU64`) or a `Guard<_, f64>` (one `AtomicU64` holding the bits);
    // statics live for the whole process, and atomics are how the SDK
    // writes them too.
    let word = |addr: usize| unsafe { &*(addr as *const AtomicU64) };
    s.trackers
        .iter()
        .flat_map(move |&t| [word(t), word(t + 8)])
        .chain(s.guards.iter().map(move |&g| word(g)))
}

fn fresh() -> Vec<u64> {
    let s = statics();
    let mut v = vec![0; s.trackers.len() * 2];
    v.resize(v.len() + s.guards.len(), GUARD_NEW);
    v
}

fn load(image: &[u64]) {
    for (w, v) in words().zip(image) {
        w.store(*v, SeqCst);
    }
}

/// Each node incarnation's statics while another node runs, and the node
/// whose are in place. One simulation runs at a time while the executable
/// has them (cstate.rs), so one table serves the process.
struct Images {
    saved: BTreeMap<(u32, u32), Vec<u64>>,
    current: Option<(u32, u32)>,
}

static IMAGES: SpinCell<Images> = SpinCell::new(Images {
    saved: BTreeMap::new(),
    current: None,
});

/// The node that runs changes: its statics go into place (see the
/// module's docs).
fn switch_node(node: u32, incarnation: u32) {
    if !has_trackers() {
        return;
    }
    let next = (node, incarnation);
    IMAGES.with(|i| {
        if i.current == Some(next) {
            return;
        }
        if let Some(was) = i.current {
            i.saved
                .insert(was, words().map(|w| w.load(SeqCst)).collect());
        }
        let image = i.saved.remove(&next).unwrap_or_else(fresh);
        load(&image);
        i.current = Some(next);
    });
}

#[linkme::distributed_slice(hooks::NODE_SWITCH)]
static SWITCHES_SDK_TRACKERS: fn(u32, u32) = switch_node;

fn forget() {
    IMAGES.with(|i| {
        i.saved.clear();
        i.current = None;
    });
    load(&fresh());
}

/// A run starts (its turn taken, cstate.rs): every site is new again.
pub(crate) fn run_starts() {
    if !has_trackers() {
        return;
    }
    forget();
    if statics().raw {
        static TOLD: std::sync::Once = std::sync::Once::new();
        TOLD.call_once(|| {
            eprintln!(
                "sim: this executable calls antithesis_sdk::assert::assert_raw, whose trackers \
                 cannot be reset per run: its sites report only their first pass and first \
                 failure in the whole process (docs/breakage.md). Use the SDK's macros."
            )
        });
    }
}

/// A run ended.
pub(crate) fn run_ends() {
    if has_trackers() {
        forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdks_statics_are_read_by_their_mangled_names() {
        let t = SdkSymbol::read("_ZN4demo4main7TRACKER17h0123456789abcdefE", 64, 16).unwrap();
        assert_eq!(
            (t.kind, t.prefix.as_str(), t.size),
            (SdkKind::Tracker, "_ZN4demo4main", 16)
        );
        let c = SdkSymbol::read(
            "_ZN4demo4main19ALWAYS_CATALOG_ITEM17h0123456789abcdefE",
            0,
            8,
        )
        .unwrap();
        assert_eq!(
            (c.kind, c.prefix.as_str()),
            (SdkKind::Catalog, "_ZN4demo4main")
        );
        let g = SdkSymbol::read("_RNvNvCs1234_4demo4main5GUARD", 0, 8).unwrap();
        assert_eq!(
            (g.kind, g.prefix.as_str()),
            (SdkKind::Guard, "_RNvNvCs1234_4demo4main")
        );
        // Another static of that name in a longer identifier is not one.
        assert!(SdkSymbol::read("_ZN4demo4main10MY_TRACKER17h0123456789abcdefE", 0, 16).is_none());
        assert!(SdkSymbol::read("TRACKER", 0, 16).is_none());
    }
}
