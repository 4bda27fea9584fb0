//! The network conformance suite: one set of tests for `tokio::net`, compiled
//! twice and asserting the same observable outcomes both times.
//!
//! - In a production build, `sim_runtime::net` is real Tokio and every test
//!   runs on real loopback sockets. This is the reference: whatever these
//!   tests assert is what the host's TCP/IP stack actually does.
//! - Under `--cfg simulation`, the same tests run on the simulated network,
//!   everything on one node (its loopback), with the seed taken from
//!   `SIM_SEED` (or the runtime's fixed default).
//!
//! ```text
//! cargo test -p sim-runtime --features full --test net
//! RUSTFLAGS="--cfg simulation" CARGO_TARGET_DIR=target/sim cargo test -p sim-runtime --test net
//! ```
//!
//! A production build needs Tokio's `net`, `rt`, `time`, `io-util` and
//! `macros` features. `cargo test --workspace` gets them through the
//! examples, which enable `full`; alone, `-p sim-runtime` needs
//! `--features full` (without the features this binary compiles to nothing
//! rather than failing to build the rest of the crate's tests).
//!
//! Rules the tests follow so that both modes can pass them:
//! - Every test drives itself through [`run`], a fresh current-thread runtime.
//! - No assertion on elapsed time. Timeouts ([`bounded`]) are generous bounds
//!   on things that must happen, never a measurement.
//! - Errors are checked by kind *and* Linux errno ([`assert_os_error`]),
//!   except `WouldBlock` from `try_*`, which Tokio synthesises without an
//!   errno when it already knows the socket is not ready.
//! - Every place where the simulation cannot match loopback is listed in
//!   [`exceptions`] and marked in the test by an `if cfg!(simulation)` branch.
//!   There are two: `localhost_resolves_to_ipv6_too` and
//!   `ephemeral_range_is_host_config`.
//! - In production, names that are neither literals nor in `/etc/hosts` go to
//!   the host's DNS server (`lookup::unresolvable_names_are_errors`), so that
//!   one test waits for a real resolver; its bound is a minute.
#![cfg(any(
    simulation,
    all(
        feature = "net",
        feature = "rt",
        feature = "time",
        feature = "io-util",
        feature = "macros"
    )
))]

/// Names the failure-mode rows (the tables in sim-net's and sim-fs's crate
/// docs) a test checks; `cargo xtask tidy` reads the claims from the source.
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}

mod errors;
mod lookup;
mod tcp;
mod tcp_close;
mod udp;

/// The named exceptions: where the simulation deliberately differs from real
/// loopback. Each one is forced by loopback itself (the host's configuration
/// or name service), not by a missing feature of the simulation.
///
/// - **`localhost_resolves_to_ipv6_too`** (`lookup::lookup_host_localhost`):
///   the host's resolver may also return `[::1]:PORT` for `localhost`,
///   depending on `/etc/hosts`. The simulated resolver returns exactly
///   `127.0.0.1:PORT`.
/// - **`ephemeral_range_is_host_config`** (`tcp::port_zero_picks_distinct_ephemeral_ports`):
///   a real host's ephemeral range is `net.ipv4.ip_local_port_range`, read
///   from `/proc`; the simulation uses Linux's default, 32768..=60999.
pub mod exceptions {}

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use sim_runtime::net::{TcpListener, TcpStream};

/// Linux errno values, as `raw_os_error()` reports them.
pub mod errno {
    pub const EINVAL: i32 = 22;
    pub const EPIPE: i32 = 32;
    pub const EMSGSIZE: i32 = 90;
    pub const EDESTADDRREQ: i32 = 89;
    pub const EADDRINUSE: i32 = 98;
    pub const EADDRNOTAVAIL: i32 = 99;
    pub const ECONNRESET: i32 = 104;
    pub const ENOTCONN: i32 = 107;
    pub const ECONNREFUSED: i32 = 111;
}

/// How long anything that must happen may take before the test fails
/// instead of hanging. Never a measurement: on loopback everything here
/// happens in microseconds.
pub const BOUND: Duration = Duration::from_secs(5);

/// Runs `f` on a fresh current-thread runtime (in simulation, a fresh
/// simulation seeded from `SIM_SEED` or the fixed default).
pub fn run<F: Future>(f: F) -> F::Output {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Awaits `f`, failing the test if it does not finish within [`BOUND`].
pub async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    match sim_runtime::time::timeout(BOUND, f).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: did not happen within {BOUND:?}"),
    }
}

/// Asserts that `err` has Linux's kind and errno for the condition.
#[track_caller]
pub fn assert_os_error(err: &io::Error, kind: io::ErrorKind, errno: i32) {
    assert_eq!(err.kind(), kind, "kind of {err:?}");
    assert_eq!(err.raw_os_error(), Some(errno), "errno of {err:?}");
}

/// std's `ErrorKind::Uncategorized`, which stable Rust cannot name: the kind
/// of errno values std does not map (EMSGSIZE, EDESTADDRREQ) and of resolver
/// failures. The simulation can produce it the same way.
pub fn uncategorized() -> io::ErrorKind {
    io::Error::from_raw_os_error(errno::EDESTADDRREQ).kind()
}

/// Unwraps the error of `r`, failing with the value if it was `Ok`.
#[track_caller]
pub fn expect_err<T: std::fmt::Debug>(r: io::Result<T>) -> io::Error {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e,
    }
}

/// A listener on 127.0.0.1 with a port picked by the host.
pub async fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// A connected pair on loopback: (client, the server's accepted end).
pub async fn pair() -> (TcpStream, TcpStream) {
    let listener = listener().await;
    let addr = listener.local_addr().unwrap();
    let client = TcpStream::connect(addr).await.unwrap();
    let (server, from) = listener.accept().await.unwrap();
    assert_eq!(from, client.local_addr().unwrap());
    (client, server)
}

/// A port on 127.0.0.1 that nobody listens on (it was just bound and
/// released).
pub async fn unused_port() -> SocketAddr {
    listener().await.local_addr().unwrap()
}

/// The bytes of a deterministic test stream: byte `i` is a function of `i`
/// with a period (251, prime) that no write or read size below lines up with.
pub fn pattern(start: usize, len: usize) -> Vec<u8> {
    (start..start + len).map(|i| (i % 251) as u8).collect()
}
