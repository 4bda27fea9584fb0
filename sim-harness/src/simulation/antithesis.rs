//! antithesis_sdk's annotations, unmodified, as the harness's own: its
//! `assert_always!` fails the seed as `sim::always!` does, its
//! `assert_sometimes!` and `assert_reachable!` are coverage sites and
//! exploration features, its numeric and boolean guidance are exploration
//! features, and its catalog of sites (every site linked in, reached or
//! not) joins the coverage report.
//!
//! sim-runtime answers the SDK's `dlopen` of its platform library and hands
//! each JSON line the SDK writes to [`take_line`], on the thread of the run
//! that wrote it (libc/antithesis.rs there). The SDK writes a site's line
//! the first time it passes and the first time it fails in its process;
//! the runtime gives each node incarnation of each run its own trackers,
//! so here a site counts at most once per node per outcome, as on the
//! platform, where each node is a process.

use super::coverage::{self, Key, Site, SiteKind};
use super::explore::{self, Feature};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Mutex;

#[linkme::distributed_slice(sim_runtime::__private::harness::SDK_OUTPUT)]
static TO_THE_HARNESS: fn(&str) = take_line;

/// One line of the SDK's output, inside a run.
fn take_line(line: &str) {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return;
    };
    if let Some(a) = v.get("antithesis_assert") {
        assertion(a);
    } else if let Some(g) = v.get("antithesis_guidance") {
        guidance(g);
    }
}

/// A site the SDK named, once per process: its `Site` (leaked, as linked
/// sites are static) and whether it must be reached.
pub(crate) struct Named {
    pub site: &'static Site,
    pub must_hit: bool,
}

/// Every site the SDK has named in this process, by key.
static NAMED: Mutex<BTreeMap<Key, Named>> = Mutex::new(BTreeMap::new());

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// The site of a line's `message` and `location`, made the first time.
fn site(a: &Value, kind: SiteKind, must_hit: bool) -> Option<&'static Site> {
    let message = a.get("message")?.as_str()?;
    let loc = a.get("location")?;
    let file = loc.get("file")?.as_str()?;
    let line = u32::try_from(loc.get("begin_line")?.as_u64()?).ok()?;
    let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = named
        .iter()
        .find(|((m, f, l), _)| *m == message && *f == file && *l == line)
    {
        return Some(n.1.site);
    }
    let site: &'static Site = Box::leak(Box::new(Site {
        kind,
        name: leak(message),
        file: leak(file),
        line,
    }));
    named.insert((site.name, site.file, line), Named { site, must_hit });
    Some(site)
}

/// The sites the SDK named, with whether each must be reached (for the
/// coverage report's missing sites).
pub(crate) fn named() -> Vec<(&'static Site, bool)> {
    NAMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .map(|n| (n.site, n.must_hit))
        .collect()
}

fn assertion(a: &Value) {
    let flag = |k: &str| a.get(k).and_then(Value::as_bool).unwrap_or(false);
    let (hit, condition, must_hit) = (flag("hit"), flag("condition"), flag("must_hit"));
    let display = a.get("display_type").and_then(Value::as_str).unwrap_or("");
    let kind = match a.get("assert_type").and_then(Value::as_str) {
        Some("always") => SiteKind::Always,
        Some("sometimes") => SiteKind::Sometimes,
        Some("reachability") if display == "Unreachable" => SiteKind::Unreachable,
        Some("reachability") => SiteKind::Reachable,
        _ => return,
    };
    let Some(site) = site(a, kind, must_hit) else {
        return;
    };
    if !hit {
        // The catalog: a site linked in, named before any run reaches it.
        return;
    }
    let held = match kind {
        SiteKind::Unreachable => false,
        SiteKind::Reachable => true,
        _ => condition,
    };
    coverage::record(site, held);
    let macro_name = match display {
        "" => "an antithesis_sdk assertion",
        d => d,
    };
    match kind {
        SiteKind::Always if !condition => panic!(
            "antithesis_sdk {macro_name} assertion {:?} did not hold at {}:{}{}",
            site.name,
            site.file,
            site.line,
            details(a)
        ),
        SiteKind::Unreachable => panic!(
            "antithesis_sdk assert_unreachable!({:?}) was reached at {}:{}{}",
            site.name,
            site.file,
            site.line,
            details(a)
        ),
        _ => {}
    }
}

