//! Interposition of the libc functions through which std and common crates
//! reach the clocks, the kernel's randomness and OS threads.
//!
//! The functions below are `#[no_mangle]` definitions of libc symbols. They
//! live in this rlib, so the static linker binds every reference from the
//! executable (std included) to them instead of to glibc's shared-library
//! definitions. Each one asks [`hooks::active`] whether the calling thread is
//! inside a simulation:
//!
//! - inside, it answers from the simulation (virtual clocks, the seeded
//!   stream, one CPU; threads are simulated, libc/thread.rs);
//! - outside (any other thread, or the same thread before `activate` and
//!   after `deactivate`), it calls the real glibc function, found once with
//!   `dlsym(RTLD_NEXT, ..)`, or issues the raw system call for `syscall`.
//!
//! What reaches what (Rust 1.95, glibc 2.36, checked on this target):
//!
//! | caller                                   | libc entry point                         |
//! |------------------------------------------|------------------------------------------|
//! | `Instant::now`, `SystemTime::now`        | `clock_gettime`                          |
//! | std `HashMap` keys, `std::random`        | `getrandom`, a weak symbol in std        |
//! | getrandom 0.2 (rand 0.8)                 | `syscall(SYS_getrandom, ..)`             |
//! | getrandom 0.3 / 0.4 (rand 0.9)           | `dlsym(RTLD_DEFAULT, "getrandom")`       |
//! | `std::thread::spawn`, std's locks        | `pthread_create`, `syscall(SYS_futex)`: libc/thread.rs |
//! | `std::net`, socket2, any real socket      | `socket`: an INET stream/datagram is a stub (net/fd.rs, libc/net.rs), else refused |
//! | `ToSocketAddrs`, hyper-util's resolver    | `getaddrinfo`: the simulated network's names (libc/net.rs) |
//! | `std::thread::available_parallelism`     | `sched_getaffinity` (after cgroup files) |
//! | `libc::kill(getpid(), ..)`, nix's `kill` | `kill` (to the own process: the node's signal) |
//! | `libc::raise`, signal-hook's `raise`     | `raise` (the node's signal)              |
//! | `std::fs`, libc file calls               | `open`, `read`, `stat`, `rename`, …: the node's simulated disk (libc/fs/) |
//!
//! `dlsym` itself needs no interposer: a symbol that an executable defines
//! and a linked shared library (here libc.so.6) also defines is exported to
//! the executable's dynamic symbol table (GNU ld and LLD both do this), and
//! the executable comes first in the global lookup scope, so
//! `dlsym(RTLD_DEFAULT, "getrandom")` already returns the definition below.
//! Not interposing `dlsym` also keeps `RTLD_NEXT` lookups made by other
//! shared objects (LD_PRELOAD profilers) exactly as they are.
//!
//! Only x86_64 Linux with glibc is supported: on every other target this
//! module defines no symbols, so the crate still builds there, but std's
//! nondeterminism is not intercepted.

use crate::simulation::core::hooks;

/// The wall clock at virtual time 0 in [`with_intercept_for_test`]:
/// 2026-01-01T00:00:00Z.
const TEST_WALL_BASE_NS: u64 = 1_767_225_600_000_000_000;

/// Runs `f` on a fresh OS thread with interception active (seeded with
/// `seed`, wall clock at virtual time 0 = 2026-01-01T00:00:00Z) and returns
/// its result. A panic in `f` is resumed on the caller's thread, so test
/// assertions inside `f` fail the calling test with their own message.
///
/// This is the entry point for the interception tests, which cannot depend
/// on the executor; the executor itself calls [`hooks::activate`] directly.
pub(crate) fn with_intercept_for_test<R: Send>(seed: u64, f: impl FnOnce() -> R + Send) -> R {
    /// Deactivates interception when dropped, so that the thread's exit
    /// (including an unwinding one) runs with the real functions again.
    struct Deactivate;
    impl Drop for Deactivate {
        fn drop(&mut self) {
            hooks::deactivate();
        }
    }

    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name(format!("sim-intercept-test-{seed}"))
            .spawn_scoped(scope, move || {
                hooks::activate(seed, TEST_WALL_BASE_NS);
                let _deactivate = Deactivate;
                f()
            })
            .expect("sim: could not start the OS thread for an interception test");
        match thread.join() {
            Ok(value) => value,
            Err(payload) => std::panic::resume_unwind(payload),
        }
    })
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
pub(crate) use linux::{fatal, set_errno, Real};

