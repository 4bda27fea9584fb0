//! The command line of `cargo xtask compat`.

use super::run::Limits;
use super::selection::SELECTED;
use crate::{Error, Result};
use std::time::Duration;

pub(super) const HELP: &str = "\
usage: cargo xtask compat [options]

Runs Tokio's own integration tests (from the tokio crate package that
Cargo.lock resolves) against sim-runtime under --cfg simulation, prints a
summary and writes docs/compat.md (target/compat/report.md with --only).
The test files are copied unchanged; the tests of a file that does not
compile count as failed (real Tokio lists them).

options:
  --only a,b,...         run only these test files (names without .rs)
  --min-pass-rate X      fail (exit 1) if the pass rate is below X (0..1)
  --timeout SECS         deadline per run of a test binary (default 120)
  --test-timeout SECS    a test that makes no progress for this long is
                         killed and counted as hung (default 10; 30 at
                         least for real Tokio)
  --seeds SEEDS          SIM_SEEDS for every simulated test (default: the
                         runtime's default seed)
  --baseline             also run every file against real Tokio and mark the
                         failures that real Tokio shares
  --graph                build the files naming plain `tokio` through `cargo
                         sim` (the whole graph patched to the simulation,
                         target/compat-graph/; the report goes to
                         target/compat-graph/report.md unless --out)
  --out FILE             write the report to FILE (relative to the workspace
                         root) instead
  --list                 print the selected files and exit
";

pub(super) struct Options {
    pub(super) only: Option<Vec<String>>,
    pub(super) min_pass_rate: Option<f64>,
    pub(super) limits: Limits,
    pub(super) seeds: Option<String>,
    pub(super) baseline: bool,
    pub(super) graph: bool,
    pub(super) list: bool,
    pub(super) out: Option<String>,
}

impl Options {
    pub(super) fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            only: None,
            min_pass_rate: None,
            limits: Limits {
                binary: Duration::from_secs(120),
                test: Duration::from_secs(10),
            },
            seeds: None,
            baseline: false,
            graph: false,
            list: false,
            out: None,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = |name: &str| -> Result<String> {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| Error::Usage(format!("{name} needs a value")))
            };
            match flag {
                "--only" => {
                    let v = value(flag)?;
                    let names: Vec<String> = v
                        .split(',')
                        .map(|s| s.trim().trim_end_matches(".rs").to_string())
                        .filter(|s| !s.is_empty())
                        .collect();
                    for n in &names {
                        if !SELECTED.iter().any(|(f, _)| f == n) {
                            return Err(Error::Usage(format!(
                                "`{n}` is not a selected test file (cargo xtask compat --list)"
                            )));
                        }
                    }
                    // Repeated `--only` flags add up.
                    o.only.get_or_insert_with(Vec::new).extend(names);
                }
                "--min-pass-rate" => {
                    let v = value(flag)?;
                    let x: f64 = v.parse().map_err(|_| {
                        Error::Usage(format!("--min-pass-rate {v}: expected a number in 0..=1"))
                    })?;
                    if !(0.0..=1.0).contains(&x) {
                        return Err(Error::Usage(format!(
                            "--min-pass-rate {v}: expected a number in 0..=1 (0.9 is 90%)"
                        )));
                    }
                    o.min_pass_rate = Some(x);
                }
                "--timeout" => {
                    let v = value(flag)?;
                    let secs: u64 = v.parse().map_err(|_| {
                        Error::Usage(format!("--timeout {v}: expected whole seconds"))
                    })?;
                    o.limits.binary = Duration::from_secs(secs.max(1));
                }
                "--test-timeout" => {
                    let v = value(flag)?;
                    let secs: u64 = v.parse().map_err(|_| {
                        Error::Usage(format!("--test-timeout {v}: expected whole seconds"))
                    })?;
                    o.limits.test = Duration::from_secs(secs.max(1));
                }
                "--seeds" => o.seeds = Some(value(flag)?),
                "--baseline" => o.baseline = true,
                "--graph" => o.graph = true,
                "--list" => o.list = true,
                "--out" => o.out = Some(value(flag)?),
                "-h" | "--help" => {
                    print!("{HELP}");
                    std::process::exit(0);
                }
                other => return Err(Error::Usage(format!("compat: unknown option `{other}`"))),
            }
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--only a --only b` runs both files, as `--only a,b` does (the
    /// second flag once silently replaced the first).
    #[test]
    fn repeated_only_flags_add_up() {
        let args: Vec<String> = ["--only", "uds_stream", "--only=uds_datagram,udp"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = Options::parse(&args).unwrap();
        assert_eq!(
            o.only.as_deref(),
            Some(
                &[
                    "uds_stream".to_string(),
                    "uds_datagram".into(),
                    "udp".into()
                ][..]
            )
        );
    }
}
