//! `cargo xtask test` and `cargo xtask ci`: the whole suite, in both build
//! modes, each with its own target directory so neither rebuilds the other.

use crate::cmd::{build_cargo_sim, cargo_sim, root, run, Mode};

/// The crates whose tests also run with the whole dependency graph on the
/// simulator (`cargo sim test`): `jobs` names plain `tokio` and uses tower,
/// tokio-util and tokio-stream unmodified; `notes` serves axum with
/// `axum::serve` and calls it through hyper-util's `TokioExecutor` and
/// `TokioTimer` and reqwest (tests/graph.rs); `counter` serves with tonic's
/// `transport::Server` and connects with `Endpoint::connect`
/// (tests/graph.rs); `chat`'s breakage tests check that what fails without
/// the whole graph works with it; `echo` reaches the simulation through the
/// `sim-runtime` rename, which keeps working there; `shop` is a service on
/// all of them at once (tonic, axum, reqwest, tokio-tungstenite, tower,
/// tokio-util, tokio-stream, `tokio::fs`), through crashes and partitions;
/// `fs-compat` builds fs-err's `tokio` module and axum-server's rustls TLS,
/// which name std's `Metadata` and `FileType` through `tokio::fs`; `tls`
/// runs reqwest's default TLS and tonic's with the platform's roots, under
/// a partition and a crash, on ring (same bytes per seed) and aws-lc-rs;
/// `threads` runs rayon, `std::thread::scope`, crossbeam-channel,
/// tracing-appender's writer and futures' `block_on` with every OS thread
/// a simulated thread (what is not simulated yet waits behind its
/// `pending` feature); `sim-s3` serves object_store's unmodified S3 client
/// from a node whose objects live on its simulated disk, through crashes
/// and every failure mode; `s3-log` keeps a log in it with a manifest
/// fenced by conditional PUT, its planted doubled commit found and shrunk
/// (tests/found.rs) and its fix through 1,000 seeds of drawn S3 faults;
/// `s3-sdk` runs aws-sdk-s3 against it, streaming uploads included;
/// `tickets` keeps its invariants in antithesis_sdk's macros, unmodified,
/// which the harness counts as its own sites (coverage, a planted bug found
/// by the SDK's `assert_always!`).
const GRAPH_PACKAGES: &[&str] = &[
    "jobs",
    "notes",
    "counter",
    "chat",
    "echo",
    "shop",
    "fs-compat",
    "tls",
    "threads",
    "sim-s3",
    "s3-log",
    "s3-sdk",
    "tickets",
];

/// `cargo sim test` on `GRAPH_PACKAGES`, with cargo-sim built from this
/// checkout, and a check that the workspace's Cargo.lock is byte for byte
/// what it was (production is untouched by a simulated run).
pub fn graph() -> Result<(), String> {
    build_cargo_sim()?;
    let lock = root().join("Cargo.lock");
    let before = std::fs::read(&lock).map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let mut args = vec!["test"];
    for p in GRAPH_PACKAGES {
        args.extend(["-p", p]);
    }
    eprintln!("\n==> [whole graph] tests: cargo sim {}", args.join(" "));
    let status = cargo_sim(&args)
        .status()
        .map_err(|e| format!("cannot run cargo-sim: {e}"))?;
    let after = std::fs::read(&lock).map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    if after != before {
        return Err(
            "`cargo sim test` changed Cargo.lock: a simulated run must leave it \
                    byte for byte as it was (cargo-sim/src/lock.rs)"
                .into(),
        );
    }
    if !status.success() {
        return Err(format!("[whole graph] tests failed ({status})"));
    }
    Ok(())
}

/// Tests in both modes. In simulation the proc-macro crate's own tests are
/// skipped: they test token expansion, which no cfg changes.
pub fn test() -> Result<(), String> {
    run(Mode::Production, "tests", &["test", "--workspace"])?;
    run(
        Mode::Simulation,
        "tests",
        &[
            "test",
            "--workspace",
            "--exclude",
            "sim-runtime-macros",
            "--exclude",
            "xtask",
            "--exclude",
            "cargo-sim",
        ],
    )?;
    graph()
}

/// Formatting, lints (both modes), tidy, the Tokio API parity file (`cargo
/// xtask parity --check`, about 15 s: regenerated from Tokio's rustdoc and
/// compared with the committed one), the tests, the canary catalog
/// (its report to target/canaries/report.md), a bounded fuzzing run
/// (`cargo xtask fuzz --ci`), then Tokio's own tests
/// under simulation with a pass-rate floor (`cargo xtask compat`; the report
/// goes to target/compat/report.md, leaving docs/compat.md alone).
pub fn ci() -> Result<(), String> {
    // CI builds each tree once, from a fresh clone: incremental state would
    // only cost disk (about 9 of the 20 GB the trees take), and a full disk
    // fails the run (session 17's submission died linking for that).
    // Every cargo below, cargo-sim's included, inherits this. Nothing else
    // runs yet, so changing the environment here races with no thread.
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        std::env::set_var("CARGO_INCREMENTAL", "0");
    }
    run(Mode::Production, "format", &["fmt", "--all", "--check"])?;
    crate::tidy::tidy()?;
    eprintln!("\n==> [production] Tokio API parity: cargo xtask parity --check");
    crate::parity::main(&["--check".into()])
        .map_err(|(crate::Error::Usage(e) | crate::Error::Failed(e))| e)?;
    const CLIPPY: &[&str] = &[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ];
    for mode in [Mode::Production, Mode::Simulation] {
        run(mode, "clippy", CLIPPY)?;
    }
    test()?;
    // The kv demo's failing seed as a timeline page, loaded in headless
    // Chromium (about 4 s once built; a step of its own, since it needs a
    // browser: without one it fails saying how to install it, and
    // SIM_SKIP_BROWSER=1 skips it). The screenshot stays in target/timeline/.
    run(
        Mode::Simulation,
        "timeline page in headless Chromium",
        &["test", "-p", "kv", "--test", "timeline"],
    )?;
    // The canary catalog, whole (about 15 s): every bug found within its
    // bound by the portfolio, every first failure replayed in a new process.
    crate::canaries::main(&["--out".into(), "target/canaries/report.md".into()])
        .map_err(|(crate::Error::Usage(e) | crate::Error::Failed(e))| e)?;
    // The fuzzer (about 2 min to build the instrumented target, a second
    // to run): libFuzzer, steering the run's decisions, finds a canary the
    // uniform schedules miss, and its input replays under cargo test.
    crate::fuzz::main(&["--ci".into()])
        .map_err(|(crate::Error::Usage(e) | crate::Error::Failed(e))| e)?;
    crate::compat::main(&[
        "--min-pass-rate".into(),
        "0.87".into(),
        "--out".into(),
        "target/compat/report.md".into(),
    ])
    .map_err(|(crate::Error::Usage(e) | crate::Error::Failed(e))| e)
}
