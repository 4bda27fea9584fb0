//! Machine-readable results of a run, written when `SIM_RESULTS=<dir>` is
//! set: one JSON-lines file and one JUnit XML file per test and shard, so
//! that the shards of a sweep spread over machines can be merged into one
//! answer (`cargo xtask merge-results`).
//!
//! The JSON-lines file starts with one `"kind":"run"` line (the test, the
//! shard, the seeds the whole unsharded run plans, whether a coverage
//! plateau stopped it, and the catalog of `sometimes!`/`reachable!` sites
//! linked into the binary), then one `"kind":"seed"` line per seed in seed
//! order: strategy, outcome, class, message, fingerprint, steps, virtual
//! time, the replay command, and the seed's site tallies. Nothing in it is
//! read from the wall clock, so the merge of n shards compares equal to the
//! unsharded run.
//!
//! File names carry the package, the test crate, the test and the shard
//! (`kv.sim.acked_writes.shard-2-of-4.jsonl`): many test binaries and
//! shards can write into one directory without colliding.

use super::coverage::{Key, SiteKind, Tally};
use serde_json::{json, Value};
use sim_runtime::__private::harness::SeedOutcome;
use sim_runtime::sim::Class;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The variable that asks for results, and where they go.
pub(crate) const VAR: &str = "SIM_RESULTS";

/// What one seed leaves in the results.
pub(crate) struct Record {
    seed: u64,
    strategy: String,
    class: Option<Class>,
    message: String,
    fingerprint: u64,
    steps: u64,
    now_ns: u64,
    replay: String,
    coverage: Vec<(Key, Tally)>,
}

impl Record {
    pub(crate) fn new(o: &SeedOutcome, coverage: &BTreeMap<Key, Tally>) -> Record {
        Record {
            seed: o.seed,
            strategy: o.schedule.clone(),
            class: o.class,
            message: o.message.clone(),
            fingerprint: o.fingerprint,
            steps: o.step,
            now_ns: o.now.as_nanos() as u64,
            replay: o.replay.clone(),
            coverage: coverage.iter().map(|(k, t)| (*k, *t)).collect(),
        }
    }

    /// The seed's record as a sweep child hands it to its parent
    /// (run/recycle.rs): the results line's value itself.
    pub(crate) fn value(&self) -> Value {
        self.json("", "")
    }

    /// A record read back from [`Record::value`]; `None` if it is not one.
    /// A coverage site's names are interned: each distinct one is leaked
    /// once per process, as the linked-in catalog's are static.
    pub(crate) fn from_value(v: &Value) -> Option<Record> {
        let s = |k: &str| v.get(k)?.as_str().map(str::to_string);
        let n = |k: &str| v.get(k)?.as_u64();
        let class = match v.get("class")? {
            Value::Null => None,
            c => Some(Class::from_name(c.as_str()?)?),
        };
        let fingerprint = u64::from_str_radix(s("fingerprint")?.strip_prefix("0x")?, 16).ok()?;
        let mut coverage = Vec::new();
        for c in v.get("coverage")?.as_array()? {
            let name = intern(c.get("site")?.as_str()?);
            let file = intern(c.get("file")?.as_str()?);
            let line = u32::try_from(c.get("line")?.as_u64()?).ok()?;
            let tally = Tally {
                reached: c.get("reached")?.as_u64()?,
                held: c.get("held")?.as_u64()?,
            };
            coverage.push(((name, file, line), tally));
        }
        Some(Record {
            seed: n("seed")?,
            strategy: s("strategy")?,
            class,
            message: s("message")?,
            fingerprint,
            steps: n("steps")?,
            now_ns: n("virtual_time_ns")?,
            replay: s("replay")?,
            coverage,
        })
    }

    /// The seed's outcome as far as the record tells it (no recording,
    /// tape or leftover tasks).
    pub(crate) fn outcome(&self) -> SeedOutcome {
        SeedOutcome {
            seed: self.seed,
            class: self.class,
            message: self.message.clone(),
            step: self.steps,
            now: std::time::Duration::from_nanos(self.now_ns),
            schedule: self.strategy.clone(),
            fingerprint: self.fingerprint,
            decisions: 0,
            recording: None,
            divergence: None,
            replay: self.replay.clone(),
            buggify: Vec::new(),
            leftover: Vec::new(),
            tape: None,
            site: None,
        }
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    pub(crate) fn class(&self) -> Option<Class> {
        self.class
    }

    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The seed's coverage tallies, as the sweep folds them.
    pub(crate) fn tallies(&self) -> BTreeMap<Key, Tally> {
        self.coverage.iter().copied().collect()
    }

    fn json(&self, test: &str, shard: &str) -> Value {
        let coverage: Vec<Value> = self
            .coverage
            .iter()
            .map(|((name, file, line), t)| {
                json!({
                    "site": name, "file": file, "line": line,
                    "reached": t.reached, "held": t.held,
                })
            })
            .collect();
        json!({
            "kind": "seed",
            "test": test,
            "shard": shard,
            "seed": self.seed,
            "strategy": self.strategy,
            "outcome": if self.class.is_none() { "pass" } else { "fail" },
            "class": self.class.map(Class::name),
            "message": self.message,
            // A string: JSON readers that hold numbers as doubles would
            // round a 64-bit fingerprint.
            "fingerprint": format!("{:#018x}", self.fingerprint),
            "steps": self.steps,
            "virtual_time_ns": self.now_ns,
            "replay": self.replay,
            "coverage": coverage,
        })
    }
}

/// `s` as a `&'static str`, leaked once per distinct value.
fn intern(s: &str) -> &'static str {
    static SEEN: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&k) = seen.get(s) {
        return k;
    }
    let k: &'static str = Box::leak(s.to_string().into_boxed_str());
    seen.insert(k);
    k
}

