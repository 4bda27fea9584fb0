use crate::run_failing;
use sim_runtime::time::{self, Duration};

#[test]
fn deadlock_names_stuck_tasks() {
    let msg = run_failing(3, || async {
        let (tx, rx) = sim_runtime::sync::oneshot::channel::<()>();
        let _keep = tx;
        sim_runtime::task::Builder::new()
            .name("waiter")
            .spawn(async {
                std::future::pending::<()>().await;
            })
            .unwrap();
        rx.await.unwrap();
    });
    assert!(msg.contains("deadlock"), "{msg}");
    assert!(msg.contains("'waiter' on node 'main'"), "{msg}");
    assert!(msg.contains("tests/it/failures.rs"), "{msg}");
    assert!(msg.contains("seed 3"), "{msg}");
    assert!(msg.contains("SIM_SEED=3"), "{msg}");
}

/// The deadlock report is a wait-for graph: each task with what it waits
/// for, and the cycle when tasks await each other's ends.
#[test]
fn deadlock_prints_the_wait_for_graph_and_its_cycle() {
    let msg = run_failing(3, || async {
        use std::sync::{Arc, Mutex};
        type Slot = Arc<Mutex<Option<sim_runtime::task::JoinHandle<()>>>>;
        let (a_slot, b_slot): (Slot, Slot) = Default::default();
        let b_for_a = b_slot.clone();
        let a = sim_runtime::spawn(async move {
            sim_runtime::task::yield_now().await;
            let b = b_for_a.lock().unwrap().take().unwrap();
            b.await.unwrap();
        });
        let a_for_b = a_slot.clone();
        let b = sim_runtime::spawn(async move {
            sim_runtime::task::yield_now().await;
            let a = a_for_b.lock().unwrap().take().unwrap();
            a.await.unwrap();
        });
        *a_slot.lock().unwrap() = Some(a);
        *b_slot.lock().unwrap() = Some(b);
        // A third task waits on a socket whose peer never writes, and the
        // main future on a channel: neither is in the cycle.
        let listener = sim_runtime::net::TcpListener::bind("127.0.0.1:7000")
            .await
            .unwrap();
        let reader = sim_runtime::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1];
            let _ = sim_runtime::io::AsyncReadExt::read(&mut s, &mut buf).await;
        });
        let _peer = sim_runtime::net::TcpStream::connect("127.0.0.1:7000")
            .await
            .unwrap();
        let (_tx, rx) = sim_runtime::sync::oneshot::channel::<()>();
        let _ = rx.await;
        drop(reader);
    });
    assert!(msg.contains("deadlock"), "{msg}");
    assert!(msg.contains("live tasks and what each waits for"), "{msg}");
    assert!(msg.contains("waits for the end of task"), "{msg}");
    assert!(msg.contains("cycle: task "), "{msg}");
    assert!(msg.contains("each awaits the next one's end"), "{msg}");
    assert!(
        msg.contains("waits for a read of TcpStream socket"),
        "{msg}"
    );
    assert!(msg.contains("peer 127.0.0.1:"), "{msg}");
    assert!(
        msg.contains("the main future waits for nothing the simulator sees: a tokio::sync"),
        "{msg}"
    );
}

