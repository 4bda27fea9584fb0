//! sim-check side by side with Porcupine (issue 39): Porcupine's own
//! benchmarks (its test binary's `-test.bench`, one core) and sim-check's
//! bench (`--porcupine DIR`) on the same published histories, in the same
//! run, file by file.
//!
//! Nothing of Porcupine is kept in this repository. Its source comes from
//! `PORCUPINE_DIR` (a checkout of github.com/anishathalye/porcupine) or
//! else from Go's module download, and is copied to a temporary directory
//! that is removed afterwards. Go comes from the `PATH`, or from Debian's
//! `golang-go` package, installed when missing if `apt-get` can. When
//! either cannot be had, the comparison is skipped with a message saying
//! why.

use crate::cmd::{capture, output};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const MODULE: &str = "github.com/anishathalye/porcupine";

/// How long each side times each file (Go's `-benchtime`; sim-check's
/// bench likewise runs a file as many times as fit, at least once).
pub(super) const BENCH_MS: u64 = 100;

/// One history, both checkers' figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub file: String,
    pub ops: usize,
    /// Porcupine's test suite's verdict: linearizable or not.
    pub expected_ok: bool,
    /// sim-check's: `ok`, `violation` or `timeout`.
    pub verdict: String,
    /// Mean ns per check.
    pub porcupine_ns: f64,
    pub verdict_ns: f64,
    pub shrink_ns: f64,
    /// `minimal`, `not-minimal`, or `-` (no violation).
    pub minimal: String,
    /// A violation's verdict work and shrinking work (sim-check's units).
    pub work: Option<u64>,
    pub shrink_work: Option<u64>,
}

impl Row {
    pub fn agrees(&self) -> bool {
        (self.verdict == "ok") == self.expected_ok && self.verdict != "timeout"
    }
}

/// What the comparison found, or why it was skipped.
pub(crate) struct Comparison {
    pub rows: Vec<Row>,
    pub go: String,
    pub source: String,
}

/// Runs both sides; `Err` is the reason the comparison is skipped.
pub(crate) fn measure(bench: &Path) -> Result<Comparison, String> {
    let go = go()?;
    let (src, source) = source()?;
    let dir = std::env::temp_dir().join(format!("sim-bench-porcupine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_tree(&src, &dir)
        .map_err(|e| format!("copying {} to {}: {e}", src.display(), dir.display()))?;
    let result = compare(bench, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Comparison {
        rows: result?,
        go,
        source,
    })
}

fn compare(bench: &Path, dir: &Path) -> Result<Vec<Row>, String> {
    let test = std::fs::read_to_string(dir.join("porcupine_test.go"))
        .map_err(|e| format!("porcupine_test.go: {e}"))?;
    let expected = expected(&test);
    // Porcupine's test binary, built once; then file by file, each
    // checker in turn (which goes first alternates), so that a change in
    // the machine's load weighs on both alike.
    eprintln!(
        "==> bench [checker] Porcupine: go test -c in {}",
        dir.display()
    );
    let go_env = |cmd: &mut Command| {
        // Porcupine needs no other module: never reach the network.
        cmd.env("GOFLAGS", "-mod=mod")
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local");
    };
    let mut cmd = Command::new("go");
    cmd.current_dir(dir)
        .args(["test", "-c", "-o", "porcupine.test"]);
    go_env(&mut cmd);
    let (ok, text) = output(&mut cmd)?;
    if !ok {
        return Err(format!("building Porcupine's tests failed:\n{text}"));
    }
    let files = published(dir)?;
    eprintln!(
        "==> bench [checker] {} histories, each by Porcupine's benchmark (one core) and by {} --porcupine",
        files.len(),
        bench.display()
    );
    let mut porcupine = BTreeMap::new();
    let mut text = String::new();
    for (i, file) in files.iter().enumerate() {
        let Some(name) = bench_name(file) else {
            continue;
        };
        let mut go = Command::new(dir.join("porcupine.test"));
        go.current_dir(dir)
            .args(["-test.run", "^$", "-test.cpu", "1"])
            .arg(format!("-test.bench=^Benchmark{name}$"))
            .arg(format!("-test.benchtime={BENCH_MS}ms"));
        go_env(&mut go);
        let mut ours = Command::new(bench);
        ours.arg("--bench")
            .arg("--porcupine")
            .arg(dir)
            .arg(BENCH_MS.to_string())
            .arg(file);
        for go_first in [i % 2 == 0, i % 2 == 1] {
            if go_first {
                let (ok, out) = output(&mut go)?;
                if !ok {
                    return Err(format!("Porcupine's benchmark of {file} failed:\n{out}"));
                }
                porcupine.extend(go_bench(&out));
            } else {
                let (ok, out) = output(&mut ours)?;
                if !ok {
                    return Err(format!("sim-check's bench on {file} failed:\n{out}"));
                }
                text.push_str(&out);
            }
        }
    }
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("PORCUPINE ")) {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [_, file, ops, verdict, alone, shrinking, minimal, work, shrink_work] = w.as_slice()
        else {
            return Err(format!("a line not understood: {line}"));
        };
        let Some(name) = bench_name(file) else {
            return Err(format!("no Porcupine benchmark for {file}"));
        };
        let (Some(&porcupine_ns), Some(&expected_ok)) = (porcupine.get(&name), expected.get(&name))
        else {
            // Porcupine has no benchmark of this file (etcd_095).
            continue;
        };
        let number = |s: &str| s.parse::<f64>().map_err(|_| format!("{line}: {s:?}"));
        rows.push(Row {
            file: file.to_string(),
            ops: ops.parse().map_err(|_| format!("{line}: ops"))?,
            expected_ok,
            verdict: verdict.to_string(),
            porcupine_ns,
            verdict_ns: number(alone)?,
            shrink_ns: number(shrinking)?,
            minimal: minimal.to_string(),
            work: work.parse().ok(),
            shrink_work: shrink_work.parse().ok(),
        });
    }
    if rows.is_empty() {
        return Err(format!("no history was compared:\n{text}"));
    }
    Ok(rows)
}

/// The published histories' file names, in order: the etcd logs, then the
/// kv logs.
fn published(dir: &Path) -> Result<Vec<String>, String> {
    let mut all = Vec::new();
    for (sub, ext) in [("test_data/jepsen", ".log"), ("test_data/kv", ".txt")] {
        let entries = std::fs::read_dir(dir.join(sub))
            .map_err(|e| format!("{}: {e}", dir.join(sub).display()))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(ext))
            .collect();
        names.sort();
        all.extend(names);
    }
    Ok(all)
}

