//! A seed's run does not depend on what ran before it on the same thread.
//!
//! An executor hands its emptied containers (task slab, run queue, timer
//! vectors) to the next executor on its thread (core/executor/spare.rs, issue
//! 26). These tests run the same seeds on a fresh thread each, in order on
//! one thread, in reverse and shuffled orders on others (with a large
//! simulation between seeds, so the kept containers are full-sized and
//! dirty), and on two threads at once, and require every seed's
//! fingerprint and outcome to be the same everywhere.

use crate::run;
use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{TcpListener, TcpStream};
use sim_runtime::sim;
use sim_runtime::time::{self, Duration};
use std::collections::BTreeMap;

/// Tasks that sleep to shared and to their own deadlines, yield, abort,
/// OS threads that hand off over a std lock and sleep, fastrand draws, and a TCP echo
/// between two nodes: what a seed draws reaches its
/// fingerprint, and the values it returns show the order things happened.
async fn mixed() -> (u64, Vec<u64>) {
    let server = sim::node("server").build();
    sim::spawn_on(server, async {
        let l = TcpListener::bind("0.0.0.0:7").await.unwrap();
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = [0u8; 16];
        while s.read_exact(&mut buf).await.is_ok() {
            s.write_all(&buf).await.unwrap();
        }
    });
    let mut handles = Vec::new();
    for i in 0..12u64 {
        handles.push(sim_runtime::spawn(async move {
            for k in 0..4 {
                // Half share deadlines (a bucket of several timers), half
                // have their own.
                let ms = if i % 2 == 0 { 3 } else { i + k };
                time::sleep(Duration::from_millis(ms)).await;
                sim_runtime::task::yield_now().await;
            }
            i
        }));
    }
    // Simulated OS threads: two that hand a counter back and forth over a
    // std Mutex and Condvar, sleeping in between, and one left blocked for
    // the run's end to end.
    let pair = std::sync::Arc::new((std::sync::Mutex::new(0u64), std::sync::Condvar::new()));
    let threads: Vec<_> = (0..2u64)
        .map(|me| {
            let pair = pair.clone();
            std::thread::spawn(move || {
                let (lock, cv) = &*pair;
                let mut n = lock.lock().unwrap();
                while *n < 6 {
                    if *n % 2 == me {
                        *n += 1;
                        cv.notify_all();
                        drop(n);
                        std::thread::sleep(std::time::Duration::from_micros(300 + me * 100));
                        n = lock.lock().unwrap();
                    } else {
                        n = cv.wait(n).unwrap();
                    }
                }
                sim::elapsed().as_nanos() as u64
            })
        })
        .collect();
    std::thread::spawn(|| loop {
        std::thread::park();
    });
    let doomed = sim_runtime::spawn(time::sleep(Duration::from_secs(60)));
    time::sleep(Duration::from_millis(1)).await;
    let mut c = TcpStream::connect("server:7").await.unwrap();
    let mut order = Vec::new();
    for r in 0..5u8 {
        c.write_all(&[r; 16]).await.unwrap();
        let mut back = [0u8; 16];
        c.read_exact(&mut back).await.unwrap();
        order.push(sim::elapsed().as_nanos() as u64);
    }
    doomed.abort();
    // fastrand's per-thread generator, which fastrand seeds from the
    // thread's id (a process-wide counter): the seed's own on the run's
    // thread, whichever thread that is (thread/seeded.rs).
    order.push(fastrand::u64(..));
    for h in handles {
        order.push(h.await.unwrap());
    }
    for t in threads {
        order.push(
            sim_runtime::task::spawn_blocking(move || t.join().unwrap())
                .await
                .unwrap(),
        );
    }
    (sim::fingerprint(), order)
}

/// A bigger run between seeds: many tasks and timers, left unfinished
/// (the runtime drops them), so the next executor inherits large, used
/// containers.
fn big(seed: u64) {
    run(seed, async {
        for i in 0..2_000u64 {
            sim_runtime::spawn(time::sleep(Duration::from_millis(1 + i % 7)));
        }
        for i in 0..500u64 {
            sim_runtime::spawn(time::sleep(Duration::from_secs(3600 + i)));
        }
        time::sleep(Duration::from_millis(5)).await;
    });
}

type Runs = BTreeMap<u64, (u64, Vec<u64>)>;

