//! `coverage = "all"` with antithesis_sdk's sites: each of this binary's
//! is reached or holds in some seed, one of them in a simulated OS thread,
//! so the sweep passes (antithesis.rs has the failing side).
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

#[sim::test(seeds = 0..16, coverage = "all")]
async fn every_sdk_site_is_covered() {
    let seed = sim::seed();
    antithesis_sdk::assert_sometimes!(seed % 4 == 3, "a seed of three mod four");
    antithesis_sdk::assert_reachable!("the body");
    antithesis_sdk::assert_always!(seed < 16, "the seed is in the range");
    antithesis_sdk::assert_sometimes_greater_than!(seed, 10u64, "a seed past ten");
    antithesis_sdk::assert_sometimes_all!(
        { even: seed % 2 == 0, large: seed > 7 },
        "an even seed past seven"
    );
    std::thread::spawn(|| antithesis_sdk::assert_reachable!("a thread"))
        .join()
        .unwrap();
}