#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
mod linux {
    use super::hooks;
    use libc::{c_int, c_long, c_uint, c_void, size_t, ssize_t};
    use std::ffi::CStr;
    use std::sync::atomic::{AtomicPtr, Ordering};

    const REAL_SOCKET_MESSAGE: &[u8] = b"sim: a simulated task tried to open a real OS socket \
(std::net, real DNS, or a crate with its own networking); real sockets are outside the \
simulation's network and would make the run nondeterministic. Use tokio::net (simulated) \
instead; see docs/breakage.md.\n";

    /// `getentropy` refuses requests larger than this (glibc and POSIX agree).
    const GETENTROPY_MAX: usize = 256;

    /// Every flag the kernel's `getrandom` accepts.
    const GRND_ALL: c_uint = libc::GRND_NONBLOCK | libc::GRND_RANDOM | libc::GRND_INSECURE;

    /// The kernel reports errors from a system call as a return value in
    /// `-4095..=-1`; glibc's `syscall` turns those into `errno` and `-1`.
    const MAX_ERRNO: c_long = 4095;

    // ----------------------------------------------------------------------
    // Finding the real functions.
    // ----------------------------------------------------------------------

    type ClockGettimeFn = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> c_int;
    type GettimeofdayFn = unsafe extern "C" fn(*mut libc::timeval, *mut c_void) -> c_int;
    type TimeFn = unsafe extern "C" fn(*mut libc::time_t) -> libc::time_t;
    type GetrandomFn = unsafe extern "C" fn(*mut c_void, size_t, c_uint) -> ssize_t;
    type GetentropyFn = unsafe extern "C" fn(*mut c_void, size_t) -> c_int;
    type SocketFn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
    type KillFn = unsafe extern "C" fn(libc::pid_t, c_int) -> c_int;
    type RaiseFn = unsafe extern "C" fn(c_int) -> c_int;
    type SchedGetaffinityFn =
        unsafe extern "C" fn(libc::pid_t, size_t, *mut libc::cpu_set_t) -> c_int;

    /// Writes `parts` to stderr and aborts. Used where the process cannot
    /// continue correctly (a libc function that must exist is missing), and
    /// from inside C-ABI functions, where a panic could not unwind anyway.
    pub(crate) fn fatal(parts: &[&[u8]]) -> ! {
        for part in parts {
            // SAFETY: `part` is a valid, initialised byte slice for its whole
            // length; a failed or short write to stderr is acceptable here.
            unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
        }
        // SAFETY: `abort` has no preconditions.
        unsafe { libc::abort() }
    }

    /// The next definition (after this executable, so glibc's) of one libc
    /// function, looked up on first use and cached for the process.
    pub(crate) struct Real {
        name: &'static CStr,
        ptr: AtomicPtr<c_void>,
    }

    impl Real {
        pub(crate) const fn new(name: &'static CStr) -> Self {
            Self {
                name,
                ptr: AtomicPtr::new(std::ptr::null_mut()),
            }
        }

        /// The function's address; never null.
        #[inline]
        pub(crate) fn get(&self) -> *mut c_void {
            let ptr = self.ptr.load(Ordering::Acquire);
            if ptr.is_null() {
                self.resolve()
            } else {
                ptr
            }
        }

        #[cold]
        fn resolve(&self) -> *mut c_void {
            // SAFETY: `name` is NUL-terminated and RTLD_NEXT is a valid
            // pseudo-handle. `dlsym` is called from this executable, so
            // RTLD_NEXT means "the objects loaded after it", i.e. glibc.
            let ptr = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
            if ptr.is_null() {
                fatal(&[b"sim: cannot find glibc's ", self.name.to_bytes(), b"\n"]);
            }
            // Racing threads store the same address, so either store wins.
            self.ptr.store(ptr, Ordering::Release);
            ptr
        }
    }