fn on_one_thread(seeds: Vec<u64>, dirty: bool) -> Runs {
    std::thread::spawn(move || {
        let mut out = Runs::new();
        for s in seeds {
            if dirty {
                big(s ^ 0x5eed);
            }
            out.insert(s, run(s, mixed()));
        }
        out
    })
    .join()
    .unwrap()
}

#[test]
fn seeds_give_the_same_runs_in_any_order_on_any_thread() {
    let seeds: Vec<u64> = (0..24).collect();
    // Each seed on a fresh thread: nothing kept from an earlier executor.
    let fresh: Runs = each_on_a_new_thread(&seeds, |s| run(s, mixed()))
        .into_iter()
        .collect();
    let forward = on_one_thread(seeds.clone(), false);
    let backward = on_one_thread(seeds.iter().rev().copied().collect(), true);
    // A fixed shuffle (odd seeds first, each half reversed).
    let shuffled: Vec<u64> = seeds
        .iter()
        .rev()
        .filter(|s| *s % 2 == 1)
        .chain(seeds.iter().rev().filter(|s| *s % 2 == 0))
        .copied()
        .collect();
    let mixed_order = on_one_thread(shuffled, true);
    // Two workers at once, each with half the seeds.
    let (a, b) = (
        std::thread::spawn({
            let s: Vec<u64> = seeds.iter().copied().filter(|s| s % 2 == 0).collect();
            move || on_one_thread(s, true)
        }),
        std::thread::spawn({
            let s: Vec<u64> = seeds.iter().copied().filter(|s| s % 2 == 1).collect();
            move || on_one_thread(s, false)
        }),
    );
    let mut two = a.join().unwrap();
    two.extend(b.join().unwrap());
    assert_eq!(fresh, forward, "one thread, seeds in order");
    assert_eq!(
        fresh, backward,
        "one thread, reversed, a large run between seeds"
    );
    assert_eq!(
        fresh, mixed_order,
        "one thread, shuffled, a large run between"
    );
    assert_eq!(fresh, two, "two threads at once");
    // And the seeds differ from each other: the comparison means something.
    let prints: std::collections::BTreeSet<u64> = fresh.values().map(|r| r.0).collect();
    assert!(prints.len() > seeds.len() / 2, "{prints:?}");
}

/// Each seed on a new thread of its own: `one(seed)`, by seed.
fn each_on_a_new_thread<T: Send + 'static>(seeds: &[u64], one: fn(u64) -> T) -> Vec<(u64, T)> {
    seeds
        .iter()
        .map(|&s| (s, std::thread::spawn(move || one(s)).join().unwrap()))
        .collect()
}

/// The same seeds on one thread made fresh after each (libc/tls.rs, the
/// harness's workers): its thread-locals are new for every seed, while the
/// simulator's own caches are kept. `dirty` runs a large run of another
/// seed before each.
fn on_one_fresh_thread<T: Send + 'static>(
    seeds: Vec<u64>,
    dirty: bool,
    one: fn(u64) -> T,
) -> Vec<(u64, T)> {
    std::thread::spawn(move || {
        let _fresh = sim_runtime::__private::harness::fresh_thread()
            .expect("a thread the test started can be made fresh");
        let mut out = Vec::new();
        for s in seeds {
            if dirty {
                big(s ^ 0x5eed);
                sim_runtime::__private::harness::reset_fresh_thread();
            }
            out.push((s, one(s)));
            sim_runtime::__private::harness::reset_fresh_thread();
        }
        out
    })
    .join()
    .unwrap()
}

#[test]
fn seeds_on_a_fresh_thread_give_the_same_runs_as_on_new_threads() {
    let seeds: Vec<u64> = (0..12).collect();
    let fresh: Runs = each_on_a_new_thread(&seeds, |s| run(s, mixed()))
        .into_iter()
        .collect();
    let reversed: Runs = on_one_fresh_thread(seeds.iter().rev().copied().collect(), true, |s| {
        run(s, mixed())
    })
    .into_iter()
    .collect();
    assert_eq!(fresh, reversed);
}

/// What a seed's `HashMap`s see of std's hash keys (which the thread's first
/// `RandomState` draws from the run's stream, and every later one counts
/// on from).
async fn hash_keys() -> Vec<u64> {
    use std::hash::BuildHasher;
    let first = std::collections::hash_map::RandomState::new().hash_one(1u64);
    time::sleep(Duration::from_millis(1)).await;
    let later = std::collections::hash_map::RandomState::new().hash_one(1u64);
    vec![first, later]
}

