//! The pthread synchronisation calls of C and C++ code inside a simulation
//! (issue 35): glibc's mutexes, condition variables, reader--writer locks,
//! barriers and semaphores block simulated threads in virtual time instead
//! of in the kernel (where a thread holding the baton would hang the run).
//! Every test here calls libc's functions directly from simulated threads,
//! as C code would.

use crate::run;
use sim_runtime::sim;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

extern "C" {
    // glibc's (2.30 and later); the libc crate does not declare them.
    fn pthread_mutex_clocklock(
        m: *mut libc::pthread_mutex_t,
        clock: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> libc::c_int;
    fn pthread_cond_clockwait(
        c: *mut libc::pthread_cond_t,
        m: *mut libc::pthread_mutex_t,
        clock: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> libc::c_int;
    fn pthread_rwlock_timedrdlock(
        l: *mut libc::pthread_rwlock_t,
        abstime: *const libc::timespec,
    ) -> libc::c_int;
}

/// A C object shared by threads, as C code shares it: by address.
struct Shared<T>(UnsafeCell<T>);

// SAFETY: the objects are glibc's synchronisation objects, made to be used
// from many threads at once through their pointer.
unsafe impl<T> Sync for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Send for Shared<T> {}

impl<T> Shared<T> {
    fn ptr(&self) -> *mut T {
        self.0.get()
    }
}

/// A mutex of glibc's `kind`, initialised by glibc.
fn mutex(kind: libc::c_int) -> Arc<Shared<libc::pthread_mutex_t>> {
    let m = Arc::new(Shared(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)));
    // SAFETY: a fresh attribute and mutex, initialised before use.
    unsafe {
        let mut attr = MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
        libc::pthread_mutexattr_init(attr.as_mut_ptr());
        libc::pthread_mutexattr_settype(attr.as_mut_ptr(), kind);
        assert_eq!(libc::pthread_mutex_init(m.ptr(), attr.as_ptr()), 0);
        libc::pthread_mutexattr_destroy(attr.as_mut_ptr());
    }
    m
}

/// A condition variable on `clock`.
fn condvar(clock: libc::clockid_t) -> Arc<Shared<libc::pthread_cond_t>> {
    let c = Arc::new(Shared(UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER)));
    // SAFETY: a fresh attribute and condition variable, initialised before use.
    unsafe {
        let mut attr = MaybeUninit::<libc::pthread_condattr_t>::uninit();
        libc::pthread_condattr_init(attr.as_mut_ptr());
        libc::pthread_condattr_setclock(attr.as_mut_ptr(), clock);
        assert_eq!(libc::pthread_cond_init(c.ptr(), attr.as_ptr()), 0);
        libc::pthread_condattr_destroy(attr.as_mut_ptr());
    }
    c
}

/// `clock`'s time now plus `d`, as a `timespec` (the calling node's virtual
/// clock inside a simulation).
fn after(clock: libc::clockid_t, d: Duration) -> libc::timespec {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut now) };
    let ns = now.tv_sec as u128 * 1_000_000_000 + now.tv_nsec as u128 + d.as_nanos();
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Four threads and the test's own task increment a counter under one
/// pthread mutex, sleeping inside the critical section: no two are ever
/// inside at once, and the sections follow each other exactly in virtual
/// time. The task's lock waits (the executor's thread blocked in C code)
/// while threads hold the mutex.
#[test]
fn a_pthread_mutex_excludes_threads_and_tasks_under_contention() {
    let wall = std::time::Instant::now();
    let (count, most_inside, elapsed) = run(21, async {
        let m = mutex(libc::PTHREAD_MUTEX_NORMAL);
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let counter = Arc::new(Shared(UnsafeCell::new(0u32)));
        let section = {
            let (m, inside, most, counter) =
                (m.clone(), inside.clone(), most.clone(), counter.clone());
            move || {
                // SAFETY: the mutex is initialised; the counter is touched
                // only while it is held.
                unsafe {
                    assert_eq!(libc::pthread_mutex_lock(m.ptr()), 0);
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let v = *counter.ptr();
                    std::thread::sleep(ms(1));
                    *counter.ptr() = v + 1;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(libc::pthread_mutex_unlock(m.ptr()), 0);
                }
            }
        };
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let section = section.clone();
                std::thread::spawn(move || {
                    for _ in 0..5 {
                        section();
                    }
                })
            })
            .collect();
        sim_runtime::task::yield_now().await;
        section();
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: every thread has been joined.
        let count = unsafe { *counter.ptr() };
        (count, most.load(Ordering::SeqCst), sim::elapsed())
    });
    assert_eq!(count, 21);
    assert_eq!(most_inside, 1);
    assert_eq!(
        elapsed,
        ms(21),
        "the critical sections did not follow each other"
    );
    assert!(wall.elapsed() < Duration::from_secs(20), "waited for real");
}

