//! The merge of shard results, pure: JSON lines in (the files that
//! `SIM_RESULTS` makes, sim-harness's `simulation/results.rs`), one
//! [`Merged`] out, rendered as text. No file system, no clock: the
//! harness's shard test (`sim-harness/tests/shards.rs`) includes this file
//! and compares the merge of three shards with the unsharded run.
//! Std only (and xtask's JSON reader), as xtask is.

use crate::json::Json;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// A test: package, cargo target (`--test sim`), name.
pub type TestId = (String, String, String);

/// A site of the catalog: file, line, name, kind.
pub type SiteId = (String, u64, String, String);

/// How a site fared across the merged shards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteCoverage {
    pub reached: u64,
    pub held: u64,
    /// Seeds in which the condition held at least once.
    pub seeds_held: u64,
    /// The shards (k of k/n) in which it was reached, and held.
    pub reached_in: BTreeSet<u64>,
    pub held_in: BTreeSet<u64>,
}

impl SiteCoverage {
    /// What the sweep asked of the site and did not get: a `sometimes!`
    /// that never held, a `reachable!` never reached.
    pub fn missed(&self, kind: &str) -> Option<&'static str> {
        match kind {
            "sometimes" if self.held == 0 => Some("never held"),
            "reachable" if self.reached == 0 => Some("never reached"),
            _ => None,
        }
    }
}

/// One shard's header line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    pub file: String,
    pub planned: Vec<[u64; 2]>,
    pub stopped_by_plateau: bool,
}

/// One test's shards, merged.
#[derive(Clone, Debug, Default)]
pub struct TestMerge {
    /// n of k/n, as the first file read said.
    pub n: Option<u64>,
    pub shards: BTreeMap<u64, Shard>,
    /// Every seed's record, without its shard (what the shard test
    /// compares with the unsharded run).
    pub seeds: BTreeMap<u64, Json>,
    /// Which shard ran each seed.
    pub seed_shard: BTreeMap<u64, u64>,
    pub sites: BTreeMap<SiteId, SiteCoverage>,
    /// Overlaps, gaps and disagreements, each saying what to do.
    pub problems: Vec<String>,
}

impl TestMerge {
    /// The failing seeds, lowest first.
    pub fn failing(&self) -> Vec<u64> {
        self.seeds
            .iter()
            .filter(|(_, r)| r.get("outcome").as_str() != Some("pass"))
            .map(|(s, _)| *s)
            .collect()
    }
}

/// Every test of the merged files.
#[derive(Clone, Debug, Default)]
pub struct Merged {
    pub tests: BTreeMap<TestId, TestMerge>,
    pub files: usize,
}

impl Merged {
    /// Whether the merged sweep is a pass: no seed failed, no shard
    /// overlapped or went missing.
    pub fn ok(&self) -> bool {
        self.tests
            .values()
            .all(|t| t.problems.is_empty() && t.failing().is_empty())
    }
}

fn shard_of(v: &Json) -> Result<(u64, u64), String> {
    let s = v.get("shard").as_str().ok_or("no \"shard\"")?;
    let (k, n) = s.split_once('/').ok_or("\"shard\" is not k/n")?;
    match (k.parse(), n.parse()) {
        (Ok(k), Ok(n)) if k >= 1 && k <= n => Ok((k, n)),
        _ => Err(format!("\"shard\" {s:?} is not k/n with 1 ≤ k ≤ n")),
    }
}

fn planned_of(v: &Json) -> Result<Vec<[u64; 2]>, String> {
    v.get("planned")
        .as_array()
        .iter()
        .map(|r| match r.as_array() {
            [a, b] => match (a.as_u64(), b.as_u64()) {
                (Some(a), Some(b)) if a <= b => Ok([a, b]),
                _ => Err("a \"planned\" range is not [first, last]".to_string()),
            },
            _ => Err("a \"planned\" range is not [first, last]".to_string()),
        })
        .collect()
}

fn test_id(v: &Json) -> Result<TestId, String> {
    let field = |k: &str| {
        v.get(k)
            .as_str()
            .map(str::to_string)
            .ok_or(format!("no {k:?}"))
    };
    Ok((field("package")?, field("target")?, field("test")?))
}

