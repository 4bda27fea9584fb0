//! What killed threads leave behind (issue 35 item 5): a sweep that kills
//! threads seed after seed keeps the process flat.

use crate::run;
use sim_runtime::sim;
use std::time::Duration;

/// std maps every thread it starts an alternate signal stack, unmapped only
/// when the thread's start routine returns. Killed where they stand,
/// thousands of std threads leave the process's count of mappings where it
/// was (each used to keep two, until the kernel's limit of about 65,000
/// stopped every later thread from starting).
#[test]
fn killed_std_threads_leave_no_mappings_behind() {
    fn mappings() -> usize {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .count()
    }
    let kill_four = |seed| {
        run(seed, async {
            let w = sim::node("w").build();
            sim::spawn_on(w, async {
                for _ in 0..4 {
                    std::thread::spawn(|| loop {
                        std::thread::sleep(Duration::from_millis(1));
                    });
                }
            });
            sim_runtime::time::sleep(Duration::from_millis(3)).await;
            sim::kill(w);
        })
    };
    // No test that starts hundreds of threads runs while this one counts.
    let _many = crate::many_threads();
    for seed in 0..20 {
        kill_four(seed);
    }
    let before = mappings();
    for seed in 0..500 {
        kill_four(seed);
    }
    let after = mappings();
    assert!(
        after < before + 1_000,
        "2,000 killed threads left {} more mappings ({before} -> {after})",
        after.saturating_sub(before)
    );
}
