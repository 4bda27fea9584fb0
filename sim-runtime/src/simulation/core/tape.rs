//! Decisions as a tape: every random draw of a run, in the order the run
//! takes them, as bytes.
//!
//! A run's randomness comes from the seed tree (seed.rs): one ChaCha
//! stream per consumer (the schedule, timer ties, `select!`, fault points,
//! PCT, the program's own `getrandom`), and single values derived from the
//! seed for the run's swarm choices (fault points on, the clock's epoch,
//! the network's and each crash's seeds). While a tape is on for this
//! thread, each of those draws also goes through here:
//!
//! - **recording**, the draw is taken from the seed tree as always and its
//!   bytes appended to the tape (little-endian: 8 bytes for a `u64`, 4 for
//!   a `u32`, `n` for `n` random bytes);
//! - **replaying**, the draw is the tape's next bytes instead, and zeros
//!   once the tape is used up.
//!
//! The run is a function of its code and its draws, so a run replayed from
//! the tape its seed recorded takes every decision the seeded run took:
//! the same fingerprint, bit for bit. A tape that is changed (shrunk, or
//! written by a fuzzer) is a different run that still replays exactly.
//! With no tape on, a draw costs one predictable branch (`Stream::taped`
//! is false).
//!
//! The tape is per thread: seeds run in parallel on worker threads, one
//! tape each.

use std::cell::{Cell, RefCell};

/// What the tape of a run does.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Draw from the seed tree and write each draw down.
    Record,
    /// Draw from these bytes (zeros past their end).
    Replay(Vec<u8>),
    /// A branch of an earlier run (exploration): draw from `prefix` (the
    /// earlier run's tape up to a moment), then, once it is used up, from
    /// a fresh stream seeded with `salt`, and write those draws down after
    /// the prefix. The tape after the run (prefix and new draws) replays
    /// the branch exactly, as any tape does; another `salt` is another
    /// branch from the same moment.
    Branch { prefix: Vec<u8>, salt: u64 },
}

/// A tape after its run: the bytes recorded, or for a replay the bytes
/// given and how many the run read.
#[derive(Clone, Debug, Default)]
pub struct Used {
    pub bytes: Vec<u8>,
    /// Bytes the run read (for a recording, all of them); a replay that
    /// read past the end counts what it read, zeros included.
    pub read: usize,
    /// Where the run's steps were in the tape: `(step, position, virtual
    /// ns)` at each poll that began after a draw (a step with no draw
    /// since the last mark adds none). A branch from a mark's position
    /// replays the run up to that step.
    pub marks: Vec<(u64, usize, u64)>,
}

struct State {
    bytes: Vec<u8>,
    pos: usize,
    recording: bool,
    /// A branch's fresh draws once its prefix is used up (`Mode::Branch`).
    fresh: Option<rand_chacha::ChaCha8Rng>,
    /// See [`Used::marks`].
    marks: Vec<(u64, usize, u64)>,
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static TAPE: RefCell<State> = const {
        RefCell::new(State {
            bytes: Vec::new(),
            pos: 0,
            recording: false,
            fresh: None,
            marks: Vec::new(),
        })
    };
}

super::hooks::carried!(
    TAPE_CARRIED: (bool, State),
    take: || (
        ON.replace(false),
        TAPE.with(|t| {
            std::mem::replace(
                &mut *t.borrow_mut(),
                State {
                    bytes: Vec::new(),
                    pos: 0,
                    recording: false,
                    fresh: None,
                    marks: Vec::new(),
                },
            )
        }),
    ),
    put: |(on, state): (bool, State)| {
        ON.set(on);
        TAPE.with(|t| *t.borrow_mut() = state);
    },
);

/// Whether a tape is on for this thread (streams made now are taped).
#[inline]
pub(crate) fn on() -> bool {
    ON.get()
}

/// Whether this thread's run replays a tape (a failure being shrunk or
/// replayed: its outcome is known to be reached by these draws); a branch
/// (exploration) is a new run, not a replay.
pub(crate) fn replaying() -> bool {
    on() && TAPE.with(|t| {
        let t = t.borrow();
        !t.recording && t.fresh.is_none()
    })
}

/// Turns the tape on for this thread until `stop`. Panics if one is on:
/// two runs on one thread at once cannot share a tape.
pub(crate) fn start(mode: Mode) {
    assert!(
        !on(),
        "sim: a tape is already on for this thread (one run at a time per thread)"
    );
    TAPE.with(|t| {
        let mut t = t.borrow_mut();
        t.pos = 0;
        t.fresh = None;
        t.marks.clear();
        match mode {
            Mode::Record => {
                t.bytes.clear();
                t.recording = true;
            }
            Mode::Replay(bytes) => {
                t.bytes = bytes;
                t.recording = false;
            }
            Mode::Branch { prefix, salt } => {
                use rand_core::SeedableRng;
                t.bytes = prefix;
                t.recording = false;
                t.fresh = Some(rand_chacha::ChaCha8Rng::seed_from_u64(salt));
            }
        }
    });
    ON.set(true);
}

/// How many bytes of draws the run has taken so far: the position of
/// this moment of the run in its tape (0 with no tape on). A branch from
/// here replays the tape's first `position()` bytes.
pub(crate) fn position() -> usize {
    if !on() {
        return 0;
    }
    TAPE.with(|t| {
        let t = t.borrow();
        if t.recording {
            t.bytes.len()
        } else {
            t.pos
        }
    })
}

