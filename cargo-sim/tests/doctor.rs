//! `cargo sim doctor` on a workspace outside this project, with three
//! members that share one build (one target directory, kept between runs
//! under this workspace's `target/cargo-sim-fixture/doctor`):
//!
//! - `web` serves axum on a socket2 listener, calls it with reqwest,
//!   connects a tonic channel to a tonic server and keeps its data with
//!   `std::fs`: all simulated now, so doctor finds nothing and exits 0, and
//!   `cargo sim test` passes it.
//! - `helper`'s test helper (`tests/common/mod.rs`) starts an OS thread
//!   with `std::thread::spawn`, which a simulation runs as a simulated
//!   thread: doctor does not name it, and `cargo sim test` passes it. Its
//!   test `raw` links a thread made with `clone` itself, past
//!   `pthread_create`, which would run outside the simulation: doctor names
//!   that file and line and exits 1.
//! - `jobs` calls `bg-worker`, a path crate outside the workspace that
//!   starts a thread, and `tempfile` (real files once, simulated now):
//!   doctor names neither, exits 0, and `cargo sim test` passes it.
//!
//! The first run builds the graph (tokio's simulation, hyper, axum, tonic,
//! reqwest): about 1.5 minutes on two cores; each doctor run after it takes
//! some seconds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

const WORKSPACE: &str = r#"[workspace]
members = ["web", "helper", "jobs"]
resolver = "2"
"#;

const WEB: &str = r#"[package]
name = "web"
version = "0.1.0"
edition = "2021"

[dependencies]
tokio = { version = "1", features = ["full"] }
axum = { version = "0.8", default-features = false, features = ["http1", "tokio"] }
reqwest = { version = "0.13", default-features = false }
tonic = { version = "0.14", default-features = false, features = ["transport", "router"] }
socket2 = "0.6"
"#;

const WEB_LIB: &str = r#"
use std::net::SocketAddr;

/// The notes service: what was saved, read back from the disk.
pub fn app() -> axum::Router {
    axum::Router::new().route("/notes", axum::routing::get(notes))
}

async fn notes() -> String {
    std::fs::read_to_string("data/notes.txt").unwrap_or_default()
}

/// Saves the notes where `app` serves them from.
pub fn save(text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all("data")?;
    std::fs::write("data/notes.txt", text)
}

/// A listener made with socket2, as services that tune their sockets do.
pub fn listener(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(128)?;
    tokio::net::TcpListener::from_std(socket.into())
}
"#;

const WEB_TEST: &str = r#"
use std::time::Duration;

