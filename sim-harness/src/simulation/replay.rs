//! Replays in fresh processes, and the run's identity.
//!
//! The rerun of the first failing seed in the same process cannot see a
//! leak that lives in the process: a static a library initialised during an
//! earlier seed, a file left on the real disk, a read of the TSC. So a
//! failing seed also runs again, `SIM_REPLAYS` times (default 3, `0`: none),
//! each in a fresh process: this test binary run again with `SIM_SEED` and
//! the test's name, as the replay line says. The child runs its one seed,
//! prints one line for its parent (`sim-replay: ...`), and skips replays of
//! its own. The report then says "replays exactly" or "replays k of n".
//!
//! The report also names the build the run came from (commit and whether
//! the tree had changes, rustc, target, RUSTFLAGS): a replay on another
//! build is not the same run.

use sim_runtime::__private::harness::SeedOutcome;
use sim_runtime::sim::Class;
use std::process::Command;

/// Set in a child: it is a replay, and reports to its parent.
const CHILD_ENV: &str = "SIM_REPLAY_CHILD";

/// What a child prints first on its line for the parent.
const LINE: &str = "sim-replay:";

/// Whether this process is a replay run by a parent.
pub(crate) fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// In a child: tells the parent how its seed ended. The class comes last:
/// its name may have spaces (`forbidden operation`).
pub(crate) fn tell_parent(o: &SeedOutcome) {
    eprintln!(
        "{LINE} seed={} fingerprint={:#018x} class={}",
        o.seed,
        o.fingerprint,
        o.class.map_or(PASS, Class::name),
    );
}

/// The class a child names for a run that passed.
const PASS: &str = "pass";

/// How many fresh processes replay a failing seed (`SIM_REPLAYS`).
fn replays() -> usize {
    match std::env::var("SIM_REPLAYS") {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            panic!(
                "sim: SIM_REPLAYS={v:?} is malformed. Accepted form: a number of fresh \
                 processes ≥ 0, e.g. SIM_REPLAYS=3 (0: no replay in a fresh process)"
            )
        }),
        Err(_) => 3,
    }
}

/// One child's verdict, from its output: its class (`None`: it passed)
/// and fingerprint.
fn parse(output: &str, seed: u64) -> Option<(Option<Class>, u64)> {
    let line = output
        .lines()
        .find(|l| l.starts_with(LINE) && l.contains(&format!(" seed={seed} ")))?;
    let (fields, class) = line.split_once(" class=")?;
    let fp = fields
        .split_whitespace()
        .find_map(|w| w.strip_prefix("fingerprint=0x"))?;
    let fp = u64::from_str_radix(fp, 16).ok()?;
    let class = match class {
        PASS => None,
        name => Some(Class::from_name(name)?),
    };
    Some((class, fp))
}

/// Replays `first`'s seed of the test `name` (or, for a run an
/// exploration branched, its tape at `tape`) in fresh processes; returns
/// what the report says of it.
pub(crate) fn fresh(name: &str, first: &SeedOutcome, tape: Option<&std::path::Path>) -> String {
    let n = replays();
    if n == 0 {
        return "not run (SIM_REPLAYS=0)".into();
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return format!("not run: this test binary cannot be found ({e})"),
    };
    let want = (first.class, first.fingerprint);
    let mut same = 0;
    let mut differ: Vec<(String, usize)> = Vec::new();
    for _ in 0..n {
        let mut cmd = Command::new(&exe);
        // Otherwise `SIM_TAPE`, if this process replays one, is inherited.
        if let Some(path) = tape {
            cmd.env(super::tape::VAR, path);
        }
        let out = cmd
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "1")
            .env("SIM_SEED", first.seed.to_string())
            .env_remove("SIM_EXPLORE")
            .env_remove("SIM_SEEDS")
            .env_remove("SIM_SHARD")
            .env_remove("SIM_COVERAGE_PLATEAU")
            // A replay writes no results: they are the sweep's.
            .env_remove("SIM_RESULTS")
            // Only the class and fingerprint are read back: a deadlock's
            // holders experiment (forks, and loading symbols to name what
            // was dropped: a second in a debug build) would be wasted.
            .env("SIM_WAIT_PROBE", "off")
            .output();
        let text = match out {
            Ok(o) => format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => return format!("not run: the test binary did not start ({e})"),
        };
        match parse(&text, first.seed) {
            Some(got) if got == want => same += 1,
            Some((class, fp)) => {
                let class = class.map_or(PASS, Class::name);
                let text = format!("{class} (fingerprint {fp:#018x})");
                match differ.iter_mut().find(|(t, _)| *t == text) {
                    Some((_, k)) => *k += 1,
                    None => differ.push((text, 1)),
                }
            }
            None => {
                return format!(
                    "not run: `{name}` is not a test this binary runs by that name (a test \
                     that calls the runner itself)"
                )
            }
        }
    }
    if same == n {
        format!("replays exactly ({n} of {n} fresh processes: the same class and fingerprint)")
    } else {
        let ended: Vec<String> = differ
            .iter()
            .map(|(text, k)| format!("{k} ended {text}"))
            .collect();
        format!(
            "replays {same} of {n}: NOT deterministic across processes (state outside the \
             seed: a static, a real file, the TSC): {}",
            ended.join("; ")
        )
    }
}

/// The build this run came from, for the report.
pub(crate) fn identity() -> String {
    // `cargo test` runs a test binary in its package's folder.
    let commit = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .and_then(|dir| {
            let git = |args: &[&str]| {
                Command::new("git")
                    .arg("-C")
                    .arg(&dir)
                    .args(args)
                    .output()
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            };
            let head = git(&["rev-parse", "--short=12", "HEAD"])?;
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            Some(if dirty {
                format!("{head} (with uncommitted changes)")
            } else {
                head
            })
        })
        .unwrap_or_else(|| "unknown (not a git checkout)".into());
    format!(
        "commit {commit} · {} · target {} · RUSTFLAGS {:?}",
        env!("SIM_BUILD_RUSTC"),
        env!("SIM_BUILD_TARGET"),
        env!("SIM_BUILD_RUSTFLAGS")
    )
}

#[cfg(test)]
mod tests {
    use super::parse;
    use sim_runtime::sim::Class;

    #[test]
    fn a_childs_line_is_read_back() {
        let out = "noise\nsim-replay: seed=7 fingerprint=0x00000000000000ff class=assertion\n";
        assert_eq!(parse(out, 7), Some((Some(Class::Assertion), 255)));
        assert_eq!(parse(out, 8), None);
        assert_eq!(parse("nothing", 7), None);
        let passed = "sim-replay: seed=3 fingerprint=0x0000000000000001 class=pass";
        assert_eq!(parse(passed, 3), Some((None, 1)));
    }

    /// A class whose name has a space reads back whole: read as its first
    /// word, a replay of a forbidden operation with the original
    /// fingerprint was counted as one that differed.
    #[test]
    fn a_class_with_spaces_reads_back_whole() {
        for class in [Class::Forbidden, Class::Livelock, Class::StepLimit] {
            let out = format!("sim-replay: seed=9 fingerprint=0x00000000000000aa class={class}\n");
            assert_eq!(parse(&out, 9), Some((Some(class), 0xaa)), "{class}");
        }
    }
}
