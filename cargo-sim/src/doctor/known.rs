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
/// decide. Every family but [`Family::Spins`] is a blocker: code that does
/// it either cannot run in a simulation or runs outside the seed. Starting
/// a thread is none of them: `pthread_create` makes a simulated thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Family {
    /// A thread made with `clone`/`clone3` itself, not `pthread_create`.
    RawThreads,
    Processes,
    /// Blocking I/O on a std or socket2 socket (connect, accept, send,
    /// receive), and std's Unix-domain sockets.
    Sockets,
    /// The `syscall` instruction: past libc, where the simulation answers.
    Syscalls,
    Tsc,
    CpuRandom,
    /// A descriptor only the real kernel serves (inotify): it watches the
    /// real disk, and a thread that waits on it waits in the kernel.
    KernelOnly,
    /// A wait that spins with no hand-off (`pause` in a loop, no futex, no
    /// yield) in a crate known to wait that way (`SPINNERS`). A note, not a
    /// blocker: it hangs a run only when the holder is parked at a hand-off.
    Spins,
}

impl Family {
    pub(super) fn what(self) -> &'static str {
        match self {
            Family::RawThreads => {
                "makes a thread without pthread_create (clone or clone3 itself): it runs outside \
                 the simulation, on the real clock, never at the seed's turn"
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
            Family::KernelOnly => {
                "makes a descriptor only the real kernel serves (inotify): it watches the real \
                 disk, not the node's, and a thread that waits on it waits in the kernel, where \
                 no hand-off is"
            }
            Family::Spins => {
                "loop on an atomic with `pause` while they wait, and never futex or yield: in a \
                 simulation the waiting thread keeps the baton, so when the holder is parked at a \
                 hand-off (a contended lock, a sleep, a join, an await) the run hangs, and the \
                 watchdog reports it after SIM_HANG_TIMEOUT (10 s unless set)"
            }
        }
    }

    pub(super) fn advice(self) -> &'static str {
        match self {
            Family::RawThreads => {
                "start the thread with std::thread or pthread_create, which a simulation runs as \
                 a simulated thread of the node, or keep that code out of simulated tests"
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
            Family::KernelOnly => {
                "put file watching behind a trait of the service, and give simulated tests a fake \
                 that the test drives"
            }
            Family::Spins => {
                "wait with std::sync (Mutex, RwLock, OnceLock, LazyLock: they park on a futex, \
                 which hands off)"
            }
        }
    }

