//! `sim::World`: one simulation driven by hand from plain `#[test]`s.

#![cfg(simulation)]

use sim_runtime::sync::oneshot;
use sim_runtime::time::{interval, sleep};
use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

#[test]
fn a_new_world_starts_at_zero_and_is_quiescent() {
    let mut world = sim::World::new(1);
    assert_eq!(world.now(), Duration::ZERO);
    assert_eq!(world.pump(), 0, "nothing was spawned, so nothing runs");
    assert_eq!(world.now(), Duration::ZERO);
}

#[test]
fn block_on_runs_until_the_future_completes_moving_the_clock() {
    let mut world = sim::World::new(1);
    let out = world.block_on(async {
        sleep(5 * MS).await;
        7
    });
    assert_eq!(out, 7);
    assert_eq!(world.now(), 5 * MS);
    // The clock keeps its place between calls. (As with Tokio, a sleep is
    // made inside the runtime: an `async` block, or under `world.enter()`.)
    world.block_on(async { sleep(3 * MS).await });
    assert_eq!(world.now(), 8 * MS);
    let nap = {
        let _in = world.enter();
        sleep(2 * MS)
    };
    world.block_on(nap);
    assert_eq!(world.now(), 10 * MS);
}

#[test]
fn spawned_tasks_run_when_the_world_is_driven() {
    let mut world = sim::World::new(3);
    let handle = world.spawn(async {
        sleep(10 * MS).await;
        "done"
    });
    assert_eq!(world.block_on(handle).unwrap(), "done");
    assert_eq!(world.now(), 10 * MS);
}

#[test]
fn advance_fires_what_is_due_and_ends_exactly_there() {
    let mut world = sim::World::new(2);
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    world.spawn(async move {
        sleep(10 * MS).await;
        f.set(true);
    });
    world.advance(9 * MS);
    assert!(!fired.get(), "a timer due at 10 ms has not fired at 9 ms");
    assert_eq!(world.now(), 9 * MS);
    // The task woken exactly at the end of the advance has run.
    world.advance(MS);
    assert!(
        fired.get(),
        "a timer due at the end of an advance fires within it"
    );
    assert_eq!(world.now(), 10 * MS);
    // Not a whole millisecond: the clock still ends exactly there.
    world.advance(Duration::from_micros(1_500));
    assert_eq!(world.now(), Duration::from_micros(11_500));
    world.advance(Duration::from_nanos(1));
    assert_eq!(world.now(), Duration::from_nanos(11_500_001));
    // Nothing pending: the clock still moves by exactly the duration.
    world.advance(Duration::from_secs(3600));
    assert_eq!(
        world.now(),
        Duration::from_secs(3600) + Duration::from_nanos(11_500_001)
    );
}

#[test]
fn advance_runs_a_periodic_timer_once_per_period() {
    // Seed 003's first test: a drain timer every 100 ms, advance 250 ms.
    let mut world = sim::World::new(0xC0FFEE);
    let ticks = Rc::new(RefCell::new(Vec::new()));
    let t = ticks.clone();
    world.spawn(async move {
        let mut every = interval(100 * MS);
        loop {
            every.tick().await;
            t.borrow_mut().push(sim::elapsed());
        }
    });
    world.advance(250 * MS);
    assert_eq!(*ticks.borrow(), vec![Duration::ZERO, 100 * MS, 200 * MS]);
    world.advance(50 * MS);
    assert_eq!(
        ticks.borrow().len(),
        4,
        "the tick due at 300 ms fired at the end of the advance"
    );
    assert_eq!(world.now(), 300 * MS);
}

#[test]
fn pump_runs_every_runnable_task_without_moving_the_clock() {
    let mut world = sim::World::new(4);
    let done = Rc::new(Cell::new(0));
    for _ in 0..3 {
        let d = done.clone();
        world.spawn(async move { d.set(d.get() + 1) });
    }
    assert_eq!(world.pump(), 3, "three tasks, one poll each");
    assert_eq!(done.get(), 3);
    assert_eq!(world.pump(), 0, "a second pump finds nothing to run");
    assert_eq!(world.now(), Duration::ZERO);
}

#[test]
fn pump_runs_what_tasks_wake_and_yield_but_not_what_sleeps() {
    let mut world = sim::World::new(5);
    // A task that yields 4 times: 5 polls.
    world.spawn(async {
        for _ in 0..4 {
            sim_runtime::task::yield_now().await;
        }
    });
    assert_eq!(world.pump(), 5);
    // A chain: the sender's task wakes the receiver's, which a pump runs.
    let (tx, rx) = oneshot::channel::<u32>();
    let got = Rc::new(Cell::new(None));
    let g = got.clone();
    world.spawn(async move { g.set(rx.await.ok()) });
    assert_eq!(world.pump(), 1, "the receiver polled once and parked");
    world.spawn(async move { tx.send(9).unwrap() });
    assert_eq!(world.pump(), 2, "the sender, then the receiver it woke");
    assert_eq!(got.get(), Some(9));
    // A sleeper is polled once and then waits for the clock, which a pump
    // does not move.
    let woke = Rc::new(Cell::new(false));
    let w = woke.clone();
    world.spawn(async move {
        sleep(MS).await;
        w.set(true);
    });
    assert_eq!(world.pump(), 1);
    assert_eq!(world.pump(), 0);
    assert!(!woke.get());
    assert_eq!(world.now(), Duration::ZERO);
    world.advance(MS);
    assert!(woke.get());
}

