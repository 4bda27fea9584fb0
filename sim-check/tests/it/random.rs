//! The checker against the brute force on thousands of small random
//! histories, and every claim of each violation re-proven by brute force.
//!
//! Histories come from the simulated correct store (`store.rs`): some kept
//! as recorded (linearizable by construction), most with answers replaced
//! at random (often not). Seeds are fixed, so a failure reproduces.

use crate::brute::{self, Role};
use crate::store::{self, Exec, Rng, Shape};
use sim_check::{
    linearizable, CheckError, Counter, History, Kv, Model, OpId, Outcome, Queue, Register, Set,
    Violation,
};

/// Compares verdicts on `n` small histories; returns (linearizable,
/// violations) counts.
fn compare<M: Exec>(model: &M, seed: u64, n: usize, keys: u64) -> (usize, usize)
where
    M::Input: Clone,
    M::Output: Clone,
{
    let mut rng = Rng::new(seed);
    let (mut ok, mut bad) = (0, 0);
    for case in 0..n {
        let shape = Shape {
            clients: 2 + rng.below(2) as u32,
            ops: 2 + rng.below(6) as usize,
            keys,
            unknown: [0, 20, 60][rng.below(3) as usize],
            fail: 10,
            pending: rng.percent(30),
        };
        let truth = store::run(model, &mut rng, &shape);
        let h = if rng.percent(85) {
            store::corrupt(model, &mut rng, &truth, 40)
        } else {
            truth
        };
        let expected = brute::linearizable(model, &h);
        match linearizable(model, &h) {
            Ok(()) => {
                assert!(expected, "case {case} (seed {seed}): the checker passed a non-linearizable history: {:#?}", h.ops());
                ok += 1;
            }
            Err(CheckError::Violation(v)) => {
                assert!(
                    !expected,
                    "case {case} (seed {seed}): the checker rejected a linearizable history:\n{v}"
                );
                verify(model, &h, &v);
                bad += 1;
            }
            Err(e @ CheckError::Timeout(_)) => panic!("case {case} (seed {seed}): {e}"),
        }
    }
    (ok, bad)
}

/// Re-proves by brute force everything a violation claims.
fn verify<M: Model>(model: &M, h: &History<M::Input, M::Output>, v: &Violation) {
    let end = v.end();
    let core = v.core();
    let context = v.context();
    assert!(v.is_minimal(), "{v}");
    for &c in &core {
        assert!(
            matches!(h.op(c).outcome(), Outcome::Ok(_)),
            "a core op is a completed one:\n{v}"
        );
        assert!(
            h.op(c).ret().unwrap().index <= end,
            "a core op returned by the cut:\n{v}"
        );
    }
    // The violation's partition, called before the cut.
    let before: Vec<OpId> = (0..h.len() as u32)
        .map(OpId)
        .filter(|&id| h.op(id).call().index < end && !matches!(h.op(id).outcome(), Outcome::Fail))
        .filter(|&id| model.partition(h.op(id).input()).as_deref() == v.partition())
        .collect();
    let roles = |recorded: &[OpId], maybe: &[OpId]| -> Vec<(OpId, Role)> {
        recorded
            .iter()
            .map(|&id| (id, Role::Recorded))
            .chain(maybe.iter().map(|&id| (id, Role::Maybe)))
            .collect()
    };
    let without =
        |set: &[OpId], x: OpId| -> Vec<OpId> { set.iter().copied().filter(|&y| y != x).collect() };
    let others = |recorded: &[OpId]| -> Vec<OpId> {
        before
            .iter()
            .copied()
            .filter(|id| !recorded.contains(id))
            .collect()
    };

    // The cut is a violation, and the one before it is not.
    let all: Vec<(OpId, Role)> = before.iter().map(|&id| (id, Role::Recorded)).collect();
    assert!(
        !brute::linearizable_as(model, h, end, &all),
        "the cut history is linearizable:\n{v}"
    );
    let earlier = before
        .iter()
        .filter_map(|&id| h.op(id).ret().map(|e| e.index))
        .filter(|&r| r < end)
        .max();
    if let Some(earlier) = earlier {
        let all: Vec<(OpId, Role)> = before
            .iter()
            .filter(|&&id| h.op(id).call().index < earlier)
            .map(|&id| (id, Role::Recorded))
            .collect();
        let completed = all.iter().any(|&(id, _)| {
            h.op(id).output().is_some() && h.op(id).ret().unwrap().index <= earlier
        });
        if completed {
            assert!(
                brute::linearizable_as(model, h, earlier, &all),
                "an earlier cut is already a violation:\n{v}"
            );
        }
    }

    // The core: a violation with everything else a maybe, and 1-minimal.
    assert!(
        !brute::linearizable_as(model, h, end, &roles(&core, &others(&core))),
        "the core is not a violation:\n{v}"
    );
    for &c in &core {
        let rest = without(&core, c);
        assert!(
            brute::linearizable_as(model, h, end, &roles(&rest, &others(&rest))),
            "core op {c} is not needed:\n{v}"
        );
    }

    // The context: core plus context is a violation; every core op is still
    // needed with only the context beside it; no context op is superfluous.
    assert!(context
        .iter()
        .all(|id| before.contains(id) && !core.contains(id)));
    assert!(
        !brute::linearizable_as(model, h, end, &roles(&core, &context)),
        "core plus context is not a violation:\n{v}"
    );
    let needed = |context: &[OpId]| {
        core.iter().all(|&c| {
            let maybe: Vec<OpId> = context.iter().copied().chain([c]).collect();
            brute::linearizable_as(model, h, end, &roles(&without(&core, c), &maybe))
        })
    };
    assert!(
        needed(&context),
        "with the context alone, some core op is not needed:\n{v}"
    );
    for &k in &context {
        assert!(
            !needed(&without(&context, k)),
            "context op {k} is not needed:\n{v}"
        );
    }

    // The longest order found replays through the model.
    assert!(core.contains(&v.unplaced()));
    let mut state = model.init();
    for &id in v.linearized() {
        assert!(
            core.contains(&id) || context.contains(&id),
            "{id} is in neither the core nor the context:\n{v}"
        );
        let output = if core.contains(&id) {
            h.op(id).output()
        } else {
            None
        };
        state = model
            .step(&state, h.op(id).input(), output)
            .unwrap_or_else(|| panic!("the order found does not replay:\n{v}"));
    }
    assert_eq!(model.describe_state(&state), v.state());
}