    static REAL_CLOCK_GETTIME: Real = Real::new(c"clock_gettime");
    static REAL_GETTIMEOFDAY: Real = Real::new(c"gettimeofday");
    static REAL_TIME: Real = Real::new(c"time");
    static REAL_GETRANDOM: Real = Real::new(c"getrandom");
    static REAL_GETENTROPY: Real = Real::new(c"getentropy");
    static REAL_SCHED_GETAFFINITY: Real = Real::new(c"sched_getaffinity");
    static REAL_SOCKET: Real = Real::new(c"socket");
    static REAL_KILL: Real = Real::new(c"kill");
    static REAL_RAISE: Real = Real::new(c"raise");

    /// Sets the calling thread's `errno`.
    pub(crate) fn set_errno(code: c_int) {
        // SAFETY: `__errno_location` always returns a valid pointer to the
        // calling thread's errno.
        unsafe { *libc::__errno_location() = code };
    }

    // ----------------------------------------------------------------------
    // Clocks.
    // ----------------------------------------------------------------------

    /// Which simulated clock answers a clock id; `None` for the CPU-time
    /// clocks (and any unknown id), which keep their real answers.
    fn simulated_clock(clock: libc::clockid_t) -> Option<fn() -> u64> {
        match clock {
            libc::CLOCK_MONOTONIC
            | libc::CLOCK_MONOTONIC_RAW
            | libc::CLOCK_MONOTONIC_COARSE
            | libc::CLOCK_BOOTTIME
            | libc::CLOCK_BOOTTIME_ALARM => Some(hooks::mono_ns),
            libc::CLOCK_REALTIME
            | libc::CLOCK_REALTIME_COARSE
            | libc::CLOCK_REALTIME_ALARM
            | libc::CLOCK_TAI => Some(hooks::wall_ns),
            _ => None,
        }
    }

    const NANOS_PER_SEC: u64 = 1_000_000_000;

