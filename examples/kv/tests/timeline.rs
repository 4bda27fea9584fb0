//! The demo's failing seed drawn as a timeline page, checked in a real
//! browser: headless Chromium loads `target/sim/<test>/1.html` from disk,
//! the page runs without a console message, its summary
//! (`window.__timeline`, mirrored into the DOM for `--dump-dom`) has the
//! lanes, the crash and the arrows the run made, and a screenshot is kept
//! at `target/timeline/kv-demo.png` (and `kv-demo-find.png`: the page
//! searched for the lost write's value).
//!
//! Run by `cargo xtask ci` (a step of its own), not by `cargo test`
//! (`test = false`): it needs a Chromium binary (`chromium`,
//! `chromium-browser`, `google-chrome`, or `SIM_CHROMIUM=/path`). Without
//! one it fails saying how to install it, unless `SIM_SKIP_BROWSER=1`.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

#[cfg(simulation)]
mod scenario;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SIM_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
    .find(|p| p.is_file())
}

/// Runs Chromium headless on `page` (with `#fragment` when not empty) with
/// `args`; returns (stdout, stderr).
fn headless(
    bin: &Path,
    profile: &Path,
    page: &Path,
    fragment: &str,
    args: &[&str],
) -> (String, String) {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}{fragment}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let readers = (
        std::thread::spawn(move || std::io::read_to_string(&mut out).unwrap_or_default()),
        std::thread::spawn(move || std::io::read_to_string(&mut err).unwrap_or_default()),
    );
    let start = Instant::now();
    while child.try_wait().expect("chromium runs").is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("headless Chromium did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (readers.0.join().unwrap(), readers.1.join().unwrap())
}

fn unescape(html: &str) -> String {
    html.replace("&quot;", "\"")
        .replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The demo's failing seed, run through the harness as `cargo xtask demo`
/// runs it; returns the page the report names.
#[cfg(simulation)]
fn demo_page() -> PathBuf {
    use sim::__private::{run, Options, Seeds};
    let options = Options {
        name: "demo::acked_writes_survive_failover",
        file: "tests/demo.rs",
        package: env!("CARGO_PKG_NAME"),
        crate_name: "demo",
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds: Seeds::One(1),
        ..Options::default()
    };
    let failed = std::panic::catch_unwind(|| {
        run(options, || {
            scenario::acked_writes_survive_failover(kv::Replication::AckBeforeReplicate)
        })
    })
    .expect_err("seed 1 of the demo finds the planted bug");
    let report = failed
        .downcast_ref::<String>()
        .expect("the harness's report")
        .clone();
    let page = report
        .lines()
        .find_map(|l| l.strip_prefix("sim: timeline: "))
        .and_then(|l| l.split(" (").next())
        .unwrap_or_else(|| panic!("the report names the timeline page:\n{report}"));
    PathBuf::from(page)
}

/// The page's summary after it rendered in headless Chromium, checked for
/// console messages and script errors.
fn summary(bin: &Path, profile: &Path, page: &Path, fragment: &str) -> serde_json::Value {
    let (dom, log) = headless(bin, profile, page, fragment, &["--dump-dom"]);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "the page logged to the console:\n{}",
        console.join("\n")
    );
    let summary = dom
        .split_once("<pre id=\"summary\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(s, _)| unescape(s))
        .unwrap_or_else(|| panic!("the page did not render its summary:\n{log}"));
    let s: serde_json::Value = serde_json::from_str(&summary).expect("the summary is JSON");
    assert_eq!(s["ready"], true);
    assert_eq!(s["errors"], serde_json::json!([]), "script errors");
    s
}

/// The browser, or (with `SIM_SKIP_BROWSER=1`) `None` after saying the
/// test skipped; without either, the test fails saying how to get one.
fn browser(test: &str) -> Option<PathBuf> {
    if let Some(bin) = chromium() {
        return Some(bin);
    }
    if std::env::var("SIM_SKIP_BROWSER").is_ok_and(|v| v == "1") {
        // Straight to stderr: libtest captures `eprintln!` of a passing test.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "{test}: SKIPPED (no Chromium binary, and SIM_SKIP_BROWSER=1)"
        );
        return None;
    }
    panic!(
        "no Chromium binary found (looked for chromium, chromium-browser, google-chrome on \
         PATH, and SIM_CHROMIUM). Install it (Debian/Ubuntu: `apt-get update && apt-get install \
         -y chromium`), point SIM_CHROMIUM at one, or set SIM_SKIP_BROWSER=1 to skip this test"
    );
}

/// `target/timeline/`, and a browser profile of the test's own there.
fn out_dir(test: &str) -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/timeline");
    std::fs::create_dir_all(&root).unwrap();
    let profile = root.join(format!("profile-{test}"));
    (root, profile)
}

