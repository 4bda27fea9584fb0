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

use crate::graph::Package;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

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

/// What a watched function does that the seed does not decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    Threads,
    Sockets,
    Files,
    Tsc,
}

impl Family {
    fn what(self) -> &'static str {
        match self {
            Family::Threads => {
                "starts OS threads: a simulation refuses them, and the run fails as a forbidden \
                 operation"
            }
            Family::Sockets => {
                "opens real sockets: a simulation refuses them, socket(2) fails with EACCES"
            }
            Family::Files => {
                "reads or writes the real disk through std::fs, not the node's simulated disk: \
                 nothing resets it between seeds, no crash or fault reaches it"
            }
            Family::Tsc => {
                "reads the CPU's timestamp counter: real time, which the seed does not decide"
            }
        }
    }

    fn advice(self) -> &'static str {
        match self {
            Family::Threads => {
                "run that work on tokio::spawn or tokio::task::spawn_blocking, or keep the crate \
                 out of simulated tests"
            }
            Family::Sockets => {
                "connect through tokio::net (simulated), e.g. sim-runtime's `hyper` Connector in \
                 place of hyper-util's HttpConnector"
            }
            Family::Files => {
                "use tokio::fs (the node's simulated disk) in code under test, or keep the crate \
                 out of simulated tests"
            }
            Family::Tsc => {
                "read time through std::time::Instant or tokio::time, which follow the seed"
            }
        }
    }
}

/// How a known crate's escape shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shown {
    /// Through calls the relocations show (threads, sockets, std::fs): the
    /// entry only adds its sentence of advice.
    Calls,
    /// It reads the TSC: counted when any of its code is linked.
    Tsc,
    /// In native code: counted when the crate is built into the tests.
    Native,
}

struct Known {
    name: &'static str,
    shown: Shown,
    what: &'static str,
    advice: &'static str,
}

/// Crates known to escape the seed. A list of known cases, not a proof
/// (see the module's comment); each entry says what escapes and what to do.
/// mio is not here: it is under the real Tokio, which the simulation
/// replaces.
const KNOWN: &[Known] = &[
    Known {
        name: "rayon-core",
        shown: Shown::Calls,
        what: "rayon's thread pool starts OS threads",
        advice:
            "keep parallel iterators out of code under simulated tests (a plain iterator there)",
    },
    Known {
        name: "threadpool",
        shown: Shown::Calls,
        what: "its pool starts OS threads",
        advice: "use tokio::task::spawn_blocking in code under simulated tests",
    },
    Known {
        name: "notify",
        shown: Shown::Calls,
        what: "watches the real disk from an OS thread of its own",
        advice: "put file watching behind a trait that simulated tests replace",
    },
    Known {
        name: "coarsetime",
        shown: Shown::Calls,
        what: "its Updater starts an OS thread; its clock itself follows the seed",
        advice: "call coarsetime::Instant::now() and start no Updater in simulated tests",
    },
    Known {
        name: "reqwest",
        shown: Shown::Calls,
        what: "connects through hyper-util's HttpConnector, real sockets below Tokio; its \
               `blocking` client also runs on an OS thread",
        advice: "in simulated tests, send requests with hyper's client over sim-runtime's `hyper` \
                 Connector",
    },
    Known {
        name: "hyper-util",
        shown: Shown::Calls,
        what: "its HttpConnector makes real sockets with socket2, below Tokio",
        advice: "use sim-runtime's `hyper` Connector (feature `hyper`) in place of HttpConnector",
    },
    Known {
        name: "socket2",
        shown: Shown::Calls,
        what: "makes real sockets below Tokio, which a simulation refuses with EACCES",
        advice: "connect through tokio::net, e.g. sim-runtime's `hyper` Connector",
    },
    Known {
        name: "quanta",
        shown: Shown::Tsc,
        what: "reads the CPU's timestamp counter when it is invariant: real time, not the seed's",
        advice: "read time through std::time::Instant or tokio::time in code under simulated tests",
    },
    Known {
        name: "minstant",
        shown: Shown::Tsc,
        what: "reads the CPU's timestamp counter: real time, not the seed's",
        advice: "read time through std::time::Instant or tokio::time in code under simulated tests",
    },
    Known {
        name: "tsc-timer",
        shown: Shown::Tsc,
        what: "reads the CPU's timestamp counter: real time, not the seed's",
        advice: "read time through std::time::Instant or tokio::time in code under simulated tests",
    },
    Known {
        name: "sled",
        shown: Shown::Calls,
        what: "keeps its data in real files and flushes them from a thread of its own",
        advice: "put the store behind a trait with an in-memory double for simulated tests",
    },
    Known {
        name: "redb",
        shown: Shown::Calls,
        what: "keeps its data in a real file",
        advice: "give simulated tests redb's InMemoryBackend (Builder::create_with_backend)",
    },
    Known {
        name: "fjall",
        shown: Shown::Calls,
        what: "keeps its data in real files",
        advice: "put the store behind a trait with an in-memory double for simulated tests",
    },
    Known {
        name: "libsqlite3-sys",
        shown: Shown::Native,
        what: "SQLite's C code opens real files with open(2), out of the simulation's sight",
        advice: "use rusqlite's Connection::open_in_memory in simulated tests",
    },
    Known {
        name: "librocksdb-sys",
        shown: Shown::Native,
        what: "RocksDB's C++ code keeps real files and starts its own threads",
        advice: "put the store behind a trait with an in-memory double for simulated tests",
    },
];

