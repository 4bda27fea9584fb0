//! The thread body of the thread soak, shared by the executor bench's
//! `thread_soak` (`threads.rs`) and sim-harness's `tests/it/soak.rs` (by
//! `#[path]`), so that the bench measures the scenario the test runs.

/// A thread looping on 1 ms sleeps, filling a thread-local as it goes: a
/// thread killed where it stands leaves that thread-local behind.
pub fn sleeper() {
    thread_local! {
        static SEEN: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut i = 0;
    loop {
        SEEN.with(|s| s.borrow_mut().push(i));
        i += 1;
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
