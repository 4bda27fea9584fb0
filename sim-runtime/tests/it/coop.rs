//! Tokio's cooperative budget and blocking checks inside a simulation: each
//! simulated poll runs in real Tokio's task context with a fresh budget
//! (core/executor/context.rs).

use crate::{run, run_failing};
use sim_runtime::sync::{mpsc, oneshot};
use sim_runtime::task::coop::{consume_budget, has_budget_remaining};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A poll has Tokio's 128 units; the task's next poll starts whole again,
/// and so does another task's.
#[test]
fn every_poll_starts_with_a_whole_budget() {
    run(1, async {
        assert!(has_budget_remaining());
        for _ in 0..128 {
            consume_budget().await;
        }
        assert!(!has_budget_remaining(), "128 units spent");
        sim_runtime::task::yield_now().await;
        assert!(has_budget_remaining(), "a new poll, a new budget");
        let other = sim_runtime::spawn(async { has_budget_remaining() });
        assert!(other.await.unwrap());
    });
}

/// A loop over an always-ready channel yields when its budget is spent, so
/// another task runs before the loop ends (without a budget it would not).
#[test]
fn a_loop_over_ready_work_lets_other_tasks_run() {
    for seed in 0..8 {
        run(seed, async {
            let (tx, mut rx) = mpsc::unbounded_channel();
            for i in 0..1000 {
                tx.send(i).unwrap();
            }
            drop(tx);
            let ran = Arc::new(AtomicBool::new(false));
            let ran2 = ran.clone();
            sim_runtime::spawn(async move { ran2.store(true, Ordering::SeqCst) });
            let mut seen_at = None;
            let mut n = 0;
            while rx.recv().await.is_some() {
                n += 1;
                if seen_at.is_none() && ran.load(Ordering::SeqCst) {
                    seen_at = Some(n);
                }
            }
            assert_eq!(n, 1000);
            let at = seen_at.expect("the other task ran during the loop");
            assert!(at <= 129, "the other task ran only after {at} messages");
        });
    }
}

/// Simulated sleeps and join handles spend the budget as Tokio's do.
#[test]
fn sleeps_and_join_handles_spend_the_budget() {
    run(2, async {
        // A zero sleep is ready at once, and spends a unit.
        for _ in 0..128 {
            sim_runtime::time::sleep(Duration::ZERO).await;
        }
        assert!(!has_budget_remaining(), "128 ready sleeps spent it");
        let handles: Vec<_> = (0..127).map(|_| sim_runtime::spawn(async {})).collect();
        // The sleep that ends spends one unit of the new poll's budget...
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
        assert!(has_budget_remaining());
        for h in handles {
            h.await.unwrap();
        }
        // ...and 127 finished join handles the rest.
        assert!(!has_budget_remaining(), "the join handles spent it");
        // The next poll has all 128 again, and not one more.
        sim_runtime::task::yield_now().await;
        for i in 0..128 {
            assert!(has_budget_remaining(), "spent after {i} units");
            consume_budget().await;
        }
        assert!(!has_budget_remaining());
    });
    run(3, async {
        let mut pending = 0;
        for _ in 0..300 {
            // `now_or_never` polls once: Pending only when the budget is out.
            let ready = futures_lite_ready(sim_runtime::time::sleep(Duration::ZERO));
            if !ready {
                pending += 1;
                sim_runtime::task::yield_now().await;
            }
        }
        assert!(pending >= 2, "300 ready sleeps spent the budget twice");
    });
}

/// Polls `f` once with a no-op waker: whether it was ready.
fn futures_lite_ready<F: std::future::Future>(f: F) -> bool {
    let mut f = std::pin::pin!(f);
    f.as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
        .is_ready()
}

/// Tokio's `blocking_*` in async code panics with Tokio's message (it
/// would block the only thread); in a `spawn_blocking` closure it works.
#[test]
fn blocking_calls_panic_in_async_code_and_work_in_spawn_blocking() {
    let msg = run_failing(4, || async {
        let (_tx, mut rx) = mpsc::channel::<u8>(1);
        let _ = rx.blocking_recv();
    });
    assert!(
        msg.contains("Cannot block the current thread from within a runtime"),
        "{msg}"
    );
    run(5, async {
        let (tx, rx) = oneshot::channel();
        tx.send(7u8).unwrap();
        let (mtx, mut mrx) = mpsc::channel(1);
        let got = sim_runtime::task::spawn_blocking(move || {
            mtx.blocking_send(1u8).unwrap();
            rx.blocking_recv().unwrap()
        })
        .await
        .unwrap();
        assert_eq!(got, 7);
        assert_eq!(mrx.recv().await, Some(1));
    });
}

/// Socket operations that complete spend a unit each, as Tokio's I/O does:
/// TCP reads, UDP sends and Unix-socket reads and sends. A loop over
/// always-ready socket I/O therefore yields. (Without the budget the
/// 128 ready operations below would leave it whole.)
#[test]
fn socket_io_spends_the_budget() {
    use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
    run(6, async {
        let listener = sim_runtime::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = sim_runtime::net::TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        client.write_all(&[7u8; 256]).await.unwrap();
        sim_runtime::time::sleep(Duration::from_millis(10)).await;
        let mut byte = [0u8; 1];
        // The sleep that ended spent the poll's first unit; 127 reads the rest.
        for i in 0..127 {
            assert!(has_budget_remaining(), "spent after {i} reads");
            server.read_exact(&mut byte).await.unwrap();
        }
        assert!(!has_budget_remaining(), "127 ready TCP reads spent it");

        sim_runtime::task::yield_now().await;
        let udp = sim_runtime::net::UdpSocket::bind("127.0.0.1:0")
            .await
            .unwrap();
        let to = udp.local_addr().unwrap();
        for _ in 0..128 {
            udp.send_to(b"x", to).await.unwrap();
        }
        assert!(!has_budget_remaining(), "128 UDP sends spent it");

        sim_runtime::task::yield_now().await;
        let (mut a, mut b) = sim_runtime::net::UnixStream::pair().unwrap();
        a.write_all(&[1u8; 64]).await.unwrap();
        for _ in 0..64 {
            b.read_exact(&mut byte).await.unwrap();
        }
        assert!(has_budget_remaining(), "65 of 128 spent");
        for _ in 0..63 {
            a.write_all(b"y").await.unwrap();
        }
        assert!(
            !has_budget_remaining(),
            "128 Unix-socket reads and writes spent it"
        );
    });
}
