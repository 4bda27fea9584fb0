//! `sim::fake` in a production build (lib.rs's switch picks this file
//! without `--cfg simulation`): nothing is recorded, nothing is drawn, and
//! explicit faults still apply. The simulation's counterpart is
//! `simulation/fake.rs`, with the same items.

use crate::fake::versioned::NamedDraws;
use crate::fake::{Inner, Mode};
use std::panic::Location;
use std::sync::{Arc, OnceLock};
use std::task::Context;
use std::time::{Duration, Instant};

/// A stream seeded by the fake's name (there is no seed).
pub(crate) type Draws = NamedDraws;

pub(crate) fn draws(fake: &str) -> Draws {
    NamedDraws::new(fake)
}

pub(crate) fn register(_: &Arc<Inner>) {}

#[track_caller]
pub(crate) fn armed(_: &str, _: &'static Location<'static>, _: Mode) {}

pub(crate) fn happened(_: &str, _: &'static Location<'static>, _: Mode, _: &str, _: bool, _: &str) {
}

/// Drawn modes are inert: no seed to draw from.
pub(crate) fn draw(_: &str, _: Mode, _: u32, _: u32) -> bool {
    false
}

/// When a row's version was written, for staleness bounds: time since the
/// first call, on the process's monotonic clock (a production build's real
/// clock, as Tokio's `Instant::now()` is there).
pub(crate) fn clock() -> Duration {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed()
}

/// A drawn hang's end: never made in a production build (nothing is drawn).
pub(crate) struct Timer;

impl Timer {
    pub(crate) fn after(_: Duration) -> Timer {
        Timer
    }

    pub(crate) fn elapsed(&mut self, _: &mut Context<'_>) -> bool {
        false
    }
}
