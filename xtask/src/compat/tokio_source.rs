//! Finding Tokio's tests: the package that `Cargo.lock` resolves, in the
//! cargo registry.

use crate::cmd::io_context;
use crate::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};

pub(super) struct TokioSource {
    pub(super) version: String,
    pub(super) tests: PathBuf,
}

/// The version of the registry package `name` in a `Cargo.lock`.
pub(super) fn locked_version(lock: &str, name: &str) -> Option<String> {
    let mut found = None;
    for block in lock.split("[[package]]") {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
            })
        };
        if field("name").as_deref() == Some(name)
            && field("source").is_some_and(|s| s.starts_with("registry+"))
        {
            found = field("version");
        }
    }
    found
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
    let status = crate::cmd::cargo(crate::cmd::Mode::Production, &[])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_versions() {
        let lock = "version = 4\n\n[[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n\
                    source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n\
                    [[package]]\nname = \"tokio\"\nversion = \"0.1.0\"\n\n\
                    [[package]]\nname = \"tokio-macros\"\nversion = \"2.7.2\"\n\
                    source = \"registry+x\"\n";
        assert_eq!(locked_version(lock, "tokio").as_deref(), Some("1.54.1"));
        assert_eq!(
            locked_version(lock, "tokio-macros").as_deref(),
            Some("2.7.2")
        );
        assert_eq!(locked_version(lock, "rand"), None);
    }
}