/// The assertion's details, when it has any, for the failure's message.
fn details(a: &Value) -> String {
    match a.get("details") {
        Some(Value::Object(m)) if !m.is_empty() => {
            format!(" (details: {})", Value::Object(m.clone()))
        }
        Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Array(_))) => {
            format!(" (details: {v})")
        }
        _ => String::new(),
    }
}

/// Guidance: a numeric one's distance (`left - right`) reached a new best
/// for the node, or a boolean one's flags a new combination. Each value,
/// in coarse buckets, is a state of the run: new to exploration the first
/// time any run reaches it.
fn guidance(g: &Value) {
    if !g.get("hit").and_then(Value::as_bool).unwrap_or(false) {
        return;
    }
    let Some(message) = g.get("message").and_then(Value::as_str) else {
        return;
    };
    let data = g.get("guidance_data");
    let value = match g.get("guidance_type").and_then(Value::as_str) {
        Some("numeric") => {
            let num = |k: &str| data.and_then(|d| d.get(k)).and_then(Value::as_f64);
            let (Some(left), Some(right)) = (num("left"), num("right")) else {
                return;
            };
            bucket(left - right)
        }
        // The flags that are true, as a bit set in the order given.
        _ => match data {
            Some(Value::Object(m)) => m
                .values()
                .enumerate()
                .filter(|(_, v)| v.as_bool() == Some(true))
                .fold(0u64, |set, (i, _)| set | (1 << (i % 64))),
            _ => return,
        },
    };
    let name = {
        let mut named = GUIDES.lock().unwrap_or_else(|e| e.into_inner());
        match named.iter().find(|n| **n == message) {
            Some(n) => *n,
            None => {
                let n = leak(message);
                named.push(n);
                n
            }
        }
    };
    explore::note(Feature::State {
        name,
        value: value ^ 0x6775_6964_616e_6365,
    });
}

/// The guidance sites' messages, leaked once each.
static GUIDES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// A distance in buckets: a whole number below 16 is its own (counts,
/// stages, replicas: each step closer is new); beyond, buckets that double
/// (its sign, then how many bits its magnitude has), so a run that gets
/// twice as close is new and one that moves by a hair is not.
fn bucket(d: f64) -> u64 {
    if d.is_nan() {
        return u64::MAX;
    }
    if d.abs() < 16.0 && d.fract() == 0.0 {
        return (1 << 40) | (d as i64 as u64 & 0xff);
    }
    let sign = u64::from(d < 0.0) << 32;
    let mag = d.abs();
    let bits = if mag < 1.0 {
        // Below one: how many halvings from one (capped), negative side.
        let mut m = mag;
        let mut n = 0u64;
        while m > 0.0 && m < 1.0 && n < 64 {
            m *= 2.0;
            n += 1;
        }
        if mag == 0.0 {
            0
        } else {
            1000 + n
        }
    } else {
        (mag.log2().floor() as u64).min(1023) + 1
    };
    sign | bits
}

#[cfg(test)]
mod tests {
    use super::bucket;

    #[test]
    fn distances_fall_into_doubling_buckets() {
        // Small whole distances, each its own.
        assert_ne!(bucket(2.0), bucket(3.0));
        assert_ne!(bucket(-2.0), bucket(2.0));
        assert_ne!(bucket(0.0), bucket(-1.0));
        // Beyond, doubling buckets.
        assert_eq!(bucket(1.1e3), bucket(1.9e3));
        assert_ne!(bucket(1.9e3), bucket(2.1e3));
        assert_eq!(bucket(40.0), bucket(60.5));
        assert_ne!(bucket(40.0), bucket(-40.0));
        assert_ne!(bucket(0.5), bucket(0.25));
        assert_eq!(bucket(1.25), bucket(1.75));
    }
}