/// glibc's mutex types keep their meaning: a recursive mutex is taken
/// again by its owner, an error-checking one refuses a relock and a
/// stranger's unlock, trylock is busy while another thread holds the
/// mutex, and a timed lock gives up at its deadline in virtual time.
#[test]
fn mutex_types_and_timed_locks_behave_as_glibcs() {
    let out = run(22, async {
        let rec = mutex(libc::PTHREAD_MUTEX_RECURSIVE);
        let chk = mutex(libc::PTHREAD_MUTEX_ERRORCHECK);
        let norm = mutex(libc::PTHREAD_MUTEX_DEFAULT);
        let holder = {
            let (rec, chk, norm) = (rec.clone(), chk.clone(), norm.clone());
            std::thread::spawn(move || {
                // SAFETY: initialised mutexes, released before the end.
                unsafe {
                    assert_eq!(libc::pthread_mutex_lock(rec.ptr()), 0);
                    assert_eq!(libc::pthread_mutex_lock(rec.ptr()), 0);
                    assert_eq!(libc::pthread_mutex_trylock(rec.ptr()), 0);
                    assert_eq!(libc::pthread_mutex_lock(chk.ptr()), 0);
                    assert_eq!(libc::pthread_mutex_lock(chk.ptr()), libc::EDEADLK);
                    assert_eq!(libc::pthread_mutex_lock(norm.ptr()), 0);
                    std::thread::sleep(ms(100));
                    for _ in 0..3 {
                        assert_eq!(libc::pthread_mutex_unlock(rec.ptr()), 0);
                    }
                    assert_eq!(libc::pthread_mutex_unlock(rec.ptr()), libc::EPERM);
                    assert_eq!(libc::pthread_mutex_unlock(chk.ptr()), 0);
                    std::thread::sleep(ms(100));
                    assert_eq!(libc::pthread_mutex_unlock(norm.ptr()), 0);
                }
            })
        };
        std::thread::sleep(ms(10));
        let mut seen = Vec::new();
        // SAFETY: initialised mutexes; each lock taken here is released.
        unsafe {
            seen.push(libc::pthread_mutex_trylock(rec.ptr()));
            seen.push(libc::pthread_mutex_unlock(chk.ptr()));
            // A time that is not one is refused once the lock must wait
            // (glibc checks it no earlier).
            let bad = libc::timespec {
                tv_sec: 1,
                tv_nsec: 2_000_000_000,
            };
            seen.push(libc::pthread_mutex_timedlock(norm.ptr(), &bad));
            let free = mutex(libc::PTHREAD_MUTEX_DEFAULT);
            seen.push(libc::pthread_mutex_timedlock(free.ptr(), &bad));
            let t0 = sim::elapsed();
            let deadline = after(libc::CLOCK_REALTIME, ms(30));
            seen.push(libc::pthread_mutex_timedlock(norm.ptr(), &deadline));
            assert_eq!(sim::elapsed() - t0, ms(30));
            // The recursive one is released at 100 ms: a blocking lock gets
            // it then; a timed lock of the normal one waits until 200 ms.
            seen.push(libc::pthread_mutex_lock(rec.ptr()));
            assert_eq!(sim::elapsed(), ms(100));
            let deadline = after(libc::CLOCK_MONOTONIC, ms(500));
            seen.push(pthread_mutex_clocklock(
                norm.ptr(),
                libc::CLOCK_MONOTONIC,
                &deadline,
            ));
            assert_eq!(sim::elapsed(), ms(200));
            seen.push(libc::pthread_mutex_unlock(norm.ptr()));
            seen.push(libc::pthread_mutex_unlock(rec.ptr()));
        }
        holder.join().unwrap();
        seen
    });
    assert_eq!(
        out,
        vec![
            libc::EBUSY,
            libc::EPERM,
            libc::EINVAL,
            0,
            libc::ETIMEDOUT,
            0,
            0,
            0,
            0
        ]
    );
}

