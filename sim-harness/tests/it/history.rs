//! `sim::History`: calls stamped with virtual time and node, ended as ok,
//! failed or unknown (a dropped call is unknown), and checked for
//! linearizability with the failure shown as the smallest story.

#![cfg(simulation)]

use crate::common::{options, report};
use sim::__private::Seeds;
use sim::check::{Outcome, Register, RegisterOp, RegisterRet};
use sim_runtime::time::sleep;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

type Reg = sim::History<RegisterOp<u64>, RegisterRet<u64>>;

const MS: Duration = Duration::from_millis(1);

#[sim::test(seed = 1)]
async fn calls_carry_virtual_time_node_and_outcome() {
    let history: Reg = sim::History::new();
    let node = sim::node("client").build();
    let h = history.clone();
    node.spawn(async move {
        sleep(5 * MS).await;
        let w = h.invoke(0, RegisterOp::Write(1));
        sleep(2 * MS).await;
        w.ok(RegisterRet::Write);
        h.invoke(0, RegisterOp::Write(2)).fail();
        h.invoke(0, RegisterOp::Write(3)).unknown();
        // Dropped without an end: unknown.
        let _dropped = h.invoke(0, RegisterOp::Write(4));
    })
    .await
    .unwrap();
    assert_eq!(history.len(), 4);
    history.with(|h| {
        let ops = h.ops();
        assert_eq!(ops[0].call().at, Some(5 * MS));
        assert_eq!(ops[0].ret().unwrap().at, Some(7 * MS));
        assert_eq!(ops[0].label(), Some("client"));
        assert!(matches!(ops[0].outcome(), Outcome::Ok(RegisterRet::Write)));
        assert!(matches!(ops[1].outcome(), Outcome::Fail));
        assert!(matches!(ops[2].outcome(), Outcome::Unknown));
        assert!(matches!(ops[3].outcome(), Outcome::Unknown));
    });
    history.assert_linearizable(&Register::new(0));
}

#[sim::test(seeds = 0..4)]
async fn a_call_cut_by_a_crash_is_unknown() {
    let history: Reg = sim::History::new();
    let node = sim::node("client").build();
    let h = history.clone();
    node.spawn(async move {
        let _call = h.invoke(0, RegisterOp::Write(9));
        sleep(Duration::from_secs(10)).await;
    });
    sleep(MS).await;
    node.crash();
    sleep(MS).await;
    history.with(|h| {
        assert!(matches!(h.ops()[0].outcome(), Outcome::Unknown));
    });
}

/// A register on a node: writes go to a primary copy and are acknowledged,
/// reads come from a replica copy the primary updates after `lag` (zero:
/// one copy, linearizable).
async fn register_workload(history: Reg, lag: Duration) {
    let primary = Rc::new(Cell::new(0u64));
    let replica = Rc::new(Cell::new(0u64));
    let server = sim::node("register").build();
    for client in 0..3u32 {
        let (h, p, r) = (history.clone(), primary.clone(), replica.clone());
        let node = sim::node(format!("c{client}")).build();
        let server = server.clone();
        node.spawn(async move {
            for i in 0..20u64 {
                let value = u64::from(client) * 100 + i + 1;
                if i % 2 == 0 {
                    let call = h.invoke(client, RegisterOp::Write(value));
                    sleep(MS).await;
                    p.set(value);
                    if lag.is_zero() {
                        r.set(value);
                    } else {
                        let r = r.clone();
                        server.spawn(async move {
                            sleep(lag).await;
                            r.set(value);
                        });
                    }
                    call.ok(RegisterRet::Write);
                } else {
                    let call = h.invoke(client, RegisterOp::Read);
                    sleep(MS).await;
                    call.ok(RegisterRet::Read(r.get()));
                }
                sleep(MS * (1 + (i % 3) as u32)).await;
            }
        });
    }
    sleep(Duration::from_secs(1)).await;
    let _ = primary;
}

#[sim::test(seeds = 0..10)]
async fn a_linearizable_register_passes() {
    let history: Reg = sim::History::new();
    register_workload(history.clone(), Duration::ZERO).await;
    assert_eq!(history.len(), 60);
    history.assert_linearizable(&Register::new(0));
}

#[test]
fn a_stale_read_fails_the_run_with_the_smallest_story() {
    let r = report(
        options("history::stale", file!(), Seeds::One(3)),
        || async {
            let history: Reg = sim::History::new();
            register_workload(history.clone(), 20 * MS).await;
            history.assert_linearizable(&Register::new(0));
        },
    );
    assert!(r.contains("class: assertion"), "{r}");
    assert!(r.contains("operations is not linearizable"), "{r}");
    // The timeline names the clients' nodes and a read that saw an old
    // value after a write completed.
    assert!(
        r.contains("c0") || r.contains("c1") || r.contains("c2"),
        "{r}"
    );
    assert!(r.contains("cannot be placed"), "{r}");
    assert!(r.contains("minimal:"), "{r}");
    // What the clients saw is in the trace, one line per ended call.
    assert!(r.contains("sim::history: client "), "{r}");
    assert!(r.contains("Read -> ok Read("), "{r}");
}