fn known(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

/// The source patterns searched for, and what each one suggests.
const SOURCE_PATTERNS: &[(&str, Family)] = &[
    ("thread::spawn", Family::Threads),
    ("thread::Builder", Family::Threads),
    ("std::net::", Family::Sockets),
    ("TcpStream::connect", Family::Sockets),
    ("socket2::", Family::Sockets),
    ("std::fs::", Family::Files),
    ("File::open", Family::Files),
    ("_rdtsc", Family::Tsc),
    ("\"rdtsc", Family::Tsc),
];

/// `std::fs`'s free functions that reach the disk.
const FS_FUNCTIONS: &[&str] = &[
    "read",
    "read_to_string",
    "read_dir",
    "read_link",
    "write",
    "create_dir",
    "create_dir_all",
    "remove_file",
    "remove_dir",
    "remove_dir_all",
    "rename",
    "copy",
    "metadata",
    "symlink_metadata",
    "canonicalize",
    "hard_link",
    "soft_link",
    "set_permissions",
    "exists",
];

/// Which family a (demangled) symbol a function refers to belongs to, if
/// any. Legacy and v0 demangled forms are both understood.
pub fn watched(symbol: &str) -> Option<Family> {
    match symbol {
        "pthread_create" => return Some(Family::Threads),
        "socket" => return Some(Family::Sockets),
        _ => {}
    }
    let path = plain_path(symbol)?;
    let p: Vec<&str> = path
        .split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .collect();
    let after =
        |a: &str, next: &dyn Fn(&str) -> bool| p.windows(2).any(|w| w[0] == a && next(w[1]));
    let hit = |yes: bool, f: Family| yes.then_some(f);
    let sockets = || {
        after("TcpStream", &|s| s.starts_with("connect"))
            || after("UnixStream", &|s| s.starts_with("connect"))
            || ["TcpListener", "UdpSocket", "UnixListener", "UnixDatagram"]
                .iter()
                .any(|t| after(t, &|s| s == "bind"))
    };
    match p.as_slice() {
        ["std", "thread", rest @ ..] => hit(
            rest.iter()
                .any(|s| (s.starts_with("spawn") && *s != "spawnhook") || *s == "scope"),
            Family::Threads,
        ),
        ["std", "net", ..] | ["std", "os", "unix", "net", ..] => hit(sockets(), Family::Sockets),
        // std's internals, which a caller refers to directly when a test
        // profile with optimizations inlines std's wrappers into it.
        ["std", "sys", rest @ ..] => {
            if rest.contains(&"thread") && after("Thread", &|s| s == "new") {
                Some(Family::Threads)
            } else if sockets() {
                Some(Family::Sockets)
            } else {
                hit(after("File", &|s| s.starts_with("open")), Family::Files)
            }
        }
        ["socket2", ..] => hit(after("Socket", &|s| s.starts_with("new")), Family::Sockets),
        ["std", "fs", first, rest @ ..] => {
            let next = rest.first().copied().unwrap_or("");
            let disk = match *first {
                "File" => next.starts_with("open") || next.starts_with("create"),
                "OpenOptions" => next == "open" || next == "_open",
                "DirBuilder" => next == "create" || next == "_create",
                f => FS_FUNCTIONS.contains(&f),
            };
            hit(disk, Family::Files)
        }
        _ => hit(
            p.iter().any(|s| *s == "_rdtsc" || *s == "__rdtscp"),
            Family::Tsc,
        ),
    }
}

/// A demangled name as a plain path: `<T>::f` (v0's inherent methods) as
/// `T::f`, generic arguments and `<impl ..>` segments dropped. `None` for a
/// trait method (`<T as Trait>::f`): those act on what is already open.
fn plain_path(symbol: &str) -> Option<String> {
    let s = symbol.trim();
    let joined;
    let s = if s.starts_with('<') {
        let close = closing(s)?;
        let inner = &s[1..close];
        if top_level_as(inner) {
            return None;
        }
        joined = format!("{inner}{}", &s[close + 1..]);
        joined.as_str()
    } else {
        s
    };
    let mut out = String::new();
    let mut depth = 0usize;
    let mut prev = ' ';
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        prev = c;
    }
    Some(out)
}

