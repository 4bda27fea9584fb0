//! The public surface under `--cfg simulation`: Tokio's paths, simulated
//! where they touch the executor, real Tokio's where they do not.

pub use crate::simulation::control as sim;
pub use crate::simulation::fs;
pub use crate::simulation::io;
pub use crate::simulation::net;
pub use crate::simulation::process;
pub use crate::simulation::runtime;
pub use crate::simulation::signal;
/// Tokio's `stream` module: empty (the `Stream` utilities live in the
/// `tokio-stream` crate).
pub mod stream {}
pub use crate::simulation::task;
pub use crate::simulation::task::spawn;
pub use crate::simulation::time;
pub use sim_runtime_macros::{main, test};
pub use tokio::{join, pin, sync, task_local, try_join};

#[doc(hidden)]
pub use crate::simulation::run::private as __private;

/// Tokio's `select!`, with its fairness draw taken from the seed instead of
/// Tokio's process-wide counter (which depends on what ran before).
#[macro_export]
macro_rules! select {
    (biased; $($t:tt)*) => {
        $crate::__private::__tokio::select!(biased; $($t)*)
    };
    (else => $($t:tt)*) => {
        $crate::__private::__tokio::select!(else => $($t)*)
    };
    () => {
        $crate::__private::__tokio::select!()
    };
    ($($t:tt)*) => {
        $crate::__private::__tokio::select!(
            @{ start={ $crate::__private::thread_rng_n(BRANCHES) }; () } $($t)*
        )
    };
}
