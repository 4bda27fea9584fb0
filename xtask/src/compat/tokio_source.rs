//! Finding Tokio's tests: the package that `Cargo.lock` resolves, in the
//! cargo registry.

use crate::cmd::{cargo, io_context, locked_version, Mode};
use crate::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};

pub(super) struct TokioSource {
    pub(super) version: String,
    pub(super) tests: PathBuf,
}

pub(super) fn cargo_home() -> PathBuf {
    if let Some(h) = std::env::var_os("CARGO_HOME") {
        return PathBuf::from(h);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    PathBuf::from(home).join(".cargo")
}

pub(super) fn find_package_tests(version: &str) -> Option<PathBuf> {
    let src = cargo_home().join("registry/src");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&src)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|d| d.join(format!("tokio-{version}/tests")))
        .find(|t| t.is_dir())
}

pub(super) fn locate_tokio(root: &Path) -> Result<TokioSource> {
    let lock_path = root.join("Cargo.lock");
    let lock = fs::read_to_string(&lock_path).map_err(io_context(&lock_path))?;
    let version = locked_version(&lock, "tokio").ok_or_else(|| {
        Error::Failed(format!(
            "{} resolves no registry package `tokio`",
            lock_path.display()
        ))
    })?;
    if let Some(tests) = find_package_tests(&version) {
        return Ok(TokioSource { version, tests });
    }
    eprintln!("compat: tokio {version} is not in the cargo registry yet: cargo fetch");
    let status = cargo(Mode::Production, &[])
        .arg("fetch")
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .status()?;
    if !status.success() {
        return Err(Error::Failed(format!("cargo fetch failed ({status})")));
    }
    let tests = find_package_tests(&version).ok_or_else(|| {
        Error::Failed(format!(
            "tokio-{version}/tests not found under {}/registry/src after cargo fetch",
            cargo_home().display()
        ))
    })?;
    Ok(TokioSource { version, tests })
}
