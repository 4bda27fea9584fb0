//! Large clusters (issue 26 item 3): the `cluster_<N>` workload of sim's
//! executor bench, `bench/madsim` and `bench/turmoil` at 2 to 10,000
//! nodes. Every run of every point is a fresh process (`--runs 1 --warmup
//! 0`, so the resident bytes it reports are the set-up's alone) with a
//! wall-clock budget; a process still running at the budget is killed and
//! its point is "did not finish" (DNF). Kept as a section of
//! `docs/bench.md` between two markers, with the chart
//! `docs/bench-clusters.svg` (chart.rs); a full `cargo xtask bench`
//! rewrites both, `cargo xtask bench --only clusters` only these.

use super::chart::{svg, thousands, Series};
use super::median;
use crate::cmd::{commit, root, utc_date, write_file, Mode};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Its section of `docs/bench.md`.
pub(super) const SECTION: super::Section = super::section!("clusters");
const BEGIN: &str = SECTION.begin;
const END: &str = SECTION.end;

/// The node counts (each bench binary knows the same list).
const NODES: [usize; 5] = [2, 10, 100, 1_000, 10_000];

/// Wall time one process (one run of one point) may take.
const BUDGET: Duration = Duration::from_secs(30);

/// The targets: sim's round trip with 10,000 nodes at most this many times
/// its round trip with 2, and the memory per idle node at most this.
const TARGET_RATIO: f64 = 2.0;
const TARGET_BYTES: f64 = 16.0 * 1024.0;

struct Peer {
    label: &'static str,
    colour: &'static str,
    exe: PathBuf,
}

/// One point: every finished run's figures; `dnf` if a run did not finish
/// within the budget (no more runs of it are started).
#[derive(Default, Clone)]
struct Point {
    per_rt: Vec<f64>,
    setup: Vec<f64>,
    resident: Vec<f64>,
    heap: Vec<f64>,
    dnf: bool,
}

/// What one run printed: µs per round trip, set-up ms, resident bytes and
/// (sim only) heap bytes.
struct Run {
    per_rt: f64,
    setup: f64,
    resident: f64,
    heap: Option<f64>,
}

