//! Interception of std and libc nondeterminism: inside a simulation thread
//! clocks, randomness, thread creation and the CPU count come from the
//! simulation; everywhere else they are the real ones.
//!
//! Every test here fails without the interposers in `simulation::intercept`:
//! without them, two runs with the same seed would draw different random
//! numbers, read different clocks and be allowed to start threads.
// The interposers exist only for x86_64 Linux with glibc.
#![cfg(all(
    simulation,
    target_os = "linux",
    target_arch = "x86_64",
    target_env = "gnu"
))]

use sim_runtime::__private::{
    set_now_for_test as set_now, thread_spawn_attempts_for_test as thread_spawn_attempts,
    with_intercept_for_test as with_intercept,
};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The wall clock at virtual time 0 that `with_intercept` installs:
/// 2026-01-01T00:00:00Z.
const WALL_BASE_NS: u128 = 1_767_225_600_000_000_000;

/// Environment variable that turns `child_print_values` on, carrying the seed.
const CHILD_SEED_VAR: &str = "SIM_INTERCEPT_TEST_CHILD_SEED";
/// Prefix of the line `child_print_values` prints its values on.
const CHILD_MARKER: &str = "SIM_INTERCEPT_VALUES ";

/// Draws from every random source the determinism contract names.
fn random_values() -> Vec<u64> {
    use rand08::Rng as _;
    use rand09::Rng as _;
    let mut values = vec![
        rand08::random::<u64>(),
        rand08::thread_rng().gen::<u64>(),
        rand09::random::<u64>(),
        rand09::rng().random::<u64>(),
    ];
    values.extend(hashmap_order());
    values
}

/// The iteration order of a std `HashMap` with 100 keys, which depends on
/// the `RandomState` keys std draws from `getrandom`.
fn hashmap_order() -> Vec<u64> {
    let map: HashMap<u64, ()> = (0..100).map(|k| (k, ())).collect();
    map.keys().copied().collect()
}

#[test]
fn random_values_depend_only_on_the_seed() {
    let first = with_intercept(7, random_values);
    let second = with_intercept(7, random_values);
    assert_eq!(first, second);

    let other = with_intercept(8, random_values);
    // Each of the first four is a full u64 draw; equal ones would mean the
    // seed is ignored.
    for (i, (a, b)) in first.iter().zip(&other).take(4).enumerate() {
        assert_ne!(a, b, "draw {i} does not depend on the seed");
    }
    assert_ne!(
        first[4..],
        other[4..],
        "HashMap order does not depend on the seed"
    );
}