/// The test and shard a results file describes.
pub(crate) struct Run<'a> {
    pub package: &'a str,
    pub crate_name: &'a str,
    /// The cargo target, as in the replay command (`--test sim`, `--lib`).
    pub target: &'a str,
    pub test: &'a str,
    /// `(k, n)`: this process ran shard k of n (1 of 1 unsharded).
    pub shard: (usize, usize),
    /// The seeds of the whole run, before sharding.
    pub planned: &'a [u64],
    /// Whether `SIM_COVERAGE_PLATEAU` ended this shard before its last seed.
    pub stopped: bool,
}

/// Where the results go: `SIM_RESULTS`, validated, the directory created.
/// A relative path is taken from the workspace root (where `Cargo.lock`
/// is), not from the package directory cargo runs a test in.
pub(crate) fn dir(value: Option<String>, root: &Path) -> Option<PathBuf> {
    let v = value?;
    let advice = "Set it to a directory the results may be written to (created if missing), \
                  e.g. SIM_RESULTS=target/sim-results";
    let dir = root.join(&v);
    if dir.exists() && !dir.is_dir() {
        panic!("sim: {VAR}={v:?} names a file, not a directory. {advice}");
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!(
            "sim: {VAR}={v:?}: cannot create {} ({e}). {advice}",
            dir.display()
        );
    }
    Some(dir)
}

/// `[first, last]` pairs (inclusive) covering `seeds` in order: a million
/// seeds in a row take one pair.
fn ranges(seeds: &[u64]) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for &s in seeds {
        match out.last_mut() {
            Some(r) if r[1].checked_add(1) == Some(s) => r[1] = s,
            _ => out.push([s, s]),
        }
    }
    out
}

/// The file name shared by the run's files, without extension.
fn stem(run: &Run) -> String {
    let clean = |s: &str| -> String {
        s.replace("::", ".")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!(
        "{}.{}.{}.shard-{}-of-{}",
        clean(run.package),
        clean(run.crate_name),
        clean(run.test),
        run.shard.0,
        run.shard.1
    )
}

fn kind_name(k: SiteKind) -> &'static str {
    match k {
        SiteKind::Sometimes => "sometimes",
        SiteKind::Always => "always",
        SiteKind::Reachable => "reachable",
        SiteKind::Unreachable => "unreachable",
    }
}

/// The JSON lines of a run: its header, then its seeds in seed order.
pub(crate) fn json_lines(run: &Run, records: &BTreeMap<u64, Record>) -> String {
    let shard = format!("{}/{}", run.shard.0, run.shard.1);
    let mut sites: Vec<(&str, u32, &str, &str)> = super::coverage::all_sites()
        .into_iter()
        .map(|(s, _)| (s.file, s.line, s.name, kind_name(s.kind)))
        .collect();
    sites.sort_unstable();
    sites.dedup();
    let sites: Vec<Value> = sites
        .into_iter()
        .map(|(file, line, name, kind)| json!({"kind": kind, "site": name, "file": file, "line": line}))
        .collect();
    let header = json!({
        "kind": "run",
        "format": 1,
        "test": run.test,
        "package": run.package,
        "target": run.target,
        "shard": shard,
        "planned": ranges(run.planned),
        "planned_count": run.planned.len(),
        "ran": records.len(),
        "stopped_by_plateau": run.stopped,
        "sites": sites,
    });
    let mut out = String::new();
    let _ = writeln!(out, "{header}");
    for r in records.values() {
        let _ = writeln!(out, "{}", r.json(run.test, &shard));
    }
    out
}

