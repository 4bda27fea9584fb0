//! A `#[sim::test]` body driven by a coverage-guided fuzzer: the fuzzer's
//! bytes are the run's decisions.
//!
//! A seed fed to ChaCha cannot be steered: a small change of the seed is a
//! different run altogether. A tape can (sim-runtime's tape.rs): every
//! draw of the run is the tape's next bytes, so a fuzzer that keeps the
//! inputs reaching new code (libFuzzer, through `cargo fuzz` or
//! `cargo xtask fuzz`) explores decisions the way it explores a parser's
//! input. The first 8 bytes of an input are the seed (which picks the
//! strategy, as a seed of a sweep does); the rest is the tape.
//!
//! A failing input is written as a tape file next to the test's traces
//! (`target/sim/<test>/fuzz-<hash>.tape`), with the command that replays it
//! on the test itself (`SIM_TAPE=...`), and then raised as a panic, which
//! the fuzzer records as a crash. A target is a few lines:
//!
//! ```ignore
//! #![no_main]
//! libfuzzer_sys::fuzz_target!(|data: &[u8]| {
//!     sim::fuzz::run(options(), data, || my_service::scenario());
//! });
//! ```
//!
//! where `options()` are the [`Options`] of the `#[sim::test]` the target
//! stands for (its name, file, package and manifest directory: what its
//! replay command and tape header name).

use super::seed::{cargo_target, run_one, test_name, trace_dir, How, Options};
use super::tape;
use sim_runtime::__private::harness::{cargo_prefix, TapeMode};
use sim_runtime::__private::TestOutput;
use sim_runtime::sim::Class;
use std::future::Future;
use std::sync::Arc;

/// The seed and the tape of a fuzzer's input.
pub fn split(data: &[u8]) -> (u64, &[u8]) {
    let mut seed = [0u8; 8];
    let n = data.len().min(8);
    seed[..n].copy_from_slice(&data[..n]);
    (u64::from_le_bytes(seed), &data[n..])
}

/// Runs `make()` once, its decisions taken from `data` (see the module's
/// docs); panics, after writing the input as a tape, if the run fails.
pub fn run<F, Fut>(opts: Options, data: &[u8], make: F)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let (seed, draws) = split(data);
    let name = test_name(&opts);
    let r = run_one(
        &opts,
        seed,
        &Arc::new(make),
        How {
            tape: Some(TapeMode::Replay(draws.to_vec())),
            ..How::default()
        },
    );
    if r.outcome.passed() {
        return;
    }
    let o = &r.outcome;
    let path = trace_dir(&opts, &name).join(format!("fuzz-{:016x}.tape", fnv(data)));
    let replay = match tape::write_as(&path, &name, seed, draws) {
        Ok(path) => format!(
            "{}={} {} test -p {} {} -- {name} --exact",
            tape::VAR,
            path.display(),
            cargo_prefix(),
            opts.package,
            cargo_target(&opts)
        ),
        Err(e) => format!("the tape could not be written: {e}"),
    };
    panic!(
        "sim: fuzz: {name}: an input failed the run · seed {seed} · strategy {} · step {} · \
         virtual time {:?}\nsim: class: {}\n    {}\nsim: replay: {replay}",
        o.schedule,
        o.step,
        o.now,
        o.class.map_or("?", Class::name),
        o.message.lines().collect::<Vec<_>>().join("\n    ")
    );
}

/// FNV-1a of an input: a stable name for its tape file.
fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn the_first_eight_bytes_are_the_seed() {
        assert_eq!(split(&[]), (0, &[][..]));
        assert_eq!(split(&[7]), (7, &[][..]));
        let data = [1, 0, 0, 0, 0, 0, 0, 0, 9, 9];
        assert_eq!(split(&data), (1, &[9, 9][..]));
    }
}
