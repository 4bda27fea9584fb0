//! Generators a crate keeps per OS thread and seeds from the thread's
//! identity: seeded from the run's seed instead, on the run's own thread
//! (where its tasks run) when the run starts.
//!
//! fastrand 2 (tempfile's temporary names, aws-smithy's retry jitter,
//! futures-lite, async-channel and many more) seeds its thread-local
//! generator, on a thread's first draw, from a hash of `Instant::now()`
//! and `thread::current().id()`. The instant is virtual, but a `ThreadId`
//! is a process-wide counter: the same seed on another worker, in another
//! order or run again (a replay, a shrink, the determinism check) drew
//! other numbers, and a second seed on one thread went on with the first
//! seed's generator. `fastrand::seed` replaces the thread's generator; this
//! crate depends on fastrand 2 so that cargo unifies it with the program's
//! (one fastrand 2 per graph). fastrand 1, a separate crate, is not reached
//! (docs/breakage.md).
//!
//! The value is mixed from the seeded stream's seed, not drawn from the
//! stream, so nothing else a run draws moves.
//!
//! Not reached: a simulated OS thread's own generator. Seeding it needs a
//! moment after std has set the thread's handle and before its routine
//! draws, and there is none: std sets the handle inside the routine the
//! thread starts with, and a handle set earlier (fastrand's first use
//! asks for one) makes std abort the spawn. A simulated thread that draws
//! from fastrand is not replayed exactly; `check_determinism` says so
//! (docs/breakage.md, "OS threads").

use crate::simulation::core::hooks;

#[linkme::distributed_slice(hooks::INTERPOSERS)]
static FASTRAND: hooks::Interposer = hooks::Interposer {
    start: seed_this_thread,
    stop: hooks::Interposer::nothing,
};

/// Seeds this thread's fastrand generator from the run's seed, when a
/// simulation is starting on this thread.
fn seed_this_thread() {
    if let Some(seed) = hooks::stream_seed() {
        fastrand::seed(mix(seed ^ 0xfa57_4a4d_0000_0001));
    }
}

/// SplitMix64's finalizer: nearby seeds, unrelated outputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
