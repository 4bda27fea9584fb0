//! What killed threads leave behind (issue 35 item 5): a sweep that kills
//! threads seed after seed keeps the process flat.

use crate::run;
use sim_runtime::sim;
use std::time::Duration;

/// Runs `spawn` in a task of node `w`, lets its threads run 3 ms, then
/// kills the node with them.
fn spawn_then_kill(seed: u64, spawn: fn()) {
    run(seed, async move {
        let w = sim::node("w").build();
        sim::spawn_on(w, async move { spawn() });
        sim_runtime::time::sleep(Duration::from_millis(3)).await;
        sim::kill(w);
    })
}

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
        spawn_then_kill(seed, || {
            for _ in 0..4 {
                std::thread::spawn(|| loop {
                    std::thread::sleep(Duration::from_millis(1));
                });
            }
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

/// A killed thread's thread-local destructors are never run, and the list
/// that holds them is freed by its killer (thread/dtors.rs): glibc's list
/// would have stayed allocated for the rest of the process. A thread that
/// ends runs its list and frees it itself.
#[test]
fn killed_threads_leave_no_destructor_lists_behind() {
    thread_local! {
        static TOUCHED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let kill_four = |seed| {
        spawn_then_kill(seed, || {
            for _ in 0..4 {
                std::thread::spawn(|| loop {
                    TOUCHED.with(|t| t.borrow_mut().push(1));
                    std::thread::sleep(Duration::from_millis(1));
                });
            }
            // One that ends by itself, its destructors run.
            std::thread::spawn(|| TOUCHED.with(|t| t.borrow_mut().push(2)))
                .join()
                .unwrap();
        })
    };
    let _many = crate::many_threads();
    let before = sim_runtime::__private::harness::live_thread_dtor_lists();
    for seed in 0..50 {
        kill_four(seed);
    }
    let after = sim_runtime::__private::harness::live_thread_dtor_lists();
    // 200 of the threads were killed; other tests' threads may be running.
    assert!(
        after < before + 50,
        "250 ended or killed threads left {} destructor lists allocated",
        after.saturating_sub(before)
    );
}