/// Text safe inside an XML attribute or element.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 allows no other control characters.
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The run as JUnit XML: one testcase for the test (failed when any seed
/// failed, its failure naming the first seed and listing the others) and
/// one per failing seed, with its class, message and replay command.
/// Passing seeds are counted, not listed: a dashboard shows a sweep of a
/// million seeds as one green row, and each failure as a row of its own
/// that can be replayed from the page.
pub(crate) fn junit(run: &Run, records: &BTreeMap<u64, Record>) -> String {
    let failed: Vec<&Record> = records.values().filter(|r| r.class.is_some()).collect();
    let suite = format!(
        "{} ({} {}) shard {}/{}",
        run.test, run.package, run.target, run.shard.0, run.shard.1
    );
    let classname = format!("{}.{}", run.package, run.crate_name);
    let mut s = String::new();
    let _ = writeln!(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        s,
        "<testsuites tests=\"{}\" failures=\"{}\">",
        1 + failed.len(),
        failed.len()
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">",
        xml(&suite),
        1 + failed.len(),
        failed.len()
    );
    let _ = writeln!(s, "    <properties>");
    for (k, v) in [
        ("shard", format!("{}/{}", run.shard.0, run.shard.1)),
        ("seeds_planned", run.planned.len().to_string()),
        ("seeds_run", records.len().to_string()),
        ("seeds_failed", failed.len().to_string()),
    ] {
        let _ = writeln!(s, "      <property name=\"{k}\" value=\"{}\"/>", xml(&v));
    }
    let _ = writeln!(s, "    </properties>");
    let _ = write!(
        s,
        "    <testcase classname=\"{}\" name=\"{}\"",
        xml(&classname),
        xml(run.test)
    );
    match failed.first() {
        None => {
            let _ = writeln!(s, "/>");
        }
        Some(first) => {
            let seeds: Vec<String> = failed.iter().map(|r| r.seed.to_string()).collect();
            let _ = writeln!(
                s,
                ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>",
                xml(first.class.map_or("?", Class::name)),
                xml(&format!(
                    "{} of {} seed(s) failed; first: seed {} ({})",
                    failed.len(),
                    records.len(),
                    first.seed,
                    first.class.map_or("?", Class::name)
                )),
                xml(&format!(
                    "failing seeds: {}\nreplay the first: {}",
                    seeds.join(", "),
                    first.replay
                ))
            );
        }
    }
    for r in &failed {
        let _ = writeln!(
            s,
            "    <testcase classname=\"{}\" name=\"{} seed {}\">\n      <failure type=\"{}\" \
             message=\"{}\">{}</failure>\n    </testcase>",
            xml(&classname),
            xml(run.test),
            r.seed,
            xml(r.class.map_or("?", Class::name)),
            xml(r.message.lines().next().unwrap_or("")),
            xml(&format!(
                "seed {} · strategy {} · step {} · virtual time {}.{:09}s\n{}\nreplay: {}",
                r.seed,
                r.strategy,
                r.steps,
                r.now_ns / 1_000_000_000,
                r.now_ns % 1_000_000_000,
                r.message,
                r.replay
            ))
        );
    }
    let _ = writeln!(s, "  </testsuite>");
    let _ = writeln!(s, "</testsuites>");
    s
}

/// Writes the run's two files into `dir`; a failure to write is reported
/// and fails the test (results asked for and silently missing would make
/// the merge report seeds as never run).
pub(crate) fn write(dir: &Path, run: &Run, records: &BTreeMap<u64, Record>) {
    let stem = stem(run);
    for (ext, text) in [
        ("jsonl", json_lines(run, records)),
        ("junit.xml", junit(run, records)),
    ] {
        let path = dir.join(format!("{stem}.{ext}"));
        if let Err(e) = std::fs::write(&path, text) {
            panic!("sim: {VAR}: cannot write {} ({e})", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_compress_runs_of_seeds() {
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), [[0, 2], [5, 5], [7, 8]]);
        assert_eq!(ranges(&[]), Vec::<[u64; 2]>::new());
        assert_eq!(
            ranges(&[u64::MAX - 1, u64::MAX]),
            [[u64::MAX - 1, u64::MAX]]
        );
        // A list out of order stays in its order (the shards' positions).
        assert_eq!(ranges(&[3, 1, 2]), [[3, 3], [1, 2]]);
    }

    #[test]
    fn file_names_carry_package_crate_test_and_shard() {
        let run = Run {
            package: "kv",
            crate_name: "sim",
            target: "--test sim",
            test: "tests::acked writes",
            shard: (2, 4),
            planned: &[],
            stopped: false,
        };
        assert_eq!(stem(&run), "kv.sim.tests.acked_writes.shard-2-of-4");
    }

    #[test]
    fn xml_escapes_markup_and_control_characters() {
        assert_eq!(xml("a<b>&\"'\u{1}"), "a&lt;b&gt;&amp;&quot;&apos;\\u{1}");
    }

    #[test]
    #[should_panic(expected = "names a file, not a directory")]
    fn a_file_is_refused_with_advice() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        dir(Some("Cargo.toml".into()), here);
    }
}
