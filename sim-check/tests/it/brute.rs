//! A brute-force checker, written from the crate docs' definition and
//! sharing no code with the real one: try every order of the operations
//! that respects real time, each optional operation in it or not.

use sim_check::{History, Model, OpId, Outcome};

/// How an operation takes part in a brute-force check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// As recorded: required, with its answer, between call and return.
    Recorded,
    /// Optional, no answer, effect between its call and its return.
    Maybe,
    /// Optional, no answer, effect at any time after its call.
    Unknown,
}

struct Op<'a, M: Model> {
    input: &'a M::Input,
    output: Option<&'a M::Output>,
    call: u64,
    /// `Some` only when the op must be placed before this event.
    ret: Option<u64>,
    required: bool,
}

/// Whether `h` is linearizable, by the crate docs' definition.
pub fn linearizable<M: Model>(model: &M, h: &History<M::Input, M::Output>) -> bool {
    let ops: Vec<(OpId, Role)> = h
        .ops()
        .iter()
        .enumerate()
        .filter_map(|(i, op)| {
            let role = match op.outcome() {
                Outcome::Ok(_) => Role::Recorded,
                Outcome::Fail => return None,
                Outcome::Unknown | Outcome::Pending => Role::Unknown,
            };
            Some((OpId(i as u32), role))
        })
        .collect();
    linearizable_as(model, h, u64::MAX, &ops)
}

/// Whether the operations `ops` of `h`, each in its role, cut after event
/// `end` (an op returning later counts as unknown), are linearizable.
pub fn linearizable_as<M: Model>(
    model: &M,
    h: &History<M::Input, M::Output>,
    end: u64,
    ops: &[(OpId, Role)],
) -> bool {
    let ops: Vec<Op<'_, M>> = ops
        .iter()
        .map(|&(id, role)| {
            let op = h.op(id);
            assert!(op.call().index < end);
            let returned = op.ret().map(|e| e.index).filter(|&r| r <= end);
            let role = match (role, op.outcome(), returned) {
                (_, Outcome::Ok(_), None)
                | (_, Outcome::Unknown | Outcome::Pending | Outcome::Fail, _) => Role::Unknown,
                (role, Outcome::Ok(_), Some(_)) => role,
            };
            Op {
                input: op.input(),
                output: if role == Role::Recorded {
                    op.output()
                } else {
                    None
                },
                call: op.call().index,
                ret: if role == Role::Unknown {
                    None
                } else {
                    returned
                },
                required: role == Role::Recorded,
            }
        })
        .collect();
    assert!(ops.len() <= 12, "brute force is for small histories");
    let mut used = vec![false; ops.len()];
    extend(model, &ops, &mut used, &model.init())
}

fn extend<M: Model>(model: &M, ops: &[Op<'_, M>], used: &mut [bool], state: &M::State) -> bool {
    if (0..ops.len()).all(|i| used[i] || !ops[i].required) {
        return true;
    }
    for x in 0..ops.len() {
        if used[x] {
            continue;
        }
        // Everything that must come before x is already placed...
        let before = (0..ops.len())
            .all(|a| used[a] || !ops[a].required || ops[a].ret.is_none_or(|r| r > ops[x].call));
        // ...and nothing placed had to come after x.
        let after = (0..ops.len()).all(|c| !used[c] || ops[x].ret.is_none_or(|r| r > ops[c].call));
        if !before || !after {
            continue;
        }
        let Some(next) = model.step(state, ops[x].input, ops[x].output) else {
            continue;
        };
        used[x] = true;
        let ok = extend(model, ops, used, &next);
        used[x] = false;
        if ok {
            return true;
        }
    }
    false
}
