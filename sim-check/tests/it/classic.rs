//! Known histories, linearizable or not, including the classic tricky ones.

use crate::brute;
use sim_check::{
    linearizable, linearizable_with, CheckError, Counter, CounterOp, CounterRet, History, Kv, KvOp,
    KvRet, Model, OpId, Options, Queue, QueueOp, QueueRet, Register, RegisterOp as R,
    RegisterRet as Rr, Set, SetOp, SetRet,
};

/// An operation that completes before anything else happens.
fn done<I, O>(h: &mut History<I, O>, client: u32, input: I, output: O) -> OpId {
    let id = h.invoke(client, input, None);
    h.ok(id, output, None);
    id
}

/// Checks `h`, asserts the brute force agrees, and returns the verdict.
fn check<M: Model>(model: &M, h: &History<M::Input, M::Output>) -> Result<(), CheckError> {
    let verdict = linearizable(model, h);
    assert!(
        !matches!(verdict, Err(CheckError::Timeout(_))),
        "{verdict:?}"
    );
    assert_eq!(
        verdict.is_ok(),
        brute::linearizable(model, h),
        "the brute force disagrees: {verdict:?}"
    );
    verdict
}

fn violation<M: Model>(model: &M, h: &History<M::Input, M::Output>) -> Box<sim_check::Violation> {
    match check(model, h) {
        Err(CheckError::Violation(v)) => {
            assert!(v.is_minimal(), "{v}");
            v
        }
        other => panic!("expected a violation, got {other:?}"),
    }
}

#[test]
fn an_empty_history_is_linearizable() {
    check(&Register::new(0u8), &History::new()).unwrap();
}

#[test]
fn a_read_concurrent_with_a_write_may_see_either_value() {
    for seen in [0, 1] {
        let mut h = History::new();
        let w = h.invoke(0, R::Write(1u8), None);
        let r = h.invoke(1, R::Read, None);
        h.ok(r, Rr::Read(seen), None);
        h.ok(w, Rr::Write, None);
        check(&Register::new(0), &h).unwrap();
    }
}

#[test]
fn a_read_cannot_see_a_write_called_after_it_returned() {
    let mut h = History::new();
    let r = done(&mut h, 1, R::Read, Rr::Read(1u8));
    done(&mut h, 0, R::Write(1), Rr::Write);
    let v = violation(&Register::new(0), &h);
    assert_eq!(v.core(), [r]);
    assert_eq!(v.unplaced(), r);
}

#[test]
fn a_stale_read_after_a_completed_write() {
    let mut h = History::new();
    let w = done(&mut h, 0, R::Write(1u8), Rr::Write);
    let r = done(&mut h, 1, R::Read, Rr::Read(0));
    let v = violation(&Register::new(0), &h);
    assert_eq!(v.core(), [w, r]);
    assert!(v.context().is_empty());
    assert_eq!(v.unplaced(), r);
    assert_eq!(v.linearized(), [w]);
    assert_eq!(v.state(), "1");
}

#[test]
fn a_read_of_a_value_never_written() {
    let mut h = History::new();
    done(&mut h, 0, R::Write(1u8), Rr::Write);
    let r = done(&mut h, 1, R::Read, Rr::Read(7));
    done(&mut h, 0, R::Write(2), Rr::Write);
    let v = violation(&Register::new(0), &h);
    assert_eq!(v.core(), [r]);
    assert_eq!(v.end(), h.op(r).ret().unwrap().index);
}

#[test]
fn two_reads_that_disagree_on_the_order_of_two_writes() {
    // write 1 || write 2, both overlapping two sequential reads that see 2
    // then 1, then a third that sees 2 again: the writes cannot be ordered.
    let mut h = History::new();
    let w1 = h.invoke(0, R::Write(1u8), None);
    let w2 = h.invoke(1, R::Write(2), None);
    done(&mut h, 2, R::Read, Rr::Read(2));
    done(&mut h, 2, R::Read, Rr::Read(1));
    h.ok(w1, Rr::Write, None);
    h.ok(w2, Rr::Write, None);
    check(&Register::new(0), &h).unwrap();
    let r = done(&mut h, 2, R::Read, Rr::Read(2));
    let v = violation(&Register::new(0), &h);
    assert_eq!(v.unplaced(), r);
    assert!(v.core().contains(&r));
}

