//! What the simulation cannot do honestly, refused clearly.
//!
//! Tokio's whole public API exists under simulation (a crate anywhere in a
//! service's graph compiles unchanged; `tests/parity/tokio_api.rs` checks it), but
//! a few calls reach past the simulated world: raw I/O on a socket's
//! descriptor (`try_io`, `async_io`), a real descriptor handed in or taken
//! out (`from_owned_fd`, `into_blocking_fd`), a named pipe on the disk, a
//! network device. Such a call fails the run as a forbidden operation, with
//! a message that names it and says what to use instead; the caller gets
//! `ErrorKind::Unsupported` meanwhile (the run stops at the end of the
//! step). Outside any runtime it panics as Tokio's would (no reactor). A
//! call with no error to return (`as_raw_fd`) panics with the same message.
//!
//! Never a plausible fake value: a clear failure is the point.

use crate::simulation::core::executor;
use crate::simulation::core::report::Class;
use std::io;

/// The failure's text: the call, why it is not simulated, what instead.
fn message(call: &str, why: &str, instead: &str) -> String {
    format!("sim: {call} is not supported in simulation: {why}. {instead} (see docs/breakage.md)")
}

/// Fails the run as a forbidden operation naming `call`; returns the
/// `Unsupported` error for the caller meanwhile.
#[track_caller]
pub(crate) fn refuse(call: &str, why: &str, instead: &str) -> io::Error {
    let msg = message(call, why, instead);
    executor::expect_current()
        .core_mut()
        .fail(Class::Forbidden, msg.clone());
    io::Error::new(io::ErrorKind::Unsupported, msg)
}

/// The same for a call that has no error to return: the run fails as a
/// forbidden operation and the call panics with the message.
#[track_caller]
pub(crate) fn refuse_panic(call: &str, why: &str, instead: &str) -> ! {
    let msg = message(call, why, instead);
    if let Some(exec) = executor::current() {
        exec.core_mut().fail(Class::Forbidden, msg.clone());
    }
    panic!("{msg}")
}

/// Why raw I/O through a socket's descriptor is refused, and what instead.
pub(crate) const RAW_IO: (&str, &str) = (
    "the closure would do I/O on the socket's descriptor itself, and a simulated socket \
     has no kernel socket behind it",
    "Use the socket's own read/write/send/recv methods",
);

/// Tokio's `try_io` and `async_io` for a socket type: refused (raw I/O on
/// the descriptor is outside the simulated network).
macro_rules! raw_io {
    ($t:ty, $name:literal) => {
        impl $t {
            /// Raw I/O through the descriptor: refused (unsupported.rs).
            #[track_caller]
            pub fn try_io<R>(
                &self,
                _interest: $crate::io::Interest,
                _f: impl FnOnce() -> std::io::Result<R>,
            ) -> std::io::Result<R> {
                let (why, instead) = $crate::simulation::unsupported::RAW_IO;
                Err($crate::simulation::unsupported::refuse(
                    concat!($name, "::try_io"),
                    why,
                    instead,
                ))
            }

            /// Raw I/O through the descriptor: refused (unsupported.rs).
            pub async fn async_io<R>(
                &self,
                _interest: $crate::io::Interest,
                _f: impl FnMut() -> std::io::Result<R>,
            ) -> std::io::Result<R> {
                let (why, instead) = $crate::simulation::unsupported::RAW_IO;
                Err($crate::simulation::unsupported::refuse(
                    concat!($name, "::async_io"),
                    why,
                    instead,
                ))
            }
        }
    };
}
pub(crate) use raw_io;
