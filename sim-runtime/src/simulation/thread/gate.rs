//! The baton's hand-off between two real OS threads: a one-word gate one
//! side opens and the other waits at, on the kernel's futex.
//!
//! The waits, wakes and yields are raw system calls, not `libc::syscall`:
//! inside a simulation that symbol is the interposer (libc/sys.rs), which
//! would simulate the very wait that implements the simulation. Keeping a
//! thread on its executor's CPU ([`follow`]) calls glibc's own wrappers,
//! which no interposer answers.

use std::sync::atomic::{AtomicU32, Ordering};

/// How the executor's thread waits for a simulated thread to hand the
/// baton back: this many `sched_yield`s, then asleep in the kernel. The
/// thread runs on the executor's CPU ([`follow`]), so each yield lets it
/// run there at once, and the executor is still awake, with no wake-up to
/// pay, when a short turn ends (most turns run only until the thread
/// blocks again). Spinning first (200 spins, about 5 µs, until session
/// 28) only kept the thread off the CPU it shares with the executor.
/// docs/perf.md, issue 35 item 9, has the measurements.
const EXEC_YIELDS: u32 = 500;

/// The gate's word: shut, open, or shut with its waiter asleep in the
/// kernel (only then does opening make a system call).
const SHUT: u32 = 0;
const OPEN: u32 = 1;
const ASLEEP: u32 = 2;

pub(crate) struct Gate(AtomicU32);

impl Gate {
    pub(crate) const fn new() -> Gate {
        Gate(AtomicU32::new(SHUT))
    }

    /// Lets the waiter through (once). Everything written before this is
    /// visible to the waiter after its `wait` returns.
    pub(crate) fn open(&self) {
        if self.0.swap(OPEN, Ordering::Release) == ASLEEP {
            futex(&self.0, libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1);
        }
    }

    /// Passes the gate if it is open, closing it behind.
    fn try_pass(&self) -> bool {
        self.0.load(Ordering::Relaxed) == OPEN
            && self
                .0
                .compare_exchange(OPEN, SHUT, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// A simulated thread waits for its next turn: asleep in the kernel at
    /// once. Its turn seldom comes within microseconds (the seed picks
    /// among everything runnable), and a thread spinning meanwhile takes a
    /// core from the executor and the thread it woke.
    pub(crate) fn wait(&self) {
        loop {
            if self.try_pass() {
                return;
            }
            match self
                .0
                .compare_exchange(SHUT, ASLEEP, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) | Err(ASLEEP) => {
                    futex(&self.0, libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, ASLEEP)
                }
                Err(_) => {}
            }
        }
    }

    /// The executor's thread waits for the baton: yields, then sleeps (see
    /// [`EXEC_YIELDS`]).
    pub(crate) fn wait_awake(&self) {
        for _ in 0..EXEC_YIELDS {
            if self.try_pass() {
                return;
            }
            sched_yield();
        }
        self.wait();
    }
}

/// Keeps a simulated thread on the CPU its executor's OS thread runs on,
/// called by the executor before each of the thread's turns: if that is
/// another CPU than the one the thread was last allowed (`cpu`; -1 before
/// its first turn), the thread is now allowed that one only. If the kernel
/// refuses (a sandbox that forbids the call), `cpu` becomes -2 and the
/// thread is never asked again: it stays where it may run, as before.
///
/// Only one of them runs at a time, so sharing a CPU costs no parallelism,
/// and each hand-off becomes a switch on one CPU: no other CPU, asleep
/// when idle, has to be woken for it (on this 2-CPU machine a hand-off
/// went from about 15 µs to about 6; docs/perf.md). The executor's own
/// thread is never pinned: the kernel still places it (and a harness's
/// workers apart), and its threads follow. The program sees none of it:
/// `sched_getaffinity` answers with the node's CPUs (libc/sys.rs).
pub(crate) fn follow(cpu: &std::cell::Cell<i32>, pthread: libc::pthread_t) {
    if cpu.get() == REFUSED {
        return;
    }
    // SAFETY: no preconditions (glibc reads the CPU from rseq or the vDSO).
    let now = unsafe { libc::sched_getcpu() };
    if now < 0 || now == cpu.get() || now as usize >= libc::CPU_SETSIZE as usize {
        return;
    }
    // SAFETY: a zeroed `cpu_set_t` is the empty set, and `now` is below
    // its size; `pthread` is a live thread of this process, joined only
    // after its last turn (the caller checks it is not yet joined).
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(now as usize, &mut set);
        libc::pthread_setaffinity_np(pthread, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    cpu.set(if ok { now } else { REFUSED });
}

/// [`follow`]'s mark of a thread the kernel would not pin.
const REFUSED: i32 = -2;

/// `sched_yield(2)` as a raw system call (the symbol is the interposer).
fn sched_yield() {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    // SAFETY: `sched_yield` takes no arguments and touches no memory.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_sched_yield => _,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
}

/// `futex(2)` with no timeout, as a raw system call. A failed wait
/// (`EAGAIN`: the word already changed; `EINTR`) is retried by the caller's
/// loop, so the result is not needed.
fn futex(word: &AtomicU32, op: i32, val: u32) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    // SAFETY: the x86_64 Linux system-call convention (number in rax,
    // arguments in rdi, rsi, rdx, r10; rcx and r11 clobbered). `word` is a
    // live, aligned 32-bit atomic for the whole call; a null timeout means
    // none; the kernel reads the word and writes nothing.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_futex => _,
            in("rdi") word.as_ptr(),
            in("rsi") op,
            in("rdx") val,
            in("r10") 0usize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = (word, op, val);
        std::thread::yield_now();
    }
}

