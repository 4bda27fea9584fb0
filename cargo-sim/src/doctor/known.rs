//! What is still outside the seed: the families of escape, the crates known
//! to reach one, and the source hints that make a library worth
//! disassembling (names.rs recognises a watched function or instruction).
//!
//! What is *not* here is as deliberate. The libc interposers serve
//! `std::fs` and every libc file call (C stores such as SQLite included) on
//! the node's simulated disk, make a std or socket2 socket a stub that
//! Tokio's `from_std` turns into a simulated one, answer `getaddrinfo` from
//! the simulated network, and answer clocks and randomness from the seed.
//! So opening files, making and binding sockets, hyper-util's
//! `HttpConnector`, reqwest's and tonic's clients and `std::time` are not
//! watched.

use std::path::Path;

/// What a watched function or instruction does that the seed does not
/// decide. Every family is a blocker: code that does it either cannot run
/// in a simulation or runs outside the seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Family {
    Threads,
    Processes,
    /// Blocking I/O on a std or socket2 socket (connect, accept, send,
    /// receive), and std's Unix-domain sockets.
    Sockets,
    /// The `syscall` instruction: past libc, where the simulation answers.
    Syscalls,
    Tsc,
    CpuRandom,
}

impl Family {
    pub(super) fn what(self) -> &'static str {
        match self {
            Family::Threads => {
                "starts an OS thread: a simulation refuses it (pthread_create fails with EAGAIN) \
                 and the run fails as a forbidden operation"
            }
            Family::Processes => {
                "starts a process, which would run on the real machine outside the seed: a \
                 simulation does not let it start, and the call fails"
            }
            Family::Sockets => {
                "does blocking I/O on a std or socket2 socket (connect, accept, send, receive) \
                 or makes a std Unix-domain socket: a simulation refuses it and the run fails as \
                 a forbidden operation (making, binding and handing a socket to Tokio is \
                 simulated)"
            }
            Family::Syscalls => {
                "makes system calls itself (the `syscall` instruction), past libc where the \
                 simulation answers: they reach the real kernel, its files and clocks"
            }
            Family::Tsc => {
                "reads the CPU's timestamp counter (rdtsc): real time, which the seed does not \
                 decide"
            }
            Family::CpuRandom => {
                "reads the CPU's random number generator (rdrand, rdseed): randomness the seed \
                 does not decide"
            }
        }
    }

    pub(super) fn advice(self) -> &'static str {
        match self {
            Family::Threads => {
                "run that work with tokio::task::spawn_blocking (in a simulation it runs inline, \
                 as a task) or tokio::spawn, or put the thread behind a trait that simulated \
                 tests implement with a task"
            }
            Family::Processes => {
                "put the process behind a trait of the service, and give simulated tests a fake \
                 that answers from the node's state"
            }
            Family::Sockets => {
                "do the I/O through tokio::net (the simulated network): hand the socket to \
                 Tokio's from_std (TcpStream, TcpSocket::from_std_stream, TcpListener, \
                 UdpSocket), or connect with Tokio itself"
            }
            Family::Syscalls => {
                "go through libc, where the simulation answers (rustix: its `use-libc` feature, \
                 which cargo sim turns on for rustix 1.x), or keep that code out of simulated \
                 tests"
            }
            Family::Tsc => {
                "read time through std::time::Instant or tokio::time, which follow the seed"
            }
            Family::CpuRandom => {
                "take randomness from getrandom, rand or std, which follow the seed"
            }
        }
    }

    /// A short name, for the summary and the evidence.
    pub(super) fn name(self) -> &'static str {
        match self {
            Family::Threads => "an OS thread",
            Family::Processes => "a process",
            Family::Sockets => "blocking socket I/O",
            Family::Syscalls => "a raw system call",
            Family::Tsc => "the timestamp counter",
            Family::CpuRandom => "the CPU's random numbers",
        }
    }
}

/// How a known crate's escape shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shown {
    /// Through calls or instructions that are read anyway: the entry only
    /// words the finding better.
    Calls,
    /// Counted when any of its code is linked into a judged executable: the
    /// escape is decided at run time (quanta reads the TSC when the CPU's is
    /// invariant) or hides behind a plain libc call (io_uring's `syscall`).
    Linked(Family),
    /// In native code built into the crate, which relocations do not
    /// attribute: counted when it is linked (or built, if it has no
    /// function sections to tell by).
    Native(Family),
    /// Its code reaches something only when the caller asks for it: a test
    /// tool run by a plain `#[test]`, outside any simulation (trybuild runs
    /// cargo: that is its job), or a library whose escape is opt-in
    /// (SQLite's sorter threads, after `PRAGMA threads`). A note, not a
    /// blocker.
    OnRequest,
}

