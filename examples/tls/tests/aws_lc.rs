//! TLS on aws-lc-rs, rustls's default provider and reqwest's: reqwest and
//! tonic between nodes through partitions and crashes.
//!
//! aws-lc's generator does not take its randomness from `getrandom` alone:
//! it seeds from CPU jitter timed with `rdtsc` and mixes `RDRAND` into every
//! draw (docs/breakage.md). The bytes on the wire differ from run to run of
//! a seed, so these tests use Ed25519 keys, whose signatures have one
//! length (an ECDSA signature's length depends on its random nonce, and
//! with it the records' lengths and so the schedule). The schedule is then
//! the seed's, which `check_determinism` checks; the bytes are not, which
//! `same_seed_other_bytes_in_two_processes` records.
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
    let seen = reqwest_through_faults(KeyKind::Ed25519).await;
    assert!(seen.roots > 0);
}

#[sim::test(seeds = 0..8, check_determinism)]
async fn tonic_tls_channel_through_a_partition_and_a_crash() {
    aws_lc();
    tonic_through_faults(KeyKind::Ed25519).await;
}

/// One seed, printing the server's bytes and the fingerprint.
#[sim::test(seeds = 0..1)]
async fn bytes_of_one_seed() {
    aws_lc();
    let seen = reqwest_through_faults(KeyKind::Ed25519).await;
    if printing() {
        println!("wire: {:?}", seen.https);
        println!("fingerprint: {:#x}", sim::fingerprint());
    }
}

#[test]
fn same_seed_other_bytes_in_two_processes() {
    let run = || {
        let wire = in_a_new_process("bytes_of_one_seed", 5, "wire:");
        let fingerprint = in_a_new_process("bytes_of_one_seed", 5, "fingerprint:");
        (wire, fingerprint)
    };
    let (wire_a, fp_a) = run();
    let (wire_b, fp_b) = run();
    assert_eq!(fp_a, fp_b, "the schedule is the seed's");
    // FIXME: aws-lc's randomness escapes the seed (rdtsc jitter, RDRAND):
    // the same seed sends other bytes. When it is held (docs/breakage.md),
    // this becomes assert_eq.
    assert_ne!(wire_a, wire_b, "aws-lc-rs: the bytes are not the seed's");
}