/// A bounded queue of two slots between a producer and a consumer, on one
/// mutex and two condition variables: every item arrives, in order, and
/// each side waits for the other in virtual time.
#[test]
fn a_condvar_producer_and_consumer_hand_items_over() {
    let got = run(23, async {
        let m = mutex(libc::PTHREAD_MUTEX_NORMAL);
        let not_empty = condvar(libc::CLOCK_REALTIME);
        let not_full = condvar(libc::CLOCK_REALTIME);
        let queue = Arc::new(Shared(UnsafeCell::new(std::collections::VecDeque::new())));
        let producer = {
            let (m, not_empty, not_full, queue) = (
                m.clone(),
                not_empty.clone(),
                not_full.clone(),
                queue.clone(),
            );
            std::thread::spawn(move || {
                for i in 0..8u32 {
                    std::thread::sleep(ms(5));
                    // SAFETY: the queue is touched only under the mutex.
                    unsafe {
                        libc::pthread_mutex_lock(m.ptr());
                        while (*queue.ptr()).len() == 2 {
                            assert_eq!(libc::pthread_cond_wait(not_full.ptr(), m.ptr()), 0);
                        }
                        (*queue.ptr()).push_back(i);
                        libc::pthread_cond_signal(not_empty.ptr());
                        libc::pthread_mutex_unlock(m.ptr());
                    }
                }
            })
        };
        let consumer = std::thread::spawn(move || {
            let mut got = Vec::new();
            while got.len() < 8 {
                // SAFETY: as above.
                let item = unsafe {
                    libc::pthread_mutex_lock(m.ptr());
                    while (*queue.ptr()).is_empty() {
                        assert_eq!(libc::pthread_cond_wait(not_empty.ptr(), m.ptr()), 0);
                    }
                    let item = (*queue.ptr()).pop_front().unwrap();
                    libc::pthread_cond_broadcast(not_full.ptr());
                    libc::pthread_mutex_unlock(m.ptr());
                    item
                };
                // A slow consumer: the producer fills the queue and waits.
                std::thread::sleep(ms(20));
                got.push((item, sim::elapsed().as_millis()));
            }
            got
        });
        producer.join().unwrap();
        consumer.join().unwrap()
    });
    let items: Vec<u32> = got.iter().map(|&(i, _)| i).collect();
    assert_eq!(items, (0..8).collect::<Vec<_>>());
    let times: Vec<u128> = got.iter().map(|&(_, t)| t).collect();
    assert_eq!(times, vec![25, 45, 65, 85, 105, 125, 145, 165]);
}

/// A timed wait that nobody signals times out at its deadline exactly, in
/// virtual time, on the condition variable's clock: `CLOCK_REALTIME` by
/// default, `CLOCK_MONOTONIC` when the attribute says so, any of the two
/// with `pthread_cond_clockwait`; and it holds the mutex again on return.
#[test]
fn a_timed_condvar_wait_times_out_in_exact_virtual_time() {
    let wall = std::time::Instant::now();
    let waits = run(24, async {
        let m = mutex(libc::PTHREAD_MUTEX_ERRORCHECK);
        let h = std::thread::spawn(move || {
            let mut waits = Vec::new();
            for (clock, explicit) in [
                (libc::CLOCK_REALTIME, false),
                (libc::CLOCK_MONOTONIC, false),
                (libc::CLOCK_MONOTONIC, true),
            ] {
                let cv = condvar(clock);
                // SAFETY: initialised objects.
                unsafe {
                    libc::pthread_mutex_lock(m.ptr());
                    let t0 = sim::elapsed();
                    let deadline = after(clock, ms(250));
                    let rc = if explicit {
                        pthread_cond_clockwait(cv.ptr(), m.ptr(), clock, &deadline)
                    } else {
                        libc::pthread_cond_timedwait(cv.ptr(), m.ptr(), &deadline)
                    };
                    // Held again: an error-checking relock says so.
                    assert_eq!(libc::pthread_mutex_lock(m.ptr()), libc::EDEADLK);
                    assert_eq!(libc::pthread_mutex_unlock(m.ptr()), 0);
                    waits.push((rc, sim::elapsed() - t0));
                }
            }
            waits
        });
        h.join().unwrap()
    });
    assert_eq!(waits, vec![(libc::ETIMEDOUT, ms(250)); 3]);
    assert!(wall.elapsed() < Duration::from_secs(20), "waited for real");
}

