//! In the order the tasks became runnable: Tokio's current-thread order,
//! exactly (so yields never run ahead under it).

use super::{Runnable, Strategy};

pub(crate) struct Fifo;

impl Strategy for Fifo {
    const NAMES: &'static [&'static str] = &["fifo"];
    const KEEPS_TOKIO_ORDER: bool = true;

    fn new(_variant: usize, _seed: u64) -> Fifo {
        Fifo
    }

    #[inline]
    fn pick(&mut self, runnable: &mut Runnable<'_>) -> (u32, u64) {
        runnable.pop_front()
    }
}