    /// A short name, for the summary and the evidence.
    pub(super) fn name(self) -> &'static str {
        match self {
            Family::RawThreads => "a thread made without pthread_create",
            Family::Processes => "a process",
            Family::Sockets => "blocking socket I/O",
            Family::Syscalls => "a raw system call",
            Family::Tsc => "the timestamp counter",
            Family::CpuRandom => "the CPU's random numbers",
            Family::KernelOnly => "a kernel-only descriptor",
            Family::Spins => "a spin wait",
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
    /// Its escaping code is linked but never reached inside a simulation:
    /// the simulation answers what it would ask (AWS-LC's entropy source is
    /// pointed at one that reads the seed). A note, not a blocker.
    Served,
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
/// simulation replaces. Nor is any crate whose only escape was starting
/// threads (rayon, threadpool, fjall's workers, reqwest's `blocking`,
/// tracing-appender's `non_blocking`, coarsetime's and quanta's updaters,
/// SQLite's sorter threads, RocksDB's background threads): their threads
/// are simulated threads of the node, and the pthread locks C and C++
/// code waits on are the simulation's too.
pub(super) const KNOWN: &[Known] = &[
    Known {
        name: "inotify",
        shown: Shown::Calls,
        what: "watches files through the kernel's inotify (notify's watcher on Linux uses it): \
               the kernel sees the real disk, not the node's, so no event comes for the node's \
               files, and notify's event thread waits for that descriptor in the kernel (epoll), \
               where no hand-off is",
        advice: "put file watching behind a trait of the service, and give simulated tests a fake \
                 that the test drives",
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
        name: "aws-lc-sys",
        shown: Shown::Served,
        what: "has CPU-jitter entropy timed with `rdtsc` and `RDRAND` draws in its C code; inside \
               a simulation its generator's entropy source is one that reads the seed \
               (sim-runtime's libc/aws_lc.rs), so that code is not reached",
        advice: "",
    },
    Known {
        name: "openssl-sys",
        shown: Shown::Native(Family::Tsc),
        what: "OpenSSL mixes the time-stamp counter (`OPENSSL_rdtsc`, in the nonce and \
               additional data its rand_unix.c adds to every generator) into its randomness, \
               in C code no interposer sees: keys, nonces and session tickets differ from run \
               to run of a seed",
        advice: "use rustls in simulated tests (on ring or aws-lc-rs), whose randomness is \
                 the seed's",
    },
];

/// A crate whose waits spin with no hand-off, and what its own remedy is.
pub(super) struct Spinner {
    pub(super) name: &'static str,
    /// How it waits, and what else it offers.
    pub(super) how: &'static str,
}

/// Crates known to wait by spinning alone: their lock, once and barrier
/// waits loop on an atomic with `pause` (`core::hint::spin_loop`) and
/// never call the futex or `sched_yield`. Read from their sources: spin's
/// default relax strategy (`spin::relax::Spin`) is the spin-loop hint
/// (`Yield`, behind its `std` feature, yields and is not counted, nor is
/// `Loop`, which executes no `pause` to find); spinning_top's `Spin` and
/// `Backoff` both spin, `Backoff` only longer. Not here, because they park
/// or yield after spinning a while: std's locks, parking_lot, crossbeam's
/// `Backoff::snooze`, rayon's idle workers.
pub(super) const SPINNERS: &[Spinner] = &[
    Spinner {
        name: "spin",
        how: "spin's Mutex, RwLock, Once, Lazy and Barrier, with its default relax strategy \
              (`spin::relax::Spin`; `spin::relax::Yield`, feature `std`, yields instead),",
    },
    Spinner {
        name: "spinning_top",
        how: "spinning_top's Spinlock and RwSpinlock (both of its relax strategies spin)",
    },
];

pub(super) fn spinner(name: &str) -> Option<&'static Spinner> {
    SPINNERS.iter().find(|s| s.name == name)
}

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
        // Threads are simulated: crates known only for starting them (and
        // C/C++ stores for their threads and pthread locks) are not here.
        for threads in [
            "rayon-core",
            "threadpool",
            "fjall",
            "reqwest",
            "tracing-appender",
            "coarsetime",
            "sled",
            "libsqlite3-sys",
            "librocksdb-sys",
            "crossbeam-channel",
        ] {
            assert!(known(threads).is_none(), "{threads} starts threads only");
        }
        // What remains says only its other reason.
        let quanta = known("quanta").unwrap();
        assert_eq!(quanta.shown, Shown::Linked(Family::Tsc));
        assert!(!quanta.what.contains("thread"), "{}", quanta.what);
        assert!(known("inotify").unwrap().what.contains("real disk"));
        assert!(KNOWN.iter().all(|k| !k.what.contains("refuses")));
        assert_eq!(known("minstant").unwrap().shown, Shown::Linked(Family::Tsc));
        assert!(spinner("spin").is_some() && spinner("spinning_top").is_some());
        for parks in ["parking_lot", "crossbeam-utils", "lock_api", "once_cell"] {
            assert!(spinner(parks).is_none(), "{parks} parks or yields");
        }
        let mut names: Vec<&str> = KNOWN.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KNOWN.len(), "one entry per crate");
        for k in KNOWN {
            assert!(!OURS.contains(&k.name), "{}", k.name);
            // A blocker always says what to do; a note (on request, or of
            // what the simulation serves) needs not.
            assert_eq!(
                k.advice.is_empty(),
                matches!(k.shown, Shown::OnRequest | Shown::Served),
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