#[test]
fn hashmap_order_is_deterministic_and_seeded() {
    let a = with_intercept(11, hashmap_order);
    let b = with_intercept(11, hashmap_order);
    let c = with_intercept(12, hashmap_order);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn libc_random_entry_points_are_seeded() {
    fn draw() -> Vec<u8> {
        let mut out = vec![0u8; 96];
        // SAFETY: each call writes at most 32 bytes into its own 32-byte chunk.
        unsafe {
            assert_eq!(libc::getrandom(out[0..].as_mut_ptr().cast(), 32, 0), 32);
            assert_eq!(libc::getentropy(out[32..].as_mut_ptr().cast(), 32), 0);
            let ret = libc::syscall(libc::SYS_getrandom, out[64..].as_mut_ptr(), 32usize, 0u32);
            assert_eq!(ret, 32);
        }
        out
    }
    assert_eq!(with_intercept(3, draw), with_intercept(3, draw));
    assert_ne!(with_intercept(3, draw), with_intercept(4, draw));
}

#[test]
fn dlsym_lookup_of_getrandom_is_seeded() {
    // getrandom 0.3 and 0.4 find libc's `getrandom` this way.
    fn draw() -> [u8; 32] {
        type GetrandomFn = unsafe extern "C" fn(*mut libc::c_void, usize, u32) -> isize;
        let mut out = [0u8; 32];
        // SAFETY: the name is NUL-terminated; the symbol, when found, is a
        // function with getrandom's C signature, and it writes 32 bytes into
        // a 32-byte buffer.
        unsafe {
            let ptr = libc::dlsym(libc::RTLD_DEFAULT, c"getrandom".as_ptr());
            assert!(!ptr.is_null());
            let getrandom = std::mem::transmute::<*mut libc::c_void, GetrandomFn>(ptr);
            assert_eq!(getrandom(out.as_mut_ptr().cast(), 32, 0), 32);
        }
        out
    }
    assert_eq!(with_intercept(5, draw), with_intercept(5, draw));
    assert_ne!(with_intercept(5, draw), with_intercept(6, draw));
}

#[test]
fn clocks_read_virtual_time() {
    let (a, wall_a, b, wall_b) = with_intercept(1, || {
        set_now(5_000_000_000);
        let a = Instant::now();
        let wall_a = SystemTime::now();
        set_now(6_500_000_000);
        (a, wall_a, Instant::now(), SystemTime::now())
    });
    assert_eq!(b - a, Duration::from_millis(1_500));
    assert_eq!(
        wall_b.duration_since(wall_a).unwrap(),
        Duration::from_millis(1_500)
    );
    let since_epoch = wall_a.duration_since(UNIX_EPOCH).unwrap().as_nanos();
    assert_eq!(since_epoch, WALL_BASE_NS + 5_000_000_000);

    // Another run at the same virtual time reads exactly the same clocks.
    let (a2, wall_a2) = with_intercept(2, || {
        set_now(5_000_000_000);
        (Instant::now(), SystemTime::now())
    });
    assert_eq!(a, a2);
    assert_eq!(wall_a, wall_a2);
}

#[test]
fn clock_does_not_move_without_the_simulation() {
    let (first, second) = with_intercept(1, || {
        let first = Instant::now();
        // Real time passes; virtual time does not.
        std::thread::sleep(Duration::from_millis(5));
        (first, Instant::now())
    });
    assert_eq!(first, second);
}

#[test]
fn libc_clock_entry_points_read_virtual_time() {
    let (boot, tv, t, cpu) = with_intercept(1, || {
        set_now(2_250_000_000);
        let mut boot = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        let mut cpu = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // Burn a little CPU so the thread's CPU clock is visibly non-zero.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        // SAFETY: each pointer is valid for writing its type, and
        // gettimeofday accepts a null timezone.
        unsafe {
            assert_eq!(libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut boot), 0);
            assert_eq!(libc::gettimeofday(&mut tv, std::ptr::null_mut()), 0);
            assert_eq!(
                libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut cpu),
                0
            );
            (boot, tv, libc::time(std::ptr::null_mut()), cpu)
        }
    });
    // Virtual time 0 is 1,000,000 s of monotonic "uptime".
    assert_eq!((boot.tv_sec, boot.tv_nsec), (1_000_002, 250_000_000));
    let base_s = (WALL_BASE_NS / 1_000_000_000) as i64;
    assert_eq!((tv.tv_sec, tv.tv_usec), (base_s + 2, 250_000));
    assert_eq!(t, base_s + 2);
    // CPU-time clocks are not simulated: they measure real work.
    assert!(cpu.tv_sec > 0 || cpu.tv_nsec > 0);
}

#[test]
fn clocks_are_real_before_and_after_a_simulation() {
    // On this thread, before and after a simulation ran on another one.
    let before = Instant::now();
    let wall_before = SystemTime::now();
    let inside = with_intercept(1, || {
        set_now(3_600_000_000_000);
        SystemTime::now()
    });
    assert_eq!(
        inside.duration_since(UNIX_EPOCH).unwrap().as_nanos(),
        WALL_BASE_NS + 3_600_000_000_000
    );
    std::thread::sleep(Duration::from_millis(20));
    let after = Instant::now();
    assert!(after - before >= Duration::from_millis(20));
    assert!(SystemTime::now().duration_since(wall_before).unwrap() >= Duration::from_millis(20));

    // The kernel stamps a new file with its own wall clock, which no
    // interposer can touch.
    let path = std::env::temp_dir().join(format!("sim-intercept-{}", std::process::id()));
    std::fs::write(&path, b"now").unwrap();
    let kernel_now = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::remove_file(&path).unwrap();
    let now = SystemTime::now();
    let skew = match now.duration_since(kernel_now) {
        Ok(d) => d,
        Err(e) => e.duration(),
    };
    assert!(
        skew < Duration::from_secs(2),
        "SystemTime::now is {skew:?} away from the kernel's clock"
    );
}

#[test]
fn another_thread_sees_real_values_while_a_simulation_runs() {
    use std::sync::Barrier;
    let entered = Barrier::new(2);
    let checked = Barrier::new(2);
    let (inside, elapsed, outside_wall, outside_random, spawned) = std::thread::scope(|s| {
        let simulation = s.spawn(|| {
            with_intercept(9, || {
                set_now(0);
                entered.wait();
                checked.wait();
                SystemTime::now()
            })
        });
        entered.wait();
        // The simulation thread is active right now; this one is not. The
        // values are only checked after `checked`, so that a failure here
        // cannot leave the simulation thread waiting forever.
        let a = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        let elapsed = a.elapsed();
        let wall = SystemTime::now();
        let mut random = [0u8; 32];
        // SAFETY: the buffer is valid for writing 32 bytes.
        let filled = unsafe { libc::getrandom(random.as_mut_ptr().cast(), 32, 0) };
        let spawned = std::thread::spawn(|| 42).join().ok();
        checked.wait();
        let inside = simulation.join().unwrap();
        assert_eq!(filled, 32);
        (inside, elapsed, wall, random, spawned)
    });
    assert_eq!(
        inside.duration_since(UNIX_EPOCH).unwrap().as_nanos(),
        WALL_BASE_NS
    );
    assert!(elapsed >= Duration::from_millis(5));
    assert_ne!(
        outside_wall.duration_since(UNIX_EPOCH).unwrap().as_nanos(),
        WALL_BASE_NS
    );
    assert_ne!(outside_random, [0u8; 32]);
    assert_eq!(spawned, Some(42));
}