pub(crate) use crate::simulation::core::outside::wait_outside;

/// Wakes up to `n` of the kernel's waiters on `word` (shared and private
/// ones both); returns how many.
pub(crate) fn wake_outside(word: *const u32, n: u32) -> u32 {
    let mut woken = 0;
    for op in [
        libc::FUTEX_WAKE,
        libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
    ] {
        if woken >= n {
            break;
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let ret: i64;
            // SAFETY: as in `futex`; a wake only reads the address.
            unsafe {
                std::arch::asm!(
                    "syscall",
                    inlateout("rax") libc::SYS_futex => ret,
                    in("rdi") word,
                    in("rsi") op,
                    in("rdx") n - woken,
                    lateout("rcx") _,
                    lateout("r11") _,
                    options(nostack),
                );
            }
            if ret > 0 {
                woken += ret as u32;
            }
        }
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
        let _ = (word, op);
    }
    woken
}

/// Ends the calling OS thread at once, running nothing of it: no
/// destructor, no thread-local's, no unwinding. For a simulated thread whose
/// node died: it must never run again. The kernel clears the thread's id
/// word, so a real `pthread_join` of it returns and frees its stack; its
/// alternate signal stack goes back to the pool (altstack.rs).
pub(crate) fn exit_thread_now() -> ! {
    super::altstack::release();
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    // SAFETY: `exit(2)` ends only the calling thread; it never returns, so
    // nothing of this thread's stack is used again.
    unsafe {
        std::arch::asm!(
            "syscall",
            in("rax") libc::SYS_exit,
            in("rdi") 0,
            options(noreturn, nostack),
        );
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::{follow, Gate};
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// The CPUs the calling thread may run on (outside any simulation,
    /// `sched_getaffinity` is the kernel's).
    fn allowed() -> Vec<usize> {
        // SAFETY: a zeroed set is valid; the call fills it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    /// A thread made to follow is allowed exactly the CPU its caller ran on,
    /// the one `follow` remembers.
    #[test]
    fn a_thread_made_to_follow_may_run_only_on_its_callers_cpu() {
        let (go, wait) = mpsc::channel::<()>();
        let (seen, report) = mpsc::channel();
        let t = std::thread::spawn(move || {
            wait.recv().unwrap();
            seen.send(allowed()).unwrap();
        });
        let cpu = std::cell::Cell::new(-1);
        follow(&cpu, t.as_pthread_t());
        assert!(cpu.get() >= 0, "the kernel allowed the caller's CPU");
        go.send(()).unwrap();
        assert_eq!(report.recv().unwrap(), vec![cpu.get() as usize]);
        t.join().unwrap();
    }

    /// Two OS threads hand a turn back and forth through two gates, one
    /// side waiting as a simulated thread does (asleep at once), the other
    /// as the executor's thread does (yielding, then asleep), and
    /// now and then late to its wait: no opening is lost, whether its
    /// waiter is awake, asleep, or not waiting yet.
    #[test]
    fn every_opening_lets_its_waiter_through() {
        const TURNS: u32 = 20_000;
        let (done, finished) = mpsc::channel();
        std::thread::spawn(move || {
            let gates = Arc::new((Gate::new(), Gate::new()));
            let g = gates.clone();
            let other = std::thread::spawn(move || {
                for i in 0..TURNS {
                    g.0.wait();
                    if i % 7 == 0 {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    g.1.open();
                }
            });
            for i in 0..TURNS {
                gates.0.open();
                if i % 5 == 0 {
                    std::thread::sleep(Duration::from_micros(50));
                }
                gates.1.wait_awake();
            }
            other.join().unwrap();
            done.send(()).unwrap();
        });
        assert!(
            finished.recv_timeout(Duration::from_secs(60)).is_ok(),
            "a gate's waiter missed its opening"
        );
    }
}