    /// `clock_gettime(2)`: the monotonic and boot clocks read the node's
    /// virtual monotonic clock, the realtime and TAI clocks its virtual wall
    /// clock. This is what `Instant::now` and `SystemTime::now` call.
    ///
    /// # Safety
    ///
    /// The C contract: `tp` is null or valid for writing one `timespec`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn clock_gettime(
        clock: libc::clockid_t,
        tp: *mut libc::timespec,
    ) -> c_int {
        if hooks::active() {
            if let Some(read) = simulated_clock(clock) {
                if tp.is_null() {
                    set_errno(libc::EFAULT);
                    return -1;
                }
                let ns = read();
                // SAFETY: `tp` is non-null and, by the caller's contract,
                // valid for writing a `timespec`.
                unsafe {
                    *tp = libc::timespec {
                        tv_sec: (ns / NANOS_PER_SEC) as libc::time_t,
                        tv_nsec: (ns % NANOS_PER_SEC) as libc::c_long,
                    };
                }
                return 0;
            }
        }
        // SAFETY: the pointer is glibc's `clock_gettime`, and the arguments
        // are passed through unchanged under the caller's contract.
        unsafe {
            std::mem::transmute::<*mut c_void, ClockGettimeFn>(REAL_CLOCK_GETTIME.get())(clock, tp)
        }
    }

    /// `gettimeofday(2)`: the virtual wall clock, in microseconds.
    ///
    /// # Safety
    ///
    /// The C contract: `tv` is null or valid for writing one `timeval`; `tz`
    /// is null or valid for writing one `struct timezone`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn gettimeofday(tv: *mut libc::timeval, tz: *mut c_void) -> c_int {
        if hooks::active() {
            let ns = hooks::wall_ns();
            if !tv.is_null() {
                // SAFETY: `tv` is non-null and, by the caller's contract,
                // valid for writing a `timeval`.
                unsafe {
                    *tv = libc::timeval {
                        tv_sec: (ns / NANOS_PER_SEC) as libc::time_t,
                        tv_usec: ((ns % NANOS_PER_SEC) / 1_000) as libc::suseconds_t,
                    };
                }
            }
            if !tz.is_null() {
                // glibc (since 2.31) reports an all-zero obsolete timezone.
                // SAFETY: `tz` is non-null and, by the caller's contract,
                // valid for writing a `struct timezone`.
                unsafe { tz.cast::<libc::timezone>().write_bytes(0, 1) };
            }
            return 0;
        }
        // SAFETY: the pointer is glibc's `gettimeofday`, and the arguments
        // are passed through unchanged under the caller's contract.
        unsafe {
            std::mem::transmute::<*mut c_void, GettimeofdayFn>(REAL_GETTIMEOFDAY.get())(tv, tz)
        }
    }

    /// `time(2)`: the virtual wall clock, in whole seconds.
    ///
    /// # Safety
    ///
    /// The C contract: `t` is null or valid for writing one `time_t`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn time(t: *mut libc::time_t) -> libc::time_t {
        if hooks::active() {
            let secs = (hooks::wall_ns() / NANOS_PER_SEC) as libc::time_t;
            if !t.is_null() {
                // SAFETY: `t` is non-null and, by the caller's contract,
                // valid for writing a `time_t`.
                unsafe { *t = secs };
            }
            return secs;
        }
        // SAFETY: the pointer is glibc's `time`, and the argument is passed
        // through unchanged under the caller's contract.
        unsafe { std::mem::transmute::<*mut c_void, TimeFn>(REAL_TIME.get())(t) }
    }

    // ----------------------------------------------------------------------
    // Randomness.
    // ----------------------------------------------------------------------

    /// Fills `len` bytes at `buf` from the seeded stream. Returns `false`
    /// when the thread is not (or no longer) in a simulation.
    ///
    /// # Safety
    ///
    /// `buf` is valid for writing `len` bytes (it may be dangling if `len`
    /// is 0).
    unsafe fn fill_simulated(buf: *mut c_void, len: size_t) -> bool {
        if len == 0 {
            return hooks::active();
        }
        // SAFETY: `buf` is valid for writing `len` bytes (caller's
        // contract), every byte pattern is a valid `u8`, and nothing else
        // accesses the buffer during the call.
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        hooks::fill_random(bytes)
    }

    /// `getrandom(2)`, the glibc wrapper: inside a simulation the seeded
    /// stream answers in full and never blocks, whatever the flags.
    ///
    /// # Safety
    ///
    /// The C contract: `buf` is valid for writing `len` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn getrandom(buf: *mut c_void, len: size_t, flags: c_uint) -> ssize_t {
        if hooks::active() {
            // Reject what the kernel rejects, so code that probes for flag
            // support (std probes GRND_INSECURE) takes the same path.
            let both = libc::GRND_INSECURE | libc::GRND_RANDOM;
            if flags & !GRND_ALL != 0 || flags & both == both {
                set_errno(libc::EINVAL);
                return -1;
            }
            if buf.is_null() && len != 0 {
                set_errno(libc::EFAULT);
                return -1;
            }
            let len = len.min(isize::MAX as usize);
            // SAFETY: `buf` is non-null when `len` > 0 and, by the caller's
            // contract, valid for writing `len` bytes.
            if unsafe { fill_simulated(buf, len) } {
                return len as ssize_t;
            }
        }
        // SAFETY: the pointer is glibc's `getrandom`, and the arguments are
        // passed through unchanged under the caller's contract.
        unsafe {
            std::mem::transmute::<*mut c_void, GetrandomFn>(REAL_GETRANDOM.get())(buf, len, flags)
        }
    }

    /// `getentropy(3)`: at most 256 bytes, all or nothing.
    ///
    /// # Safety
    ///
    /// The C contract: `buf` is valid for writing `len` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn getentropy(buf: *mut c_void, len: size_t) -> c_int {
        if hooks::active() {
            if len > GETENTROPY_MAX {
                set_errno(libc::EIO);
                return -1;
            }
            if buf.is_null() && len != 0 {
                set_errno(libc::EFAULT);
                return -1;
            }
            // SAFETY: `buf` is non-null when `len` > 0 and, by the caller's
            // contract, valid for writing `len` bytes.
            if unsafe { fill_simulated(buf, len) } {
                return 0;
            }
        }
        // SAFETY: the pointer is glibc's `getentropy`, and the arguments are
        // passed through unchanged under the caller's contract.
        unsafe { std::mem::transmute::<*mut c_void, GetentropyFn>(REAL_GETENTROPY.get())(buf, len) }
    }

    /// Issues a raw system call with six arguments, exactly as glibc's
    /// `syscall` does, and returns the kernel's raw result (`-errno` on
    /// failure).
    ///
    /// # Safety
    ///
    /// The system call's own contract for `num` and its arguments.
    #[inline]
    unsafe fn raw_syscall6(
        num: c_long,
        a1: c_long,
        a2: c_long,
        a3: c_long,
        a4: c_long,
        a5: c_long,
        a6: c_long,
    ) -> c_long {
        let ret: c_long;
        // SAFETY: this is the x86_64 Linux system-call convention (number
        // in rax, arguments in rdi, rsi, rdx, r10, r8, r9; rcx and r11
        // clobbered by the instruction). The asm may read and write memory
        // (no `nomem`/`readonly`), because system calls do; whether the
        // call itself is sound is the caller's contract.
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") num => ret,
                in("rdi") a1,
                in("rsi") a2,
                in("rdx") a3,
                in("r10") a4,
                in("r8") a5,
                in("r9") a6,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret
    }

    /// `syscall(2)`, the variadic glibc wrapper, declared with six fixed
    /// `long` arguments: in the x86_64 SysV ABI a variadic call passes them
    /// in the same registers and stack slot, so every caller of the variadic
    /// function reaches these parameters unchanged (unused ones hold
    /// whatever the caller left there, which glibc passes on as well).
    ///
    /// `SYS_getrandom` inside a simulation is answered from the seeded
    /// stream (getrandom 0.2, hence rand 0.8, calls it this way). Every
    /// other call, and every call outside a simulation, goes to the kernel
    /// directly. `SYS_futex` inside a simulation is the simulated threads'
    /// (libc/thread.rs).
    ///
    /// # Safety
    ///
    /// The system call's own contract for `num` and its arguments.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn syscall(
        num: c_long,
        a1: c_long,
        a2: c_long,
        a3: c_long,
        a4: c_long,
        a5: c_long,
        a6: c_long,
    ) -> c_long {
        if num == libc::SYS_futex {
            // SAFETY: the arguments are those of futex(2), whose contract the
            // caller upholds.
            if let Some(ret) = unsafe { super::super::thread::futex(a1, a2, a3, a4, a5, a6) } {
                return ret;
            }
        }
        if num == libc::SYS_getrandom && hooks::active() {
            // The flags are a C `unsigned int`: only the low 32 bits of the
            // register are defined, so the truncation is intended.
            // SAFETY: the arguments are those of getrandom(2), whose contract
            // the caller upholds.
            return unsafe { getrandom(a1 as *mut c_void, a2 as size_t, a3 as c_uint) } as c_long;
        }
        if crate::simulation::fs::fd::in_range(a1 as c_int)
            && crate::simulation::fs::fd::is_open(a1 as c_int)
        {
            // SAFETY: the caller upholds the system call's contract, which
            // is the C function's the call is routed to.
            return unsafe { super::super::fs::file_syscall(num, a1, a2, a3, a4) };
        }
        // SAFETY: forwarded unchanged; the caller upholds the system call's
        // contract, exactly as with glibc's `syscall`.
        let ret = unsafe { raw_syscall6(num, a1, a2, a3, a4, a5, a6) };
        if (-MAX_ERRNO..0).contains(&ret) {
            set_errno(-ret as c_int);
            -1
        } else {
            ret
        }
    }

    // ----------------------------------------------------------------------
    // Threads and CPUs.
    // ----------------------------------------------------------------------

    /// `socket(2)`: inside a simulation an IPv4 or IPv6 stream or datagram
    /// socket is a stub (net/fd.rs), which Tokio's `from_std` functions turn
    /// into a simulated socket; any other kind is refused (`EACCES`) and
    /// recorded so the run fails as a forbidden operation: a real socket
    /// would reach the host's network, outside the seed's control.
    ///
    /// # Safety
    ///
    /// The C contract of `socket`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
        if hooks::active() {
            let base = ty & !(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK);
            let inet = domain == libc::AF_INET || domain == libc::AF_INET6;
            if inet && (base == libc::SOCK_STREAM || base == libc::SOCK_DGRAM) {
                let v6 = domain == libc::AF_INET6;
                let nonblocking = ty & libc::SOCK_NONBLOCK != 0;
                return match crate::simulation::net::fd::open(
                    v6,
                    base == libc::SOCK_STREAM,
                    nonblocking,
                ) {
                    Some(fd) => fd,
                    None => {
                        set_errno(libc::EMFILE);
                        -1
                    }
                };
            }
            hooks::note_real_socket_attempt();
            // SAFETY: the message is a valid byte slice for its whole length.
            unsafe {
                libc::write(
                    2,
                    REAL_SOCKET_MESSAGE.as_ptr().cast(),
                    REAL_SOCKET_MESSAGE.len(),
                )
            };
            set_errno(libc::EACCES);
            return -1;
        }
        // SAFETY: the pointer is glibc's `socket`; the arguments pass through.
        unsafe {
            std::mem::transmute::<*mut c_void, SocketFn>(REAL_SOCKET.get())(domain, ty, protocol)
        }
    }

    /// `sched_getaffinity(2)`, the glibc wrapper: inside a simulation the
    /// node's machine has its CPUs (`sim::node(..).cpus(n)`, default 1:
    /// CPUs 0..n), so `available_parallelism()` is the node's count on every
    /// machine. (std reads the cgroup CPU quota files first; inside a
    /// simulation they are the node's disk, where they do not exist, so they
    /// never lower the count.)
    ///
    /// # Safety
    ///
    /// The C contract: `mask` is valid for writing `size` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn sched_getaffinity(
        pid: libc::pid_t,
        size: size_t,
        mask: *mut libc::cpu_set_t,
    ) -> c_int {
        if hooks::active() {
            // The kernel wants whole `unsigned long` words, at least one bit
            // per possible CPU (and tests the size with this mask).
            let word = std::mem::size_of::<libc::c_ulong>();
            if size == 0 || size & (word - 1) != 0 {
                set_errno(libc::EINVAL);
                return -1;
            }
            if mask.is_null() {
                set_errno(libc::EFAULT);
                return -1;
            }
            let cpus = (crate::simulation::control::current_cpus() as usize).min(size * 8);
            // SAFETY: `mask` is non-null and, by the caller's contract, valid
            // for writing `size` (> 0) bytes; bit i of byte i/8 is CPU i,
            // and `cpus` fits in them.
            unsafe {
                let bytes = mask.cast::<u8>();
                bytes.write_bytes(0, size);
                for cpu in 0..cpus {
                    *bytes.add(cpu / 8) |= 1 << (cpu % 8);
                }
            }
            return 0;
        }
        // SAFETY: the pointer is glibc's `sched_getaffinity`, and the
        // arguments are passed through unchanged under the caller's contract.
        unsafe {
            std::mem::transmute::<*mut c_void, SchedGetaffinityFn>(REAL_SCHED_GETAFFINITY.get())(
                pid, size, mask,
            )
        }
    }

    // ----------------------------------------------------------------------
    // Signals to the own process.
    // ----------------------------------------------------------------------

    /// Answers a signal that simulated code sends to its own process, or
    /// `None` when no simulation runs here (the real call follows).
    fn raise_simulated(sig: c_int) -> Option<c_int> {
        use crate::simulation::signal::{raise_on_current_node, Raised};
        match raise_on_current_node(sig) {
            Raised::Outside => None,
            Raised::Sent => Some(0),
            Raised::Invalid => {
                set_errno(libc::EINVAL);
                Some(-1)
            }
        }
    }

    /// `kill(2)`: inside a simulation, a signal to the own process
    /// (`pid == getpid()`) goes to the calling node as the simulation's
    /// signal (see `signal::raise_on_current_node`); it never reaches the
    /// OS, where a SIGTERM or SIGUSR1 would end the whole test process.
    /// Signals to other processes are real.
    ///
    /// # Safety
    ///
    /// The C contract of `kill`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn kill(pid: libc::pid_t, sig: c_int) -> c_int {
        // SAFETY: `getpid` has no preconditions.
        if hooks::active() && pid == unsafe { libc::getpid() } {
            if let Some(ret) = raise_simulated(sig) {
                return ret;
            }
        }
        // SAFETY: the pointer is glibc's `kill`; the arguments pass through.
        unsafe { std::mem::transmute::<*mut c_void, KillFn>(REAL_KILL.get())(pid, sig) }
    }

    /// `raise(3)`: inside a simulation, the calling node's signal, as
    /// [`kill`] to the own process.
    ///
    /// # Safety
    ///
    /// The C contract of `raise`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn raise(sig: c_int) -> c_int {
        if hooks::active() {
            if let Some(ret) = raise_simulated(sig) {
                return ret;
            }
        }
        // SAFETY: the pointer is glibc's `raise`; the argument passes through.
        unsafe { std::mem::transmute::<*mut c_void, RaiseFn>(REAL_RAISE.get())(sig) }
    }
}