#[test]
fn randomness_is_real_outside_a_simulation() {
    let inside = with_intercept(1, rand09::random::<u64>);
    assert_eq!(inside, with_intercept(1, rand09::random::<u64>));
    let a: u64 = rand09::random();
    let b: u64 = rand09::random();
    assert_ne!(a, b);
    assert_ne!(a, inside);
    let mut buf = [0u8; 32];
    // SAFETY: the buffer is valid for writing 32 bytes.
    unsafe { assert_eq!(libc::getrandom(buf.as_mut_ptr().cast(), 32, 0), 32) };
    assert_ne!(buf, [0u8; 32]);
}

#[test]
fn thread_spawn_fails_inside_and_works_outside() {
    let handle = std::thread::Builder::new().spawn(|| 40 + 2).unwrap();
    assert_eq!(handle.join().unwrap(), 42);

    let (err, attempts_after_builder, panicked, attempts) = with_intercept(1, || {
        let err = std::thread::Builder::new().spawn(|| 1).err();
        let attempts_after_builder = thread_spawn_attempts();
        let panicked = std::panic::catch_unwind(|| {
            std::thread::spawn(|| ());
        })
        .is_err();
        (
            err,
            attempts_after_builder,
            panicked,
            thread_spawn_attempts(),
        )
    });
    let err = err.expect("Builder::spawn succeeded inside a simulation");
    assert_eq!(err.raw_os_error(), Some(libc::EAGAIN));
    assert_eq!(attempts_after_builder, 1);
    assert!(panicked, "thread::spawn did not panic inside a simulation");
    assert_eq!(attempts, 2);

    // After the simulation, threads start again.
    assert_eq!(std::thread::spawn(|| 7).join().unwrap(), 7);
}

#[test]
fn available_parallelism_is_one_inside() {
    let (parallelism, cpus) = with_intercept(1, || {
        // SAFETY: an all-zero cpu_set_t is valid, and the pointer is valid
        // for writing one.
        let cpus = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set),
                0
            );
            libc::CPU_COUNT(&set)
        };
        (std::thread::available_parallelism().unwrap().get(), cpus)
    });
    assert_eq!(parallelism, 1);
    assert_eq!(cpus, 1);

    // SAFETY: as above, outside the simulation.
    let real = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set),
            0
        );
        libc::CPU_COUNT(&set)
    };
    assert!(real >= 1);
}

/// Everything a child process reports, as one line.
fn child_values(seed: u64) -> String {
    with_intercept(seed, || {
        set_now(1_234_567_891);
        let values = random_values();
        let mut bytes = [0u8; 16];
        // SAFETY: the buffer is valid for writing 16 bytes.
        unsafe { assert_eq!(libc::getrandom(bytes.as_mut_ptr().cast(), 16, 0), 16) };
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        format!("{values:?} {bytes:?} {:?} {wall}", Instant::now())
    })
}

/// The child half of `values_are_identical_across_processes`: prints its
/// values when the parent asked for them, and does nothing otherwise.
#[test]
fn child_print_values() {
    if let Ok(seed) = std::env::var(CHILD_SEED_VAR) {
        println!("{CHILD_MARKER}{}", child_values(seed.parse().unwrap()));
    }
}

#[test]
fn values_are_identical_across_processes() {
    let run_child = |seed: u64| -> String {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "intercept::child_print_values",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_SEED_VAR, seed.to_string())
            .output()
            .unwrap();
        assert!(output.status.success(), "child failed: {output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        stdout
            .lines()
            .find_map(|line| line.split_once(CHILD_MARKER).map(|(_, values)| values))
            .unwrap_or_else(|| panic!("child printed no values: {stdout}"))
            .to_owned()
    };
    let first = run_child(42);
    let second = run_child(42);
    assert_eq!(first, second);
    // This process agrees with both children.
    assert_eq!(first, child_values(42));
    assert_ne!(first, run_child(43));
}
