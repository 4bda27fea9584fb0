//! The workspace's task runner: `cargo xtask <command>` (an alias in
//! `.cargo/config.toml`). Its one dependency, `syn`, reads the runtime's
//! imports for tidy's layer rule.

mod bench;
mod canaries;
mod ci;
mod cmd;
mod compat;
mod demo;
mod failure_modes;
mod fuzz;
mod harness_report;
mod json;
mod merge;
mod parity;
mod proc;
mod recipes;
mod rocksdb;
mod sweep;
mod tidy;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci        the whole suite (README's test command): fmt, tidy, clippy,
            tests in both build modes, the demo's timeline page in headless
            Chromium (SIM_SKIP_BROWSER=1 skips it)
  test      tests in both build modes (production, then --cfg simulation)
  demo      a simulated service finds its planted bug; the seed replays
  tidy      check the simulator's code against the determinism rules and
            ARCHITECTURE.md's structure (one cfg switch per crate, unsafe
            documented, the runtime's layers: core/ imports nothing outside
            it, no file imports a higher layer), and that every
            failure-mode table row is claimed by a test
  failure-modes
            list every failure-mode row and the tests that claim it
  bench     executor benchmarks, simulation vs real Tokio; writes docs/bench.md
  canaries  sweep the canary catalog (examples/canaries) with every strategy,
            check bounds and replays, write docs/canaries.md
  fuzz      drive a canary with libFuzzer, the fuzzer's bytes as the run's
            decisions; replay what it finds with cargo test
            (cargo xtask fuzz --help; --measure writes docs/canaries.md's
            fuzzer section)
  compat    run Tokio's own integration tests against sim-runtime under
            --cfg simulation and write docs/compat.md
            (cargo xtask compat --help for its options)
  parity    read Tokio's public API from its rustdoc and write
            sim-runtime/tests/parity/tokio_api.rs (--check: fail if it is stale)
  merge-results <dir>...
            merge the SIM_RESULTS=<dir> files of a sharded sweep (SIM_SHARD=k/n
            on many machines) into one report; fails on a failing seed or a
            missing or overlapping shard
  rocksdb   RocksDB (C++ threads, pthread mutexes) on a simulated disk:
            build and run examples/rocks, with the build's and the runs'
            times (opt-in, not in ci: a long C++ build that needs clang;
            cargo xtask rocksdb --help)
  sweep     every example's passing #[sim::test] over many seeds (default
            100000) with the determinism check, all cores; writes
            docs/sweep.md (opt-in, long; cargo xtask sweep --help)
";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest: Vec<String> = args.collect();
    let result = match command.as_str() {
        "compat" => compat::main(&rest),
        "canaries" => canaries::main(&rest),
        "fuzz" => fuzz::main(&rest),
        "sweep" => sweep::main(&rest),
        "rocksdb" => rocksdb::main(&rest),
        "merge-results" => merge::main(&rest),
        "parity" => parity::main(&rest),
        "ci" => ci::ci().map_err(Error::Failed),
        "test" => ci::test().map_err(Error::Failed),
        "demo" => demo::demo().map_err(Error::Failed),
        "tidy" => tidy::tidy().map_err(Error::Failed),
        "failure-modes" => failure_modes::run(true).map_err(Error::Failed),
        "bench" => bench::bench(&rest).map_err(Error::Failed),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(Error::Usage(format!("unknown command `{other}`"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Usage(msg)) => {
            eprintln!("xtask: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Error::Failed(msg)) => {
            eprintln!("xtask: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Why a command did not succeed.
#[derive(Debug)]
pub enum Error {
    /// The command line was wrong (exit code 2).
    Usage(String),
    /// The command ran and failed (exit code 1).
    Failed(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Failed(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;
