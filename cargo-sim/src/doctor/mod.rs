//! `cargo sim doctor`: what in a workspace, its tests and its dependency
//! graph still reaches outside the seed.
//!
//! Inside a simulation the libc interposers serve a great deal: `std::fs`
//! and every libc file call (SQLite's C included) on the node's simulated
//! disk; std and socket2 sockets made and bound as stubs that Tokio's
//! `from_std` turns into simulated ones (hyper-util's `HttpConnector`,
//! under reqwest and tonic, works this way); `getaddrinfo` from the
//! simulated network; clocks and randomness from the seed; and OS threads:
//! `pthread_create` (std::thread, rayon, C and C++ code) makes a simulated
//! thread of the node, whose waits (locks, sleeps, yields, joins) are
//! hand-off points. Doctor does not list any of that. What is still
//! outside, each a *blocker* (`known::Family`):
//!
//! - a thread made without `pthread_create` (`clone`, `clone3`): it runs
//!   outside the simulation;
//! - starting a process (`std::process::Command`, `fork`, `posix_spawn`);
//! - blocking I/O on a std or socket2 socket (`connect`, `accept`, `send`,
//!   `recv`: refused, the run fails), and std's Unix-domain sockets;
//! - system calls made without libc (the `syscall` instruction, e.g.
//!   rustix's linux_raw backend; cargo sim turns on rustix 1.x's
//!   `use-libc`, so only older rustix shows here);
//! - the CPU's timestamp counter (`rdtsc`) and random numbers (`rdrand`);
//! - inotify, a descriptor only the real kernel serves.
//!
//! Spin loops are judged only where a crate is known to wait by spinning
//! alone (`known::SPINNERS`: spin's and spinning_top's locks and onces),
//! and only in the code of the executables, where the debug information
//! says whose source a `pause` came from: a note, not a blocker, since such
//! a wait hangs a run only when the holder is parked at a hand-off. Any
//! other spin loop (an atomic polled without `yield_now`, a spinner inlined
//! into a library's own non-generic code) looks like the brief spins of
//! std's locks, parking_lot and crossbeam, which park or yield afterwards;
//! it is caught at run time by the watchdog (`SIM_HANG_TIMEOUT`).
//!
//! The tests are built as `cargo sim test --no-run` builds them, and two
//! kinds of code are read:
//!
//! 1. **The code in the executables** (own.rs): the workspace's own (its
//!    libraries, test targets, their helpers and examples), and the
//!    dependencies' generic or inline functions instantiated by their
//!    callers (rustix's `syscall` wrappers), which no library holds; read
//!    with `nm`, `objdump -d` of those functions only and `objdump -R`. A
//!    blocker in the workspace's code is named by file and line from the
//!    debug information (`addr2line`).
//! 2. **The libraries outside it**: each library's relocations (`objdump
//!    -r`, one section per function) say which of its functions call a
//!    watched function; where its source hints at inline assembly or the
//!    CPU's counters, its instructions are read too (`objdump -d`). Such a
//!    function counts when it is linked into an executable judged here
//!    (`nm`). A few crates are known cases (`known::KNOWN`): their entry
//!    words the finding, counts what the code cannot show (quanta's TSC
//!    mode, AWS-LC's RDRAND in C), or makes what a crate does only on
//!    request a note (trybuild and assert_cmd run processes, their job in
//!    a plain `#[test]`).
//!
//! Attributing calls to the calling crate is what keeps the expected ones
//! out: the real Tokio under the simulation and the simulator make system
//! calls of their own, and those are the simulator's (`OURS`), not the
//! service's; what only the simulator depends on is not judged either.
//!
//! What it cannot see, or cannot tell apart: native (C, C++) code's own
//! instructions (its calls are read); a vDSO clock looked up by hand; a
//! call made only through a function pointer computed at run time; the
//! workspace's code that an optimized test profile inlines into a function
//! not judged here (a test's closure into the simulator's `block_on`); and
//! whether a test runs simulated at all: a process started in a plain
//! `#[test]` that builds no runtime is fine under `cargo sim test`, but
//! doctor lists it like any other (narrow what it builds with `--test`,
//! `--lib` and the like).
//!
//! Exit codes: 0 when there are only notes, 1 when there is a blocker, 2 on
//! bad usage, 3 when nothing blocks but something could not be built or
//! read (a stripped executable, a library of LLVM bitcode only): doctor
//! never calls a graph clean that it could not read.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo sim doctor [--manifest-path <Cargo.toml>] [-p <package>]...
                        [cargo test's target and feature selection]

Builds the tests as `cargo sim test --no-run` does and names what still
reaches outside the seed, in the workspace's own code (file and line) and in
its dependencies: threads made without pthread_create (raw clone),
processes, blocking I/O on std sockets, raw system calls, the CPU's
timestamp counter and random numbers, inotify. OS threads, files, socket
creation and name lookups are simulated and not listed. Each blocker says
what to do. Waits of crates known to spin alone (spin, spinning_top) are
notes; any other spin loop is caught at run time by the watchdog
(SIM_HANG_TIMEOUT).
Target and feature selection, as cargo test takes them: --lib, --bins,
--bin N, --tests, --test N, --examples, --example N, --benches, --bench N,
--all-targets, --workspace, --exclude P, --features F, --all-features,
--no-default-features.
Exits 0 when nothing blocks (notes only), 1 when something does, 2 on bad
usage, 3 when something could not be built or read.
Needs GNU binutils' nm, objdump and addr2line; NM, OBJDUMP and ADDR2LINE
name others.
";

/// cargo test's flags that select targets and features, passed through:
/// those that take no value, and those that take one.
const PASS_FLAGS: &[&str] = &[
    "--lib",
    "--bins",
    "--tests",
    "--examples",
    "--benches",
    "--all-targets",
    "--workspace",
    "--all-features",
    "--no-default-features",
];
const PASS_VALUES: &[&str] = &[
    "--bin",
    "--test",
    "--example",
    "--bench",
    "--exclude",
    "--features",
    "-F",
];

/// The simulator's own packages: what they do is the simulation, and what
/// only they depend on (mio, socket2 under the real Tokio) is theirs.
const OURS: &[&str] = &[
    "tokio",
    "tokio-macros",
    "sim-runtime",
    "sim-runtime-macros",
    "sim-harness",
    "sim-harness-macros",
    "sim-net",
    "sim-fs",
];

mod judge;
mod known;
mod names;
mod objects;
mod own;

use judge::{judge, judge_own, judge_spins, Examined, Placed, Report, EXIT_UNREAD};
use known::hints_instructions;
use names::owners;
use objects::{parse_artifacts, read_code, read_instructions, Code, Symbols, Tools};
use own::{read_image, Owner, Sym};

/// What the command line asked for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    manifest: Option<PathBuf>,
    packages: Vec<String>,
    /// Target and feature selection, for cargo as given.
    cargo: Vec<String>,
}