/// A poll of `step` at virtual time `now_ns` begins: marks where the run
/// is in its tape, if it drew since the last mark (see [`Used::marks`]).
/// Called only while a tape is on.
#[cold]
pub(crate) fn mark(step: u64, now_ns: u64) {
    TAPE.with(|t| {
        let mut t = t.borrow_mut();
        let pos = if t.recording { t.bytes.len() } else { t.pos };
        if t.marks.last().is_none_or(|&(_, p, _)| p < pos) {
            t.marks.push((step, pos, now_ns));
        }
    })
}

/// Turns the tape off and returns it.
pub(crate) fn stop() -> Used {
    ON.set(false);
    TAPE.with(|t| {
        let mut t = t.borrow_mut();
        t.fresh = None;
        let read = if t.recording { t.bytes.len() } else { t.pos };
        Used {
            bytes: std::mem::take(&mut t.bytes),
            read,
            marks: std::mem::take(&mut t.marks),
        }
    })
}

/// Fills `out` from the tape, or writes `fresh` (the seed tree's draw) to
/// it, as the mode says.
#[cold]
fn through(fresh: &[u8], out: &mut [u8]) {
    TAPE.with(|t| {
        let mut t = t.borrow_mut();
        if t.recording {
            t.bytes.extend_from_slice(fresh);
            out.copy_from_slice(fresh);
        } else if t.fresh.is_some() && t.pos + out.len() > t.bytes.len() {
            // A branch's prefix is used up (within this draw, or before):
            // what the prefix lacks comes from the branch's own stream, and
            // is written down after it.
            use rand_core::RngCore;
            let start = t.pos.min(t.bytes.len());
            let from_prefix = t.bytes.len() - start;
            out[..from_prefix].copy_from_slice(&t.bytes[start..]);
            if let Some(rng) = t.fresh.as_mut() {
                rng.fill_bytes(&mut out[from_prefix..]);
            }
            let new = out[from_prefix..].to_vec();
            t.bytes.extend_from_slice(&new);
            t.pos += out.len();
        } else {
            let start = t.pos.min(t.bytes.len());
            let end = (t.pos + out.len()).min(t.bytes.len());
            let n = end - start;
            out[..n].copy_from_slice(&t.bytes[start..end]);
            out[n..].fill(0);
            t.pos += out.len();
        }
    })
}

/// A `u64` draw through the tape.
pub(crate) fn u64(fresh: u64) -> u64 {
    let mut out = [0u8; 8];
    through(&fresh.to_le_bytes(), &mut out);
    u64::from_le_bytes(out)
}

/// A `u32` draw through the tape.
pub(crate) fn u32(fresh: u32) -> u32 {
    let mut out = [0u8; 4];
    through(&fresh.to_le_bytes(), &mut out);
    u32::from_le_bytes(out)
}

/// Random bytes through the tape: `buf` holds the seed tree's bytes and
/// gets the tape's.
pub(crate) fn bytes(buf: &mut [u8]) {
    let fresh = buf.to_vec();
    through(&fresh, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A branch replays its prefix, then draws from its salt's stream and
    /// records: its tape replays it, the same salt gives the same branch,
    /// another salt another one.
    #[test]
    fn a_branch_replays_its_prefix_then_draws_fresh() {
        let branch = |salt: u64| {
            start(Mode::Branch {
                prefix: 7u64.to_le_bytes()[..6].to_vec(),
                salt,
            });
            let first = u64(100);
            assert_eq!(position(), 8);
            let second = u32(100);
            assert_eq!(position(), 12);
            let used = stop();
            assert_eq!(used.bytes.len(), 12);
            assert_eq!(used.read, 12);
            (first, second, used.bytes)
        };
        let (first, second, bytes) = branch(1);
        // The prefix's six bytes, then two of the branch's own.
        assert_eq!(first & 0xffff_ffff_ffff, 7);
        assert_ne!(second, 100, "not the seed tree's draw");
        assert_eq!(branch(1), (first, second, bytes.clone()));
        assert_ne!(branch(2).1, second);
        start(Mode::Replay(bytes));
        assert_eq!((u64(0), u32(0)), (first, second));
        stop();
    }

    #[test]
    fn a_recording_replays_and_a_short_tape_ends_in_zeros() {
        start(Mode::Record);
        assert_eq!(u64(7), 7);
        assert_eq!(u32(9), 9);
        let mut b = [1u8, 2, 3];
        bytes(&mut b);
        assert_eq!(b, [1, 2, 3]);
        let used = stop();
        assert_eq!(used.bytes.len(), 15);
        assert_eq!(used.read, 15);
        assert!(!on());

        start(Mode::Replay(used.bytes.clone()));
        assert_eq!(u64(100), 7, "the tape's draw, not the fresh one");
        assert_eq!(u32(100), 9);
        let mut b = [0u8; 3];
        bytes(&mut b);
        assert_eq!(b, [1, 2, 3]);
        assert_eq!(u64(100), 0, "past the end: zeros");
        let used = stop();
        assert_eq!(used.read, 23);

        start(Mode::Replay(vec![5, 0, 0]));
        assert_eq!(u64(1), 5, "a partial draw is padded with zeros");
        stop();
    }
}
