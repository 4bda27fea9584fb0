//! The examples' `#[sim::test]`s that a sweep runs, and the files it
//! leaves out (with why).

/// One `#[sim::test]` of an example.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Test {
    /// The Cargo package (not always the directory's name).
    pub(super) package: &'static str,
    /// The test target: the file's stem under `tests/`.
    pub(super) target: &'static str,
    /// The test function, as libtest names it.
    pub(super) name: &'static str,
    /// Run with the whole dependency graph simulated (`cargo sim test`: the
    /// file is `#![cfg(sim_graph)]`), not with `--cfg simulation` alone.
    pub(super) graph: bool,
}

const fn test(package: &'static str, target: &'static str, name: &'static str) -> Test {
    Test {
        package,
        target,
        name,
        graph: false,
    }
}

const fn graph_test(package: &'static str, target: &'static str, name: &'static str) -> Test {
    Test {
        package,
        target,
        name,
        graph: true,
    }
}

/// Every example's `#[sim::test]` that should pass, in the order swept
/// (cheapest first, so a short run gives early figures). The unit test
/// in mod.rs fails if a `#[sim::test]` in `examples/*/tests/*.rs` is missing
/// here or one here no longer exists.
pub(super) const TESTS: &[Test] = &[
    test("echo", "sim", "echoes_and_comes_back_after_a_crash"),
    test("pipeline", "sim", "every_job_is_recorded_exactly_once"),
    test("kv", "sim", "acked_writes_survive_failover"),
    test(
        "counter",
        "sim",
        "every_acknowledged_add_counts_exactly_once",
    ),
    test(
        "notes",
        "sim",
        "acknowledged_notes_survive_partitions_and_api_crashes",
    ),
    test(
        "chat",
        "sim",
        "the_room_keeps_its_promises_through_faults_and_shutdown",
    ),
    graph_test("jobs", "sim", "every_crate_runs_on_the_simulated_clock"),
    graph_test(
        "notes",
        "graph",
        "axum_serve_and_hyper_utils_runtime_run_simulated",
    ),
    graph_test("notes", "graph", "reqwest_calls_axum_by_node_name"),
    graph_test("notes", "graph", "tungstenite_connect_async_reaches_a_node"),
    graph_test(
        "counter",
        "graph",
        "tonic_transport_server_and_endpoint_connect_run_simulated",
    ),
    graph_test("shop", "sim", "the_feed_and_the_holds_recover_from_crashes"),
    graph_test(
        "shop",
        "sim",
        "every_answer_is_final_and_stock_is_never_oversold",
    ),
    graph_test(
        "fs-compat",
        "sim",
        "the_manifest_crosses_tls_and_follows_the_disk_through_a_crash",
    ),
    graph_test("fs-compat", "sim", "a_missing_key_on_the_node_is_named"),
    graph_test(
        "tls",
        "ring",
        "reqwest_with_platform_roots_through_a_partition_and_a_crash",
    ),
    graph_test(
        "tls",
        "ring",
        "tonic_tls_channel_through_a_partition_and_a_crash",
    ),
    graph_test("tls", "ring", "bytes_of_one_seed"),
    graph_test(
        "tls",
        "aws_lc",
        "reqwest_default_tls_through_a_partition_and_a_crash",
    ),
    graph_test(
        "tls",
        "aws_lc",
        "tonic_tls_channel_through_a_partition_and_a_crash",
    ),
    graph_test("tls", "aws_lc", "bytes_of_one_seed"),
    graph_test("threads", "sim", "thread_scope_in_a_task"),
    graph_test(
        "threads",
        "sim",
        "crossbeam_channel_from_a_thread_to_a_polling_task",
    ),
    graph_test(
        "threads",
        "sim",
        "crossbeam_channel_from_a_thread_to_spawn_blocking",
    ),
    graph_test("threads", "sim", "crossbeam_channel_from_tasks_to_a_thread"),
    graph_test(
        "threads",
        "sim",
        "futures_block_on_in_a_thread_waits_for_a_task",
    ),
    graph_test("threads", "sim", "rayon_par_iter_in_a_handler"),
    graph_test(
        "threads",
        "sim",
        "tracing_appender_non_blocking_writes_every_line",
    ),
    graph_test("threads", "sim", "rayon_pool_reruns_identically"),
    graph_test("threads", "sim", "a_thread_joined_after_another_was_joined"),
    graph_test("threads", "sim", "local_pool_handle_spawn_pinned"),
    graph_test("threads", "sim", "rayon_global_pool_in_a_handler"),
    graph_test(
        "threads",
        "sim",
        "rayon_global_pool_is_each_nodes_own_across_a_crash",
    ),
    graph_test(
        "threads",
        "sim",
        "tracing_appender_is_deterministic_beside_other_seeds",
    ),
    test("stores", "lsm", "durable_commits_survive_a_crash"),
    test(
        "stores",
        "lsm",
        "unflushed_writes_are_lost_on_a_crash_a_kill_and_a_close",
    ),
    test("stores", "lsm", "fsync_eio_reaches_lsm_tree"),
    test("stores", "lsm", "enospc_reaches_lsm_tree"),
    test("stores", "redb", "durable_commits_survive_a_crash"),
    test(
        "stores",
        "redb",
        "volatile_commits_are_lost_on_a_crash_and_a_kill_kept_on_close",
    ),
    test("stores", "redb", "durable_commits_survive_a_kill"),
    test("stores", "redb", "fsync_eio_reaches_redb"),
    test("stores", "redb", "enospc_reaches_redb"),
    test("stores", "redb", "torn_crash_recovers_the_durable_commit"),
    test("stores", "sqlite", "durable_commits_survive_a_crash"),
    test("stores", "sqlite", "wal_durable_commits_survive_a_crash"),
    test(
        "stores",
        "sqlite",
        "unsynced_commits_are_lost_on_a_crash_kept_on_a_kill",
    ),
    test(
        "stores",
        "sqlite",
        "wal_unsynced_commits_are_lost_on_a_crash_kept_on_a_kill",
    ),
    test("stores", "sqlite", "fsync_eio_reaches_sqlite"),
    test("stores", "sqlite", "enospc_reaches_sqlite"),
    test(
        "stores",
        "sqlite",
        "wal_torn_crash_recovers_a_prefix_of_the_commits",
    ),
    test(
        "stores",
        "sqlite",
        "full_in_delete_mode_rolls_a_commit_back_after_a_crash",
    ),
    test("users", "modes", "a_partial_failure_is_retried"),
    test(
        "users",
        "modes",
        "a_stale_read_is_a_conflict_the_rename_rebases",
    ),
    test("users", "modes", "a_silently_dropped_signup_is_saved_again"),
    test("users", "modes", "a_hang_times_out_and_the_heal_ends_it"),
    test("users", "modes", "a_skewed_clock_is_noticed"),
    test(
        "users",
        "modes",
        "drawn_faults_never_lose_an_acknowledged_write",
    ),
    graph_test("s3-log", "sim", "the_log_runs_the_same_for_a_seed"),
    graph_test(
        "s3-log",
        "sim",
        "every_acknowledged_record_is_in_the_log_once",
    ),
    graph_test("s3-sdk", "sim", "objects"),
    graph_test("s3-sdk", "sim", "listings"),
    graph_test("s3-sdk", "sim", "conditional_writes"),
    graph_test("s3-sdk", "sim", "multipart_and_copy"),
    graph_test("s3-sdk", "sim", "throttled"),
    graph_test("s3-sdk", "sim", "streaming_upload"),
    graph_test("tickets", "sim", "no_number_is_given_twice"),
];

