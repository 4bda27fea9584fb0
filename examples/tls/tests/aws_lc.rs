//! TLS on aws-lc-rs, rustls's default provider and reqwest's: reqwest and
//! tonic between nodes through partitions and crashes.
//!
//! AWS-LC seeds its generator from CPU jitter entropy (timed with `rdtsc`)
//! and mixes `RDRAND` into every draw, neither of which the simulation
//! sees; inside a simulation its entropy source is one that reads
//! `getrandom`, the seed's (sim-runtime's libc/aws_lc.rs), so the bytes on
//! the wire are the seed's, in one process and in two
//! (`same_seed_same_bytes_in_two_processes`), as on ring. So the keys are
//! ECDSA, rcgen's default, whose signature's length depends on its random
//! nonce: were a nonce not the seed's, the records' lengths and with them
//! the schedule would differ, and `check_determinism` would fail.
//!
//! `cargo sim test -p tls --test aws_lc`.
#![cfg(sim_graph)]

mod common;

use common::*;
use tls::KeyKind;

fn aws_lc() {
    install(rustls::crypto::aws_lc_rs::default_provider());
}

#[sim::test(seeds = 0..8, check_determinism)]
async fn reqwest_default_tls_through_a_partition_and_a_crash() {
    aws_lc();
    let seen = reqwest_through_faults(KeyKind::EcdsaP256).await;
    assert!(seen.roots > 0);
}

#[sim::test(seeds = 0..8, check_determinism)]
async fn tonic_tls_channel_through_a_partition_and_a_crash() {
    aws_lc();
    tonic_through_faults(KeyKind::EcdsaP256).await;
}

/// One seed, printing the server's bytes and the fingerprint.
#[sim::test(seeds = 0..1)]
async fn bytes_of_one_seed() {
    aws_lc();
    let seen = reqwest_through_faults(KeyKind::EcdsaP256).await;
    if printing() {
        println!("wire: {:?}", seen.https);
        println!("fingerprint: {:#x}", sim::fingerprint());
    }
}

#[test]
fn same_seed_same_bytes_in_two_processes() {
    let run = || {
        let wire = in_a_new_process("bytes_of_one_seed", 5, "wire:");
        let fingerprint = in_a_new_process("bytes_of_one_seed", 5, "fingerprint:");
        (wire, fingerprint)
    };
    let (wire_a, fp_a) = run();
    let (wire_b, fp_b) = run();
    assert_eq!(fp_a, fp_b, "the schedule is the seed's");
    assert_eq!(wire_a, wire_b, "aws-lc-rs: the bytes are the seed's");
}