#[tokio::test]
async fn notes_are_served_over_http_and_a_grpc_channel_connects() {
    web::save("hello").unwrap();
    let listener = web::listener("127.0.0.1:8080".parse().unwrap()).unwrap();
    tokio::spawn(async move { axum::serve(listener, web::app()).await.unwrap() });
    let body = reqwest::get("http://127.0.0.1:8080/notes")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(body, "hello");

    let grpc = tonic::transport::Server::builder()
        .add_routes(tonic::service::Routes::default())
        .serve("127.0.0.1:50051".parse().unwrap());
    tokio::spawn(async move { grpc.await.unwrap() });
    // Until the server's task has bound its listener.
    let endpoint = tonic::transport::Endpoint::from_static("http://127.0.0.1:50051");
    while endpoint.connect().await.is_err() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
"#;

const HELPER: &str = r#"[package]
name = "helper"
version = "0.1.0"
edition = "2021"

[dependencies]
tokio = { version = "1", features = ["full"] }

[dev-dependencies]
libc = "0.2"
"#;

const HELPER_LIB: &str = r#"
/// Doubles, on the runtime.
pub async fn double(n: u32) -> u32 {
    tokio::task::yield_now().await;
    n * 2
}
"#;

const HELPER_COMMON: &str = r#"//! Helpers the tests share.

/// Computes the expected answer off the runtime, as test helpers often do.
pub fn expected(n: u32) -> u32 {
    std::thread::spawn(move || n * 2).join().unwrap()
}
"#;

const HELPER_TEST: &str = r#"
mod common;

#[tokio::test]
async fn doubles() {
    assert_eq!(helper::double(21).await, common::expected(21));
}
"#;

const HELPER_RAW: &str = r#"//! A thread made the way a few C libraries make theirs: clone(2) itself.

extern "C" fn child(_: *mut libc::c_void) -> libc::c_int {
    0
}

/// Starts `child` on `stack`, sharing this process's memory and files.
pub fn raw_thread(stack: &mut [u8]) -> libc::c_int {
    let top = stack.as_mut_ptr_range().end.cast();
    let flags = libc::CLONE_VM | libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD | libc::CLONE_SYSVSEM;
    // SAFETY: `stack` outlives the call; `child` touches nothing of ours.
    unsafe { libc::clone(child, top, flags, std::ptr::null_mut()) }
}

#[test]
fn a_raw_thread_is_linked() {
    // Linked, never run: doctor reads the built code.
    let start: fn(&mut [u8]) -> libc::c_int = raw_thread;
    std::hint::black_box(start);
}
"#;

const JOBS: &str = r#"[package]
name = "jobs"
version = "0.1.0"
edition = "2021"

[dependencies]
tokio = { version = "1", features = ["full"] }
bg-worker = { path = "../../doctor-bg-worker" }
tempfile = "3"
"#;

const JOBS_LIB: &str = r#"
/// Hands a job to the background worker, then spools its result.
pub async fn job() -> u32 {
    tokio::task::yield_now().await;
    let n = bg_worker::start();
    assert!(tempfile::tempfile().is_ok());
    n
}
"#;

const JOBS_TEST: &str = r#"
#[tokio::test]
async fn job_runs() {
    assert_eq!(jobs::job().await, 7);
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
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = here.join("../target/cargo-sim-fixture");
    let dir = base.join("doctor");
    write(dir.join("Cargo.toml"), WORKSPACE);
    write(dir.join("web/Cargo.toml"), WEB);
    write(dir.join("web/src/lib.rs"), WEB_LIB);
    write(dir.join("web/tests/serve.rs"), WEB_TEST);
    write(dir.join("helper/Cargo.toml"), HELPER);
    write(dir.join("helper/src/lib.rs"), HELPER_LIB);
    write(dir.join("helper/tests/common/mod.rs"), HELPER_COMMON);
    write(dir.join("helper/tests/double.rs"), HELPER_TEST);
    write(dir.join("helper/tests/raw.rs"), HELPER_RAW);
    write(dir.join("jobs/Cargo.toml"), JOBS);
    write(dir.join("jobs/src/lib.rs"), JOBS_LIB);
    write(dir.join("jobs/tests/job.rs"), JOBS_TEST);
    write(base.join("doctor-bg-worker/Cargo.toml"), WORKER);
    write(base.join("doctor-bg-worker/src/lib.rs"), WORKER_LIB);
    // Its own lock, as a project has one: this workspace's, so its
    // versions are the ones this workspace's build already fetched (cargo
    // drops what the fixture does not use).
    let lock = std::fs::read_to_string(here.join("../Cargo.lock")).unwrap();
    write(dir.join("Cargo.lock"), &lock);
    dir
}

fn cargo_sim(dir: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-sim"))
        .arg("sim")
        .args(args)
        .current_dir(dir)
        // The fixture's own target directory, whatever this build uses.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("SIM_SEED")
        .env_remove("SIM_SEEDS")
        .output()
        .unwrap();
    let text = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

fn blockers(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("blocker: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_service_on_axum_reqwest_tonic_socket2_and_std_fs_has_no_blocker() {
    let _one = FIXTURE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fixture();
    let t0 = std::time::Instant::now();
    let (out, text) = cargo_sim(&dir, &["doctor", "-p", "web"]);
    eprintln!("cargo sim doctor -p web took {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(blockers(&out), Vec::<String>::new(), "{text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.ends_with(
            "cargo sim doctor: nothing here reaches outside the seed that doctor knows of\n"
        ),
        "{text}"
    );
    // What doctor passes runs: the same build, simulated.
    let (out, text) = cargo_sim(&dir, &["test", "-p", "web"]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("test result: ok. 1 passed"), "{text}");
}

#[test]
fn a_raw_clone_is_named_by_file_and_line_and_a_std_thread_is_not() {
    let _one = FIXTURE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fixture();
    let lock_before = std::fs::read(dir.join("Cargo.lock")).unwrap();
    let t0 = std::time::Instant::now();
    let (out, text) = cargo_sim(&dir, &["doctor", "-p", "helper"]);
    eprintln!("cargo sim doctor -p helper took {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = HELPER_RAW
        .lines()
        .position(|l| l.contains("libc::clone("))
        .unwrap()
        + 1;
    // One blocker: the raw clone. The helper's std::thread::spawn (in
    // tests/common/mod.rs) is a simulated thread, and not named.
    let found = blockers(&out);
    assert_eq!(found.len(), 1, "{text}");
    assert!(
        found[0].starts_with(&format!(
            "blocker: helper/tests/raw.rs:{line}: `raw::raw_thread` calls clone"
        )),
        "{text}"
    );
    assert!(
        found[0].ends_with("linked into helper test `raw`"),
        "{text}"
    );
    assert!(
        text.contains(
            "\n    why: it makes a thread without pthread_create (clone or clone3 itself): it \
             runs outside the simulation"
        ),
        "{text}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("common/mod.rs"), "{text}");
    assert!(!stdout.contains("std::thread::"), "{text}");
    assert_eq!(
        std::fs::read(dir.join("Cargo.lock")).unwrap(),
        lock_before,
        "cargo sim doctor changed the workspace's Cargo.lock"
    );
    // What doctor leaves unnamed runs: the helper's thread is a simulated
    // thread of the test's node.
    let (out, text) = cargo_sim(&dir, &["test", "-p", "helper", "--test", "double"]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("test result: ok. 1 passed"), "{text}");
}

#[test]
fn a_dependency_that_starts_a_thread_is_not_named_nor_is_tempfile() {
    let _one = FIXTURE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fixture();
    let (out, text) = cargo_sim(&dir, &["doctor", "-p", "jobs"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(blockers(&out), Vec::<String>::new(), "{text}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("bg-worker"),
        "{text}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with(
            "cargo sim doctor: nothing here reaches outside the seed that doctor knows of\n"
        ),
        "{text}"
    );
    // bg-worker's thread, started and joined inside a task, runs simulated.
    let (out, text) = cargo_sim(&dir, &["test", "-p", "jobs"]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("test result: ok. 1 passed"), "{text}");
}

#[test]
fn bad_usage_exits_2_and_says_how() {
    let (out, text) = cargo_sim(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["doctor", "--release"],
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("unexpected argument `--release`"), "{text}");
    assert!(text.contains("usage: cargo sim doctor"), "{text}");
}
