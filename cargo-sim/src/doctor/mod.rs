//! `cargo sim doctor`: what in a crate's graph still escapes the seed.
//!
//! Inside a simulation the runtime refuses OS threads (`pthread_create`:
//! the run fails as a forbidden operation) and real sockets (`socket(2)`:
//! EACCES), and answers clocks and randomness from the seed. Two things get
//! past it silently: files opened with `std::fs` are the real disk's, and a
//! read of the CPU's timestamp counter (`rdtsc`) is real time. Doctor lists
//! the crates of the graph that do one of these, from three kinds of
//! evidence:
//!
//! 1. **The graph.** `KNOWN` below names crates known to escape, with one
//!    sentence of advice each. It is a list of known cases, not a proof:
//!    a crate that is not in it can still escape, and one that is in it
//!    may be used in a way that does not.
//! 2. **The built tests.** The tests are built as `cargo sim test
//!    --no-run` builds them. For every library in the graph that is
//!    neither the workspace's own nor the simulator's, its relocations
//!    (`objdump -r`, one section per function) say which of its functions
//!    call a watched function: starting a thread (`std::thread::spawn`,
//!    `Builder::spawn*`, `thread::scope`, `pthread_create`), making a real
//!    socket (`TcpStream::connect`, `TcpListener::bind`,
//!    `UdpSocket::bind`, socket2's `Socket::new`, `socket`), opening real
//!    files (`File::open`/`create`, `OpenOptions::open`, `std::fs::read`,
//!    `write`, `create_dir`, ...). A test binary's symbol table (`nm`)
//!    says whether such a function was linked in.
//! 3. **The sources.** Each such library's `src/` is searched for
//!    `thread::spawn`, `thread::Builder`, `std::net::`,
//!    `TcpStream::connect`, `socket2::`, `std::fs::`, `File::open`,
//!    `_rdtsc` and `"rdtsc`.
//!
//! The rule: a crate escapes when one of *its own* functions that calls a
//! watched function is linked into a test binary; or when it reads the TSC
//! (its source says `rdtsc`, or it is a known TSC crate) and any of its
//! code is linked; or when it is a known crate whose escape is in native
//! code (SQLite's C, RocksDB's C++), which relocations do not attribute,
//! and its code is linked into a test binary (or it is built into the
//! tests, when it has no code of its own to tell by: a system library).
//! Attributing calls to the calling crate is what keeps the expected ones
//! out: libtest starts a thread per test and opens files, the real Tokio
//! under the simulation has a blocking pool, and those are the harness's
//! and the simulator's, not the service's. The
//! workspace's own crates are not judged: their escapes are the tests'
//! business. Patterns found in a crate's source whose calls are not linked
//! are printed as notes ("in the source only"), and count for nothing.
//!
//! What cannot be read (a stripped test binary, a library of LLVM bitcode
//! only) is printed as unknown, and makes the exit code 1 like an escape:
//! doctor never calls a graph clean that it could not read.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo sim doctor [--manifest-path <Cargo.toml>] [-p <package>]...

Builds the tests as `cargo sim test --no-run` does and lists the crates of
the graph that still escape the seed: OS threads, real sockets, real files,
the CPU's timestamp counter. Exits 0 when none does, 1 when one does (or
when something could not be read), 2 on bad usage.
Needs `nm` and `objdump` (GNU binutils); NM and OBJDUMP name others.
";

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
mod objects;

use judge::{judge, Examined, Report};
use known::source_patterns;
use objects::{parse_artifacts, read_code, read_symbols, Code, Tools};

/// What the command line asked for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    manifest: Option<PathBuf>,
    packages: Vec<String>,
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
            _ => {
                if let Some(v) = a.strip_prefix("--manifest-path=") {
                    o.manifest = Some(PathBuf::from(v));
                } else if let Some(v) = a.strip_prefix("--package=") {
                    o.packages.push(v.to_string());
                } else if let Some(v) = a.strip_prefix("-p").filter(|v| !v.is_empty()) {
                    o.packages.push(v.to_string());
                } else {
                    return Err(format!(
                        "unexpected argument `{a}` (doctor takes --manifest-path and -p only)"
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
            if report.clean() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("cargo sim doctor: {e}");
            ExitCode::FAILURE
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
    if artifacts.tests.is_empty() {
        return Err(
            "cargo built no test binary here, so there is nothing to scan; add a test (or pick \
             a package that has some with -p)"
                .into(),
        );
    }
    let mut unknown = Vec::new();
    let mut binaries = Vec::new();
    for t in &artifacts.tests {
        let label = format!(
            "{} {} `{}`",
            graph.name_of(&t.package_id).unwrap_or("?"),
            t.kind,
            t.target
        );
        match read_symbols(&tools.nm, &t.path, label.clone()) {
            Ok(s) => binaries.push(s),
            Err(e) => unknown.push(format!("{label} ({}): {e}", t.path.display())),
        }
    }
    let mut examined = Vec::new();
    let roots: BTreeSet<&str> = artifacts
        .tests
        .iter()
        .map(|t| t.package_id.as_str())
        .collect();
    for package in graph.reached_outside(&roots, |n| OURS.contains(&n)) {
        // Only what was compiled for these tests can run in them.
        let Some(libs) = artifacts.libs.get(&package.id) else {
            continue;
        };
        let mut code = Ok(Code::default());
        for lib in libs {
            match (read_code(&tools.objdump, lib), &mut code) {
                (Ok(c), Ok(all)) => {
                    all.calls.extend(c.calls);
                    all.functions.extend(c.functions);
                }
                (Err(e), Ok(_)) => code = Err(format!("{}: {e}", lib.display())),
                (_, Err(_)) => {}
            }
        }
        let (patterns, source_error) = match source_patterns(&package.dir) {
            Ok(p) => (p, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        examined.push(Examined {
            package,
            code,
            patterns,
            source_error,
        });
    }
    let mut report = judge(&examined, &binaries);
    report.unknown.splice(0..0, unknown);
    report.binaries = artifacts.tests.len();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_are_the_manifest_and_packages_and_nothing_else() {
        let o = parse_args(&strings(&[
            "--manifest-path",
            "a/Cargo.toml",
            "-p",
            "x",
            "--package=y",
            "-pz",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.manifest, Some(PathBuf::from("a/Cargo.toml")));
        assert_eq!(o.packages, ["x", "y", "z"]);
        assert_eq!(parse_args(&strings(&["--help"])), Ok(None));
        assert!(parse_args(&strings(&["--release"]))
            .unwrap_err()
            .contains("--release"));
        assert!(parse_args(&strings(&["-p"])).unwrap_err().contains("value"));
    }
}