/// `Ok(None)` asks for the help text; `Err` is bad usage.
fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--manifest-path" => o.manifest = Some(PathBuf::from(value(a)?)),
            "-p" | "--package" => o.packages.push(value(a)?),
            f if PASS_FLAGS.contains(&f) => o.cargo.push(a.clone()),
            f if PASS_VALUES.contains(&f) => {
                let v = value(a)?;
                o.cargo.extend([a.clone(), v]);
            }
            _ => {
                if let Some(v) = a.strip_prefix("--manifest-path=") {
                    o.manifest = Some(PathBuf::from(v));
                } else if let Some(v) = a.strip_prefix("--package=") {
                    o.packages.push(v.to_string());
                } else if let Some(v) = a.strip_prefix("-p").filter(|v| !v.is_empty()) {
                    o.packages.push(v.to_string());
                } else if PASS_VALUES.iter().any(|f| a.starts_with(&format!("{f}="))) {
                    o.cargo.push(a.clone());
                } else {
                    return Err(format!(
                        "unexpected argument `{a}` (doctor takes --manifest-path, -p and cargo \
                         test's target and feature selection; see --help)"
                    ));
                }
            }
        }
    }
    Ok(Some(o))
}

pub fn main(args: &[String]) -> ExitCode {
    let options = match parse_args(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("cargo sim doctor: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match examine(&options) {
        Ok(report) => {
            print!("{}", report.render());
            ExitCode::from(report.exit_code())
        }
        Err(e) => {
            eprintln!("cargo sim doctor: {e}");
            ExitCode::from(EXIT_UNREAD)
        }
    }
}

fn examine(options: &Options) -> Result<Report, String> {
    let tools = Tools::find()?;
    let mut args: Vec<String> = vec![
        "test".into(),
        "--no-run".into(),
        "--message-format=json-render-diagnostics".into(),
    ];
    if let Some(m) = &options.manifest {
        args.push("--manifest-path".into());
        args.push(m.display().to_string());
    }
    for p in &options.packages {
        args.push("-p".into());
        args.push(p.clone());
    }
    args.extend(options.cargo.iter().cloned());
    let built = crate::run_patched(&args, true)?;
    if !built.status.success() {
        return Err(format!(
            "the tests did not build ({}); cargo's errors are above. Fix the build \
             (`cargo sim test --no-run` builds the same) and run doctor again",
            built.status
        ));
    }
    let graph = built
        .graph
        .ok_or("the patched graph was not read (cargo-sim bug)")?;
    let artifacts = parse_artifacts(&built.stdout);
    if artifacts.executables.is_empty() {
        return Err(
            "cargo built no test or example here, so there is nothing to judge; add a test (or \
             pick a package that has some with -p)"
                .into(),
        );
    }
    // The workspace's crate names: the first segment of its functions'
    // paths in an executable (the simulator's, when it is a member, are
    // not judged: this project's own workspace).
    let crates: BTreeSet<String> = artifacts
        .crates
        .iter()
        .filter(|(id, _)| {
            graph.is_member(id) && !graph.name_of(id).is_some_and(|n| OURS.contains(&n))
        })
        .map(|(_, name)| name.clone())
        .collect();
    let mut unknown = Vec::new();
    let mut images: Vec<(String, String, &PathBuf, Vec<Sym>)> = Vec::new();
    for t in &artifacts.executables {
        let package = graph.name_of(&t.package_id).unwrap_or("?").to_string();
        let label = format!("{package} {} `{}`", t.kind, t.target);
        match read_image(&tools.nm, &t.path) {
            Ok(symbols) => images.push((label, package, &t.path, symbols)),
            Err(e) => unknown.push(format!("{label} ({}): {e}", t.path.display())),
        }
    }
    let binaries: Vec<Symbols> = images
        .iter()
        .map(|(label, _, _, symbols)| Symbols::new(label.clone(), symbols))
        .collect();
    let roots: BTreeSet<&str> = artifacts
        .executables
        .iter()
        .map(|t| t.package_id.as_str())
        .collect();
    let mut examined = Vec::new();
    for package in graph.reached_outside(&roots, |n| OURS.contains(&n)) {
        // Only what was compiled for these tests can run in them.
        let Some(libs) = artifacts.libs.get(&package.id) else {
            continue;
        };
        let Some((_, crate_name)) = artifacts.crates.iter().find(|(id, _)| *id == package.id)
        else {
            continue;
        };
        let (hinted, source_error) = match hints_instructions(&package.dir) {
            Ok(h) => (h, None),
            Err(e) => (false, Some(e)),
        };
        let code = read_libraries(&tools, libs, hinted);
        examined.push(Examined {
            crate_name: crate_name.clone(),
            package,
            code,
            source_error,
        });
    }
    // What the executables hold that no library read does: the
    // workspace's functions, and the dependencies' generic or inline
    // functions instantiated there.
    let dependencies: BTreeSet<&str> = examined.iter().map(|e| e.crate_name.as_str()).collect();
    let in_libraries: HashSet<&str> = examined
        .iter()
        .filter_map(|e| e.code.as_ref().ok())
        .flat_map(|c| c.functions.iter().map(String::as_str))
        .collect();
    let judged = |s: &Sym| -> Option<Owner> {
        let owners = owners(&s.demangled);
        if owners.iter().any(|o| crates.contains(o)) {
            return Some(Owner::Workspace);
        }
        if in_libraries.contains(s.raw.as_str()) {
            return None;
        }
        owners
            .into_iter()
            .find(|o| dependencies.contains(o.as_str()))
            .map(Owner::Dependency)
    };
    // A test target may share the simulator's crate name (a `tests/sim.rs`
    // beside sim-harness's `sim`): its functions' source says whose they
    // are.
    let ours = graph.dirs_named(|n| OURS.contains(&n));
    let simulator = |s: &own::Site| {
        let file = s.line.as_ref().map(|(f, _)| f);
        s.owner == Owner::Workspace && file.is_some_and(|f| ours.iter().any(|d| f.starts_with(d)))
    };
    let mut placed = Vec::new();
    for (label, package, path, symbols) in &images {
        match own::sites(&tools, path, symbols, &judged, graph.root()) {
            Ok(mut sites) => placed.push(Placed {
                sites: {
                    sites.retain(|s| !simulator(s));
                    sites
                },
                label: label.clone(),
                package: package.clone(),
            }),
            Err(e) => unknown.push(format!(
                "{label} ({}): its own code could not be read: {e}",
                path.display()
            )),
        }
    }
    let packages: Vec<&crate::graph::Package> = examined.iter().map(|e| &e.package).collect();
    let spins = judge_spins(&mut placed, &packages, graph.root());
    let mut report = judge(&examined, &binaries, &placed);
    let (own_findings, own_notes) = judge_own(&placed, graph.root());
    report.findings.splice(0..0, own_findings);
    report.notes.splice(0..0, own_notes);
    report.notes.extend(spins);
    report.unknown.splice(0..0, unknown);
    report.executables = artifacts.executables.len();
    Ok(report)
}

/// A package's libraries (one per platform it was built for) read as one:
/// their relocations, and their instructions when `hinted`.
fn read_libraries(tools: &Tools, libs: &[PathBuf], hinted: bool) -> Result<Code, String> {
    let mut all = Code::default();
    for lib in libs {
        let c = read_code(&tools.objdump, lib).map_err(|e| format!("{}: {e}", lib.display()))?;
        all.calls.extend(c.calls);
        all.functions.extend(c.functions);
        if hinted {
            let calls = read_instructions(&tools.objdump, lib)
                .map_err(|e| format!("{}: {e}", lib.display()))?;
            all.calls.extend(calls);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_are_the_manifest_packages_and_target_selection() {
        let o = parse_args(&strings(&[
            "--manifest-path",
            "a/Cargo.toml",
            "-p",
            "x",
            "--package=y",
            "-pz",
            "--all-targets",
            "--test",
            "t",
            "--features=a,b",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.manifest, Some(PathBuf::from("a/Cargo.toml")));
        assert_eq!(o.packages, ["x", "y", "z"]);
        assert_eq!(o.cargo, ["--all-targets", "--test", "t", "--features=a,b"]);
        assert_eq!(parse_args(&strings(&["--help"])), Ok(None));
        assert!(parse_args(&strings(&["--release"]))
            .unwrap_err()
            .contains("--release"));
        assert!(parse_args(&strings(&["-p"])).unwrap_err().contains("value"));
        assert!(parse_args(&strings(&["--bench"]))
            .unwrap_err()
            .contains("value"));
    }
}