#[test]
fn rng_replays_with_the_seed_and_differs_across_seeds() {
    let draws = |seed: u64| {
        let mut world = sim::World::new(seed);
        (0..16).map(|_| world.rng().next_u64()).collect::<Vec<_>>()
    };
    assert_eq!(draws(1), draws(1));
    assert_ne!(draws(1), draws(2));
    let mut world = sim::World::new(9);
    for _ in 0..1000 {
        assert!(world.rng().below(4) < 4);
        let x = world.rng().in_range(10..=12);
        assert!((10..=12).contains(&x));
    }
    // A `rand_core` generator.
    fn takes_rng_core(r: &mut impl rand_core::RngCore) -> u32 {
        r.next_u32()
    }
    let a = takes_rng_core(sim::World::new(7).rng());
    let b = takes_rng_core(sim::World::new(7).rng());
    assert_eq!(a, b);
}

/// Seed 003's determinism example: the test's own draws steer the load and
/// the outcome replays with the seed.
fn workload(seed: u64) -> (Vec<u64>, u64, Duration) {
    let mut world = sim::World::new(seed);
    let done = Rc::new(RefCell::new(Vec::new()));
    for i in 0..20 {
        let jobs = world.rng().below(4);
        let delay = world.rng().below(5);
        let d = done.clone();
        world.spawn(async move {
            for j in 0..jobs {
                sleep(Duration::from_millis(delay)).await;
                d.borrow_mut().push(i * 10 + j);
            }
        });
        world.advance(10 * MS);
    }
    world.advance(Duration::from_secs(1));
    let fp = {
        let _in = world.enter();
        sim::fingerprint()
    };
    let out = done.borrow().clone();
    (out, fp, world.now())
}

#[test]
fn the_same_seed_gives_the_same_run() {
    assert_eq!(workload(1), workload(1));
    assert_eq!(workload(0xC0FFEE), workload(0xC0FFEE));
    assert_ne!(workload(1).0, workload(2).0);
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn block_on_a_future_that_can_never_complete_names_what_is_parked() {
    let mut world = sim::World::new(6);
    // A named task waits for a message nobody will send; the sender lives
    // on outside the world.
    let (tx, rx) = oneshot::channel::<()>();
    {
        let _in = world.enter();
        sim_runtime::task::Builder::new()
            .name("stuck-consumer")
            .spawn(async move {
                let _ = rx.await;
            })
            .unwrap();
    }
    let (_never_tx, never_rx) = oneshot::channel::<()>();
    let p = std::panic::catch_unwind(AssertUnwindSafe(|| {
        world.block_on(async move {
            let _ = never_rx.await;
        })
    }))
    .expect_err("block_on on a future that can never complete fails");
    let text = panic_text(p);
    assert!(text.contains("can never complete"), "{text}");
    assert!(text.contains("sim::World::block_on at "), "{text}");
    assert!(
        text.contains("tests/it/world.rs"),
        "the caller is named: {text}"
    );
    assert!(text.contains("deadlock"), "{text}");
    assert!(
        text.contains("'stuck-consumer'"),
        "the parked task is named: {text}"
    );
    assert!(text.contains("World seed 6"), "{text}");
    drop(tx);
}

#[test]
fn block_on_passes_other_panics_through() {
    let mut world = sim::World::new(8);
    let p = std::panic::catch_unwind(AssertUnwindSafe(|| {
        world.block_on(async {
            sleep(MS).await;
            panic!("the body's own failure");
        })
    }))
    .expect_err("the future panicked");
    let text = panic_text(p);
    assert!(text.contains("the body's own failure"), "{text}");
    assert!(!text.contains("can never complete"), "{text}");
}

#[test]
fn nodes_and_sim_calls_work_inside_a_world() {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    use sim_runtime::net::{TcpListener, TcpStream};
    let mut world = sim::World::new(10);
    let node = {
        let _in = world.enter();
        sim::node("greeter").start(|| async {
            let l = TcpListener::bind("0.0.0.0:9").await.unwrap();
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                let _ = s.write_all(b"hello").await;
            }
        })
    };
    world.pump();
    let got = world.block_on(async {
        let mut c = TcpStream::connect("greeter:9").await.unwrap();
        let mut buf = Vec::new();
        c.read_to_end(&mut buf).await.unwrap();
        buf
    });
    assert_eq!(got, b"hello");
    {
        let _in = world.enter();
        node.crash();
        assert!(!node.is_alive());
    }
}