/// Go's version, installing Debian's package if it is missing.
fn go() -> Result<String, String> {
    if let Some(v) = capture("go", &["version"]) {
        return Ok(v);
    }
    if capture("apt-get", &["--version"]).is_none() {
        return Err(
            "Go is not installed (no `go` on the PATH) and there is no apt-get to install it"
                .into(),
        );
    }
    eprintln!("==> bench [checker] Go is missing: apt-get install -y golang-go");
    let (ok, text) = output(
        Command::new("apt-get")
            .args(["install", "-y", "golang-go"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    match capture("go", &["version"]) {
        Some(v) => Ok(v),
        None => Err(format!(
            "Go is not installed and `apt-get install -y golang-go` did not install it{}",
            if ok {
                String::new()
            } else {
                format!(":\n{}", tail(&text))
            }
        )),
    }
}

/// Porcupine's source directory, and where it came from.
fn source() -> Result<(PathBuf, String), String> {
    if let Some(dir) = std::env::var_os("PORCUPINE_DIR") {
        let dir = PathBuf::from(dir);
        if !dir.join("porcupine_test.go").is_file() {
            return Err(format!(
                "PORCUPINE_DIR={} holds no porcupine_test.go (it should be a checkout of {MODULE})",
                dir.display()
            ));
        }
        let rev = Command::new("git")
            .args(["-C"])
            .arg(&dir)
            .args(["log", "-1", "--format=%h %cs"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| format!(" at {}", String::from_utf8_lossy(&o.stdout).trim()))
            .unwrap_or_default();
        return Ok((dir, format!("PORCUPINE_DIR{rev}")));
    }
    let (ok, text) = output(
        Command::new("go")
            .args(["mod", "download", "-json", &format!("{MODULE}@latest")])
            .current_dir(std::env::temp_dir())
            .env("GOFLAGS", "-mod=mod"),
    )?;
    let dir = json_field(&text, "Dir");
    match (ok, dir, json_field(&text, "Version")) {
        (true, Some(dir), Some(version)) => Ok((
            PathBuf::from(dir),
            format!("{MODULE} {version} (go mod download)"),
        )),
        _ => Err(format!(
            "Porcupine's source could not be had: set PORCUPINE_DIR to a checkout of {MODULE}, \
             or let `go mod download {MODULE}@latest` reach the module proxy:\n{}",
            tail(&text)
        )),
    }
}

/// A string field of `go mod download -json`'s output.
fn json_field(text: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\": \"");
    let start = text.find(&key)? + key.len();
    let len = text[start..].find('"')?;
    Some(text[start..start + len].replace("\\\\", "\\"))
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// Copies `from` into `to` (Go sources and test data; no `.git`).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            // The module cache's copies are read-only; ours need not be.
            let mut perms = std::fs::metadata(&target)?.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms)?;
        }
    }
    Ok(())
}

