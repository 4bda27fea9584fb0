//! What `cargo metadata` says about the graph: where the workspace and its
//! target directory are, and the registry's Tokio that the patch replaces.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest Tokio the simulation is written against (sim-runtime's own
/// requirement).
const MIN_TOKIO: (u64, u64) = (1, 54);

pub struct Metadata {
    target_directory: PathBuf,
    packages: Vec<Value>,
}

/// The registry's Tokio in the user's graph.
pub struct RealTokio {
    pub version: String,
    /// The unpacked crate in the registry's cache: the shim's own Tokio,
    /// taken as a path dependency (another source than the patched one).
    pub dir: PathBuf,
    /// Its features (explicit ones, and the implicit feature of each
    /// optional dependency that no `dep:` entry hides), in order.
    pub features: BTreeMap<String, Vec<String>>,
}

/// The workspace root of the crate cargo would build here, without
/// resolving anything (so no lock file is written).
pub fn workspace_root(manifest: Option<&Path>) -> Result<PathBuf, String> {
    let mut cmd = crate::cargo();
    cmd.args(["locate-project", "--workspace", "--message-format", "plain"]);
    if let Some(m) = manifest {
        cmd.arg("--manifest-path").arg(m);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo locate-project: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "no Cargo.toml here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Ok(manifest
        .parent()
        .expect("a manifest path has a parent")
        .to_path_buf())
}

impl Metadata {
    pub fn read(manifest: Option<&Path>) -> Result<Metadata, String> {
        let mut cmd: Command = crate::cargo();
        cmd.args(["metadata", "--format-version", "1"]);
        if let Some(m) = manifest {
            cmd.arg("--manifest-path").arg(m);
        }
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cargo metadata failed:\n{}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let v: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("cargo metadata printed something that is not JSON: {e}"))?;
        let path = |k: &str| {
            v[k].as_str()
                .map(PathBuf::from)
                .ok_or_else(|| format!("cargo metadata has no `{k}`"))
        };
        Ok(Metadata {
            target_directory: path("target_directory")?,
            packages: v["packages"].as_array().cloned().unwrap_or_default(),
        })
    }

    /// Where the simulated graph is built: a target directory of its own,
    /// so production builds and the older `--cfg simulation` builds never
    /// rebuild each other.
    pub fn sim_dir(&self) -> PathBuf {
        self.target_directory.join("sim-graph")
    }

    pub fn real_tokio(&self) -> Result<RealTokio, String> {
        let registry = |p: &&Value| {
            p["name"] == "tokio"
                && p["source"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("registry+") || s.starts_with("sparse+"))
        };
        let mut found: Vec<&Value> = self.packages.iter().filter(registry).collect();
        found.sort_by_key(|p| version_key(p["version"].as_str().unwrap_or("0")));
        let Some(p) = found.last() else {
            return Err(
                "no crate in this graph depends on `tokio` from crates.io, so there is \
                        nothing to simulate; add `tokio = { version = \"1\", ... }` to \
                        [dependencies]"
                    .into(),
            );
        };
        let version = p["version"].as_str().unwrap_or_default().to_string();
        let (major, minor, _) = version_key(&version);
        if (major, minor) < MIN_TOKIO {
            return Err(format!(
                "this graph has tokio {version}; the simulation needs {}.{} or newer. Run \
                 `cargo update -p tokio` and try again",
                MIN_TOKIO.0, MIN_TOKIO.1
            ));
        }
        let dir = p["manifest_path"]
            .as_str()
            .map(Path::new)
            .and_then(Path::parent)
            .ok_or("cargo metadata gives no manifest path for tokio")?
            .to_path_buf();
        let mut features: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Some(map) = p["features"].as_object() {
            for (k, v) in map {
                let list = v
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                features.insert(k.clone(), list);
            }
        }
        // An optional dependency is a feature of its own unless some
        // feature names it as `dep:<name>`.
        let hidden: Vec<String> = features
            .values()
            .flatten()
            .filter_map(|f| f.strip_prefix("dep:").map(str::to_string))
            .collect();
        for d in p["dependencies"].as_array().into_iter().flatten() {
            if d["optional"] == true {
                let name = d["rename"]
                    .as_str()
                    .or(d["name"].as_str())
                    .unwrap_or_default()
                    .to_string();
                if !name.is_empty() && !hidden.contains(&name) {
                    features.entry(name).or_default();
                }
            }
        }
        Ok(RealTokio {
            version,
            dir,
            features,
        })
    }
}

/// `major.minor.patch` as numbers (pre-release and build parts ignored).
fn version_key(v: &str) -> (u64, u64, u64) {
    let core = v.split(['-', '+']).next().unwrap_or(v);
    let mut it = core.split('.').map(|x| x.parse::<u64>().unwrap_or(0));
    (
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        assert!(version_key("1.54.1") > version_key("1.9.0"));
        assert_eq!(version_key("1.54.1-alpha+x"), (1, 54, 1));
    }
}