/// A seed's hash keys on a fresh thread that ran other seeds before are
/// those it has on a new thread: nothing the simulator keeps on the thread
/// (core::hooks::KEPT) changes what a run draws.
#[test]
fn a_seeds_hash_keys_on_a_reused_fresh_thread_are_those_of_a_new_thread() {
    let seeds: Vec<u64> = (0..6).collect();
    let new = each_on_a_new_thread(&seeds, |s| run(s, hash_keys()));
    let reused = on_one_fresh_thread(seeds, false, |s| run(s, hash_keys()));
    assert_eq!(new, reused);
    assert_ne!(new[0].1, new[1].1, "seeds draw different keys");
}

/// Destructor runs of [`Witness`], by what it was made for.
static DROPPED: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

struct Witness(&'static str);

impl Drop for Witness {
    fn drop(&mut self) {
        DROPPED.lock().unwrap().push(self.0);
        if self.0 == "first" {
            // A destructor that makes another thread-local: its destructor
            // runs in the same reset, as a thread's exit would run it.
            LATE.with(|l| drop(l.borrow_mut().replace(Witness("late"))));
        }
    }
}

thread_local! {
    static COUNTER: std::cell::Cell<u64> = const { std::cell::Cell::new(7) };
    static LAZY: std::cell::RefCell<Vec<u64>> = std::cell::RefCell::new(vec![1]);
    static FIRST: std::cell::RefCell<Option<Witness>> = const { std::cell::RefCell::new(None) };
    static LATE: std::cell::RefCell<Option<Witness>> = const { std::cell::RefCell::new(None) };
}

static KEY_DROPS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

// SAFETY: unsafe only to fit glibc's destructor type; it only records the value.
unsafe extern "C" fn key_dtor(v: *mut libc::c_void) {
    KEY_DROPS.lock().unwrap().push(v as usize);
}

/// What a reset does to each kind of thread-local, and what it keeps.
#[test]
fn a_reset_makes_every_thread_local_new_and_runs_the_destructors() {
    let mut key: libc::pthread_key_t = 0;
    let mut kept_key: libc::pthread_key_t = 0;
    // SAFETY: valid out-pointers; the destructor is a plain function.
    unsafe {
        assert_eq!(libc::pthread_key_create(&mut key, Some(key_dtor)), 0);
        assert_eq!(libc::pthread_key_create(&mut kept_key, None), 0);
    }
    std::thread::Builder::new()
        .name("fresh-one".into())
        .spawn(move || {
            // Set before the thread is made fresh: kept, as std's own are.
            // SAFETY: a live key; any value.
            unsafe { libc::pthread_setspecific(kept_key, 0x10 as *mut libc::c_void) };
            let id = std::thread::current().id();
            let fresh = sim_runtime::__private::harness::fresh_thread().unwrap();
            assert!(
                sim_runtime::__private::harness::fresh_thread().is_none(),
                "a thread is made fresh once"
            );
            for round in 0..3usize {
                assert_eq!(COUNTER.get(), 7, "round {round}");
                assert_eq!(LAZY.with(|l| l.borrow().clone()), vec![1], "round {round}");
                assert!(FIRST.with(|f| f.borrow().is_none()));
                // SAFETY: live keys.
                unsafe {
                    assert!(libc::pthread_getspecific(key).is_null(), "round {round}");
                    assert_eq!(libc::pthread_getspecific(kept_key) as usize, 0x10);
                }
                COUNTER.set(100 + round as u64);
                LAZY.with(|l| l.borrow_mut().push(round as u64));
                FIRST.with(|f| *f.borrow_mut() = Some(Witness("first")));
                // SAFETY: a live key; any value.
                unsafe { libc::pthread_setspecific(key, (0x100 + round) as *mut libc::c_void) };
                DROPPED.lock().unwrap().clear();
                KEY_DROPS.lock().unwrap().clear();
                sim_runtime::__private::harness::reset_fresh_thread();
                assert_eq!(*DROPPED.lock().unwrap(), ["first", "late"]);
                assert_eq!(*KEY_DROPS.lock().unwrap(), [0x100 + round]);
                // std's own, from before: the same thread, by name and id.
                assert_eq!(std::thread::current().name(), Some("fresh-one"));
                assert_eq!(std::thread::current().id(), id);
            }
            drop(fresh);
            assert!(!sim_runtime::__private::harness::on_fresh_thread());
        })
        .unwrap()
        .join()
        .unwrap();
}
