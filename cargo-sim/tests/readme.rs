//! The README's "Use it from your own crate", followed as a newcomer would:
//! install cargo-sim from this checkout, `cargo new` a crate in an empty
//! directory outside the repository, add the README's manifest lines and
//! files (taken from the README itself, between its `readme-test` markers,
//! so the README cannot drift from what works), and run `cargo sim test`.
//! Its simulated test runs its 50 seeds, with no `unexpected cfg` warning;
//! `cargo test` (production) ignores it with a reason that names
//! `cargo sim test`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The README's blocks marked `<!-- readme-test: NAME -->`, by NAME.
fn blocks() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("<!-- readme-test: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().expect("a fenced block after the marker");
        assert!(
            fence.starts_with("```"),
            "README: `{name}` is not followed by a fenced block"
        );
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        out.push((name.to_string(), body.join("\n") + "\n"));
    }
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let all = text(&out);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{all}",
        out.status
    );
    all
}

#[test]
fn the_readme_section_works_from_an_empty_directory() {
    let root = root().canonicalize().unwrap();
    let blocks = blocks();
    let names: Vec<&str> = blocks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["Cargo.toml", "src/lib.rs", "tests/sim.rs", "run"],
        "README's readme-test blocks changed: update this test with them"
    );
    let sim = root.to_str().unwrap();
    // Builds are kept under this workspace's target directory, so a second
    // run reuses them; the crate itself lives outside the repository.
    let target = root.join("target/readme");
    let empty = std::env::temp_dir().join(format!("sim-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&empty);
    std::fs::create_dir_all(&empty).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());

    // cargo install --path /path/to/sim/cargo-sim (a debug build: the same
    // code, faster to build in CI).
    let bin = target.join("bin");
    run(
        Command::new(&cargo)
            .args(["install", "--quiet", "--debug", "--force", "--path"])
            .arg(root.join("cargo-sim"))
            .arg("--root")
            .arg(&bin)
            .env("CARGO_TARGET_DIR", target.join("install")),
        "cargo install --path cargo-sim",
    );
    let path = format!(
        "{}:{}",
        bin.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );

    // cargo new --lib my-service, then the README's lines and files.
    run(
        Command::new(&cargo)
            .args(["new", "--quiet", "--lib", "my-service"])
            .current_dir(&empty),
        "cargo new",
    );
    let dir = empty.join("my-service");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    // `cargo new` leaves an empty [dependencies] table; the README's has
    // the same table with tokio in it.
    let manifest = manifest.replace("\n[dependencies]\n", "\n");
    for (name, body) in &blocks {
        let body = body.replace("/path/to/sim", sim);
        match name.as_str() {
            "Cargo.toml" => std::fs::write(dir.join(name), format!("{manifest}\n{body}")).unwrap(),
            "run" => {}
            file => {
                std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
                std::fs::write(dir.join(file), body).unwrap();
            }
        }
    }
    let run_block = &blocks[3].1;
    assert_eq!(run_block.trim(), "cargo sim test");

    // cargo sim test
    let out = run(
        Command::new(&cargo)
            .args(["sim", "test"])
            .current_dir(&dir)
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", target.join("my-service"))
            .env_remove("RUSTFLAGS")
            .env_remove("SIM_SEED")
            .env_remove("SIM_SEEDS"),
        "cargo sim test",
    );
    assert!(
        out.contains("every_connection_gets_the_next_number ... ok"),
        "the README's test did not pass under cargo sim test:\n{out}"
    );
    // The sweep's start line on stderr (shown with --nocapture) names its
    // 50 seeds and the log where each seed is written as it starts: all 50
    // ran.
    let shown = run(
        Command::new(&cargo)
            .args(["sim", "test", "--", "--nocapture"])
            .current_dir(&dir)
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", target.join("my-service"))
            .env_remove("RUSTFLAGS")
            .env_remove("SIM_SEED")
            .env_remove("SIM_SEEDS"),
        "cargo sim test -- --nocapture",
    );
    let start = shown
        .lines()
        .find(|l| l.starts_with("sim: every_connection_gets_the_next_number: 50 seeds (0..50), "))
        .unwrap_or_else(|| panic!("no start line for 50 seeds:\n{shown}"));
    let (_, log) = start
        .rsplit_once("): ")
        .unwrap_or_else(|| panic!("the start line names no log: {start}"));
    let log = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{log}: {e}"));
    for seed in 0..50 {
        let line = format!("every_connection_gets_the_next_number seed {seed} (");
        assert!(log.contains(&line), "seed {seed} did not run:\n{log}");
        let passed = format!("every_connection_gets_the_next_number seed {seed} passed\n");
        assert!(log.contains(&passed), "seed {seed} did not pass:\n{log}");
    }
    assert!(!log.contains("seed 50 ("), "a 51st seed ran:\n{log}");
    assert!(
        !out.contains("unexpected `cfg` condition"),
        "the README's lints entry leaves a cfg warning:\n{out}"
    );

    // cargo test: production, where the simulated test is ignored and says
    // how to run it.
    let out = run(
        Command::new(&cargo)
            .args(["test", "--", "--include-ignored", "--list"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", target.join("my-service"))
            .env_remove("RUSTFLAGS"),
        "cargo test",
    );
    assert!(
        out.contains("every_connection_gets_the_next_number: test"),
        "cargo test does not list the README's test:\n{out}"
    );
    let out = run(
        Command::new(&cargo)
            .args(["test", "--test", "sim"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", target.join("my-service"))
            .env_remove("RUSTFLAGS"),
        "cargo test --test sim",
    );
    assert!(
        out.contains("ignored, a simulation test: run it with `cargo sim test`"),
        "production's ignore reason does not name cargo sim test:\n{out}"
    );
    let _ = std::fs::remove_dir_all(&empty);
}
