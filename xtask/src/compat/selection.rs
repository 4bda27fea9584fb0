//! Which of Tokio's test files run, which are left out and why.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Group {
    Task,
    Time,
    Macros,
    Runtime,
    Sync,
    Net,
    Io,
    Signal,
    Fs,
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
            Group::Io => "io",
            Group::Signal => "signal",
            Group::Fs => "fs",
        }
    }
}

/// A set of modules whose pass rate the report gives apart, next to the
/// overall one.
pub(super) struct Scope {
    pub(super) groups: &'static [Group],
    /// What the modules are, for the report: "The modules of ...".
    pub(super) about: &'static str,
    /// Whether the report names each file (the short scope) or only the
    /// modules (the wide one).
    pub(super) list_files: bool,
    /// A cause whose failures are tests outside the scope's selection
    /// (reported apart, with the rate without them).
    pub(super) unselected_cause: Option<&'static str>,
}

/// The modules of the issue that brought the simulated runtime.
pub(super) const RUNTIME_ISSUE_SCOPE: Scope = Scope {
    groups: &[Group::Task, Group::Time, Group::Macros],
    about: "The modules of the issue that brought the simulated runtime",
    list_files: true,
    unselected_cause: None,
};

/// The modules issue 7 names (Tokio's own tests, unmodified, in
/// simulation): every group but `runtime`, whose files test Tokio's
/// schedulers themselves (threads, blocking pools, metrics).
pub(super) const ISSUE_7_SCOPE: Scope = Scope {
    groups: &[
        Group::Task,
        Group::Time,
        Group::Macros,
        Group::Net,
        Group::Io,
        Group::Sync,
        Group::Signal,
        Group::Fs,
    ],
    about: "The modules issue 7 names (Tokio's own tests for what sim-runtime \
            simulates or re-exports): every selected module but `runtime`, whose \
            files test Tokio's schedulers themselves (threads, blocking pools, \
            metrics)",
    list_files: false,
    // Issue 7 selects "the `fs` tests whose checks do not go through
    // `std::fs`"; the files are selected whole, and their tests that still
    // fail because of `std::fs` (since issue 23, only those that hand one
    // open file between std and tokio) fail with cause [std-fs].
    unselected_cause: Some("std-fs"),
};

/// The scopes the report gives apart, in order.
pub(super) const SCOPES: &[&Scope] = &[&RUNTIME_ISSUE_SCOPE, &ISSUE_7_SCOPE];

