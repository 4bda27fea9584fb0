//! What `cargo metadata` says about the graph: where the workspace and its
//! target directory are, the registry's Tokio that the patch replaces, and
//! which packages the workspace's own code reaches (for `cargo sim doctor`).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest Tokio the simulation is written against (sim-runtime's own
/// requirement).
const MIN_TOKIO: (u64, u64) = (1, 54);

pub struct Metadata {
    target_directory: PathBuf,
    workspace_root: PathBuf,
    packages: Vec<Value>,
    workspace_members: Vec<String>,
    /// `resolve.nodes`: each package's resolved dependencies and features.
    nodes: Vec<Value>,
}

/// A package of the graph, as `cargo sim doctor` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    /// Cargo's package id, as its JSON messages name the package too.
    pub id: String,
    pub name: String,
    pub version: String,
    /// The folder of its `Cargo.toml` (its sources are under `src/`).
    pub dir: PathBuf,
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
        Metadata::parse(&out.stdout)
    }

    /// `cargo metadata --format-version 1`'s output, parsed.
    pub fn parse(json: &[u8]) -> Result<Metadata, String> {
        let v: Value = serde_json::from_slice(json)
            .map_err(|e| format!("cargo metadata printed something that is not JSON: {e}"))?;
        let path = |k: &str| {
            v[k].as_str()
                .map(PathBuf::from)
                .ok_or_else(|| format!("cargo metadata has no `{k}`"))
        };
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        };
        Ok(Metadata {
            target_directory: path("target_directory")?,
            workspace_root: path("workspace_root")?,
            packages: v["packages"].as_array().cloned().unwrap_or_default(),
            workspace_members: strings(&v["workspace_members"]),
            nodes: v["resolve"]["nodes"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        })
    }

    /// The workspace's folder.
    pub fn root(&self) -> &Path {
        &self.workspace_root
    }

    /// Whether a package (by id) is one of the workspace's members.
    pub fn is_member(&self, id: &str) -> bool {
        self.workspace_members.iter().any(|m| m == id)
    }

    /// The folders of the packages `pick` names (by package name).
    pub fn dirs_named(&self, pick: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        self.packages
            .iter()
            .filter(|p| p["name"].as_str().is_some_and(&pick))
            .filter_map(|p| {
                Some(
                    Path::new(p["manifest_path"].as_str()?)
                        .parent()?
                        .to_path_buf(),
                )
            })
            .collect()
    }

    /// A package's name, from its id.
    pub fn name_of(&self, id: &str) -> Option<&str> {
        self.packages
            .iter()
            .find(|p| p["id"] == id)
            .and_then(|p| p["name"].as_str())
    }

    /// The packages that `roots` (package ids: the workspace packages whose
    /// tests were built) reach at run time without passing through a
    /// package `stop` names (the simulator's: what only it depends on is its
    /// business, e.g. mio under the real Tokio). Build-only edges and
    /// proc-macros are not followed: they run in the compiler, never in a
    /// test. The workspace's members themselves are not in the list.
    pub fn reached_outside(
        &self,
        roots: &BTreeSet<&str>,
        stop: impl Fn(&str) -> bool,
    ) -> Vec<Package> {
        let by_id: BTreeMap<&str, &Value> = self
            .packages
            .iter()
            .filter_map(|p| Some((p["id"].as_str()?, p)))
            .collect();
        let nodes: BTreeMap<&str, &Value> = self
            .nodes
            .iter()
            .filter_map(|n| Some((n["id"].as_str()?, n)))
            .collect();
        let name = |id: &str| by_id.get(id).and_then(|p| p["name"].as_str()).unwrap_or("");
        let proc_macro = |id: &str| {
            by_id.get(id).is_some_and(|p| {
                p["targets"].as_array().into_iter().flatten().any(|t| {
                    t["kind"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|k| k == "proc-macro")
                })
            })
        };
        let members: BTreeSet<&str> = self.workspace_members.iter().map(String::as_str).collect();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut queue: VecDeque<&str> = roots
            .iter()
            .copied()
            .filter(|id| nodes.contains_key(id) && !stop(name(id)))
            .collect();
        seen.extend(queue.iter().copied());
        while let Some(id) = queue.pop_front() {
            let deps = nodes
                .get(id)
                .and_then(|n| n["deps"].as_array())
                .into_iter()
                .flatten();
            for d in deps {
                let Some(dep) = d["pkg"].as_str() else {
                    continue;
                };
                let build_only = d["dep_kinds"]
                    .as_array()
                    .is_some_and(|k| !k.is_empty() && k.iter().all(|k| k["kind"] == "build"));
                if build_only || stop(name(dep)) || proc_macro(dep) || !seen.insert(dep) {
                    continue;
                }
                queue.push_back(dep);
            }
        }
        let mut out: Vec<Package> = seen
            .into_iter()
            .filter(|id| !members.contains(id))
            .filter_map(|id| {
                let p = by_id.get(id)?;
                Some(Package {
                    id: id.to_string(),
                    name: p["name"].as_str()?.to_string(),
                    version: p["version"].as_str().unwrap_or_default().to_string(),
                    dir: Path::new(p["manifest_path"].as_str()?)
                        .parent()?
                        .to_path_buf(),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        out
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

    /// A graph in `cargo metadata`'s shape: the member `app` depends on
    /// `tokio` (whose `mio` is the simulator's business), `helper` (whose
    /// `deep` is reached too), the proc-macro `derive` (whose `syn` runs in
    /// the compiler) and, for its build script only, `cc`.
    fn sample() -> Metadata {
        let pkg = |name: &str, kind: &str| {
            serde_json::json!({
                "id": format!("{name}-id"), "name": name, "version": "1.0.0",
                "manifest_path": format!("/r/{name}/Cargo.toml"),
                "targets": [{ "kind": [kind] }],
            })
        };
        let dep = |name: &str, kind: Option<&str>| serde_json::json!({ "pkg": format!("{name}-id"), "dep_kinds": [{ "kind": kind }] });
        let json = serde_json::json!({
            "target_directory": "/t",
            "workspace_root": "/w",
            "workspace_members": ["app-id"],
            "packages": [
                pkg("app", "lib"), pkg("tokio", "lib"), pkg("mio", "lib"), pkg("helper", "lib"),
                pkg("deep", "lib"), pkg("derive", "proc-macro"), pkg("syn", "lib"), pkg("cc", "lib"),
            ],
            "resolve": { "nodes": [
                { "id": "app-id", "deps": [dep("tokio", None), dep("helper", Some("dev")),
                                           dep("derive", None), dep("cc", Some("build"))] },
                { "id": "tokio-id", "deps": [dep("mio", None)] },
                { "id": "helper-id", "deps": [dep("deep", None)] },
                { "id": "derive-id", "deps": [dep("syn", None)] },
            ]},
        });
        Metadata::parse(json.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn the_walk_stops_at_the_simulator_proc_macros_and_build_dependencies() {
        let meta = sample();
        let reached = meta.reached_outside(&BTreeSet::from(["app-id"]), |n| n == "tokio");
        let names: Vec<&str> = reached.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["deep", "helper"]);
        assert!(meta.is_member("app-id"));
        assert!(!meta.is_member("helper-id"));
        assert_eq!(meta.root(), Path::new("/w"));
        assert_eq!(
            meta.dirs_named(|n| n == "tokio"),
            [PathBuf::from("/r/tokio")]
        );
        assert_eq!(reached[0].dir, PathBuf::from("/r/deep"));
        assert_eq!(reached[0].id, "deep-id");
        // Packages whose tests were not built are not where the walk starts.
        assert!(meta.reached_outside(&BTreeSet::new(), |_| false).is_empty());
    }

    #[test]
    fn versions_compare_by_number() {
        assert!(version_key("1.54.1") > version_key("1.9.0"));
        assert_eq!(version_key("1.54.1-alpha+x"), (1, 54, 1));
    }
}