#[test]
fn two_compare_and_sets_from_the_same_value_cannot_both_succeed() {
    let mut h = History::new();
    let a = h.invoke(
        0,
        R::Cas {
            expect: 0u8,
            new: 1,
        },
        None,
    );
    let b = h.invoke(1, R::Cas { expect: 0, new: 2 }, None);
    h.ok(a, Rr::Cas(true), None);
    h.ok(b, Rr::Cas(true), None);
    let v = violation(&Register::new(0), &h);
    assert_eq!(v.core(), [a, b]);
    // Recorded the other way (a failed CAS as `fail`), it is fine.
    let mut h = History::new();
    let a = h.invoke(
        0,
        R::Cas {
            expect: 0u8,
            new: 1,
        },
        None,
    );
    let b = h.invoke(1, R::Cas { expect: 0, new: 2 }, None);
    h.ok(a, Rr::Cas(true), None);
    h.fail(b, None);
    done(&mut h, 1, R::Read, Rr::Read(1));
    check(&Register::new(0), &h).unwrap();
}

#[test]
fn an_unknown_write_that_took_effect() {
    let mut h = History::new();
    let w = h.invoke(0, R::Write(1u8), None);
    h.unknown(w, None);
    done(&mut h, 1, R::Read, Rr::Read(1));
    check(&Register::new(0), &h).unwrap();
}

#[test]
fn an_unknown_write_that_did_not_take_effect() {
    let mut h = History::new();
    let w = h.invoke(0, R::Write(1u8), None);
    h.unknown(w, None);
    done(&mut h, 1, R::Read, Rr::Read(0));
    done(&mut h, 1, R::Read, Rr::Read(0));
    check(&Register::new(0), &h).unwrap();
}

#[test]
fn an_unknown_write_whose_effect_comes_after_a_later_completed_op() {
    // Client 0's write 1 times out; client 0 then writes 2, which completes
    // and is read; only then does the delayed write 1 land.
    let mut h = History::new();
    let w1 = h.invoke(0, R::Write(1u8), None);
    h.unknown(w1, None);
    done(&mut h, 0, R::Write(2), Rr::Write);
    done(&mut h, 1, R::Read, Rr::Read(2));
    done(&mut h, 1, R::Read, Rr::Read(1));
    check(&Register::new(0), &h).unwrap();
    // It lands once: 2 cannot come back.
    let r = done(&mut h, 1, R::Read, Rr::Read(2));
    let v = violation(&Register::new(0), &h);
    assert_eq!(v.unplaced(), r);
    assert!(
        !v.core().contains(&w1),
        "an unknown op is never in the core"
    );
}

#[test]
fn an_unknown_write_cannot_take_effect_before_its_call() {
    let mut h = History::new();
    done(&mut h, 1, R::Read, Rr::Read(1u8));
    let w = h.invoke(0, R::Write(1), None);
    h.unknown(w, None);
    violation(&Register::new(0), &h);
}

#[test]
fn a_pending_operation_is_an_unknown_one() {
    let mut h = History::new();
    h.invoke(0, R::Write(1u8), None);
    done(&mut h, 1, R::Read, Rr::Read(1));
    done(&mut h, 1, R::Read, Rr::Read(1));
    check(&Register::new(0), &h).unwrap();
}

#[test]
fn failed_operations_never_happened() {
    let mut h = History::new();
    let w = h.invoke(0, R::Write(1u8), None);
    h.fail(w, None);
    let r = done(&mut h, 1, R::Read, Rr::Read(1));
    let v = violation(&Register::new(0), &h);
    assert_eq!(v.core(), [r]);
}

