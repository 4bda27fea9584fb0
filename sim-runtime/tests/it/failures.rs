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

#[test]
fn starting_an_os_thread_is_a_reported_failure() {
    let msg = run_failing(9, || async {
        let h = sim_runtime::spawn(async {
            let _ = std::thread::Builder::new().spawn(|| {});
        });
        let _ = h.await;
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("forbidden operation"), "{msg}");
    assert!(msg.contains("tried to start an OS thread"), "{msg}");
}