/// Three readers hold a reader--writer lock at once; a writer waits for all
/// of them, then holds it alone; try-locks see who holds it.
#[test]
fn rwlock_readers_share_and_a_writer_waits_for_them() {
    let (most_readers, writer_at, tries, elapsed) = run(25, async {
        let l = Arc::new(Shared(UnsafeCell::new(libc::PTHREAD_RWLOCK_INITIALIZER)));
        let readers = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let handles: Vec<_> = (0..3u64)
            .map(|i| {
                let (l, readers, most) = (l.clone(), readers.clone(), most.clone());
                std::thread::spawn(move || {
                    // SAFETY: an initialised lock, released before the end.
                    unsafe {
                        assert_eq!(libc::pthread_rwlock_rdlock(l.ptr()), 0);
                        let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(ms(10 + i));
                        readers.fetch_sub(1, Ordering::SeqCst);
                        assert_eq!(libc::pthread_rwlock_unlock(l.ptr()), 0);
                    }
                })
            })
            .collect();
        std::thread::sleep(ms(1));
        // A thread that tries the lock while the writer holds it.
        let contend = {
            let l = l.clone();
            move || {
                // SAFETY: as above.
                unsafe {
                    let busy = (
                        libc::pthread_rwlock_tryrdlock(l.ptr()),
                        libc::pthread_rwlock_trywrlock(l.ptr()),
                    );
                    let deadline = after(libc::CLOCK_REALTIME, ms(5));
                    let timed = pthread_rwlock_timedrdlock(l.ptr(), &deadline);
                    // A blocking read lock waits for the writer's release.
                    assert_eq!(libc::pthread_rwlock_rdlock(l.ptr()), 0);
                    let got_at = sim::elapsed();
                    libc::pthread_rwlock_unlock(l.ptr());
                    (busy, timed, got_at)
                }
            }
        };
        let mut tries = Vec::new();
        // SAFETY: as above.
        let writer_at = unsafe {
            tries.push(libc::pthread_rwlock_trywrlock(l.ptr()));
            tries.push(libc::pthread_rwlock_tryrdlock(l.ptr()));
            tries.push(libc::pthread_rwlock_unlock(l.ptr()));
            assert_eq!(libc::pthread_rwlock_wrlock(l.ptr()), 0);
            let at = sim::elapsed();
            assert_eq!(readers.load(Ordering::SeqCst), 0);
            let other = std::thread::spawn(contend);
            std::thread::sleep(ms(20));
            assert_eq!(libc::pthread_rwlock_wrlock(l.ptr()), libc::EDEADLK);
            assert_eq!(libc::pthread_rwlock_unlock(l.ptr()), 0);
            let (busy, timed, got_at) = other.join().unwrap();
            assert_eq!(busy, (libc::EBUSY, libc::EBUSY));
            assert_eq!(timed, libc::ETIMEDOUT);
            assert_eq!(got_at, at + ms(20));
            at
        };
        for h in handles {
            h.join().unwrap();
        }
        (
            most.load(Ordering::SeqCst),
            writer_at,
            tries,
            sim::elapsed(),
        )
    });
    assert_eq!(most_readers, 3);
    assert_eq!(
        writer_at,
        ms(12),
        "the writer did not wait for the last reader"
    );
    assert_eq!(tries, vec![libc::EBUSY, 0, 0]);
    assert_eq!(elapsed, ms(32));
}