#[test]
fn a_queue_is_first_in_first_out() {
    let q = Queue::<u8>::new();
    let mut h = History::new();
    let e1 = done(&mut h, 0, QueueOp::Enqueue(1), QueueRet::Enqueue);
    let e2 = done(&mut h, 0, QueueOp::Enqueue(2), QueueRet::Enqueue);
    let d = done(&mut h, 1, QueueOp::Dequeue, QueueRet::Dequeue(Some(2)));
    let v = violation(&q, &h);
    assert_eq!(v.unplaced(), d);
    // 1 was enqueued first, yet 2 came out: enqueue 2 only explains where
    // the 2 came from (it may have happened or not, 2 still cannot be first).
    assert_eq!(v.core(), [e1, d]);
    assert_eq!(v.context(), [e2]);

    // Concurrent enqueues may land in either order.
    let mut h = History::new();
    let a = h.invoke(0, QueueOp::Enqueue(1), None);
    let b = h.invoke(1, QueueOp::Enqueue(2), None);
    h.ok(b, QueueRet::Enqueue, None);
    h.ok(a, QueueRet::Enqueue, None);
    done(&mut h, 2, QueueOp::Dequeue, QueueRet::Dequeue(Some(2)));
    done(&mut h, 2, QueueOp::Dequeue, QueueRet::Dequeue(Some(1)));
    done(&mut h, 2, QueueOp::Dequeue, QueueRet::Dequeue(None));
    check(&q, &h).unwrap();
}

#[test]
fn a_queue_loses_nothing_and_duplicates_nothing() {
    let q = Queue::<u8>::new();
    let mut h = History::new();
    done(&mut h, 0, QueueOp::Enqueue(1), QueueRet::Enqueue);
    done(&mut h, 1, QueueOp::Dequeue, QueueRet::Dequeue(None));
    violation(&q, &h);

    let mut h = History::new();
    done(&mut h, 0, QueueOp::Enqueue(1), QueueRet::Enqueue);
    let a = h.invoke(1, QueueOp::Dequeue, None);
    let b = h.invoke(2, QueueOp::Dequeue, None);
    h.ok(a, QueueRet::Dequeue(Some(1)), None);
    h.ok(b, QueueRet::Dequeue(Some(1)), None);
    violation(&q, &h);

    // An unknown enqueue explains a dequeue of its value.
    let mut h = History::new();
    let e = h.invoke(0, QueueOp::Enqueue(5), None);
    h.unknown(e, None);
    done(&mut h, 1, QueueOp::Dequeue, QueueRet::Dequeue(Some(5)));
    check(&q, &h).unwrap();
}

#[test]
fn a_counter_read_sees_a_sum_of_a_prefix() {
    let c = Counter::new(0);
    let mut h = History::new();
    let a = h.invoke(0, CounterOp::Add(1), None);
    let b = h.invoke(1, CounterOp::Add(10), None);
    done(&mut h, 2, CounterOp::Read, CounterRet::Read(10));
    h.ok(a, CounterRet::Add, None);
    h.ok(b, CounterRet::Add, None);
    check(&c, &h).unwrap();
    let r = done(&mut h, 2, CounterOp::Read, CounterRet::Read(10));
    let v = violation(&c, &h);
    assert_eq!(v.unplaced(), r);
}

#[test]
fn a_set_keeps_what_was_added() {
    let s = Set::<u8>::new();
    let mut h = History::new();
    done(&mut h, 0, SetOp::Add(1), SetRet::Add);
    done(&mut h, 1, SetOp::Contains(1), SetRet::Contains(true));
    done(&mut h, 1, SetOp::Read, SetRet::Read([1].into()));
    check(&s, &h).unwrap();
    done(&mut h, 0, SetOp::Read, SetRet::Read([].into()));
    violation(&s, &h);
}

#[test]
fn keys_are_independent() {
    let kv = Kv::<&str, u8>::new();
    let mut h = History::new();
    done(&mut h, 0, KvOp::Put("a", 1), KvRet::Put);
    done(&mut h, 1, KvOp::Get("b"), KvRet::Get(None));
    done(&mut h, 1, KvOp::Get("a"), KvRet::Get(Some(1)));
    done(&mut h, 0, KvOp::Delete("a"), KvRet::Delete);
    check(&kv, &h).unwrap();
    let g = done(&mut h, 1, KvOp::Get("a"), KvRet::Get(Some(1)));
    let v = violation(&kv, &h);
    assert_eq!(v.partition(), Some("\"a\""));
    assert_eq!(v.partition_ops(), 4);
    assert_eq!(v.unplaced(), g);
}

/// Two concurrent appends, then a read: the read sees both, in either
/// order, and nothing else.
fn two_appends_then_get(seen: &str) -> History<KvOp<&'static str, String>, KvRet<String>> {
    let mut h = History::new();
    let x = h.invoke(0, KvOp::Append("k", "x".to_string()), None);
    let y = h.invoke(1, KvOp::Append("k", "y".to_string()), None);
    h.ok(y, KvRet::Append, None);
    h.ok(x, KvRet::Append, None);
    done(
        &mut h,
        2,
        KvOp::Get("k"),
        KvRet::Get(Some(seen.to_string())),
    );
    h
}

