//! The default action of a signal a node has no handler for, as signal(7)
//! states it: terminate (the node is killed), stop (paused), continue
//! (resumed), or ignore. Before, every signal but three killed the node,
//! SIGSTOP and SIGCONT included. And which numbers `signal()` refuses, with
//! Tokio's errors.

use sim_runtime::signal::unix::{signal, SignalKind};
use sim_runtime::sim;
use sim_runtime::time::{sleep, Duration};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

fn run(f: impl std::future::Future<Output = ()>) {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f);
}

/// A node whose task counts its 1 ms ticks.
fn ticking(name: &str) -> (sim::Node, Arc<AtomicU32>) {
    let node = sim::node(name).build();
    let ticks = Arc::new(AtomicU32::new(0));
    let t = ticks.clone();
    drop(sim::spawn_on(node, async move {
        loop {
            sleep(Duration::from_millis(1)).await;
            t.fetch_add(1, Ordering::SeqCst);
        }
    }));
    (node, ticks)
}

#[test]
fn stop_signals_pause_and_sigcont_resumes() {
    run(async {
        for (i, stop) in [19, 20, 21, 22].into_iter().enumerate() {
            let (node, ticks) = ticking(&format!("n{i}"));
            sleep(Duration::from_millis(5)).await;
            sim::signal(node, SignalKind::from_raw(stop));
            assert!(sim::is_alive(node), "signal {stop} must not kill");
            assert!(sim::is_paused(node), "signal {stop} stops the process");
            let frozen = ticks.load(Ordering::SeqCst);
            sleep(Duration::from_millis(10)).await;
            assert_eq!(ticks.load(Ordering::SeqCst), frozen);
            sim::signal(node, SignalKind::from_raw(18));
            assert!(!sim::is_paused(node));
            sleep(Duration::from_millis(10)).await;
            assert!(ticks.load(Ordering::SeqCst) > frozen);
        }
    });
}

#[test]
fn ignored_signals_change_nothing() {
    run(async {
        let (node, ticks) = ticking("n");
        for kind in [
            SignalKind::child(),
            SignalKind::window_change(),
            SignalKind::from_raw(23),
            SignalKind::from_raw(18),
        ] {
            sim::signal(node, kind);
            assert!(sim::is_alive(node) && !sim::is_paused(node));
        }
        sleep(Duration::from_millis(5)).await;
        assert!(ticks.load(Ordering::SeqCst) > 0);
        // A stop signal to the main node, which cannot be paused, is
        // ignored: the test goes on.
        sim::signal(sim::current_node(), SignalKind::from_raw(20));
        sleep(Duration::from_millis(1)).await;
    });
}

/// A handled stop signal reaches its listener and does not stop the node;
/// SIGCONT resumes a paused node even when it is handled.
#[test]
fn handlers_replace_stop_but_not_continue() {
    run(async {
        let node = sim::node("n").build();
        let got = sim::spawn_on(node, async {
            let mut tstp = signal(SignalKind::from_raw(20)).unwrap();
            let mut cont = signal(SignalKind::from_raw(18)).unwrap();
            tstp.recv().await.unwrap();
            cont.recv().await.unwrap();
            "both"
        });
        sleep(Duration::from_millis(1)).await;
        sim::signal(node, SignalKind::from_raw(20));
        assert!(!sim::is_paused(node));
        sleep(Duration::from_millis(1)).await;
        sim::pause(node);
        sim::signal(node, SignalKind::from_raw(18));
        assert!(!sim::is_paused(node));
        assert_eq!(got.await.unwrap(), "both");
    });
}

#[test]
fn registration_refuses_what_tokio_refuses() {
    run(async {
        for signum in [-1, 0, 4, 8, 9, 11, 19] {
            let e = signal(SignalKind::from_raw(signum)).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::Other);
            assert_eq!(
                e.to_string(),
                format!("Refusing to register signal {signum}")
            );
        }
        for signum in [64, 65, 1000] {
            let e = signal(SignalKind::from_raw(signum)).unwrap_err();
            assert_eq!(e.to_string(), "signal too large");
        }
        for signum in [1, 2, 3, 10, 12, 15, 34, 63] {
            drop(signal(SignalKind::from_raw(signum)).unwrap());
        }
    });
}