/// Three threads that arrive at different times all leave a barrier when
/// the last arrives, twice; one of each round is told it is the serial
/// thread.
#[test]
fn a_barrier_of_three_threads_releases_them_together() {
    let rounds = run(26, async {
        let bar = Arc::new(Shared(UnsafeCell::new(MaybeUninit::<
            libc::pthread_barrier_t,
        >::uninit())));
        // SAFETY: initialised before any thread uses it.
        unsafe { libc::pthread_barrier_init((*bar.ptr()).as_mut_ptr(), std::ptr::null(), 3) };
        let handles: Vec<_> = (1..=3u64)
            .map(|i| {
                let bar = bar.clone();
                std::thread::spawn(move || {
                    let mut out = Vec::new();
                    for round in 0..2 {
                        std::thread::sleep(ms(10 * i * (round + 1)));
                        // SAFETY: an initialised barrier.
                        let rc = unsafe { libc::pthread_barrier_wait((*bar.ptr()).as_mut_ptr()) };
                        out.push((rc, sim::elapsed().as_millis()));
                    }
                    out
                })
            })
            .collect();
        let all: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        // SAFETY: every user has left it.
        let destroyed = unsafe { libc::pthread_barrier_destroy((*bar.ptr()).as_mut_ptr()) };
        assert_eq!(destroyed, 0);
        all
    });
    for round in 0..2 {
        let times: Vec<u128> = rounds.iter().map(|t| t[round].1).collect();
        assert_eq!(times, vec![[30, 90][round]; 3], "round {round}");
        let serial = rounds
            .iter()
            .filter(|t| t[round].0 == libc::PTHREAD_BARRIER_SERIAL_THREAD)
            .count();
        let plain = rounds.iter().filter(|t| t[round].0 == 0).count();
        assert_eq!((serial, plain), (1, 2), "round {round}");
    }
    // The last to arrive (the thread that slept longest) is the serial one.
    assert_eq!(rounds[2][0].0, libc::PTHREAD_BARRIER_SERIAL_THREAD);
}

/// A semaphore counts posts: a consumer waits for each one in virtual
/// time, a try-wait finds none, and a timed wait gives up at its deadline.
#[test]
fn a_semaphore_counts_posts_between_threads() {
    let (got, tried, timed) = run(27, async {
        let sem = Arc::new(Shared(
            UnsafeCell::new(MaybeUninit::<libc::sem_t>::uninit()),
        ));
        // SAFETY: initialised before any thread uses it.
        unsafe { libc::sem_init((*sem.ptr()).as_mut_ptr(), 0, 0) };
        let consumer = {
            let sem = sem.clone();
            std::thread::spawn(move || {
                let s = || {
                    // SAFETY: an initialised semaphore.
                    unsafe { (*sem.ptr()).as_mut_ptr() }
                };
                let mut got = Vec::new();
                for _ in 0..3 {
                    // SAFETY: as above.
                    assert_eq!(unsafe { libc::sem_wait(s()) }, 0);
                    got.push(sim::elapsed().as_millis());
                }
                // SAFETY: as above.
                let tried = unsafe { (libc::sem_trywait(s()), *libc::__errno_location()) };
                let t0 = sim::elapsed();
                let deadline = after(libc::CLOCK_REALTIME, ms(40));
                // SAFETY: as above.
                let rc = unsafe {
                    (
                        libc::sem_timedwait(s(), &deadline),
                        *libc::__errno_location(),
                    )
                };
                (got, tried, (rc, sim::elapsed() - t0))
            })
        };
        for _ in 0..3 {
            std::thread::sleep(ms(10));
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sem_post((*sem.ptr()).as_mut_ptr()) }, 0);
        }
        consumer.join().unwrap()
    });
    assert_eq!(got, vec![10, 20, 30]);
    assert_eq!(tried, (-1, libc::EAGAIN));
    assert_eq!(timed, ((-1, libc::ETIMEDOUT), ms(40)));
}