#[test]
fn concurrent_appends_land_in_either_order_and_both() {
    let kv = Kv::with_append();
    check(&kv, &two_appends_then_get("xy")).unwrap();
    check(&kv, &two_appends_then_get("yx")).unwrap();
    for lost in ["x", "y", "", "xx", "xyx"] {
        let v = violation(&kv, &two_appends_then_get(lost));
        assert_eq!(v.unplaced(), OpId(2), "{lost:?}");
    }
}

#[test]
fn appends_that_completed_one_after_the_other_are_in_that_order() {
    // append x; then append y; then get -> "yx": not linearizable, since
    // the appends did not overlap.
    let kv = Kv::with_append();
    let mut h = History::new();
    done(&mut h, 0, KvOp::Append("k", "x".to_string()), KvRet::Append);
    done(&mut h, 1, KvOp::Append("k", "y".to_string()), KvRet::Append);
    let g = done(
        &mut h,
        2,
        KvOp::Get("k"),
        KvRet::Get(Some("yx".to_string())),
    );
    let v = violation(&kv, &h);
    assert_eq!(v.unplaced(), g);
    // Shrunk: "yx" cannot be read whichever of the appends took effect
    // (each taken as a maybe), so the read alone is the core.
    assert_eq!(v.core(), [g]);
    // In order, or overlapping, the answers are fine.
    let mut h = History::new();
    done(&mut h, 0, KvOp::Append("k", "x".to_string()), KvRet::Append);
    done(&mut h, 1, KvOp::Append("k", "y".to_string()), KvRet::Append);
    done(
        &mut h,
        2,
        KvOp::Get("k"),
        KvRet::Get(Some("xy".to_string())),
    );
    check(&kv, &h).unwrap();
    check(&kv, &two_appends_then_get("yx")).unwrap();
}

#[test]
fn a_missing_key_reads_as_empty_only_with_append() {
    // 6.824: Get of a missing key returns "", and Append creates it.
    let mut h = History::new();
    done(&mut h, 0, KvOp::Get("k"), KvRet::Get(Some(String::new())));
    done(&mut h, 0, KvOp::Append("k", "a".to_string()), KvRet::Append);
    done(&mut h, 1, KvOp::Get("k"), KvRet::Get(Some("a".to_string())));
    check(&Kv::with_append(), &h).unwrap();
    // Without append, "" is a value someone must have put.
    let mut h = History::new();
    let g = done(&mut h, 0, KvOp::Get("k"), KvRet::Get(Some(String::new())));
    assert_eq!(violation(&Kv::<&str, String>::new(), &h).unplaced(), g);
}

#[test]
fn a_search_that_runs_out_of_steps_is_a_timeout_never_a_pass() {
    // Many concurrent writes and a read: linearizable, but not in 3 steps.
    let mut h = History::new();
    let ids: Vec<OpId> = (0..6)
        .map(|c| h.invoke(c, R::Write(c as u8), None))
        .collect();
    done(&mut h, 9, R::Read, Rr::Read(0));
    for id in ids {
        h.ok(id, Rr::Write, None);
    }
    let tight = Options {
        steps_max: 3,
        ..Options::default()
    };
    match linearizable_with(&Register::new(9), &h, &tight) {
        Err(CheckError::Timeout(t)) => {
            assert_eq!(t.steps_max(), 3);
            assert_eq!(t.partitions()[0].ops, 7);
        }
        other => panic!("{other:?}"),
    }
    check(&Register::new(9), &h).unwrap();
}

#[test]
fn the_verdict_and_the_report_are_the_same_every_time() {
    let mut h = History::new();
    let w = h.invoke(0, R::Write(1u8), None);
    done(&mut h, 1, R::Read, Rr::Read(1));
    h.ok(w, Rr::Write, None);
    done(&mut h, 1, R::Read, Rr::Read(0));
    let a = linearizable(&Register::new(0), &h).unwrap_err().to_string();
    let b = linearizable(&Register::new(0), &h).unwrap_err().to_string();
    assert_eq!(a, b);
}
