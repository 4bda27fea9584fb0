//! `cargo sim doctor` on a workspace outside this project with two crates:
//! `escapes` calls into `bg-worker` (a path crate that is not the
//! workspace's: it starts an OS thread, and has a `std::fs` function no test
//! reaches) and `tempfile` (real files), and `clean` uses plain Tokio only.
//! Doctor names the escaping crates and exits 1, passes the clean one with
//! 0, and leaves the workspace's `Cargo.lock` byte for byte as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

const WORKSPACE: &str = r#"[workspace]
members = ["escapes", "clean"]
resolver = "2"
"#;

const ESCAPES: &str = r#"[package]
name = "escapes"
version = "0.1.0"
edition = "2021"

[dependencies]
tokio = { version = "1", features = ["full"] }
bg-worker = { path = "../../doctor-bg-worker" }
tempfile = "3"
"#;

const ESCAPES_LIB: &str = r#"
/// Hands a job to the background worker, then spools its result.
pub async fn job() -> u32 {
    tokio::task::yield_now().await;
    let n = bg_worker::start();
    assert!(tempfile::tempfile().is_ok());
    n
}
"#;

const ESCAPES_TEST: &str = r#"
#[tokio::test]
async fn job_runs() {
    assert_eq!(escapes::job().await, 7);
}
"#;

const CLEAN: &str = r#"[package]
name = "clean"
version = "0.1.0"
edition = "2021"

[dependencies]
tokio = { version = "1", features = ["full"] }
"#;

const CLEAN_LIB: &str = r#"
/// Waits for the next tick.
pub async fn tick() -> std::time::Duration {
    let t0 = tokio::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    t0.elapsed()
}
"#;

const CLEAN_TEST: &str = r#"
#[tokio::test]
async fn ticks() {
    assert!(clean::tick().await >= std::time::Duration::from_secs(1));
}
"#;

/// Not a member of the fixture's workspace, not the simulator's: a
/// dependency like any other.
const WORKER: &str = r#"[package]
name = "bg-worker"
version = "0.2.0"
edition = "2021"

[dependencies]
"#;

const WORKER_LIB: &str = r#"
/// Computes on a thread of its own.
pub fn start() -> u32 {
    std::thread::spawn(|| 7).join().unwrap()
}

/// Reads a file; no test calls it, so it is never linked.
pub fn hostname() -> bool {
    std::fs::File::open("/etc/hostname").is_ok()
}
"#;

/// One `cargo sim` at a time in the fixture: each swaps its `Cargo.lock`
/// while cargo runs.
static FIXTURE: Mutex<()> = Mutex::new(());

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Rewritten only when changed, so cargo's fingerprints stay fresh
    // between runs.
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
        std::fs::write(&path, text).unwrap();
    }
}

fn fixture() -> PathBuf {
    // Under this workspace's target directory (outside its members), kept
    // between runs so its build is reused.
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/cargo-sim-fixture");
    let dir = base.join("doctor");
    write(dir.join("Cargo.toml"), WORKSPACE);
    write(dir.join("escapes/Cargo.toml"), ESCAPES);
    write(dir.join("escapes/src/lib.rs"), ESCAPES_LIB);
    write(dir.join("escapes/tests/job.rs"), ESCAPES_TEST);
    write(dir.join("clean/Cargo.toml"), CLEAN);
    write(dir.join("clean/src/lib.rs"), CLEAN_LIB);
    write(dir.join("clean/tests/tick.rs"), CLEAN_TEST);
    write(base.join("doctor-bg-worker/Cargo.toml"), WORKER);
    write(base.join("doctor-bg-worker/src/lib.rs"), WORKER_LIB);
    // Its own lock, as a project has one (resolved from what this
    // machine's registry cache holds).
    let status = Command::new(env!("CARGO"))
        .args(["generate-lockfile", "--offline"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(status.success(), "cargo generate-lockfile");
    dir
}

fn doctor(dir: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-sim"))
        .arg("sim")
        .arg("doctor")
        .args(args)
        .current_dir(dir)
        .env("CARGO_NET_OFFLINE", "true")
        // The fixture's own target directory, whatever this build uses.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    let text = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

#[test]
fn doctor_names_the_crates_that_escape_and_exits_1() {
    let _one = FIXTURE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fixture();
    let lock_before = std::fs::read(dir.join("Cargo.lock")).unwrap();
    let t0 = std::time::Instant::now();
    let (out, text) = doctor(&dir, &[]);
    eprintln!("cargo sim doctor (both crates) took {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(1), "{text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |start: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting with `{start}`:\n{text}"))
            .to_string()
    };
    let worker = line("bg-worker 0.2.0: starts OS threads");
    assert!(
        worker.contains("bg_worker::start calls std::thread::"),
        "{worker}"
    );
    assert!(
        worker.contains("linked into escapes test `job`"),
        "{worker}"
    );
    // `hostname` opens a file, but nothing links it.
    assert!(
        worker.contains("in the source only: std::fs::, File::open"),
        "{worker}"
    );
    assert!(
        worker.contains(" — run that work on tokio::spawn"),
        "{worker}"
    );
    let tempfile = line("tempfile 3.");
    assert!(tempfile.contains("real disk through std::fs"), "{tempfile}");
    assert!(tempfile.contains("calls std::fs::"), "{tempfile}");
    // The simulator's crates, and what only they depend on, are not judged.
    for ours in ["tokio ", "mio ", "socket2 ", "sim-"] {
        assert!(
            !stdout.lines().any(|l| l.starts_with(ours)),
            "{ours}is the simulator's:\n{text}"
        );
    }
    assert!(
        stdout
            .lines()
            .last()
            .unwrap_or_default()
            .starts_with("cargo sim doctor: 2 crates escape the seed"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(dir.join("Cargo.lock")).unwrap(),
        lock_before,
        "cargo sim doctor changed the workspace's Cargo.lock"
    );
}

#[test]
fn doctor_passes_a_plain_tokio_crate_with_0() {
    let _one = FIXTURE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fixture();
    let t0 = std::time::Instant::now();
    let (out, text) = doctor(&dir, &["-p", "clean"]);
    eprintln!("cargo sim doctor -p clean took {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with(
            "cargo sim doctor: nothing in this graph escapes the seed that doctor knows of\n"
        ),
        "{text}"
    );
}

#[test]
fn bad_usage_exits_2_and_says_how() {
    let (out, text) = doctor(Path::new(env!("CARGO_MANIFEST_DIR")), &["--release"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("unexpected argument `--release`"), "{text}");
    assert!(text.contains("usage: cargo sim doctor"), "{text}");
}