/// The test files of `tokio/tests/` that exercise what sim-runtime
/// simulates (task, time, macros, runtime, net, signal, fs), the `sync`
/// files (real Tokio's sync, driven by the simulated executor) and the `io`
/// files that run on any executor or over simulated sockets (real Tokio's
/// `io`, re-exported). Of `fs`, the files whose checks go through
/// `tokio::fs`; tests inside them that hand an open file between
/// `std::fs` and `tokio::fs` fail, with their cause in
/// `compat/reasons.txt` (checks through `std::fs` pass since issue 23:
/// std reaches the node's simulated disk).
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
    ("uds_cred", Group::Net),
    ("uds_datagram", Group::Net),
    ("uds_socket", Group::Net),
    ("uds_split", Group::Net),
    ("uds_stream", Group::Net),
    ("unix_shutdown", Group::Net),
    ("buffered", Group::Io),
    ("duplex_stream", Group::Io),
    ("io_async_read", Group::Io),
    ("io_buf_reader", Group::Io),
    ("io_buf_writer", Group::Io),
    ("io_chain", Group::Io),
    ("io_copy", Group::Io),
    ("io_copy_bidirectional", Group::Io),
    ("io_copy_buf", Group::Io),
    ("io_join", Group::Io),
    ("io_lines", Group::Io),
    ("io_mem_stream", Group::Io),
    ("io_panic", Group::Io),
    ("io_read", Group::Io),
    ("io_read_buf", Group::Io),
    ("io_read_exact", Group::Io),
    ("io_read_int", Group::Io),
    ("io_read_line", Group::Io),
    ("io_read_to_end", Group::Io),
    ("io_read_to_string", Group::Io),
    ("io_read_until", Group::Io),
    ("io_repeat", Group::Io),
    ("io_sink", Group::Io),
    ("io_split", Group::Io),
    ("io_take", Group::Io),
    ("io_util_empty", Group::Io),
    ("io_write", Group::Io),
    ("io_write_all", Group::Io),
    ("io_write_all_buf", Group::Io),
    ("io_write_buf", Group::Io),
    ("io_write_int", Group::Io),
    ("io_fill_buf", Group::Io),
    ("signal_ctrl_c", Group::Signal),
    ("signal_drop_recv", Group::Signal),
    ("signal_drop_rt", Group::Signal),
    ("signal_drop_signal", Group::Signal),
    ("signal_multi_rt", Group::Signal),
    ("signal_no_rt", Group::Signal),
    ("signal_notify_both", Group::Signal),
    ("signal_panic", Group::Signal),
    ("signal_realtime", Group::Signal),
    ("signal_twice", Group::Signal),
    ("signal_usr1", Group::Signal),
    ("fs", Group::Fs),
    ("fs_canonicalize_dir", Group::Fs),
    ("fs_copy", Group::Fs),
    ("fs_dir", Group::Fs),
    ("fs_file", Group::Fs),
    ("fs_file_join_error", Group::Fs),
    ("fs_link", Group::Fs),
    ("fs_open_options", Group::Fs),
    ("fs_remove_dir_all", Group::Fs),
    ("fs_remove_file", Group::Fs),
    ("fs_rename", Group::Fs),
    ("fs_try_exists", Group::Fs),
    ("fs_write", Group::Fs),
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
        "io_driver",
        "tests Tokio's I/O driver itself (its reactor over real file \
         descriptors and std sockets); simulated sockets have no file \
         descriptor and no reactor",
    ),
    (
        "io_driver_drop",
        "tests what Tokio's I/O driver does with registered real sockets \
         when the runtime drops; simulated sockets have no file descriptor \
         and no reactor",
    ),
    (
        "io_async_fd",
        "`AsyncFd` registers a real file descriptor (pipes, real sockets) \
         with Tokio's reactor; a simulation has no reactor and no real fds",
    ),
    (
        "rt_blocking_thread_exhaust",
        "tests what happens when the OS refuses to start worker threads \
         (`setrlimit(RLIMIT_NPROC)`); the simulation starts none",
    ),
];

/// Families of `tokio/tests/` outside this selection, for the report.
pub(super) const NOT_SELECTED: &str = "\
`net_unix_pipe`, `net_named_pipe` (pipes are not simulated; Unix-domain \
sockets are, and their files `uds_*` and `unix_shutdown` are selected); \
`process_*` (child processes are not simulated); `async_send_sync` (a \
compile-time check over every type, `process`'s among them); and the files \
that compile to nothing without `--cfg tokio_unstable` or off Linux/x86 \
(`task_hooks`, `task_trace_*`, `time_alt`, `rt_unstable_*`, \
`rt_poll_callbacks`, `dump`, `tracing_*`, `*_emscripten*`, `time_wasm`, \
`fs_uring*`, `io_poll_aio` (FreeBSD), `signal_info` (BSD and macOS), \
`*_windows`). Inside the selected files, \
tests behind `cfg(tokio_unstable)` are not compiled and not counted.";

/// Development dependencies the test files use.
pub(super) const DEV_DEPENDENCIES: &str = r#"futures = { version = "0.3", features = ["async-await"] }
tokio-test = "0.4"
bytes = "1"
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
    fn issue_7_scope_is_every_group_but_runtime() {
        for (_, g) in SELECTED {
            assert_eq!(
                ISSUE_7_SCOPE.groups.contains(g),
                *g != Group::Runtime,
                "{}",
                g.name()
            );
        }
        for g in RUNTIME_ISSUE_SCOPE.groups {
            assert!(ISSUE_7_SCOPE.groups.contains(g), "{}", g.name());
        }
    }

    #[test]
    fn every_selected_file_is_named_once() {
        let mut seen = BTreeSet::new();
        for f in all_named_files() {
            assert!(seen.insert(f), "{f} listed twice");
        }
    }
}