/// The order in which threads get a contended pthread mutex is a function
/// of the seed: the same seed gives the same order and fingerprint,
/// different seeds give different orders.
#[test]
fn pthread_lock_order_is_a_function_of_the_seed() {
    fn order(seed: u64) -> (Vec<u32>, u64) {
        run(seed, async {
            let m = mutex(libc::PTHREAD_MUTEX_NORMAL);
            let cv = condvar(libc::CLOCK_REALTIME);
            let log = Arc::new(Mutex::new(Vec::new()));
            let handles: Vec<_> = (0..4u32)
                .map(|t| {
                    let (m, cv, log) = (m.clone(), cv.clone(), log.clone());
                    std::thread::spawn(move || {
                        for _ in 0..4 {
                            // SAFETY: initialised objects.
                            unsafe {
                                libc::pthread_mutex_lock(m.ptr());
                                log.lock().unwrap().push(t);
                                // Others queue on the mutex meanwhile.
                                libc::sched_yield();
                                libc::pthread_cond_broadcast(cv.ptr());
                                libc::pthread_mutex_unlock(m.ptr());
                                libc::sched_yield();
                            }
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            let v = log.lock().unwrap().clone();
            (v, sim::fingerprint())
        })
    }
    let a = order(31);
    assert_eq!(a.0.len(), 16);
    assert_eq!(a, order(31));
    let others: std::collections::BTreeSet<Vec<u32>> = (32..40).map(|s| order(s).0).collect();
    assert!(others.len() > 1, "every seed gave the same order");
}

/// The state stays in glibc's own fields with glibc's meaning, so an object
/// moves between simulated and real code: a statically initialised mutex
/// used inside a run and then outside; an error-checking and a recursive
/// mutex locked inside a run by the test's own thread and unlocked by
/// glibc after it (glibc reads the owner and depth the simulation wrote); a
/// semaphore posted inside and taken outside.
#[test]
fn objects_cross_between_simulated_and_real_code() {
    static STATIC: Shared<libc::pthread_mutex_t> =
        Shared(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
    let chk = mutex(libc::PTHREAD_MUTEX_ERRORCHECK);
    let rec = mutex(libc::PTHREAD_MUTEX_RECURSIVE);
    let sem = Arc::new(Shared(
        UnsafeCell::new(MaybeUninit::<libc::sem_t>::uninit()),
    ));
    // SAFETY: initialised before use.
    unsafe { libc::sem_init((*sem.ptr()).as_mut_ptr(), 0, 0) };
    let inside = {
        let (chk, rec, sem) = (chk.clone(), rec.clone(), sem.clone());
        run(28, async move {
            let h = std::thread::spawn(|| {
                // SAFETY: an initialised static mutex.
                unsafe {
                    assert_eq!(libc::pthread_mutex_lock(STATIC.ptr()), 0);
                    std::thread::sleep(ms(5));
                    assert_eq!(libc::pthread_mutex_unlock(STATIC.ptr()), 0);
                }
            });
            std::thread::sleep(ms(1));
            // SAFETY: initialised objects; the two mutexes are left locked
            // on purpose, for glibc to unlock after the run.
            unsafe {
                assert_eq!(libc::pthread_mutex_lock(STATIC.ptr()), 0);
                let at = sim::elapsed();
                assert_eq!(libc::pthread_mutex_unlock(STATIC.ptr()), 0);
                h.join().unwrap();
                assert_eq!(libc::pthread_mutex_lock(chk.ptr()), 0);
                assert_eq!(libc::pthread_mutex_lock(rec.ptr()), 0);
                assert_eq!(libc::pthread_mutex_lock(rec.ptr()), 0);
                assert_eq!(libc::sem_post((*sem.ptr()).as_mut_ptr()), 0);
                at
            }
        })
    };
    assert_eq!(inside, ms(5), "the task did not wait for the thread's lock");
    // Outside any simulation: glibc's own functions.
    // SAFETY: initialised objects, locked above by this very thread.
    unsafe {
        assert_eq!(libc::pthread_mutex_lock(STATIC.ptr()), 0);
        assert_eq!(libc::pthread_mutex_unlock(STATIC.ptr()), 0);
        assert_eq!(libc::pthread_mutex_lock(chk.ptr()), libc::EDEADLK);
        assert_eq!(libc::pthread_mutex_unlock(chk.ptr()), 0);
        assert_eq!(libc::pthread_mutex_unlock(chk.ptr()), libc::EPERM);
        assert_eq!(libc::pthread_mutex_unlock(rec.ptr()), 0);
        assert_eq!(libc::pthread_mutex_unlock(rec.ptr()), 0);
        assert_eq!(libc::pthread_mutex_unlock(rec.ptr()), libc::EPERM);
        assert_eq!(libc::pthread_mutex_destroy(chk.ptr()), 0);
        assert_eq!(libc::pthread_mutex_destroy(rec.ptr()), 0);
        assert_eq!(libc::sem_trywait((*sem.ptr()).as_mut_ptr()), 0);
        assert_eq!(libc::sem_trywait((*sem.ptr()).as_mut_ptr()), -1);
    }
}

/// A robust mutex (a kind whose bookkeeping stays glibc's and the
/// kernel's) is waited for in virtual time too, and a thread that ends
/// holding it leaves it to the next locker as `EOWNERDEAD`.
#[test]
fn a_robust_mutex_is_waited_for_and_reports_its_dead_owner() {
    let (got_at, dead) = run(29, async {
        let m = Arc::new(Shared(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)));
        // SAFETY: a fresh attribute and mutex, initialised before use.
        unsafe {
            let mut attr = MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
            libc::pthread_mutexattr_init(attr.as_mut_ptr());
            libc::pthread_mutexattr_setrobust(attr.as_mut_ptr(), libc::PTHREAD_MUTEX_ROBUST);
            assert_eq!(libc::pthread_mutex_init(m.ptr(), attr.as_ptr()), 0);
            libc::pthread_mutexattr_destroy(attr.as_mut_ptr());
        }
        let holder = {
            let m = m.clone();
            std::thread::spawn(move || {
                // SAFETY: an initialised mutex.
                unsafe {
                    assert_eq!(libc::pthread_mutex_lock(m.ptr()), 0);
                    std::thread::sleep(ms(10));
                    assert_eq!(libc::pthread_mutex_unlock(m.ptr()), 0);
                }
            })
        };
        // Started before any join: a thread started after another's join
        // may get the joined one's id, which the simulated join does not
        // yet tell apart (thread/mod.rs `find`).
        let quitter = {
            let m = m.clone();
            std::thread::spawn(move || {
                std::thread::sleep(ms(20));
                // SAFETY: an initialised mutex, left locked on purpose.
                assert_eq!(unsafe { libc::pthread_mutex_lock(m.ptr()) }, 0);
            })
        };
        std::thread::sleep(ms(1));
        // SAFETY: an initialised mutex.
        let got_at = unsafe {
            assert_eq!(libc::pthread_mutex_lock(m.ptr()), 0);
            let at = sim::elapsed();
            assert_eq!(libc::pthread_mutex_unlock(m.ptr()), 0);
            at
        };
        quitter.join().unwrap();
        holder.join().unwrap();
        // SAFETY: an initialised mutex whose owner died.
        let dead = unsafe {
            let rc = libc::pthread_mutex_lock(m.ptr());
            libc::pthread_mutex_consistent(m.ptr());
            libc::pthread_mutex_unlock(m.ptr());
            rc
        };
        (got_at, dead)
    });
    // The waiter polls every millisecond of virtual time; at 10 ms its try
    // and the holder's release are ordered by the seed.
    assert!(got_at == ms(10) || got_at == ms(11), "got it at {got_at:?}");
    assert_eq!(dead, libc::EOWNERDEAD);
}

/// A thread the run ended (still blocked when the run was over) and that
/// the program joins afterwards, outside any simulation, as a static's
/// destructor at exit joins a pool a run started (RocksDB's
/// `JoinThreadsOnExit`): the join returns at once, the thread reporting
/// itself cancelled, instead of `ESRCH` from glibc for an id the run
/// already joined (C++'s `std::thread::join` throws on it, and the process
/// terminates). A second join of it is glibc's again.
#[test]
fn a_thread_the_run_ended_is_joined_afterwards_as_cancelled() {
    extern "C" fn blocks_forever(_: *mut libc::c_void) -> *mut libc::c_void {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let t = run(44, async {
        let mut t = MaybeUninit::<libc::pthread_t>::uninit();
        // SAFETY: a valid out-pointer, default attributes, and a routine
        // that takes no argument.
        let rc = unsafe {
            libc::pthread_create(
                t.as_mut_ptr(),
                std::ptr::null(),
                blocks_forever,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(rc, 0);
        sim_runtime::time::sleep(ms(10)).await;
        // SAFETY: written by the successful create.
        unsafe { t.assume_init() }
    });
    let mut value = std::ptr::null_mut();
    // SAFETY: the id of a joinable thread the program has not joined.
    assert_eq!(unsafe { libc::pthread_join(t, &mut value) }, 0);
    // glibc's PTHREAD_CANCELED, `(void *) -1`.
    assert_eq!(value, std::ptr::without_provenance_mut(usize::MAX));
}

/// `pthread_once` (C++'s `std::call_once`, the TLS libraries' `CRYPTO_once`)
/// runs its routine once: threads that call it while the routine sleeps
/// wait for it in virtual time and then see what it did. glibc's own call
/// would wait in the kernel with the baton held, and the run would hang.
#[test]
fn pthread_once_runs_its_routine_once_while_the_others_wait() {
    static RUNS: AtomicU32 = AtomicU32::new(0);
    static MADE: AtomicU32 = AtomicU32::new(0);
    extern "C" fn init() {
        RUNS.fetch_add(1, Ordering::SeqCst);
        // A hand-off inside the routine: the other threads find it running.
        std::thread::sleep(ms(10));
        MADE.store(42, Ordering::SeqCst);
    }
    let seen = run(28, async {
        let once = Arc::new(Shared(UnsafeCell::new(libc::PTHREAD_ONCE_INIT)));
        let handles: Vec<_> = (0..3u64)
            .map(|i| {
                let once = once.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(ms(i));
                    // SAFETY: a once word initialised with PTHREAD_ONCE_INIT.
                    let rc = unsafe { libc::pthread_once(once.ptr(), init) };
                    (rc, MADE.load(Ordering::SeqCst), sim::elapsed().as_millis())
                })
            })
            .collect();
        let seen: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        // SAFETY: as above; done now, so the routine does not run again.
        assert_eq!(unsafe { libc::pthread_once(once.ptr(), init) }, 0);
        seen
    });
    assert_eq!(RUNS.load(Ordering::SeqCst), 1, "the routine ran once");
    assert_eq!(
        seen,
        vec![(0, 42, 10); 3],
        "each waited for the routine's end"
    );
}

/// A spin lock held across a hand-off is waited for in virtual time: the
/// waiter runs again when the holder unlocks, and not before (glibc's own
/// lock would spin with the baton held, and the run would hang).
#[test]
fn a_spin_lock_held_across_a_sleep_is_waited_for() {
    let (inside, got) = run(29, async {
        let lock = Arc::new(Shared(UnsafeCell::new(0 as libc::pthread_spinlock_t)));
        // SAFETY: a fresh spin lock, initialised before any thread uses it.
        assert_eq!(unsafe { libc::pthread_spin_init(lock.ptr(), 0) }, 0);
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let handles: Vec<_> = (0..3u64)
            .map(|i| {
                let (lock, inside, most) = (lock.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(ms(i));
                    // SAFETY: an initialised spin lock.
                    assert_eq!(unsafe { libc::pthread_spin_lock(lock.ptr()) }, 0);
                    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    let got = sim::elapsed().as_millis();
                    std::thread::sleep(ms(10));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    // SAFETY: held by this thread.
                    assert_eq!(unsafe { libc::pthread_spin_unlock(lock.ptr()) }, 0);
                    got
                })
            })
            .collect();
        let mut got: Vec<u128> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        got.sort_unstable();
        (most.load(Ordering::SeqCst), got)
    });
    assert_eq!(inside, 1, "never two inside at once");
    assert_eq!(got, vec![0, 10, 20], "each got it as the last let go");
}
