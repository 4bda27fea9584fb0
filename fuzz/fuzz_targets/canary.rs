//! A canary of `examples/canaries`, driven by libFuzzer: the fuzzer's bytes
//! are the run's seed and decisions (`sim::fuzz`). The canary is named by
//! `SIM_FUZZ_CANARY` (`cargo xtask fuzz <canary>` sets it); a failing input
//! is written as a tape that `cargo test -p canaries --test sweep` replays.
#![no_main]

use canaries::Variant;
use sim::__private::{Options, Seeds};

/// The options of the canary's sweep test (`tests/sweep.rs`), so that a
/// tape found here names that test and replays on it.
fn options(name: &'static str) -> Options {
    Options {
        name: Box::leak(format!("sweep::{name}").into_boxed_str()),
        file: "tests/sweep.rs",
        package: "canaries",
        crate_name: "sweep",
        manifest_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/canaries"),
        seeds: Seeds::Range(0, 1),
        time_limit_ms: Some(60_000),
        ..Options::default()
    }
}

fn canary() -> &'static str {
    static NAME: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let name = std::env::var("SIM_FUZZ_CANARY").unwrap_or_else(|_| {
            panic!("sim: SIM_FUZZ_CANARY names the canary to fuzz (e.g. lost_update)")
        });
        canaries::CATALOG
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("sim: SIM_FUZZ_CANARY={name:?} is not in the catalog"))
            .name
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let name = canary();
    sim::fuzz::run(options(name), data, move || {
        canaries::scenario(name, Variant::Buggy)
    });
});
