//! The build's identity, for the report of a failing run (replay.rs): a
//! replay on another build is not the same run.

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "rustc (version unknown)".into());
    // Coverage instrumentation for a fuzzer (`cargo xtask fuzz`) counts
    // edges and changes no decision: a tape a fuzz build wrote replays on
    // the test build, so those flags are not part of the identity.
    let encoded = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let mut kept: Vec<&str> = Vec::new();
    let mut parts = encoded.split('\u{1f}').filter(|f| !f.is_empty()).peekable();
    while let Some(flag) = parts.next() {
        let value = match flag {
            "-C" => parts.next().map(|v| (true, v)),
            f => f.strip_prefix("-C").map(|v| (false, v)),
        };
        let coverage =
            |v: &str| v == "passes=sancov-module" || v.starts_with("llvm-args=-sanitizer-coverage");
        match value {
            Some((_, v)) if coverage(v) => {}
            Some((true, v)) => {
                kept.push("-C");
                kept.push(v);
            }
            _ => kept.push(flag),
        }
    }
    let flags = kept.join(" ");
    println!("cargo:rustc-env=SIM_BUILD_RUSTC={version}");
    println!(
        "cargo:rustc-env=SIM_BUILD_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
    println!("cargo:rustc-env=SIM_BUILD_RUSTFLAGS={flags}");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
}