/// Both verdicts must be common, or the comparison proves little.
fn assert_mixed((ok, bad): (usize, usize)) {
    let n = ok + bad;
    assert!(ok * 5 >= n, "only {ok} of {n} histories were linearizable");
    assert!(bad * 5 >= n, "only {bad} of {n} histories were violations");
}

#[test]
fn register_against_brute_force() {
    assert_mixed(compare(&Register::new(0u8), 1, 1500, 3));
}

#[test]
fn kv_against_brute_force_on_the_whole_history() {
    // The brute force does not partition: this also checks that checking
    // keys apart decides the same.
    assert_mixed(compare(&Kv::<u8, u8>::new(), 2, 1500, 2));
}

#[test]
fn kv_with_append_against_brute_force_on_the_whole_history() {
    assert_mixed(compare(&Kv::<u8, String>::with_append(), 6, 1500, 2));
}

#[test]
fn counter_against_brute_force() {
    assert_mixed(compare(&Counter::new(0), 3, 1500, 3));
}

#[test]
fn set_against_brute_force() {
    assert_mixed(compare(&Set::<u8>::new(), 4, 1500, 3));
}

#[test]
fn queue_against_brute_force() {
    assert_mixed(compare(&Queue::<u8>::new(), 5, 1500, 3));
}

/// Larger histories from the correct store must pass, unknown outcomes,
/// failures and pending operations included.
fn correct_stores_pass<M: Exec>(model: &M, seed: u64, keys: u64, ops: u64, unknown: &[u64])
where
    M::Input: Clone,
    M::Output: Clone,
{
    let mut rng = Rng::new(seed);
    for case in 0..60 {
        let shape = Shape {
            clients: 2 + rng.below(6) as u32,
            ops: 20 + rng.below(ops) as usize,
            keys,
            unknown: unknown[rng.below(unknown.len() as u64) as usize],
            fail: 5,
            pending: rng.percent(50),
        };
        let h = store::run(model, &mut rng, &shape);
        if let Err(e) = linearizable(model, &h) {
            panic!("case {case} (seed {seed}): a correct store's history was rejected:\n{e}");
        }
    }
}

#[test]
fn correct_stores_pass_at_scale() {
    correct_stores_pass(&Register::new(0u8), 11, 4, 300, &[0, 10, 30]);
    correct_stores_pass(&Kv::<u8, u8>::new(), 12, 5, 300, &[0, 10, 30]);
    correct_stores_pass(&Kv::<u8, String>::with_append(), 16, 5, 300, &[0, 10, 30]);
    correct_stores_pass(&Counter::new(0), 13, 4, 300, &[0, 10, 30]);
    correct_stores_pass(&Set::<u8>::new(), 14, 8, 300, &[0, 10, 30]);
    // A queue's state holds the order of every element not yet dequeued,
    // which only later dequeues reveal: the search is exponential in how
    // many concurrent enqueues are pending at once (see the crate docs).
    correct_stores_pass(&Queue::<u8>::new(), 15, 8, 60, &[0, 10]);
}

/// Larger corrupted histories: each violation's core plus context, small
/// enough for the brute force, must be a violation by itself.
#[test]
fn larger_violations_are_real() {
    let model = Register::new(0u8);
    let mut rng = Rng::new(21);
    let mut seen = 0;
    for _ in 0..200 {
        let shape = Shape {
            clients: 4,
            ops: 40,
            keys: 4,
            unknown: 20,
            fail: 5,
            pending: true,
        };
        let truth = store::run(&model, &mut rng, &shape);
        let h = store::corrupt(&model, &mut rng, &truth, 4);
        let Err(CheckError::Violation(v)) = linearizable(&model, &h) else {
            continue;
        };
        let (core, context) = (v.core(), v.context());
        if core.len() + context.len() > 10 {
            continue;
        }
        seen += 1;
        let roles: Vec<(OpId, Role)> = core
            .iter()
            .map(|&id| (id, Role::Recorded))
            .chain(context.iter().map(|&id| (id, Role::Maybe)))
            .collect();
        assert!(
            !brute::linearizable_as(&model, &h, v.end(), &roles),
            "not a violation:\n{v}"
        );
    }
    assert!(seen >= 30, "only {seen} violations were checked");
}
