//! A crate that never heard of this project: a plain `tokio = "1"`, a
//! `#[tokio::test]` that sleeps an hour. `cargo sim test` runs it simulated
//! (the hour passes on the virtual clock, in no real time), and its
//! manifest and `Cargo.lock` are byte for byte what they were.

use std::path::{Path, PathBuf};
use std::process::Command;

const MANIFEST: &str = r#"[package]
name = "plain-service"
version = "0.1.0"
edition = "2021"

# Its own workspace, outside this project's.
[workspace]

[dependencies]
tokio = { version = "1", features = ["full"] }
"#;

const LIB: &str = r#"
/// Only in the simulated build, and a lint clippy flags (`ptr_arg`): a
/// lint of the simulated build must see it. `tokio::sim` exists only in
/// the simulation: a lint run on real Tokio would not compile this.
#[cfg(sim_graph)]
pub fn count(v: &Vec<u8>) -> usize {
    assert!(tokio::sim::is_simulation());
    v.len()
}

/// Waits for the next hourly job.
pub async fn hourly() -> std::time::Duration {
    let t0 = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    t0.elapsed()
}
"#;

const TEST: &str = r#"
#[tokio::test]
async fn an_hour_passes() {
    let waited = plain_service::hourly().await;
    assert!(waited >= std::time::Duration::from_secs(3600), "{waited:?}");
    println!("waited {waited:?}");
}
"#;

fn fixture() -> PathBuf {
    // Under this workspace's target directory (outside the workspace's
    // members), kept between runs so its build is reused.
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/cargo-sim-fixture/plain-service");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), MANIFEST).unwrap();
    std::fs::write(dir.join("src/lib.rs"), LIB).unwrap();
    std::fs::write(dir.join("tests/hourly.rs"), TEST).unwrap();
    dir
}

#[test]
fn a_plain_tokio_crate_runs_simulated_and_keeps_its_lock() {
    let dir = fixture();
    // Its own lock, as a project has one (resolved from what this
    // machine's registry cache holds).
    let status = Command::new(env!("CARGO"))
        .args(["generate-lockfile", "--offline"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(status.success(), "cargo generate-lockfile");
    let lock_before = std::fs::read(dir.join("Cargo.lock")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-sim"))
        .args(["sim", "test", "--", "--nocapture"])
        .current_dir(&dir)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("RUSTFLAGS")
        .env_remove("SIM_SEED")
        .env_remove("SIM_SEEDS")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "cargo sim test failed:\n{text}");
    assert!(text.contains("test an_hour_passes ... ok"), "{text}");
    // The simulated runner names its seed; real Tokio would have slept an
    // hour.
    assert!(
        text.contains("sim: runtime seed") || text.contains("replay: SIM_SEED="),
        "{text}"
    );
    assert!(text.contains("waited 3600"), "{text}");
    assert_eq!(
        std::fs::read(dir.join("Cargo.lock")).unwrap(),
        lock_before,
        "cargo sim test changed the crate's Cargo.lock"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("Cargo.toml")).unwrap(),
        MANIFEST
    );

    // `cargo sim clippy` lints the simulated build: the function that
    // exists only there is flagged.
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-sim"))
        .args(["sim", "clippy", "--all-targets", "--", "-D", "warnings"])
        .current_dir(&dir)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the lint must fail the run:\n{text}");
    assert!(text.contains("ptr_arg"), "{text}");
    // The patch held inside clippy's own cargo run: `tokio` is the
    // simulation (cargo-clippy's inner cargo would have lost it).
    assert!(!text.contains("could not find `sim`"), "{text}");
    assert!(!text.contains("NOT simulated"), "{text}");
    // The simulation's cfgs are declared: only the crate's own lint fails.
    assert!(!text.contains("unexpected `cfg`"), "{text}");
    assert_eq!(
        std::fs::read(dir.join("Cargo.lock")).unwrap(),
        lock_before,
        "cargo sim clippy changed the crate's Cargo.lock"
    );
}
