//! `coverage = "all"` passing (this binary has only sites a sweep covers),
//! and the plateau that stops a sweep when coverage stops growing.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

#[sim::test(seeds = 0..20, coverage = "all")]
async fn every_site_is_covered() {
    sim::sometimes!(sim::seed() % 2 == 0, "an even seed");
    sim::reachable!("the body");
}

#[cfg(simulation)]
#[test]
fn a_plateau_stops_the_sweep() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["every_site_is_covered", "--exact", "--nocapture"])
        .env("SIM_SEEDS", "0..1000")
        .env("SIM_JOBS", "1")
        .env("SIM_COVERAGE_PLATEAU", "5")
        .env_remove("SIM_SEED")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("coverage stopped growing for 5 seeds; stopped after 6 of 1000 seeds"),
        "{text}"
    );
}