/// Files whose `#[sim::test]`s fail by design (each is a planted bug being
/// found; `test = false` in their Cargo.toml), so they are not swept.
pub(super) const FAIL_BY_DESIGN: &[&str] = &[
    // The canary catalog's sweep, run by `cargo xtask canaries`.
    "examples/canaries/tests/sweep.rs",
    // The main demo's planted bug, run by `cargo xtask demo`.
    "examples/kv/tests/demo.rs",
    // The S3 log's planted doubled commit, run by its tests/found.rs.
    "examples/s3-log/tests/sweep.rs",
    // The ticket server's planted unsynced numbers, run by its tests/found.rs.
    "examples/tickets/tests/sweep.rs",
];

/// Files whose `#[sim::test]`s are not swept: they pass, but one sweep
/// of them would cost more than all the others together.
pub(super) const NOT_SWEPT: &[&str] = &[
    // fjall's crash and kill tests pass (issue 35), but at about 0.6 s a
    // seed in a debug build they would dominate a sweep; CI runs 8 seeds
    // of each, `SIM_SEEDS` more.
    "examples/stores/tests/fjall.rs",
];

/// Files whose `#[sim::test]`s belong to a crate outside the workspace,
/// run by a command of their own, so they are not swept.
pub(super) const OPT_IN: &[&str] = &[
    // RocksDB's C++ build: `cargo xtask rocksdb`.
    "examples/rocks/tests/sim.rs",
];
