//! sim-runtime's integration tests under `--cfg simulation`.
#![cfg(simulation)]

/// Names the failure-mode rows (the tables in sim-net's and sim-fs's crate
/// docs) a test checks; `cargo xtask tidy` reads the claims from the source.
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}

mod buggify;
mod coop;
mod env;
mod failures;
mod net;
mod nodes;
mod reuse;
mod schedules;
mod signals;
mod tasks;
mod thread_leaks;
mod threads;
mod threads_c;
mod time;
mod unsupported;

use std::future::Future;

/// Held by the tests that start hundreds of OS threads and by those that
/// count the process's mappings, so that the first do not run while the
/// second count (the tests of this binary run in parallel).
pub static MANY_THREADS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`MANY_THREADS`] (a failed test's poison does not matter here).
pub fn many_threads() -> std::sync::MutexGuard<'static, ()> {
    MANY_THREADS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` in a fresh simulation with `seed`, on the current thread.
pub fn run<F: Future>(seed: u64, f: F) -> F::Output {
    sim_runtime::runtime::Builder::new_current_thread()
        .sim_seed(seed)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Runs `f` in a fresh simulation on a fresh thread, returning the panic
/// message if the run failed.
/// A runtime that was built and shut down (`shutdown_timeout`), and its
/// handle, which outlives it.
pub fn shut_down_runtime() -> sim_runtime::runtime::Handle {
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    handle
}

/// The text of a caught panic (`String` or `&str` payload).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

pub fn run_failing<F, Fut>(seed: u64, f: F) -> String
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future,
{
    let r = std::thread::spawn(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(seed, f());
        }))
    })
    .join()
    .unwrap();
    match r {
        Ok(()) => panic!("the simulation was expected to fail, but it passed"),
        Err(p) => panic_text(&*p),
    }
}
