//! TLS on ring, rustls's provider that reads `getrandom`: reqwest and tonic
//! between nodes through partitions and crashes, and the same seed gives
//! the same bytes on the wire, in one process and in two.
//!
//! `cargo sim test -p tls --test ring`. Under `--cfg simulation` alone the
//! crate's `tokio` is real Tokio: the file is empty then.
#![cfg(sim_graph)]

mod common;

use common::*;
use tls::KeyKind;

// rustls 0.23.48 deprecates ring's provider for its lack of post-quantum
// key exchange; it is still the provider that reads only `getrandom`.
#[allow(deprecated)]
fn ring() {
    install(rustls::crypto::ring::default_provider());
}

#[sim::test(seeds = 0..8, check_determinism)]
async fn reqwest_with_platform_roots_through_a_partition_and_a_crash() {
    ring();
    let seen = reqwest_through_faults(KeyKind::EcdsaP256).await;
    assert!(seen.roots > 0);
    // Two runs of each seed (check_determinism) agree on the bytes too.
    fold_into_fingerprint(seen.https).await;
}

#[sim::test(seeds = 0..8, check_determinism)]
async fn tonic_tls_channel_through_a_partition_and_a_crash() {
    ring();
    tonic_through_faults(KeyKind::EcdsaP256).await;
}

/// One seed, printing the server's bytes and the fingerprint (run by
/// `same_seed_same_bytes_in_two_processes`).
#[sim::test(seeds = 0..1)]
async fn bytes_of_one_seed() {
    ring();
    let seen = reqwest_through_faults(KeyKind::EcdsaP256).await;
    if printing() {
        println!(
            "wire: {:?} roots {} fingerprint {:#x}",
            seen.https,
            seen.roots,
            sim::fingerprint()
        );
    }
}

#[test]
fn same_seed_same_bytes_in_two_processes() {
    let a = in_a_new_process("bytes_of_one_seed", 5, "wire:");
    let b = in_a_new_process("bytes_of_one_seed", 5, "wire:");
    assert_eq!(a, b, "ring: the same seed sends the same bytes");
    let c = in_a_new_process("bytes_of_one_seed", 6, "wire:");
    assert_ne!(a, c, "another seed makes other keys and handshakes");
}