/// Adds one results file (`name` for messages, `text` its JSON lines).
/// A malformed file is an error naming the file and line.
pub fn add_file(m: &mut Merged, name: &str, text: &str) -> Result<(), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let bad = |i: usize, why: &str| format!("{name}:{}: {why}", i + 1);
    let (i, first) = lines.next().ok_or(format!("{name}: empty results file"))?;
    let header = Json::parse(first).ok_or_else(|| bad(i, "not JSON"))?;
    if header.get("kind").as_str() != Some("run") {
        return Err(bad(i, "the first line is not the \"run\" header"));
    }
    if header.get("format").as_u64() != Some(1) {
        return Err(bad(i, "unknown \"format\" (this merge reads format 1)"));
    }
    let id = test_id(&header).map_err(|e| bad(i, &e))?;
    let (k, n) = shard_of(&header).map_err(|e| bad(i, &e))?;
    let planned = planned_of(&header).map_err(|e| bad(i, &e))?;
    m.files += 1;
    let t = m.tests.entry(id.clone()).or_default();
    let label = |k: u64| format!("{k}/{n}");
    match t.n {
        Some(other) if other != n => t.problems.push(format!(
            "{name} is shard {k}/{n} but other files split the seeds in {other}: merge the \
             shards of one split (the same SIM_SHARD=k/n denominator)"
        )),
        _ => t.n = Some(n),
    }
    if let Some(prev) = t.shards.values().next() {
        if prev.planned != planned {
            t.problems.push(format!(
                "{name} planned other seeds than {} (SIM_SEEDS or the attribute differ): \
                 rerun every shard with the same seeds",
                prev.file
            ));
        }
    }
    let shard = Shard {
        file: name.to_string(),
        planned,
        stopped_by_plateau: header.get("stopped_by_plateau").as_bool() == Some(true),
    };
    if let Some(prev) = t.shards.insert(k, shard) {
        t.problems.push(format!(
            "shard {} appears twice ({} and {name}): merge each shard once",
            label(k),
            prev.file
        ));
    }
    for site in header.get("sites").as_array() {
        let key = site_id(site).map_err(|e| bad(i, &e))?;
        t.sites.entry(key).or_default();
    }
    for (i, line) in lines {
        let mut v = Json::parse(line).ok_or_else(|| bad(i, "not JSON"))?;
        if v.get("kind").as_str() != Some("seed") {
            return Err(bad(i, "not a \"seed\" line"));
        }
        let seed = v
            .get("seed")
            .as_u64()
            .ok_or_else(|| bad(i, "no \"seed\""))?;
        if shard_of(&v).map_err(|e| bad(i, &e))? != (k, n) {
            return Err(bad(i, "the seed's shard is not the header's"));
        }
        for c in v.get("coverage").as_array() {
            let (name, file, line) = (c.get("site"), c.get("file"), c.get("line"));
            let (Some(name), Some(file), Some(line)) =
                (name.as_str(), file.as_str(), line.as_u64())
            else {
                return Err(bad(i, "a coverage entry lacks site, file or line"));
            };
            let (reached, held) = (c.get("reached").as_u64(), c.get("held").as_u64());
            let (Some(reached), Some(held)) = (reached, held) else {
                return Err(bad(i, "a coverage entry lacks reached or held"));
            };
            // Tallies are per site identity; the kind comes from the catalog.
            let kind = t
                .sites
                .keys()
                .find(|s| s.0 == file && s.1 == line && s.2 == name)
                .map_or("?".to_string(), |s| s.3.clone());
            let e = t
                .sites
                .entry((file.into(), line, name.into(), kind))
                .or_default();
            e.reached += reached;
            e.held += held;
            if reached > 0 {
                e.reached_in.insert(k);
            }
            if held > 0 {
                e.held_in.insert(k);
                e.seeds_held += 1;
            }
        }
        if let Json::Obj(map) = &mut v {
            map.remove("shard");
        }
        if let Some(prev) = t.seed_shard.insert(seed, k) {
            t.problems.push(format!(
                "seed {seed} ran in shard {} and in shard {} (overlap): each seed belongs to \
                 one shard",
                label(prev),
                label(k)
            ));
        }
        t.seeds.insert(seed, v);
    }
    Ok(())
}

fn site_id(v: &Json) -> Result<SiteId, String> {
    match (
        v.get("file").as_str(),
        v.get("line").as_u64(),
        v.get("site").as_str(),
        v.get("kind").as_str(),
    ) {
        (Some(f), Some(l), Some(s), Some(k)) => Ok((f.into(), l, s.into(), k.into())),
        _ => Err("a catalog site lacks file, line, site or kind".into()),
    }
}

/// At most 20 seeds, then how many more.
fn seed_list(seeds: &[u64]) -> String {
    let mut s: Vec<String> = seeds.iter().take(20).map(u64::to_string).collect();
    if seeds.len() > 20 {
        s.push(format!("… ({} more)", seeds.len() - 20));
    }
    s.join(", ")
}