/// `go test -bench` lines: benchmark name (without `Benchmark`) → ns/op.
pub(crate) fn go_bench(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let [name, _, ns, "ns/op", ..] = w.as_slice() {
            if let (Some(name), Ok(ns)) = (name.strip_prefix("Benchmark"), ns.parse::<f64>()) {
                // `-cpu 1` adds no suffix; another count would (`-2`).
                out.insert(name.to_string(), ns);
            }
        }
    }
    out
}

/// Porcupine's benchmark of a file: `etcd_007.log` → `EtcdJepsen007`,
/// `c10-bad.txt` → `Kv10ClientsBad`, `c01-ok.txt` → `Kv1ClientOk`.
pub(crate) fn bench_name(file: &str) -> Option<String> {
    if let Some(n) = file
        .strip_prefix("etcd_")
        .and_then(|f| f.strip_suffix(".log"))
    {
        return Some(format!("EtcdJepsen{n}"));
    }
    let (clients, how) = file
        .strip_prefix('c')?
        .strip_suffix(".txt")?
        .split_once('-')?;
    let clients: u32 = clients.parse().ok()?;
    let how = match how {
        "ok" => "Ok",
        "bad" => "Bad",
        _ => return None,
    };
    let s = if clients == 1 { "" } else { "s" };
    Some(format!("Kv{clients}Client{s}{how}"))
}

/// The verdicts Porcupine's benchmarks assert, by benchmark name:
/// `benchJepsen(b, 7, true)` and `benchKv(b, "c10-ok", true, true)` (the
/// last argument: partitioned by key, as sim-check's `Kv` always is).
pub(crate) fn expected(test: &str) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    let mut current = None;
    for line in test.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("func Benchmark") {
            current = name.split('(').next().map(str::to_string);
            continue;
        }
        let Some(name) = current.clone() else {
            continue;
        };
        let args = |call: &str| {
            line.strip_prefix(call)
                .and_then(|a| a.strip_suffix(')'))
                .map(|a| a.split(", ").map(str::to_string).collect::<Vec<_>>())
        };
        if let Some(a) = args("benchJepsen(b, ") {
            if let [_, ok] = a.as_slice() {
                out.insert(name, ok == "true");
            }
        } else if let Some(a) = args("benchKv(b, ") {
            if let [_, ok, partitioned] = a.as_slice() {
                if partitioned == "true" {
                    out.insert(name, ok == "true");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_verdicts_are_read_as_porcupine_writes_them() {
        assert_eq!(bench_name("etcd_007.log").as_deref(), Some("EtcdJepsen007"));
        assert_eq!(bench_name("c01-ok.txt").as_deref(), Some("Kv1ClientOk"));
        assert_eq!(bench_name("c50-bad.txt").as_deref(), Some("Kv50ClientsBad"));
        assert_eq!(bench_name("README.md"), None);
        let test = "func BenchmarkEtcdJepsen007(b *testing.B) {\n\tbenchJepsen(b, 7, true)\n}\n\
                    func BenchmarkKv10ClientsBad(b *testing.B) {\n\tbenchKv(b, \"c10-bad\", false, true)\n}\n\
                    func BenchmarkKvNoPartition1ClientOk(b *testing.B) {\n\tbenchKv(b, \"c01-ok\", true, false)\n}\n";
        let e = expected(test);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e["EtcdJepsen007"]);
        assert!(!e["Kv10ClientsBad"]);
        let out = "goos: linux\nBenchmarkEtcdJepsen000 \t    1335\t    149820 ns/op\n\
                   BenchmarkKv50ClientsOk  \t       2\t 151812175 ns/op\nPASS\n";
        let b = go_bench(out);
        assert_eq!(b["EtcdJepsen000"], 149820.0);
        assert_eq!(b["Kv50ClientsOk"], 151812175.0);
        assert_eq!(b.len(), 2);
        let dl = "{\n\t\"Path\": \"github.com/anishathalye/porcupine\",\n\t\"Version\": \"v1.1.0\",\n\t\"Dir\": \"/go/pkg/mod/x@v1.1.0\"\n}";
        assert_eq!(
            json_field(dl, "Dir").as_deref(),
            Some("/go/pkg/mod/x@v1.1.0")
        );
        assert_eq!(json_field(dl, "Error"), None);
    }
}