/// The index of the `>` closing the `<` that starts `s` (`->` is not one).
fn closing(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        prev = c;
    }
    None
}

fn top_level_as(s: &str) -> bool {
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 && s[i..].starts_with(" as ") => return true,
            _ => {}
        }
        prev = c;
    }
    false
}

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

/// `nm` and `objdump`, checked before the build so a missing one costs
/// no time.
struct Tools {
    nm: String,
    objdump: String,
}

impl Tools {
    fn find() -> Result<Tools, String> {
        let pick = |var: &str, default: &str| -> Result<String, String> {
            let tool = std::env::var(var).unwrap_or_else(|_| default.to_string());
            match Command::new(&tool).arg("--version").output() {
                Ok(o) if o.status.success() => Ok(tool),
                Ok(o) => Err(format!(
                    "`{tool} --version` failed ({}); doctor reads symbols with GNU binutils' \
                     {default}: install binutils (e.g. `apt-get install binutils`) or set {var}",
                    o.status
                )),
                Err(e) => Err(format!(
                    "cannot run `{tool}` ({e}); doctor reads symbols with GNU binutils' \
                     {default}: install binutils (e.g. `apt-get install binutils`) or set {var}"
                )),
            }
        };
        Ok(Tools {
            nm: pick("NM", "nm")?,
            objdump: pick("OBJDUMP", "objdump")?,
        })
    }
}

/// A test executable cargo built.
#[derive(Debug, PartialEq, Eq)]
struct TestBinary {
    path: PathBuf,
    package_id: String,
    target: String,
    kind: String,
}

/// What `cargo test --no-run --message-format=json` built.
#[derive(Debug, Default)]
struct Artifacts {
    tests: Vec<TestBinary>,
    /// Each package's compiled libraries (a package built for the host and
    /// for the target has two).
    libs: BTreeMap<String, Vec<PathBuf>>,
}

fn parse_artifacts(stdout: &[u8]) -> Artifacts {
    let mut a = Artifacts::default();
    for line in stdout.split(|b| *b == b'\n') {
        // Every line cargo prints there is a JSON message; only
        // `compiler-artifact` ones say what was built.
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-artifact" {
            continue;
        }
        let id = v["package_id"].as_str().unwrap_or_default().to_string();
        if let (Some(exe), true) = (v["executable"].as_str(), v["profile"]["test"] == true) {
            a.tests.push(TestBinary {
                path: PathBuf::from(exe),
                package_id: id.clone(),
                target: v["target"]["name"].as_str().unwrap_or_default().to_string(),
                kind: v["target"]["kind"][0]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        for f in v["filenames"].as_array().into_iter().flatten() {
            if let Some(f) = f.as_str().filter(|f| f.ends_with(".rlib")) {
                a.libs.entry(id.clone()).or_default().push(PathBuf::from(f));
            }
        }
    }
    a
}

/// A test binary's defined symbols.
struct Symbols {
    label: String,
    defined: HashSet<String>,
    /// Raw name to demangled name, for what is printed.
    demangled: HashMap<String, String>,
}

fn nm_names(nm: &str, args: &[&str], path: &Path) -> Result<Vec<String>, String> {
    let out = Command::new(nm)
        .args(args)
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run {nm}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{nm} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(nm_lines(&String::from_utf8_lossy(&out.stdout)))
}

/// The names in `nm` output (`address type name`; the name may hold spaces).
fn nm_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.splitn(3, ' ').nth(2).map(str::to_string))
        .collect()
}

fn read_symbols(nm: &str, path: &Path, label: String) -> Result<Symbols, String> {
    // `-p` keeps nm's order, so the raw and demangled lists line up.
    let raw = nm_names(nm, &["-p", "--defined-only"], path)?;
    if raw.is_empty() {
        return Err(
            "it has no symbol table (stripped? set `strip = false` for the test \
                    profile)"
                .into(),
        );
    }
    let demangled = nm_names(nm, &["-p", "-C", "--defined-only"], path)?;
    let demangled = if demangled.len() == raw.len() {
        raw.iter().cloned().zip(demangled).collect()
    } else {
        HashMap::new()
    };
    Ok(Symbols {
        label,
        defined: raw.into_iter().collect(),
        demangled,
    })
}

/// A function of a library that refers to a watched function.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Call {
    /// The calling function's raw symbol; `None` when its object file keeps
    /// all its code in one `.text` section (native code built without
    /// function sections).
    function: Option<String>,
    /// The watched function, demangled.
    callee: String,
    family: Family,
}

/// What a library's relocations say.
#[derive(Debug, Default, PartialEq, Eq)]
struct Code {
    calls: Vec<Call>,
    /// Its functions (those with relocations): whether any of them is in a
    /// binary says whether the library is linked there.
    functions: BTreeSet<String>,
}