pub(super) struct Known {
    pub(super) name: &'static str,
    pub(super) shown: Shown,
    pub(super) what: &'static str,
    pub(super) advice: &'static str,
}

/// Crates known to reach something outside the seed. A list of known
/// cases, not a proof: the calls and instructions read from the built code
/// are the rule, and an entry here words the finding or adds what they
/// cannot show. mio is not here: it is under the real Tokio, which the
/// simulation replaces.
pub(super) const KNOWN: &[Known] = &[
    Known {
        name: "rayon-core",
        shown: Shown::Calls,
        what: "rayon's thread pool starts OS threads, which a simulation refuses",
        advice:
            "keep parallel iterators out of code under simulated tests (a plain iterator there)",
    },
    Known {
        name: "threadpool",
        shown: Shown::Calls,
        what: "its pool starts OS threads, which a simulation refuses",
        advice: "use tokio::task::spawn_blocking in code under simulated tests",
    },
    Known {
        name: "notify",
        shown: Shown::Calls,
        what: "watches files from an OS thread of its own, which a simulation refuses",
        advice: "put file watching behind a trait that simulated tests replace",
    },
    Known {
        name: "coarsetime",
        shown: Shown::Calls,
        what: "its Updater starts an OS thread, which a simulation refuses (its clock itself \
               follows the seed)",
        advice: "call coarsetime::Instant::now() and start no Updater in simulated tests",
    },
    Known {
        name: "reqwest",
        shown: Shown::Calls,
        what: "its `blocking` client runs a runtime on an OS thread of its own, which a \
               simulation refuses",
        advice: "use the async reqwest::Client in simulated code: its connector and resolver run \
                 on the simulated network",
    },
    Known {
        name: "sled",
        shown: Shown::Calls,
        what: "flushes from an OS thread of its own, which a simulation refuses",
        advice: "put the store behind a trait with a simulated double, or use a store that runs \
                 on the node's disk (redb, SQLite, lsm-tree)",
    },
    Known {
        name: "fjall",
        shown: Shown::Calls,
        what: "starts worker threads when it opens, which a simulation refuses",
        advice: "use its engine, lsm-tree, which starts none and runs on the node's disk",
    },
    Known {
        name: "rustix",
        shown: Shown::Calls,
        what: "this rustix makes system calls itself (its linux_raw backend), past libc where \
               the simulation answers; cargo sim turns on `use-libc` for rustix 1.x only",
        advice: "`cargo update` the crates that need it to releases on rustix 1 (`cargo tree -i \
                 rustix` names them)",
    },
    Known {
        name: "io-uring",
        shown: Shown::Linked(Family::Syscalls),
        what: "submits file and socket I/O to the kernel through io_uring, past the libc calls \
               the simulation answers",
        advice: "use tokio::fs and tokio::net (simulated) in code under simulated tests",
    },
    Known {
        name: "quanta",
        shown: Shown::Linked(Family::Tsc),
        what: "reads the CPU's timestamp counter when it is invariant: real time, not the seed's",
        advice: "read time through std::time::Instant or tokio::time in code under simulated tests",
    },
    Known {
        name: "minstant",
        shown: Shown::Linked(Family::Tsc),
        what: "reads the CPU's timestamp counter: real time, not the seed's",
        advice: "read time through std::time::Instant or tokio::time in code under simulated tests",
    },
    Known {
        name: "tsc-timer",
        shown: Shown::Linked(Family::Tsc),
        what: "reads the CPU's timestamp counter: real time, not the seed's",
        advice: "read time through std::time::Instant or tokio::time in code under simulated tests",
    },
    Known {
        name: "trybuild",
        shown: Shown::OnRequest,
        what:
            "runs cargo and rustc as processes (a test tool: in a plain #[test] that is its job; \
               in a simulated test it would be a blocker)",
        advice: "",
    },
    Known {
        name: "assert_cmd",
        shown: Shown::OnRequest,
        what: "runs the program under test as a process (a test tool: in a plain #[test] that is \
               its job; in a simulated test it would be a blocker)",
        advice: "",
    },
    Known {
        name: "escargot",
        shown: Shown::OnRequest,
        what: "builds and runs programs as processes (a test tool: in a plain #[test] that is its \
               job; in a simulated test it would be a blocker)",
        advice: "",
    },
    Known {
        name: "rusty-fork",
        shown: Shown::OnRequest,
        what: "runs a test case in a child process when the test asks (proptest's `fork` and \
               `timeout`); leave those off in simulated tests",
        advice: "",
    },
    Known {
        name: "criterion",
        shown: Shown::OnRequest,
        what: "a benchmark harness, which measures real time by design; benchmarks are not \
               simulated",
        advice: "",
    },
    Known {
        name: "libsqlite3-sys",
        shown: Shown::OnRequest,
        what: "links SQLite's sorter threads, which start only after `PRAGMA threads = N` (0 by \
               default); leave it at 0 in simulated tests (a simulation refuses the threads)",
        advice: "",
    },
    Known {
        name: "aws-lc-sys",
        shown: Shown::Native(Family::CpuRandom),
        what: "AWS-LC's generator seeds from CPU jitter timed with `rdtsc` and mixes in `RDRAND` \
               on every draw, in C code no interposer sees: keys, nonces and session tickets \
               differ from run to run of a seed (the schedule stays the seed's while record \
               lengths do)",
        advice: "install rustls's ring provider in simulated tests \
                 (`rustls::crypto::ring::default_provider().install_default()`), whose \
                 randomness is getrandom's, so a seed sends the same bytes",
    },
    Known {
        name: "librocksdb-sys",
        shown: Shown::Native(Family::Threads),
        what: "RocksDB's C++ code starts threads of its own, which a simulation refuses",
        advice: "put the store behind a trait with a simulated double, or use a store that runs \
                 on the node's disk (redb, SQLite, lsm-tree)",
    },
];

