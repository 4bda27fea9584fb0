//! A C library's per-process seeded state is reset at the start of every
//! simulation, and simulations take turns while the executable has one
//! (sim-runtime's libc/cstate.rs). The stand-in below is this executable's own
//! `sqlite3_randomness`: the simulation finds it by name in the symbol
//! table, as it finds SQLite's when a store links it.
//!
//! A binary of its own: while it has the symbol, every simulation in it
//! takes its turn.
#![cfg(all(
    simulation,
    target_os = "linux",
    target_arch = "x86_64",
    target_env = "gnu"
))]

use std::sync::atomic::{AtomicU32, Ordering};

static RESETS: AtomicU32 = AtomicU32::new(0);
static INSIDE: AtomicU32 = AtomicU32::new(0);

/// SQLite's signature; `(0, NULL)` is its reset.
#[unsafe(no_mangle)]
pub extern "C" fn sqlite3_randomness(n: i32, p: *mut u8) {
    assert!(n == 0 && p.is_null(), "only the reset is ever called here");
    RESETS.fetch_add(1, Ordering::SeqCst);
}

fn run(seed: u64) {
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(seed)
        .build()
        .unwrap();
    rt.block_on(async {
        assert_eq!(
            INSIDE.fetch_add(1, Ordering::SeqCst),
            0,
            "another simulation ran at the same time"
        );
        // Real work, so that two simulations without turns would overlap.
        let mut x = 0u64;
        for i in 0..300_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        sim_runtime::time::sleep(std::time::Duration::from_millis(5)).await;
        INSIDE.fetch_sub(1, Ordering::SeqCst);
    });
}

#[test]
fn each_simulation_resets_the_state_and_they_take_turns() {
    // Referenced, so that the linker keeps it (SQLite's is kept by the
    // store's calls).
    std::hint::black_box(sqlite3_randomness as *const ());
    let before = RESETS.load(Ordering::SeqCst);
    let threads: Vec<_> = (0..4)
        .map(|i| std::thread::spawn(move || (0..5).for_each(|s| run(i * 10 + s))))
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        RESETS.load(Ordering::SeqCst) - before >= 20,
        "a reset per simulation"
    );
    assert_eq!(
        sim_runtime::__private::harness::process_global_state(),
        ["SQLite's random number generator (sqlite3_randomness)"]
    );
}