/// One process: `None` if it was still running at the budget (then it is
/// killed).
fn once(exe: &Path, nodes: usize) -> Result<Option<Run>, String> {
    let mut child = Command::new(exe)
        .current_dir(root())
        .args([
            "--runs",
            "1",
            "--warmup",
            "0",
            "--skip-clock-check",
            "--only",
        ])
        .arg(format!("cluster_{nodes}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let deadline = Instant::now() + BUDGET;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() >= deadline {
            // This process only: the child started above.
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if !status.success() {
        return Err(format!(
            "{} --only cluster_{nodes} failed ({status}):\n{out}",
            exe.display()
        ));
    }
    parse(&out, nodes)
        .map(Some)
        .ok_or_else(|| format!("{} printed no cluster_{nodes} lines:\n{out}", exe.display()))
}

/// The `BENCH` and `MEM` lines of one `cluster_<nodes>` run.
fn parse(out: &str, nodes: usize) -> Option<Run> {
    let name = format!("cluster_{nodes}");
    let setup_name = format!("{name}_setup");
    let (mut per_rt, mut setup, mut mem) = (None, None, None);
    for line in out.lines() {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["BENCH", _, n, "us/rt", v, ..] if *n == name => per_rt = v.parse().ok(),
            ["BENCH", _, n, "ms", v, ..] if *n == setup_name => setup = v.parse().ok(),
            ["MEM", _, n, resident, heap] if *n == name => {
                mem = Some((resident.parse().ok()?, heap.parse().ok()))
            }
            _ => {}
        }
    }
    let (resident, heap) = mem?;
    Some(Run {
        per_rt: per_rt?,
        setup: setup?,
        resident,
        heap,
    })
}

/// The measurements: per peer, per node count, a point.
struct Measured {
    peers: Vec<(&'static str, &'static str, Vec<Point>)>,
    runs: usize,
    date: String,
    commit: String,
}

/// Builds the three binaries and measures every point `runs` times,
/// alternating which peer goes first.
fn run_all(runs: usize) -> Result<Measured, String> {
    let peers = [
        Peer {
            label: "sim",
            colour: "#1f77b4",
            exe: super::build::build_bench(Mode::Simulation, "sim-runtime", "executor")?,
        },
        Peer {
            label: "madsim",
            colour: "#ff7f0e",
            exe: super::build::build_outside("madsim", &["--cfg", "madsim"])?,
        },
        Peer {
            label: "turmoil",
            colour: "#2ca02c",
            exe: super::build::build_outside("turmoil", &[])?,
        },
    ];
    let mut points = vec![vec![Point::default(); NODES.len()]; peers.len()];
    for (i, &nodes) in NODES.iter().enumerate() {
        for run in 0..runs {
            for k in 0..peers.len() {
                let p = (run + k) % peers.len();
                let point = &mut points[p][i];
                if point.dnf {
                    continue;
                }
                eprintln!(
                    "==> bench [clusters] {} nodes, run {}/{runs} [{}]",
                    nodes,
                    run + 1,
                    peers[p].label
                );
                match once(&peers[p].exe, nodes)? {
                    Some(r) => {
                        point.per_rt.push(r.per_rt);
                        point.setup.push(r.setup);
                        point.resident.push(r.resident);
                        point.heap.extend(r.heap);
                    }
                    None => {
                        eprintln!(
                            "    {} did not finish {nodes} nodes in {} s",
                            peers[p].label,
                            BUDGET.as_secs()
                        );
                        point.dnf = true;
                    }
                }
            }
        }
    }
    // The report and the chart of a previous run are no change to what is
    // measured.
    let reports = [
        Path::new("docs/bench.md"),
        Path::new("docs/bench-clusters.svg"),
    ];
    let commit = match commit(&reports) {
        Some((hash, true)) => format!("{hash} with uncommitted changes"),
        Some((hash, false)) => hash,
        None => "unknown".into(),
    };
    Ok(Measured {
        peers: peers
            .iter()
            .zip(points)
            .map(|(p, pts)| (p.label, p.colour, pts))
            .collect(),
        runs,
        date: utc_date(),
        commit,
    })
}

/// A point's figure, or why there is none.
fn cell(p: &Point, f: impl Fn(&Point) -> Option<f64>, fmt: impl Fn(f64) -> String) -> String {
    match f(p) {
        Some(v) => fmt(v),
        None if p.dnf => format!("DNF (> {} s)", BUDGET.as_secs()),
        None => "n/a".into(),
    }
}

/// Bytes per node beyond the 2-node cluster: (at `i` − at 2) / (N − 2).
fn per_node(points: &[Point], i: usize, of: impl Fn(&Point) -> &[f64]) -> Option<f64> {
    if NODES[i] <= NODES[0] {
        return None;
    }
    let (at, base) = (median(of(&points[i]))?, median(of(&points[0]))?);
    Some((at - base) / (NODES[i] - NODES[0]) as f64)
}

fn kib(b: f64) -> String {
    format!("{:.2} KiB", b / 1024.0)
}

/// The section's markdown and the chart's SVG.
fn render(m: &Measured) -> (String, String) {
    let budget = format!("{} s", BUDGET.as_secs());
    let series: Vec<Series> = m
        .peers
        .iter()
        .map(|(peer, colour, pts)| Series {
            peer,
            colour,
            points: NODES
                .iter()
                .zip(pts)
                .map(|(&n, p)| (n, median(&p.per_rt)))
                .collect(),
        })
        .collect();
    let chart = svg(
        "Large clusters: cost of one 64 B TCP round trip vs node count",
        &series,
        &budget,
    );
    let mut s = format!(
        "{BEGIN}\n## Large clusters\n\n\
         `cargo xtask bench --only clusters` on {} (UTC), commit {}. The machine is shared \
         with other builds, so the figures are noisy.\n\n\
         N nodes, each with a TCP listener waiting in `accept` and a timer (a task sleeping one \
         hour); node 1 connects to node 0, whose listener echoes, and after the set-up sends \
         64 B and reads them back, 10,000 times on sim and madsim, 1,000 on turmoil (zero \
         network latency on all three). The set-up (runtime, nodes, tasks, every listener \
         bound, the connection made) and the round trips are timed apart, with \
         `std::time::Instant` read outside the simulation (sim, madsim: between two \
         `block_on`s on one runtime; turmoil: between `Sim::step` calls). Memory is the \
         process's resident set (`/proc/self/statm`) after the set-up minus before it: sim maps \
         its task memory itself (`mem.rs`), outside the global allocator, so resident bytes \
         count everything; sim's executor bench also counts the bytes the set-up holds through \
         the global allocator (a counting allocator, on only during the set-up). Memory per \
         idle node is (bytes with N nodes − bytes with 2) / (N − 2); resident bytes move by \
         whole pages (and sim's and madsim's task memory by larger chunks), so at 10 and 100 \
         nodes that difference is mostly rounding. Every run is a fresh \
         process (`executor --runs 1 --warmup 0 --only cluster_N`, `bench-madsim …`, \
         `bench-turmoil …`); each point is the median of {} runs, peers alternating; a process \
         still running after {budget} of wall time is killed and its point is DNF (no further \
         runs of it).\n\n\
         ![µs per round trip against node count, sim, madsim and turmoil](bench-clusters.svg)\n\n\
         | nodes |",
        m.date, m.commit, m.runs
    );
    for (peer, ..) in &m.peers {
        let _ = write!(s, " {peer} µs/rt |");
    }
    s.push_str("\n|---:|");
    s.push_str(&"---:|".repeat(m.peers.len()));
    s.push('\n');
    for (i, n) in NODES.iter().enumerate() {
        let _ = write!(s, "| {} |", thousands(*n));
        for (_, _, pts) in &m.peers {
            let _ = write!(
                s,
                " {} |",
                cell(&pts[i], |p| median(&p.per_rt), |v| format!("{v:.3}"))
            );
        }
        s.push('\n');
    }
    s.push_str("\n| nodes |");
    for (peer, ..) in &m.peers {
        let _ = write!(s, " {peer} set-up |");
    }
    for (peer, ..) in &m.peers {
        let _ = write!(s, " {peer} resident per idle node |");
    }
    s.push_str(" sim heap per idle node |\n|---:|");
    s.push_str(&"---:|".repeat(2 * m.peers.len() + 1));
    s.push('\n');
    for (i, n) in NODES.iter().enumerate() {
        let _ = write!(s, "| {} |", thousands(*n));
        for (_, _, pts) in &m.peers {
            let _ = write!(
                s,
                " {} |",
                cell(&pts[i], |p| median(&p.setup), |v| format!("{v:.2} ms"))
            );
        }
        for (_, _, pts) in &m.peers {
            let f = |_: &Point| per_node(pts, i, |p| &p.resident);
            let v = if i == 0 {
                "—".into()
            } else {
                cell(&pts[i], f, kib)
            };
            let _ = write!(s, " {v} |");
        }
        let sim = &m.peers[0].2;
        let f = |_: &Point| per_node(sim, i, |p| &p.heap);
        let v = if i == 0 {
            "—".into()
        } else {
            cell(&sim[i], f, kib)
        };
        let _ = writeln!(s, " {v} |");
    }
    let _ = writeln!(s, "\n{}{END}", verdicts(&m.peers[0].2));
    (s, chart)
}

/// The two targets, on sim's figures.
fn verdicts(sim: &[Point]) -> String {
    let last = NODES.len() - 1;
    let big = thousands(NODES[last]);
    let mut s = String::from("Targets (sim):\n\n");
    match (median(&sim[0].per_rt), median(&sim[last].per_rt)) {
        (Some(small), Some(large)) => {
            let ratio = large / small;
            let verdict = if ratio <= TARGET_RATIO {
                "**met**".to_string()
            } else {
                format!(
                    "**not met**: short by {:.2}× (needs ≤ {:.3} µs)",
                    ratio / TARGET_RATIO,
                    TARGET_RATIO * small
                )
            };
            let _ = writeln!(
                s,
                "- a round trip with {big} nodes ≤ {TARGET_RATIO}× one with 2: {large:.3} µs vs \
                 {small:.3} µs, **{ratio:.2}×**: {verdict}. (The runs: {} µs with {big} nodes, \
                 {} µs with 2.)",
                range(&sim[last].per_rt),
                range(&sim[0].per_rt)
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "- a round trip with {big} nodes ≤ {TARGET_RATIO}× one with 2: **not met**: \
                 sim did not finish both points in {} s.",
                BUDGET.as_secs()
            );
        }
    }
    match per_node(sim, last, |p| &p.resident) {
        Some(b) => {
            let verdict = if b <= TARGET_BYTES {
                "**met**".to_string()
            } else {
                format!(
                    "**not met**: short by {} per node ({:.2}×)",
                    kib(b - TARGET_BYTES),
                    b / TARGET_BYTES
                )
            };
            let heap = per_node(sim, last, |p| &p.heap)
                .map(|h| format!(", of which {} through the global allocator", kib(h)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "- memory per idle node ≤ {} (resident, at {big} nodes): {}{heap}: {verdict}.",
                kib(TARGET_BYTES),
                kib(b)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "- memory per idle node ≤ {}: **not met**: no figure at {big} nodes.",
                kib(TARGET_BYTES)
            );
        }
    }
    s
}

/// The smallest and largest of `v`: `a–b`.
fn range(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.3}–{hi:.3}")
}

/// Measures; returns the section of `docs/bench.md` and writes the chart.
pub fn measure(runs: usize, write: bool) -> Result<String, String> {
    let m = run_all(runs)?;
    let (section, chart) = render(&m);
    if write {
        let path = root().join("docs").join("bench-clusters.svg");
        write_file(&path, &chart)?;
        eprintln!("bench: wrote {}", path.display());
    }
    Ok(section)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(per_rt: f64, resident: f64) -> Point {
        Point {
            per_rt: vec![per_rt],
            setup: vec![1.0],
            resident: vec![resident],
            heap: vec![resident / 2.0],
            dnf: false,
        }
    }

    fn dnf() -> Point {
        Point {
            dnf: true,
            ..Point::default()
        }
    }

    #[test]
    fn runs_are_parsed_from_the_bench_lines() {
        let out = "CLOCK sim 20 20.1\nBENCH sim cluster_10 us/rt 0.800 0.800\n\
                   BENCH sim cluster_10_setup ms 0.250 0.250\nMEM sim cluster_10 737280 29992\n";
        let r = parse(out, 10).unwrap();
        assert_eq!((r.per_rt, r.setup, r.resident), (0.8, 0.25, 737280.0));
        assert_eq!(r.heap, Some(29992.0));
        let madsim = "BENCH madsim cluster_2 us/rt 0.9 0.9\n\
                      BENCH madsim cluster_2_setup ms 0.05 0.05\nMEM madsim cluster_2 155648 -\n";
        assert_eq!(parse(madsim, 2).unwrap().heap, None);
        assert!(parse(out, 100).is_none());
    }

    #[test]
    fn the_section_has_the_tables_the_chart_and_the_verdicts() {
        // Sim: 1.5× at 10,000 nodes, (2,048,000 + 500,000 − 500,000) / 9,998 B per node.
        let sim = vec![
            point(0.8, 500_000.0),
            point(0.8, 510_000.0),
            point(0.9, 600_000.0),
            point(1.0, 2_000_000.0),
            point(1.2, 500_000.0 + 20_476_000.0),
        ];
        let turmoil = vec![
            point(2.0, 600_000.0),
            point(10.0, 600_000.0),
            point(2_000.0, 4_000_000.0),
            dnf(),
            dnf(),
        ];
        let m = Measured {
            peers: vec![
                ("sim", "#1f77b4", sim.clone()),
                ("madsim", "#ff7f0e", sim),
                ("turmoil", "#2ca02c", turmoil),
            ],
            runs: 1,
            date: "2026-01-01".into(),
            commit: "abc".into(),
        };
        let (s, chart) = render(&m);
        assert!(s.starts_with(BEGIN) && s.trim_end().ends_with(END), "{s}");
        assert!(
            s.contains("| 10,000 | 1.200 | 1.200 | DNF (> 30 s) |"),
            "{s}"
        );
        assert!(s.contains("**1.50×**: **met**"), "{s}");
        assert!(s.contains("2.00 KiB, of which 1.00 KiB through the global allocator: **met**"));
        assert!(s.contains("](bench-clusters.svg)"));
        assert_eq!(chart.matches("class=\"dnf\"").count(), 2);
        // Short of both targets: by how much.
        let mut short = m.peers[0].2.clone();
        short[4] = point(3.2, 500_000.0 + 9_998.0 * 32_768.0);
        let v = verdicts(&short);
        assert!(
            v.contains("**4.00×**: **not met**: short by 2.00× (needs ≤ 1.600 µs)"),
            "{v}"
        );
        assert!(
            v.contains("32.00 KiB") && v.contains("short by 16.00 KiB per node (2.00×)"),
            "{v}"
        );
        short[4] = dnf();
        assert!(verdicts(&short).contains("did not finish both points"));
        // Spliced once, between its markers.
        let doc = format!("# Bench\n\n{s}\n## After\n");
        let again = SECTION.splice(&doc, &s);
        assert_eq!(again.matches(BEGIN).count(), 1);
        assert!(again.ends_with("\n## After\n"));
    }
}