pub(super) fn known(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

/// Source text that makes a crate's code worth disassembling: inline
/// assembly (a `syscall` of its own) and the CPU's time and randomness
/// intrinsics. Calls are read from relocations for every crate; the
/// instructions only for those whose source says one of these.
pub(super) const INSTRUCTION_HINTS: &[&str] = &["asm!", "rdtsc", "rdrand", "rdseed"];

/// Whether a package's Rust sources (anywhere in its folder but `target/`
/// and hidden folders) contain one of [`INSTRUCTION_HINTS`].
pub(super) fn hints_instructions(dir: &Path) -> Result<bool, String> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if INSTRUCTION_HINTS.iter().any(|h| text.contains(h)) {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::super::OURS;
    use super::*;

    #[test]
    fn the_table_is_small_true_and_leaves_out_what_the_interposers_serve() {
        for served in ["mio", "socket2", "hyper-util", "redb", "tempfile"] {
            assert!(known(served).is_none(), "{served} is served now");
        }
        // SQLite's files are served; its sorter threads are a note.
        assert_eq!(known("libsqlite3-sys").unwrap().shown, Shown::OnRequest);
        assert!(
            known("crossbeam-channel").is_none(),
            "channels start no thread"
        );
        assert_eq!(known("rayon-core").unwrap().shown, Shown::Calls);
        assert_eq!(known("minstant").unwrap().shown, Shown::Linked(Family::Tsc));
        let mut names: Vec<&str> = KNOWN.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KNOWN.len(), "one entry per crate");
        for k in KNOWN {
            assert!(!OURS.contains(&k.name), "{}", k.name);
            // A blocker always says what to do; a note on request needs not.
            assert_eq!(
                k.advice.is_empty(),
                k.shown == Shown::OnRequest,
                "{}",
                k.name
            );
        }
    }

    #[test]
    fn instruction_hints_are_found_anywhere_but_target() {
        let dir = std::env::temp_dir().join(format!("cargo-sim-doctor-src-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::fs::write(dir.join("lib.rs"), "pub fn f() {}").unwrap();
        std::fs::write(dir.join("target/x.rs"), "core::arch::asm!(\"syscall\")").unwrap();
        std::fs::write(dir.join("README.md"), "asm! rdtsc").unwrap();
        assert!(!hints_instructions(&dir).unwrap());
        std::fs::write(
            dir.join("src/deep/t.rs"),
            "pub fn t() -> u64 { unsafe { core::arch::x86_64::_rdtsc() } }",
        )
        .unwrap();
        assert!(hints_instructions(&dir).unwrap());
        assert!(hints_instructions(&dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
