//! `coverage = "all"` passing (this binary has only sites a sweep covers),
//! and the plateau that stops a sweep when coverage stops growing.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

#[sim::test(seeds = 0..20, coverage = "all")]
async fn every_site_is_covered() {
    sim::sometimes!(sim::seed() % 2 == 0, "an even seed");
    sim::reachable!("the body");
    // A site in a simulated OS thread's code counts for the run.
    std::thread::spawn(|| sim::reachable!("a thread"))
        .join()
        .unwrap();
}

#[cfg(simulation)]
#[test]
fn a_plateau_stops_the_sweep_at_the_same_seed_whatever_the_jobs() {
    // Seed 0 holds "an even seed" and reaches "the body"; seeds 1..=5 add
    // nothing. Tallies are folded in seed order, so the stop is the same
    // with one job or four.
    for jobs in ["1", "4"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["every_site_is_covered", "--exact", "--nocapture"])
            .env("SIM_SEEDS", "0..1000")
            .env("SIM_JOBS", jobs)
            .env("SIM_COVERAGE_PLATEAU", "5")
            // A log of its own (`seeds.shard-1-of-1.log`): this binary's
            // own sweep of the test may take `seeds.log` over once the
            // child's has ended, before it is read.
            .env("SIM_SHARD", "1/1")
            .env_remove("SIM_SEED")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("coverage stopped growing for 5 seeds; stopped after 6 of 1000 seeds"),
            "SIM_JOBS={jobs}: {text}"
        );
        // One job starts exactly those six seeds; more jobs may have
        // started a few beyond (not counted), never the whole range. The
        // sweep's start line names the log each seed is written to.
        let log = text
            .lines()
            .find(|l| l.starts_with("sim: every_site_is_covered: 1000 seeds (0..1000), "))
            .and_then(|l| l.rsplit_once("): "))
            .map(|(_, path)| std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|| panic!("no start line naming the seeds' log: {text}"));
        let started = log
            .lines()
            .filter(|l| {
                l.starts_with("sim: every_site_is_covered seed ") && l.contains(" (strategy ")
            })
            .count();
        if jobs == "1" {
            assert_eq!(started, 6, "{text}");
        }
        assert!(started < 1000, "SIM_JOBS={jobs}: the sweep did not stop");
    }
}

/// In production the macros are inert: a fault point is `false` and an
/// assertion's condition is type-checked but never evaluated.
#[cfg(not(simulation))]
#[test]
fn production_macros_are_inert() {
    let mut evaluated = false;
    let mut cond = || {
        evaluated = true;
        false
    };
    sim::always!(cond(), "never evaluated");
    sim::sometimes!(cond(), "never evaluated either");
    sim::reachable!("nothing");
    sim::unreachable!("nothing at all");
    assert!(!evaluated);
    assert!(!sim::buggify!());
    assert!(!sim::buggify!("named"));
    assert!(!sim::buggify_with_prob!(1, 1));
}
