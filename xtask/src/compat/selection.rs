//! Which of Tokio's test files run, which are left out and why.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Group {
    Task,
    Time,
    Macros,
    Runtime,
    Sync,
    Net,
}

impl Group {
    pub(super) fn name(self) -> &'static str {
        match self {
            Group::Task => "task",
            Group::Time => "time",
            Group::Macros => "macros",
            Group::Runtime => "runtime",
            Group::Sync => "sync",
            Group::Net => "net",
        }
    }
}

/// The modules of the issue that brought the simulated runtime: the report
/// gives their pass rate apart.
pub(super) const SCOPE: &[Group] = &[Group::Task, Group::Time, Group::Macros];

/// The test files of `tokio/tests/` that exercise what sim-runtime
/// simulates (task, time, macros, runtime), and the `sync` files: real
/// Tokio's sync, driven by the simulated executor.
pub(super) const SELECTED: &[(&str, Group)] = &[
    ("task_abort", Group::Task),
    ("task_blocking", Group::Task),
    ("task_builder", Group::Task),
    ("task_id", Group::Task),
    ("task_join_set", Group::Task),
    ("task_local", Group::Task),
    ("task_local_set", Group::Task),
    ("task_panic", Group::Task),
    ("task_yield_now", Group::Task),
    ("join_handle_panic", Group::Task),
    ("coop_budget", Group::Task),
    ("unwindsafe", Group::Task),
    ("time_interval", Group::Time),
    ("time_panic", Group::Time),
    ("time_pause", Group::Time),
    ("time_rt", Group::Time),
    ("time_sleep", Group::Time),
    ("time_timeout", Group::Time),
    ("test_clock", Group::Time),
    ("rt_time_start_paused", Group::Time),
    ("macros_join", Group::Macros),
    ("macros_pin", Group::Macros),
    ("macros_rename_test", Group::Macros),
    ("macros_select", Group::Macros),
    ("macros_test", Group::Macros),
    ("macros_try_join", Group::Macros),
    ("rt_basic", Group::Runtime),
    ("rt_busy_tick", Group::Runtime),
    ("rt_common", Group::Runtime),
    ("rt_common_before_park", Group::Runtime),
    ("rt_handle", Group::Runtime),
    ("rt_handle_block_on", Group::Runtime),
    ("rt_local", Group::Runtime),
    ("rt_metrics", Group::Runtime),
    ("rt_panic", Group::Runtime),
    ("rt_shutdown_err", Group::Runtime),
    ("rt_spawn_blocking", Group::Runtime),
    ("rt_worker_index", Group::Runtime),
    ("no_rt", Group::Runtime),
    ("sync_barrier", Group::Sync),
    ("sync_broadcast", Group::Sync),
    ("sync_broadcast_weak", Group::Sync),
    ("sync_errors", Group::Sync),
    ("sync_mpsc", Group::Sync),
    ("sync_mpsc_weak", Group::Sync),
    ("sync_mutex", Group::Sync),
    ("sync_mutex_owned", Group::Sync),
    ("sync_notify", Group::Sync),
    ("sync_notify_owned", Group::Sync),
    ("sync_once_cell", Group::Sync),
    ("sync_oneshot", Group::Sync),
    ("sync_panic", Group::Sync),
    ("sync_rwlock", Group::Sync),
    ("sync_semaphore", Group::Sync),
    ("sync_semaphore_owned", Group::Sync),
    ("sync_set_once", Group::Sync),
    ("sync_watch", Group::Sync),
    ("tcp_accept", Group::Net),
    ("tcp_accept_ready", Group::Net),
    ("tcp_connect", Group::Net),
    ("tcp_echo", Group::Net),
    ("tcp_into_split", Group::Net),
    ("tcp_into_std", Group::Net),
    ("tcp_peek", Group::Net),
    ("tcp_shutdown", Group::Net),
    ("tcp_socket", Group::Net),
    ("tcp_split", Group::Net),
    ("tcp_stream", Group::Net),
    ("udp", Group::Net),
    ("net_lookup_host", Group::Net),
    ("net_bind_resource", Group::Net),
    ("net_panic", Group::Net),
    ("net_quickack", Group::Net),
];

/// Files of those modules that are left out, and why. Kept short: a file
/// that merely fails is a gap and stays in `SELECTED`.
pub(super) const NOT_APPLICABLE: &[(&str, &str)] = &[
    (
        "rt_threaded",
        "tests the multi-thread scheduler itself (work stealing, LIFO slot, \
         `block_in_place` handing a worker's core to another OS thread, worker \
         start/stop callbacks, tuning); a simulation is one thread by design",
    ),
    (
        "rt_blocking_thread_exhaust",
        "tests what happens when the OS refuses to start worker threads \
         (`setrlimit(RLIMIT_NPROC)`); the simulation starts none",
    ),
];

/// Families of `tokio/tests/` outside this selection, for the report.
pub(super) const NOT_SELECTED: &str = "\
`uds_*`, `unix_*`, `net_unix_pipe`, `net_named_pipe` (Unix-domain sockets \
and pipes are not simulated); `io_driver*`, `io_async_fd`, `io_poll_aio`, \
`io_uring` (Tokio's I/O driver over real file descriptors); `fs*` (the \
simulated disk: later issues); `process_*` (later issues); `signal_*` \
(signals are delivered by the simulation per node, not by the OS: these \
tests raise real OS signals); `io_*` (real Tokio's `io`, re-exported \
unchanged); `async_send_sync` (a compile-time check that needs `net`, `fs` \
and `process`); and the files that compile to nothing without \
`--cfg tokio_unstable` or off Linux/x86 (`task_hooks`, `task_trace_*`, \
`time_alt`, `rt_unstable_*`, `rt_poll_callbacks`, `dump`, `tracing_*`, \
`*_emscripten*`, `time_wasm`, `fs_uring*`). Inside the selected files, tests \
behind `cfg(tokio_unstable)` are not compiled and not counted.";

/// Development dependencies the test files use.
pub(super) const DEV_DEPENDENCIES: &str = r#"futures = { version = "0.3", features = ["async-await"] }
tokio-test = "0.4"
tokio-stream = "0.1"
rand = "0.9"
tempfile = "3"
libc = "0.2"
pin-project-lite = "0.2"
"#;

/// Every file named above, selected or not applicable.
pub(super) fn all_named_files() -> impl Iterator<Item = &'static str> {
    SELECTED
        .iter()
        .map(|(f, _)| *f)
        .chain(NOT_APPLICABLE.iter().map(|(f, _)| *f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_selected_file_is_named_once() {
        let mut seen = BTreeSet::new();
        for f in all_named_files() {
            assert!(seen.insert(f), "{f} listed twice");
        }
    }
}