/// Checks that the shards cover the planned seeds exactly: every shard
/// of 1..=n present, every seed where `SIM_SHARD`'s rule puts it. Call
/// once every file is added.
pub fn check(m: &mut Merged) {
    for t in m.tests.values_mut() {
        let Some(n) = t.n else { continue };
        let Some(first) = t.shards.values().next() else {
            continue;
        };
        let planned: Vec<u64> = first.planned.iter().flat_map(|r| r[0]..=r[1]).collect();
        let mut missing: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        let mut misplaced = Vec::new();
        for (i, &seed) in planned.iter().enumerate() {
            let k = (i as u64 % n) + 1;
            match t.seed_shard.get(&seed) {
                None => missing.entry(k).or_default().push(seed),
                Some(&got) if got != k => misplaced.push((seed, got, k)),
                Some(_) => {}
            }
        }
        for k in 1..=n {
            let Some(seeds) = missing.get(&k) else {
                continue;
            };
            let why = match t.shards.get(&k) {
                None => format!("shard {k}/{n} is missing: run it with SIM_SHARD={k}/{n}"),
                Some(s) if s.stopped_by_plateau => format!(
                    "shard {k}/{n} ({}) stopped at its coverage plateau (SIM_COVERAGE_PLATEAU)",
                    s.file
                ),
                Some(s) => format!(
                    "shard {k}/{n} ({}) did not run them: rerun it with SIM_SHARD={k}/{n}",
                    s.file
                ),
            };
            t.problems.push(format!(
                "{} planned seed(s) never ran: {}; {why}",
                seeds.len(),
                seed_list(seeds)
            ));
        }
        let planned: BTreeSet<u64> = planned.into_iter().collect();
        let extra: Vec<u64> = t
            .seed_shard
            .keys()
            .filter(|s| !planned.contains(s))
            .copied()
            .collect();
        if !extra.is_empty() {
            t.problems.push(format!(
                "{} seed(s) ran that the run did not plan: {}",
                extra.len(),
                seed_list(&extra)
            ));
        }
        for (seed, got, want) in misplaced.into_iter().take(20) {
            t.problems.push(format!(
                "seed {seed} ran in shard {got}/{n}, but SIM_SHARD={want}/{n} owns it"
            ));
        }
    }
}

/// The merged report, as text.
pub fn render(m: &Merged) -> String {
    let mut s = String::new();
    let failed = m.tests.values().filter(|t| !t.failing().is_empty()).count();
    let troubled = m.tests.values().filter(|t| !t.problems.is_empty()).count();
    for ((package, target, name), t) in &m.tests {
        let planned: u64 = t
            .shards
            .values()
            .next()
            .map_or(0, |f| f.planned.iter().map(|r| r[1] - r[0] + 1).sum());
        let n = t.n.unwrap_or(0);
        let _ = writeln!(
            s,
            "{name} ({package}, {target}): {} of {n} shard(s), {} of {planned} planned seed(s) run",
            t.shards.len(),
            t.seeds.len()
        );
        let failing = t.failing();
        match failing.first() {
            None => {
                let _ = writeln!(s, "  every seed passed");
            }
            Some(first) => {
                let r = &t.seeds[first];
                let _ = writeln!(
                    s,
                    "  FAILED: {} seed(s): {}",
                    failing.len(),
                    seed_list(&failing)
                );
                let ns = r.get("virtual_time_ns").as_u64().unwrap_or(0);
                let _ = writeln!(
                    s,
                    "  first failure: seed {first} (shard {}/{n}) · class {} · strategy {} · \
                     step {} · virtual time {}.{:09}s",
                    t.seed_shard.get(first).copied().unwrap_or(0),
                    r.get("class").as_str().unwrap_or("?"),
                    r.get("strategy").as_str().unwrap_or("?"),
                    r.get("steps").as_u64().unwrap_or(0),
                    ns / 1_000_000_000,
                    ns % 1_000_000_000
                );
                for l in r.get("message").as_str().unwrap_or("").lines().take(10) {
                    let _ = writeln!(s, "    {l}");
                }
                let _ = writeln!(s, "  replay: {}", r.get("replay").as_str().unwrap_or("?"));
            }
        }
        if !t.sites.is_empty() {
            let missed = t
                .sites
                .iter()
                .filter(|((.., kind), c)| c.missed(kind).is_some())
                .count();
            let _ = writeln!(
                s,
                "  coverage: {} site(s), {missed} not covered by any shard",
                t.sites.len()
            );
            for ((file, line, site, kind), c) in &t.sites {
                let shards = |set: &BTreeSet<u64>| -> String {
                    if set.is_empty() {
                        return "none".into();
                    }
                    let v: Vec<String> = set.iter().map(|k| format!("{k}/{n}")).collect();
                    v.join(", ")
                };
                let verdict = match c.missed(kind) {
                    Some(why) => format!("NOT COVERED ({why})"),
                    None => "ok".into(),
                };
                let _ = writeln!(
                    s,
                    "    {verdict}: {kind}!({site:?}) at {file}:{line}: reached {} time(s) in \
                     shards {}; held {} time(s), in {} seed(s), in shards {}",
                    c.reached,
                    shards(&c.reached_in),
                    c.held,
                    c.seeds_held,
                    shards(&c.held_in)
                );
            }
        }
        for p in &t.problems {
            let _ = writeln!(s, "  PROBLEM: {p}");
        }
    }
    let _ = writeln!(
        s,
        "merged {} file(s): {} test(s), {failed} with failing seeds, {troubled} with missing or \
         overlapping shards",
        m.files,
        m.tests.len()
    );
    s
}