/// The function a section holds, from its name (`-ffunction-sections`).
fn function_of(section: &str) -> Option<&str> {
    [
        ".text.unlikely.",
        ".text.hot.",
        ".text.startup.",
        ".text.exit.",
        ".text.split.",
        ".text.",
    ]
    .iter()
    .find_map(|p| section.strip_prefix(p))
    .filter(|f| !f.is_empty())
}

/// Parses `objdump -r -C` output.
fn parse_relocations(text: impl BufRead) -> std::io::Result<Code> {
    enum In {
        Function(String),
        PlainText,
        Other,
    }
    let mut code = Code::default();
    let mut seen: HashSet<(Option<String>, String)> = HashSet::new();
    let mut section = In::Other;
    for line in text.lines() {
        let line = line?;
        if let Some(rest) = line.strip_prefix("RELOCATION RECORDS FOR [") {
            let name = rest.strip_suffix("]:").unwrap_or(rest);
            section = match function_of(name) {
                Some(f) => {
                    code.functions.insert(f.to_string());
                    In::Function(f.to_string())
                }
                None if name == ".text" => In::PlainText,
                None => In::Other,
            };
            continue;
        }
        let function = match &section {
            In::Function(f) => Some(f.clone()),
            In::PlainText => None,
            In::Other => continue,
        };
        // `OFFSET TYPE VALUE`, the value possibly `name-0x4`.
        let mut parts = line.splitn(3, ' ').filter(|p| !p.is_empty());
        let (Some(offset), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !offset.bytes().all(|b| b.is_ascii_hexdigit()) || !kind.starts_with("R_") {
            continue;
        }
        let value = line
            .split_once(kind)
            .map(|(_, v)| v.trim())
            .unwrap_or_default();
        let value = strip_addend(value);
        if let Some(family) = watched(value) {
            if seen.insert((function.clone(), value.to_string())) {
                code.calls.push(Call {
                    function,
                    callee: value.to_string(),
                    family,
                });
            }
        }
    }
    Ok(code)
}

/// `name-0x0000000000000004` → `name`.
fn strip_addend(v: &str) -> &str {
    match v.rfind(['-', '+']) {
        Some(i)
            if v[i + 1..].starts_with("0x")
                && v[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            &v[..i]
        }
        _ => v,
    }
}

fn read_code(objdump: &str, rlib: &Path) -> Result<Code, String> {
    let mut child = Command::new(objdump)
        .args(["-r", "-C"])
        .arg(rlib)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {objdump}: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // stderr on a thread of its own, so neither pipe can fill and block.
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let parsed = parse_relocations(BufReader::new(stdout));
    let status = child.wait().map_err(|e| format!("{objdump}: {e}"))?;
    let errors = errors.join().unwrap_or_default();
    let code = parsed.map_err(|e| format!("reading {objdump}'s output: {e}"))?;
    // An object objdump cannot read (LLVM bitcode, in LTO builds) would
    // hide its calls: not clean, unknown.
    if !status.success() || errors.contains("not recognized") {
        return Err(format!(
            "{objdump} -r could not read it ({status}): {}",
            errors.trim()
        ));
    }
    Ok(code)
}

/// The source patterns in a package's `src/`.
fn source_patterns(dir: &Path) -> Result<Vec<&'static str>, String> {
    let mut found = BTreeSet::new();
    let mut stack = vec![dir.join("src")];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for (i, (pattern, _)) in SOURCE_PATTERNS.iter().enumerate() {
                    if text.contains(pattern) {
                        found.insert(i);
                    }
                }
            }
        }
    }
    Ok(found.into_iter().map(|i| SOURCE_PATTERNS[i].0).collect())
}

fn family_of_pattern(p: &str) -> Family {
    SOURCE_PATTERNS
        .iter()
        .find(|(q, _)| *q == p)
        .map_or(Family::Files, |(_, f)| *f)
}

/// One library of the graph, with what was read about it.
struct Examined {
    package: Package,
    /// Its compiled code, or why it could not be read.
    code: Result<Code, String>,
    patterns: Vec<&'static str>,
    /// Why its source could not be searched, if it could not.
    source_error: Option<String>,
}

/// One escaping crate.
#[derive(Debug, PartialEq, Eq)]
struct Finding {
    name: String,
    version: String,
    what: String,
    evidence: Vec<String>,
    advice: String,
}

#[derive(Debug, Default)]
struct Report {
    findings: Vec<Finding>,
    notes: Vec<String>,
    unknown: Vec<String>,
    binaries: usize,
    crates: usize,
}

impl Report {
    fn clean(&self) -> bool {
        self.findings.is_empty() && self.unknown.is_empty()
    }

    fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.findings {
            s += &format!(
                "{} {}: {} ({}) — {}\n",
                f.name,
                f.version,
                f.what,
                f.evidence.join("; "),
                f.advice
            );
        }
        for u in &self.unknown {
            s += &format!("unknown: {u} — counted as unknown, not as clean\n");
        }
        for n in &self.notes {
            s += &format!("note: {n}\n");
        }
        let checked = format!(
            "{} test binar{}, {} crate{} outside the workspace and the simulator",
            self.binaries,
            if self.binaries == 1 { "y" } else { "ies" },
            self.crates,
            if self.crates == 1 { "" } else { "s" }
        );
        if self.clean() {
            s += &format!("checked: {checked}\n");
            s += "cargo sim doctor: nothing in this graph escapes the seed that doctor knows of\n";
        } else {
            let n = self.findings.len();
            s += &format!(
                "cargo sim doctor: {n} crate{} escape{} the seed{} ({checked})\n",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" },
                if self.unknown.is_empty() {
                    String::new()
                } else {
                    format!(", {} thing(s) could not be read", self.unknown.len())
                }
            );
        }
        s
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

/// Applies the rule (see the module's comment) to what was read.
fn judge(examined: &[Examined], binaries: &[Symbols]) -> Report {
    let mut report = Report {
        crates: examined.len(),
        ..Report::default()
    };
    for e in examined {
        let p = &e.package;
        let code = match &e.code {
            Ok(c) => c,
            Err(err) => {
                report.unknown.push(format!(
                    "{} {}: cannot read its code: {err}",
                    p.name, p.version
                ));
                continue;
            }
        };
        let own = format!("{}::", p.name.replace('-', "_"));
        // Where any of its code is linked.
        let linked_in: Vec<&Symbols> = binaries
            .iter()
            .filter(|b| code.functions.iter().any(|f| b.defined.contains(f)))
            .collect();
        // Family → (caller, callee, binary, every binary it is linked into).
        type Linked = (String, String, String, BTreeSet<String>);
        let mut linked: BTreeMap<Family, Linked> = BTreeMap::new();
        for call in &code.calls {
            for b in binaries {
                let here = match &call.function {
                    Some(f) => b.defined.contains(f),
                    None => linked_in.iter().any(|l| std::ptr::eq(*l, b)),
                };
                if !here {
                    continue;
                }
                let caller = match &call.function {
                    Some(f) => b.demangled.get(f).cloned().unwrap_or_else(|| f.clone()),
                    None => format!("{}'s native code", p.name),
                };
                let entry = linked.entry(call.family).or_insert_with(|| {
                    (
                        caller.clone(),
                        call.callee.clone(),
                        b.label.clone(),
                        BTreeSet::new(),
                    )
                });
                entry.3.insert(b.label.clone());
                // A caller of the crate's own name says more than a std
                // generic instantiated in it.
                if !entry.0.contains(&own) && caller.contains(&own) {
                    entry.0 = caller;
                    entry.1 = call.callee.clone();
                    entry.2 = b.label.clone();
                }
            }
        }
        let k = known(&p.name);
        if let Some(err) = &e.source_error {
            report.notes.push(format!(
                "{} {}: its source could not be searched ({err}); a TSC read there would go \
                 unseen",
                p.name, p.version
            ));
        }
        let tsc_source = e
            .patterns
            .iter()
            .any(|q| family_of_pattern(q) == Family::Tsc);
        let mut evidence: Vec<String> = Vec::new();
        let mut families: Vec<Family> = Vec::new();
        for (family, (caller, callee, label, all)) in &linked {
            families.push(*family);
            let more = match all.len() {
                0 | 1 => String::new(),
                2 => " (and 1 more test binary)".to_string(),
                n => format!(" (and {} more test binaries)", n - 1),
            };
            evidence.push(format!(
                "{caller} calls {callee}, linked into {label}{more}"
            ));
        }
        if !families.contains(&Family::Tsc)
            && (tsc_source || k.is_some_and(|k| k.shown == Shown::Tsc))
        {
            if let Some(b) = linked_in.first() {
                families.push(Family::Tsc);
                evidence.push(format!(
                    "{}, and its code is linked into {}",
                    if tsc_source {
                        "its source reads the TSC"
                    } else {
                        "a known TSC reader"
                    },
                    b.label
                ));
            }
        }
        // Native code built without function sections (or linked from a
        // system library) leaves nothing to tell by: built in is enough.
        let native = k
            .filter(|k| k.shown == Shown::Native)
            .and_then(|_| match linked_in.first() {
                Some(b) => Some(format!("known native code, linked into {}", b.label)),
                None if code.functions.is_empty() => {
                    Some("known native code, built into the tests".to_string())
                }
                None => None,
            });
        let only_source: Vec<&str> = e
            .patterns
            .iter()
            .copied()
            .filter(|q| !families.contains(&family_of_pattern(q)))
            .collect();
        let source: Vec<&str> = e
            .patterns
            .iter()
            .copied()
            .filter(|q| families.contains(&family_of_pattern(q)))
            .collect();
        if families.is_empty() && native.is_none() {
            if !only_source.is_empty() {
                report.notes.push(format!(
                    "{} {}: {} in the source only (no function of it that calls one is linked \
                     into a test binary)",
                    p.name,
                    p.version,
                    only_source.join(", ")
                ));
            }
            if let (Some(k), Some(b)) = (k, linked_in.first()) {
                report.notes.push(format!(
                    "{} {}: known: {}; but no function of it that does so is linked into {} \
                     (or another test binary)",
                    p.name, p.version, k.what, b.label
                ));
            }
            continue;
        }
        evidence.extend(native);
        if !source.is_empty() {
            evidence.push(format!("source: {}", source.join(", ")));
        }
        if !only_source.is_empty() {
            evidence.push(format!("in the source only: {}", only_source.join(", ")));
        }
        let (what, advice) = match k {
            Some(k) => (k.what.to_string(), k.advice.to_string()),
            None => (
                families
                    .iter()
                    .map(|f| f.what())
                    .collect::<Vec<_>>()
                    .join("; "),
                families
                    .iter()
                    .map(|f| f.advice())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        };
        report.findings.push(Finding {
            name: p.name.clone(),
            version: p.version.clone(),
            what,
            evidence,
            advice,
        });
    }
    report
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

    #[test]
    fn watched_functions_are_recognized_in_both_manglings() {
        let t = Some(Family::Threads);
        let s = Some(Family::Sockets);
        let f = Some(Family::Files);
        for (name, want) in [
            ("std::thread::functions::spawn", t),
            ("std::thread::spawn", t),
            (
                "<std::thread::builder::Builder>::spawn_unchecked::<app::f::{closure#0}, ()>",
                t,
            ),
            (
                "std::thread::scoped::<impl std::thread::builder::Builder>::spawn_scoped",
                t,
            ),
            ("std::thread::scoped::scope", t),
            ("pthread_create", t),
            ("std::thread::spawnhook::run_spawn_hooks", None),
            ("std::thread::sleep", None),
            ("<std::sys::thread::unix::Thread>::new", t),
            ("std::sys::thread_local::native::eager::destroy", None),
            ("std::net::tcp::TcpStream::connect", s),
            ("<std::net::tcp::TcpStream>::connect_timeout", s),
            ("std::net::udp::UdpSocket::bind::<&str>", s),
            ("std::os::unix::net::stream::UnixStream::connect", s),
            ("std::net::tcp::TcpStream::peer_addr", None),
            (
                "<std::sys::net::connection::socket::TcpStream>::connect::inner",
                s,
            ),
            ("socket2::socket::Socket::new", s),
            ("socket", s),
            ("<std::fs::OpenOptions>::_open", f),
            ("std::fs::File::open", f),
            ("std::fs::File::create_new", f),
            ("std::fs::read_to_string::inner", f),
            ("std::fs::Metadata::len", None),
            ("<std::sys::fs::unix::File>::open_c", f),
            ("<std::sys::fs::unix::File>::fsync", None),
            ("<std::fs::File as std::io::Read>::read", None),
            ("core::core_arch::x86::rdtsc::_rdtsc", Some(Family::Tsc)),
            ("tokio::spawn", None),
            ("core::result::Result<T,E>::is_ok", None),
            (".rodata..Lanon.12.0", None),
            ("my::f::<fn() -> u32>", None),
        ] {
            assert_eq!(watched(name), want, "{name}");
        }
    }

    const OBJDUMP: &str = "\
In archive libspawner-1.rlib:

spawner-1.spawner.0.rcgu.o:     file format elf64-x86-64

RELOCATION RECORDS FOR [.text._ZN7spawner11unused_open17hE]:
OFFSET           TYPE              VALUE
000000000000000e R_X86_64_GOTPCREL  std::fs::File::open-0x0000000000000004
000000000000002b R_X86_64_GOTPCREL  core::result::Result<T,E>::is_ok-0x0000000000000004


RELOCATION RECORDS FOR [.text._ZN7spawner5start17hE]:
OFFSET           TYPE              VALUE
000000000000000b R_X86_64_GOTPCREL  std::thread::functions::spawn-0x0000000000000004
000000000000001b R_X86_64_PLT32    std::thread::functions::spawn-0x0000000000000004


RELOCATION RECORDS FOR [.text._ZN7spawner4pure17hE]:
OFFSET           TYPE              VALUE
0000000000000003 R_X86_64_PC32     .rodata..Lanon.1.0-0x0000000000000004


RELOCATION RECORDS FOR [.debug_info]:
OFFSET           TYPE              VALUE
0000000000000008 R_X86_64_64       std::fs::File::open

RELOCATION RECORDS FOR [.text]:
OFFSET           TYPE              VALUE
0000000000000010 R_X86_64_PLT32    pthread_create-0x0000000000000004
";

    #[test]
    fn relocations_name_the_calling_function_and_skip_non_code() {
        let code = parse_relocations(OBJDUMP.as_bytes()).unwrap();
        assert_eq!(
            code.calls,
            vec![
                Call {
                    function: Some("_ZN7spawner11unused_open17hE".into()),
                    callee: "std::fs::File::open".into(),
                    family: Family::Files,
                },
                Call {
                    function: Some("_ZN7spawner5start17hE".into()),
                    callee: "std::thread::functions::spawn".into(),
                    family: Family::Threads,
                },
                Call {
                    function: None,
                    callee: "pthread_create".into(),
                    family: Family::Threads,
                },
            ]
        );
        let functions: Vec<&str> = code.functions.iter().map(String::as_str).collect();
        assert_eq!(
            functions,
            [
                "_ZN7spawner11unused_open17hE",
                "_ZN7spawner4pure17hE",
                "_ZN7spawner5start17hE"
            ]
        );
    }

    #[test]
    fn nm_names_may_hold_spaces() {
        let names = nm_lines(
            "0000000000126160 T _ZN7spawner5start17hE\n\
             00000000001198d0 t <std::fs::File as std::io::Read>::read\n",
        );
        assert_eq!(
            names,
            [
                "_ZN7spawner5start17hE",
                "<std::fs::File as std::io::Read>::read"
            ]
        );
    }

    #[test]
    fn artifacts_give_test_executables_and_libraries() {
        let out = br#"{"reason":"compiler-artifact","package_id":"path+file:///s#0.1.0","target":{"kind":["test"],"name":"t"},"profile":{"test":true},"filenames":["/d/t-1"],"executable":"/d/t-1","fresh":true}
{"reason":"compiler-artifact","package_id":"registry+x#spawner@0.3.0","target":{"kind":["lib"],"name":"spawner"},"profile":{"test":false},"filenames":["/d/libspawner-1.rlib","/d/libspawner-1.rmeta"],"executable":null,"fresh":false}
{"reason":"compiler-artifact","package_id":"path+file:///s#0.1.0","target":{"kind":["bin"],"name":"s"},"profile":{"test":false},"filenames":["/d/s"],"executable":"/d/s","fresh":false}
{"reason":"build-finished","success":true}
not json
"#;
        let a = parse_artifacts(out);
        assert_eq!(
            a.tests,
            vec![TestBinary {
                path: PathBuf::from("/d/t-1"),
                package_id: "path+file:///s#0.1.0".into(),
                target: "t".into(),
                kind: "test".into(),
            }]
        );
        assert_eq!(
            a.libs["registry+x#spawner@0.3.0"],
            vec![PathBuf::from("/d/libspawner-1.rlib")]
        );
        assert_eq!(a.libs.len(), 1);
    }

    fn package(name: &str) -> Package {
        Package {
            id: format!("{name}-id"),
            name: name.into(),
            version: "1.0.0".into(),
            dir: PathBuf::from("/nowhere"),
        }
    }

    fn binary(defined: &[&str]) -> Symbols {
        Symbols {
            label: "app test `t`".into(),
            defined: defined.iter().map(|s| s.to_string()).collect(),
            demangled: defined
                .iter()
                .map(|s| (s.to_string(), format!("demangled({s})")))
                .collect(),
        }
    }

    fn examined(name: &str, code: &str, patterns: &[&'static str]) -> Examined {
        Examined {
            package: package(name),
            code: Ok(parse_relocations(code.as_bytes()).unwrap()),
            patterns: patterns.to_vec(),
            source_error: None,
        }
    }

    #[test]
    fn a_crate_escapes_only_through_its_own_linked_calls() {
        let spawner = examined(
            "spawner",
            OBJDUMP,
            &["thread::spawn", "std::fs::", "std::net::"],
        );
        // `start` is linked, `unused_open` is not: threads count, files
        // are in the source only.
        let report = judge(
            std::slice::from_ref(&spawner),
            &[binary(&["_ZN7spawner5start17hE"])],
        );
        assert_eq!(report.findings.len(), 1, "{report:?}");
        let f = &report.findings[0];
        assert_eq!(f.name, "spawner");
        assert_eq!(f.what, Family::Threads.what());
        assert!(
            f.evidence[0].starts_with(
                "demangled(_ZN7spawner5start17hE) calls std::thread::functions::spawn, linked \
                 into app test `t`"
            ),
            "{f:?}"
        );
        assert!(
            f.evidence.contains(&"source: thread::spawn".to_string()),
            "{f:?}"
        );
        assert!(
            f.evidence
                .contains(&"in the source only: std::fs::, std::net::".to_string()),
            "{f:?}"
        );
        let line = report.render();
        assert!(
            line.starts_with("spawner 1.0.0: starts OS threads"),
            "{line}"
        );
        assert!(line.contains(" — run that work on tokio::spawn"), "{line}");
        assert!(
            line.contains("cargo sim doctor: 1 crate escapes the seed"),
            "{line}"
        );
        // Nothing of it linked: a note, and a clean exit.
        let report = judge(&[spawner], &[binary(&["_ZN5other1f17hE"])]);
        assert!(report.clean(), "{report:?}");
        assert!(
            report.notes[0].contains("thread::spawn, std::fs::, std::net:: in the source only"),
            "{report:?}"
        );
        assert!(report
            .render()
            .ends_with("nothing in this graph escapes the seed that doctor knows of\n"));
    }

    #[test]
    fn tsc_readers_count_when_linked_and_known_native_code_when_built() {
        let quanta_code = "RELOCATION RECORDS FOR [.text._ZN6quanta3now17hE]:\n\
                           0000000000000003 R_X86_64_PC32     .rodata..Lanon.1.0-0x4\n";
        let quanta = examined("quanta", quanta_code, &[]);
        let by_source = examined(
            "ticks",
            &quanta_code.replace("6quanta", "5ticks"),
            &["_rdtsc"],
        );
        let sqlite = examined("libsqlite3-sys", "", &[]);
        let linked = binary(&["_ZN6quanta3now17hE", "_ZN5ticks3now17hE"]);
        let report = judge(&[quanta, by_source, sqlite], &[linked]);
        let names: Vec<&str> = report.findings.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["quanta", "ticks", "libsqlite3-sys"], "{report:?}");
        assert!(report.findings[0].evidence[0].contains("a known TSC reader"));
        assert!(report.findings[1].evidence[0].contains("its source reads the TSC"));
        assert_eq!(report.findings[1].what, Family::Tsc.what());
        assert_eq!(
            report.findings[2].evidence[0],
            "known native code, built into the tests"
        );
        // Their code built but none of it linked: nothing can run, nothing
        // counts (a known crate says so in a note only if linked).
        let rocks = "RELOCATION RECORDS FOR [.text.rocksdb_open]:\n\
                     0000000000000003 R_X86_64_PLT32    open64-0x4\n";
        let mut unlinked = vec![
            examined("quanta", quanta_code, &[]),
            examined("librocksdb-sys", rocks, &[]),
        ];
        unlinked[0].source_error = Some("/r/quanta/src: not found".into());
        let report = judge(&unlinked, &[binary(&["_ZN5other1f17hE"])]);
        assert!(report.clean(), "{report:?}");
        assert_eq!(report.notes.len(), 1, "{report:?}");
        assert!(
            report.notes[0].contains("could not be searched"),
            "{report:?}"
        );
    }

    #[test]
    fn unreadable_code_is_unknown_not_clean() {
        let broken = Examined {
            package: package("lto"),
            code: Err("objdump -r could not read it".into()),
            patterns: vec![],
            source_error: None,
        };
        let report = judge(&[broken], &[binary(&[])]);
        assert!(!report.clean());
        let text = report.render();
        assert!(
            text.contains("unknown: lto 1.0.0: cannot read its code"),
            "{text}"
        );
        assert!(text.contains("could not be read"), "{text}");
    }

    #[test]
    fn the_table_is_small_true_and_leaves_mio_out() {
        assert!(known("mio").is_none(), "mio is under the real Tokio");
        assert!(
            known("crossbeam-channel").is_none(),
            "channels start no thread"
        );
        assert_eq!(known("rayon-core").unwrap().shown, Shown::Calls);
        assert_eq!(known("minstant").unwrap().shown, Shown::Tsc);
        let mut names: Vec<&str> = KNOWN.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KNOWN.len(), "one entry per crate");
        for k in KNOWN {
            assert!(!OURS.contains(&k.name), "{}", k.name);
        }
    }

    #[test]
    fn source_patterns_are_found_under_src() {
        let dir = std::env::temp_dir().join(format!("cargo-sim-doctor-src-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            "pub fn f() { std::thread::spawn(|| ()); }",
        )
        .unwrap();
        std::fs::write(
            dir.join("src/deep/io.rs"),
            "pub fn g() { let _ = std::fs::File::open(\"x\"); }",
        )
        .unwrap();
        std::fs::write(dir.join("README.md"), "std::net:: _rdtsc").unwrap();
        assert_eq!(
            source_patterns(&dir).unwrap(),
            ["thread::spawn", "std::fs::", "File::open"]
        );
        assert!(source_patterns(&dir.join("missing")).is_err());
    }
}
