//! Porcupine's published histories, checked by sim-check: the Jepsen etcd
//! logs (`test_data/jepsen/etcd_NNN.log`, one register) and the MIT 6.824
//! key/value logs (`test_data/kv/*.txt`, a map with append), read from a
//! copy of Porcupine's repository that `cargo xtask bench --only checker`
//! provides at bench time (nothing of it is kept in this repository).
//!
//! Each history is recorded as Porcupine's own test suite reads it, so the
//! verdicts can be compared: an `:info` (timed out) write or
//! compare-and-set is unknown (Porcupine leaves it open to the end of the
//! history: it may take effect at any time after its call, or never); a
//! read that failed by timing out is unknown too (Porcupine: any answer);
//! a compare-and-set that failed (`:fail :cas`) completed answering
//! `false` (Porcupine: the comparison did not hold when it took effect).
//!
//! Prints one line per file:
//! `PORCUPINE <file> <ops> <verdict> <verdict ns> <with shrinking ns> <minimal>
//! <verdict work> <shrinking work>` (the work as `Violation::work` and
//! `Violation::shrink_work` count it; `-` without a violation),
//! each time the mean of as many runs as fit in the time given (at least
//! one), as Go's benchmarks measure.

use sim_check::{
    linearizable, linearizable_verdict, CheckError, History, Kv, KvOp, KvRet, Model, OpId,
    Register, RegisterOp, RegisterRet,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

type Etcd = History<RegisterOp<Option<i64>>, RegisterRet<Option<i64>>>;
type KvHistory = History<KvOp<String, String>, KvRet<String>>;

/// Reads a Jepsen etcd log.
fn etcd(text: &str) -> Etcd {
    let mut h = History::new();
    let mut open: BTreeMap<u32, OpId> = BTreeMap::new();
    for line in text.lines() {
        let Some((_, rest)) = line.split_once("jepsen.util - ") else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let [proc, kind, f, value @ ..] = words.as_slice() else {
            continue;
        };
        let Ok(client) = proc.parse::<u32>() else {
            continue;
        };
        let number = |s: &str| s.trim_matches(['[', ']']).parse::<i64>().ok();
        let mut end = || open.remove(&client).expect("a return without its call");
        match (*kind, *f, value) {
            (":invoke", ":read", _) => {
                open.insert(client, h.invoke(client, RegisterOp::Read, None));
            }
            (":invoke", ":write", [v]) => {
                let op = RegisterOp::Write(number(v));
                open.insert(client, h.invoke(client, op, None));
            }
            (":invoke", ":cas", [a, b]) => {
                let op = RegisterOp::Cas {
                    expect: number(a),
                    new: number(b),
                };
                open.insert(client, h.invoke(client, op, None));
            }
            (":ok", ":read", [v]) => {
                let id = end();
                h.ok(id, RegisterRet::Read(number(v)), None);
            }
            (":ok", ":write", _) => {
                let id = end();
                h.ok(id, RegisterRet::Write, None);
            }
            (":ok", ":cas", _) => {
                let id = end();
                h.ok(id, RegisterRet::Cas(true), None);
            }
            (":fail", ":cas", _) => {
                let id = end();
                h.ok(id, RegisterRet::Cas(false), None);
            }
            (":fail", ":read", _) | (":info", _, _) => {
                let id = end();
                h.unknown(id, None);
            }
            other => panic!("an etcd log line not understood: {other:?}"),
        }
    }
    h
}

/// The text between `from` and the next `to` in `line`.
fn field<'a>(line: &'a str, from: &str, to: &str) -> Option<&'a str> {
    let start = line.find(from)? + from.len();
    let len = line[start..].find(to)?;
    Some(&line[start..start + len])
}

/// Reads a 6.824 key/value log.
fn kv(text: &str) -> KvHistory {
    let mut h = History::new();
    let mut open: BTreeMap<u32, OpId> = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("{:process")) {
        let client: u32 = field(line, ":process ", ",")
            .and_then(|p| p.parse().ok())
            .expect("a process number");
        let kind = field(line, ":type ", ",").expect("a type");
        let f = field(line, ":f ", ",").expect("a function");
        let key = field(line, ":key \"", "\"").expect("a key").to_string();
        let value = field(line, ":value \"", "\"}").map(str::to_string);
        if kind == ":invoke" {
            let op = match (f, value) {
                (":get", _) => KvOp::Get(key),
                (":put", Some(v)) => KvOp::Put(key, v),
                (":append", Some(v)) => KvOp::Append(key, v),
                other => panic!("a kv call not understood: {other:?}"),
            };
            open.insert(client, h.invoke(client, op, None));
            continue;
        }
        assert_eq!(kind, ":ok", "{line}");
        let id = open.remove(&client).expect("a return without its call");
        let ret = match f {
            ":get" => KvRet::Get(value),
            ":put" => KvRet::Put,
            ":append" => KvRet::Append,
            other => panic!("a kv return not understood: {other}"),
        };
        h.ok(id, ret, None);
    }
    h
}

/// The mean time of `f` over as many runs as fit in `time` (at least one).
fn mean(time: Duration, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut runs = 0u32;
    while runs == 0 || start.elapsed() < time {
        f();
        runs += 1;
    }
    start.elapsed() / runs
}

fn measure<M: Model>(name: &str, model: &M, h: &History<M::Input, M::Output>, time: Duration) {
    let verdict = match linearizable_verdict(model, h) {
        Ok(()) => "ok",
        Err(CheckError::Violation(_)) => "violation",
        Err(CheckError::Timeout(_)) => "timeout",
    };
    let alone = mean(time, || {
        std::hint::black_box(linearizable_verdict(model, h).is_ok());
    });
    let (minimal, work) = match linearizable(model, h) {
        Err(CheckError::Violation(v)) => (
            if v.is_minimal() {
                "minimal"
            } else {
                "not-minimal"
            },
            format!("{} {}", v.work(), v.shrink_work()),
        ),
        _ => ("-", "- -".to_string()),
    };
    let shrinking = mean(time, || {
        std::hint::black_box(linearizable(model, h).is_ok());
    });
    println!(
        "PORCUPINE {name} {} {verdict} {} {} {minimal} {work}",
        h.len(),
        alone.as_nanos(),
        shrinking.as_nanos()
    );
}

/// Checks the published histories under `dir` (Porcupine's repository):
/// those named in `only`, or all.
pub fn run(dir: &Path, time: Duration, only: &[String]) {
    let read =
        |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let files = |sub: &str, ext: &str| {
        let mut v: Vec<_> = std::fs::read_dir(dir.join(sub))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(sub).display()))
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .filter(|p| only.is_empty() || only.iter().any(|o| p.ends_with(o)))
            .collect();
        v.sort();
        v
    };
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let register = Register::new(None);
    for p in files("test_data/jepsen", "log") {
        measure(&name(&p), &register, &etcd(&read(&p)), time);
    }
    let map = Kv::with_append();
    for p in files("test_data/kv", "txt") {
        measure(&name(&p), &map, &kv(&read(&p)), time);
    }
}
