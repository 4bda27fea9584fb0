//! What escapes the seed: the families of escape, the crates known to
//! escape, the functions and source patterns watched for.

use std::collections::BTreeSet;
use std::path::Path;

/// What a watched function does that the seed does not decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Family {
    Threads,
    Sockets,
    Files,
    Tsc,
}

impl Family {
    pub(super) fn what(self) -> &'static str {
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

    pub(super) fn advice(self) -> &'static str {
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
pub(super) enum Shown {
    /// Through calls the relocations show (threads, sockets, std::fs): the
    /// entry only adds its sentence of advice.
    Calls,
    /// It reads the TSC: counted when any of its code is linked.
    Tsc,
    /// In native code: counted when the crate is built into the tests.
    Native,
}

pub(super) struct Known {
    pub(super) name: &'static str,
    pub(super) shown: Shown,
    pub(super) what: &'static str,
    pub(super) advice: &'static str,
}

/// Crates known to escape the seed. A list of known cases, not a proof
/// (see the module's comment); each entry says what escapes and what to do.
/// mio is not here: it is under the real Tokio, which the simulation
/// replaces.
pub(super) const KNOWN: &[Known] = &[
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

pub(super) fn known(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

/// The source patterns searched for, and what each one suggests.
pub(super) const SOURCE_PATTERNS: &[(&str, Family)] = &[
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
pub(super) const FS_FUNCTIONS: &[&str] = &[
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
pub(super) fn watched(symbol: &str) -> Option<Family> {
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
pub(super) fn plain_path(symbol: &str) -> Option<String> {
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
pub(super) fn closing(s: &str) -> Option<usize> {
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

pub(super) fn top_level_as(s: &str) -> bool {
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

/// The source patterns in a package's `src/`.
pub(super) fn source_patterns(dir: &Path) -> Result<Vec<&'static str>, String> {
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

pub(super) fn family_of_pattern(p: &str) -> Family {
    SOURCE_PATTERNS
        .iter()
        .find(|(q, _)| *q == p)
        .map_or(Family::Files, |(_, f)| *f)
}

#[cfg(test)]
mod tests {
    use super::super::OURS;
    use super::*;

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