/// A deadlock through a `tokio::sync::Mutex` and an mpsc channel: one task
/// holds the lock and waits for a message, the other would send it once it
/// has the lock. The simulator sees neither primitive; the report finds who
/// holds what by dropping each task in a forked copy, and prints the cycle
/// with what each drop releases.
#[test]
fn deadlock_through_a_mutex_and_a_channel_prints_its_cycle() {
    let msg = run_failing(5, || async {
        use std::sync::Arc;
        let lock = Arc::new(sim_runtime::sync::Mutex::new(()));
        let (tx, mut rx) = sim_runtime::sync::mpsc::channel::<u32>(1);
        let l = lock.clone();
        let holder = sim_runtime::spawn(async move {
            let _guard = l.lock().await;
            sim_runtime::task::yield_now().await;
            rx.recv().await
        });
        let sender = sim_runtime::spawn(async move {
            sim_runtime::task::yield_now().await;
            let _guard = lock.lock().await;
            tx.send(7).await.unwrap();
        });
        holder.await.unwrap();
        sender.await.unwrap();
    });
    assert!(msg.contains("deadlock"), "{msg}");
    assert!(
        msg.contains("the main future waits for the end of task 1"),
        "{msg}"
    );
    assert!(
        msg.contains("task 1 (unnamed) on node 'main' spawned at sim-runtime/tests/it/failures.rs")
            || msg.contains("task 1 (unnamed) on node 'main' spawned at tests/it/failures.rs"),
        "{msg}"
    );
    assert!(
        msg.contains(
            "waits for something task 2 holds: dropping task 2 releases its \
             tokio::sync::mpsc::bounded::Sender<u32>"
        ),
        "{msg}"
    );
    assert!(
        msg.contains(
            "waits for something task 1 holds: dropping task 1 releases its \
             tokio::sync::mutex::MutexGuard<()>"
        ),
        "{msg}"
    );
    assert!(msg.contains("cycle: task 1 -> task 2 -> task 1"), "{msg}");
    assert!(
        msg.contains("task 1 waits for what task 2 holds (dropping task 2 releases its tokio::sync::mpsc::bounded::Sender<u32>)"),
        "{msg}"
    );
    assert!(
        msg.contains("task 2 waits for what task 1 holds (dropping task 1 releases its tokio::sync::mutex::MutexGuard<()>)"),
        "{msg}"
    );
}

/// A task on a paused node waits on a timer that cannot fire before the
/// node resumes: the report says so instead of naming a timer.
#[test]
fn deadlock_report_names_a_paused_nodes_held_waits() {
    let msg = run_failing(4, || async {
        use sim_runtime::sim;
        let p = sim::node("p").build();
        sim::spawn_on(p, async {
            time::sleep(Duration::from_secs(1)).await;
        });
        sim::pause(p);
        let (_tx, rx) = sim_runtime::sync::oneshot::channel::<()>();
        let _ = rx.await;
    });
    assert!(msg.contains("deadlock"), "{msg}");
    assert!(msg.contains("paused nodes hold work: p"), "{msg}");
    assert!(msg.contains("on node 'p' (paused)"), "{msg}");
    assert!(msg.contains("held while its node is paused"), "{msg}");
}

#[test]
fn livelock_hits_the_virtual_time_limit() {
    let msg = run_failing(4, || async {
        loop {
            time::sleep(Duration::from_secs(86_400)).await;
        }
    });
    assert!(msg.contains("livelock"), "{msg}");
    assert!(msg.contains("SIM_TIME_LIMIT"), "{msg}");
}

#[test]
fn busy_loop_hits_the_step_limit() {
    let r = std::thread::spawn(|| {
        std::panic::catch_unwind(|| {
            sim_runtime::runtime::Builder::new_current_thread()
                .sim_seed(5)
                .sim_step_limit(Some(10_000))
                .build()
                .unwrap()
                .block_on(async {
                    loop {
                        sim_runtime::task::yield_now().await;
                    }
                })
        })
    })
    .join()
    .unwrap();
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.contains("step limit"), "{msg}");
    assert!(msg.contains("at step 10000"), "{msg}");
}

/// A task panicked, its `JoinHandle` held and never awaited; the main
/// task then spins waiting for what it would have done: the step-limit
/// report names the panic (a stranger's SlateDB test read "a busy loop"
/// and nothing else).
#[test]
fn a_held_panic_is_named_when_the_run_then_spins() {
    let r = std::thread::spawn(|| {
        std::panic::catch_unwind(|| {
            sim_runtime::runtime::Builder::new_current_thread()
                .sim_seed(5)
                .sim_step_limit(Some(10_000))
                .build()
                .unwrap()
                .block_on(async {
                    use std::sync::atomic::{AtomicBool, Ordering};
                    let done = std::sync::Arc::new(AtomicBool::new(false));
                    let d = done.clone();
                    let _writer = sim_runtime::spawn(async move {
                        sim_runtime::task::yield_now().await;
                        if std::hint::black_box(true) {
                            panic!("the writer could not open its store");
                        }
                        d.store(true, Ordering::Relaxed);
                    });
                    while !done.load(Ordering::Relaxed) {
                        sim_runtime::task::yield_now().await;
                    }
                })
        })
    })
    .join()
    .unwrap();
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.contains("step limit"), "{msg}");
    assert!(
        msg.contains("a task panicked and its JoinHandle, still held, was never awaited"),
        "{msg}"
    );
    assert!(msg.contains("the writer could not open its store"), "{msg}");
}

