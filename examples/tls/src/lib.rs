//! TLS between nodes, on the ecosystem's crates with a plain `tokio`
//! dependency: an HTTPS server (hyper over tokio-rustls) and a gRPC server
//! (tonic's own TLS), each with a certificate rcgen makes inside the
//! simulation, and their clients: reqwest with its default TLS (rustls,
//! the platform's roots through rustls-platform-verifier) and a tonic TLS
//! channel with the native roots.
//!
//! The clients trust the certificate's CA as an extra root, and they load
//! the platform's roots as well: on a simulated node those are the host's
//! CA bundle, served read-only (`SIM_CA_BUNDLE` pins one; see the README).
//!
//! Randomness: rcgen's keys, rustls's handshakes and tickets draw from the
//! crypto provider. ring reads `getrandom`, which the simulation answers
//! from the seed, so the same seed gives the same bytes on the wire.
//! aws-lc-rs (rustls's default provider) seeds its generator from CPU
//! jitter timed with `rdtsc` and mixes in `RDRAND`: its bytes differ from
//! run to run (docs/breakage.md). `tests/ring.rs` and `tests/aws_lc.rs`
//! hold both.

pub mod grpc;
pub mod https;
pub mod pki;
pub mod tap;

pub use pki::{KeyKind, Pki};
pub use tap::{Digest, Tap};