#[cfg(simulation)]
#[test]
fn timeline_page_in_headless_chromium() {
    let Some(bin) = browser("timeline_page_in_headless_chromium") else {
        return;
    };
    let page = demo_page();
    let (root, profile) = out_dir("demo");

    let s = summary(&bin, &profile, &page, "");
    let lanes: Vec<&str> = s["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for lane in ["main", "kv1", "kv2", "kv3", "kv-client-0"] {
        assert!(lanes.contains(&lane), "lane {lane} in {lanes:?}");
    }
    let spans = s["spans"].to_string();
    assert!(
        spans.contains("kv1 down"),
        "the crash of the primary is a span: {spans}"
    );
    let arrows = &s["arrows"];
    for arrow in [
        "kv-client-0->kv1 connect",
        "kv-client-0->kv1 data",
        "kv1->kv2 data",
        "kv1->kv-client-0 data",
    ] {
        assert!(
            arrows[arrow].as_u64().is_some_and(|n| n > 0),
            "arrow {arrow} in {arrows}"
        );
    }
    assert!(s["drawnArrows"].as_u64().unwrap() > 50, "{s}");
    assert!(
        s["failure"].as_str().unwrap().contains("not linearizable"),
        "the failure is marked: {s}"
    );

    // The acknowledged write the failover lost, found by its value: the
    // client's PUT reaches kv1, which crashes before any backup has it.
    let found = summary(&bin, &profile, &page, "#find=v0-8");
    assert!(
        found["matches"].as_u64().is_some_and(|n| n >= 1),
        "the search finds the lost write's message: {found}"
    );

    // Screenshots, kept as CI artifacts: the whole run, and the search.
    for (file, fragment) in [("kv-demo.png", ""), ("kv-demo-find.png", "#find=v0-8")] {
        let png = root.join(file);
        let _ = std::fs::remove_file(&png);
        let (_, log) = headless(
            &bin,
            &profile,
            &page,
            fragment,
            &[
                "--window-size=1400,480",
                &format!("--screenshot={}", png.display()),
            ],
        );
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{log}"));
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
    }
}

/// A page of 100,000 messages (datagram ping-pong between two nodes, then a
/// planted failure so the harness draws the seed) renders in the browser
/// without an error, drawing a sample of the whole run.
#[cfg(simulation)]
#[test]
fn a_page_of_100k_messages_renders() {
    use sim::__private::{run, Options, Seeds};
    use tokio::net::UdpSocket;
    let Some(bin) = browser("a_page_of_100k_messages_renders") else {
        return;
    };
    const ROUNDS: usize = 50_000;
    let options = Options {
        name: "timeline::large_page",
        file: "tests/timeline.rs",
        package: env!("CARGO_PKG_NAME"),
        crate_name: "timeline",
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds: Seeds::One(0),
        ..Options::default()
    };
    let failed = std::panic::catch_unwind(|| {
        run(options, || async {
            sim::node("echo").ip("10.0.0.2").start(|| async {
                let u = UdpSocket::bind("0.0.0.0:9").await.unwrap();
                let mut buf = [0u8; 16];
                loop {
                    let (n, from) = u.recv_from(&mut buf).await.unwrap();
                    u.send_to(&buf[..n], from).await.unwrap();
                }
            });
            let u = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            let mut buf = [0u8; 16];
            let mut done = 0;
            for i in 0..ROUNDS {
                let msg = format!("ping {i}");
                loop {
                    u.send_to(msg.as_bytes(), "10.0.0.2:9").await.unwrap();
                    let got = tokio::time::timeout(
                        std::time::Duration::from_millis(50),
                        u.recv_from(&mut buf),
                    )
                    .await;
                    if got.is_ok() {
                        break;
                    }
                }
                done += 1;
            }
            assert_eq!(done, 0, "planted: draw this run of {done} round trips");
        })
    })
    .expect_err("the planted failure");
    let report = failed.downcast_ref::<String>().expect("a report").clone();
    let page = report
        .lines()
        .find_map(|l| l.strip_prefix("sim: timeline: "))
        .and_then(|l| l.split(" (").next())
        .unwrap_or_else(|| panic!("the report names the page:\n{report}"));
    let (_, profile) = out_dir("large");
    let s = summary(&bin, &profile, Path::new(page), "");
    let messages = s["messages"].as_u64().unwrap();
    assert!(messages >= 2 * ROUNDS as u64, "{messages} messages");
    let drawn = s["drawnArrows"].as_u64().unwrap();
    assert!(
        drawn > 1000 && drawn <= 10_000,
        "a sample is drawn: {drawn}"
    );
}