#[test]
fn unobserved_task_panic_fails_the_run() {
    let msg = run_failing(6, || async {
        drop(
            sim_runtime::task::Builder::new()
                .name("doomed")
                .spawn(async {
                    panic!("invariant broken");
                }),
        );
        time::sleep(Duration::from_secs(1)).await;
    });
    assert!(msg.contains("panic"), "{msg}");
    assert!(msg.contains("'doomed'"), "{msg}");
    assert!(msg.contains("invariant broken"), "{msg}");
}

#[test]
fn main_panic_keeps_its_message_and_gains_the_seed() {
    let msg = run_failing(8, || async {
        time::sleep(Duration::from_millis(3)).await;
        panic!("assertion in the test body");
    });
    assert!(msg.starts_with("assertion in the test body"), "{msg}");
    assert!(msg.contains("virtual time 0.003000000s"), "{msg}");
    assert!(msg.contains("SIM_SEED=8"), "{msg}");
}

/// std::process::Command inside a simulation fails the run, naming the C
/// call, whether the code unwraps the error or ignores it.
#[test]
fn a_std_process_is_a_forbidden_operation() {
    for unwrap in [false, true] {
        let msg = run_failing(10, move || async move {
            let spawned = std::process::Command::new("true").spawn();
            if unwrap {
                spawned.unwrap().wait().unwrap();
            }
            time::sleep(Duration::from_millis(1)).await;
        });
        assert!(msg.contains("forbidden operation"), "{msg}");
        assert!(
            msg.contains("tried to start a process (posix_spawnp"),
            "{msg}"
        );
    }
    // In a task whose panic nobody observes, too.
    let msg = run_failing(11, || async {
        sim_runtime::spawn(async {
            std::process::Command::new("true").status().unwrap();
        });
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("forbidden operation"), "{msg}");
    assert!(msg.contains("tried to start a process"), "{msg}");
}

/// A dependency that calls the real `tokio` crate (its timer, its spawn)
/// finds only a bare Tokio context in a simulation (no timer, no I/O, no
/// tasks of its own); the failure says so and names what to use instead.
#[test]
fn a_panic_from_the_real_tokio_names_the_cause() {
    let msg = run_failing(4, || async {
        drop(tokio::time::sleep(Duration::from_millis(1)));
    });
    assert!(
        msg.contains("A Tokio 1.x context was found, but timers are disabled"),
        "{msg}"
    );
    assert!(
        msg.contains("this panic comes from the real `tokio` crate"),
        "{msg}"
    );
    assert!(msg.contains("docs/breakage.md"), "{msg}");

    // A task spawned on real Tokio (in a task, or in the test body) would
    // run outside the simulation: the run fails, as a forbidden operation,
    // at the step that spawned it.
    for in_task in [true, false] {
        let msg = run_failing(5, move || async move {
            let spawn = || {
                tokio::spawn(async {});
            };
            if in_task {
                sim_runtime::spawn(async move { spawn() });
            } else {
                spawn();
            }
            time::sleep(Duration::from_millis(1)).await;
        });
        assert!(msg.contains("forbidden operation"), "{msg}");
        assert!(
            msg.contains("a task was spawned on the real `tokio` crate's runtime"),
            "{msg}"
        );
        assert!(
            msg.contains("this panic comes from the real `tokio` crate"),
            "{msg}"
        );
        assert!(msg.contains("virtual time 0.000000000s"), "{msg}");
    }

    // The simulation's own "no reactor" (outside any simulation) is not it.
    let own = std::panic::catch_unwind(|| {
        drop(sim_runtime::time::sleep(Duration::from_millis(1)));
    })
    .unwrap_err();
    let own = crate::panic_text(&*own);
    assert!(!own.contains("comes from the real"), "{own}");
}

/// A real OS socket's I/O (std::net's own send here; a crate with its own
/// networking) inside a simulation is refused and fails the run as a
/// forbidden operation: it would reach the host's network, outside the
/// seed. Making and binding the socket is allowed (a stub that Tokio's
/// `from_std` can take over: net/fd.rs); using it is not.
#[test]
fn a_real_socket_is_a_forbidden_operation() {
    let msg = run_failing(6, || async {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let err = s.send_to(b"x", "127.0.0.1:9").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("forbidden operation"), "{msg}");
    assert!(
        msg.contains("tried to open or use a real OS socket"),
        "{msg}"
    );
    // Outside a simulation the real function answers.
    assert!(std::net::UdpSocket::bind("127.0.0.1:0").is_ok());
}

/// `tokio::process` exists under simulation (a service that starts child
/// processes compiles unchanged), but starting one is refused: the caller
/// gets `Unsupported` and the run fails as a forbidden operation, since a
/// real process runs outside the seed.
#[test]
fn starting_a_process_is_a_forbidden_operation() {
    use sim_runtime::process::Command;
    use std::process::Stdio;
    let msg = run_failing(12, || async {
        let mut cmd = Command::new("true");
        cmd.arg("-x")
            .args(["a", "b"])
            .env("K", "V")
            .env_remove("PATH")
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        assert!(cmd.get_kill_on_drop());
        assert_eq!(cmd.as_std().get_program(), "true");
        let err = cmd.spawn().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported);
        let err = cmd.output().await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported);
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("forbidden operation"), "{msg}");
    assert!(msg.contains("tried to start an OS process"), "{msg}");

    // `status` too, from a spawned task.
    let msg = run_failing(13, || async {
        let h = sim_runtime::spawn(async { Command::new("true").status().await });
        assert!(h.await.unwrap().is_err());
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("tried to start an OS process"), "{msg}");

    // Outside any runtime, as Tokio's: a panic naming the missing runtime.
    let outside = std::panic::catch_unwind(|| Command::new("true").spawn()).unwrap_err();
    let outside = crate::panic_text(&*outside);
    assert!(
        outside.contains("must be called from the context of a Tokio 1.x runtime"),
        "{outside}"
    );
}

/// As Tokio: a signal listener on a runtime built without I/O panics with
/// Tokio's message; `enable_io` (or `enable_all`) allows it.
#[test]
fn a_signal_listener_needs_io_enabled() {
    use sim_runtime::signal::unix::{signal, SignalKind};
    let without = std::panic::catch_unwind(|| {
        let rt = sim_runtime::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let _ = signal(SignalKind::from_raw(-1));
        });
    })
    .unwrap_err();
    let text = crate::panic_text(&*without);
    assert!(
        text.contains("A Tokio 1.x context was found, but IO is disabled"),
        "{text}"
    );
    for io in [true, false] {
        let mut b = sim_runtime::runtime::Builder::new_current_thread();
        if io {
            b.enable_io();
        } else {
            b.enable_all();
        }
        b.build().unwrap().block_on(async {
            assert!(signal(SignalKind::from_raw(-1)).is_err());
            assert!(signal(SignalKind::hangup()).is_ok());
        });
    }
}

/// As Tokio: `from_std` outside any runtime panics for want of a reactor
/// (before the simulation would refuse the std socket).
#[test]
fn from_std_outside_a_runtime_finds_no_reactor() {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = std::panic::catch_unwind(move || {
        let _ = sim_runtime::net::TcpListener::from_std(std_listener);
    })
    .unwrap_err();
    let text = crate::panic_text(&*p);
    assert!(
        text.contains(
            "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
        ),
        "{text}"
    );
}
