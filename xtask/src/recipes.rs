//! The sweep recipes of `docs/recipes/` (README, "Sweeps across
//! machines"), checked in CI: a GitHub Actions workflow whose matrix runs
//! the shards and whose last job merges them, and a Kubernetes Indexed Job
//! whose completion index becomes `SIM_SHARD`.
//!
//! These tests check the shapes the recipes rely on — the matrix covers
//! shards 1..=n and `SIM_SHARD` says n, the merge job needs the shard jobs
//! and runs when they fail, the results directory is the one uploaded and
//! merged, `completionMode: Indexed` with completions = parallelism = n,
//! the index wired into `SIM_SHARD` — not the full upstream schemas (no
//! copy of GitHub's workflow schema or Kubernetes' OpenAPI schema is
//! available offline to this build).
#![cfg(test)]

use crate::cmd::root;
use yaml_rust2::{Yaml, YamlLoader};

fn load(name: &str) -> Vec<Yaml> {
    let path = root().join("docs/recipes").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn str_of<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {y:?}"))
}

/// The steps of a GitHub job that `uses` an action (by name, no version).
fn uses<'a>(job: &'a Yaml, action: &str) -> Vec<&'a Yaml> {
    job["steps"]
        .as_vec()
        .expect("a job has steps")
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.split('@').next() == Some(action))
        })
        .collect()
}

#[test]
fn github_actions_matrix_runs_every_shard_and_merges_them() {
    let docs = load("github-actions-sim-sweep.yml");
    assert_eq!(docs.len(), 1);
    let wf = &docs[0];
    let shard = &wf["jobs"]["shard"];
    let merge = &wf["jobs"]["merge"];
    assert!(!shard.is_badvalue(), "a job named `shard`");
    assert!(!merge.is_badvalue(), "a job named `merge`");

    // The matrix is 1..=n, and every shard runs to the end.
    let matrix: Vec<i64> = shard["strategy"]["matrix"]["shard"]
        .as_vec()
        .expect("strategy.matrix.shard is a list")
        .iter()
        .map(|v| v.as_i64().expect("shard numbers are integers"))
        .collect();
    let n = matrix.len() as i64;
    assert!(n >= 2, "a sweep across machines has shards: {matrix:?}");
    assert_eq!(matrix, (1..=n).collect::<Vec<_>>(), "the matrix is 1..=n");
    assert_eq!(
        shard["strategy"]["fail-fast"].as_bool(),
        Some(false),
        "a failing shard must not cancel the others"
    );

    // SIM_SHARD is the matrix entry over n; the simulation build; results.
    let env = &shard["env"];
    assert_eq!(
        str_of(&env["SIM_SHARD"], "SIM_SHARD"),
        format!("${{{{ matrix.shard }}}}/{n}")
    );
    assert_eq!(str_of(&env["RUSTFLAGS"], "RUSTFLAGS"), "--cfg simulation");
    let results = str_of(&env["SIM_RESULTS"], "SIM_RESULTS").trim_end_matches('/');
    let runs_tests = shard["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .any(|s| s["run"].as_str().is_some_and(|r| r.contains("cargo test")));
    assert!(runs_tests, "a shard runs cargo test");

    // Each shard uploads the results directory, even when its tests fail,
    // under a name of its own.
    let up = uses(shard, "actions/upload-artifact");
    assert_eq!(up.len(), 1, "one upload per shard");
    assert_eq!(str_of(&up[0]["if"], "upload's if"), "always()");
    assert_eq!(
        str_of(&up[0]["with"]["path"], "upload path").trim_end_matches('/'),
        results
    );
    assert!(str_of(&up[0]["with"]["name"], "artifact name").contains("${{ matrix.shard }}"));

    // The merge needs the shards, runs when they failed, downloads every
    // shard's artifact into one directory and merges it.
    let needs: Vec<&str> = match &merge["needs"] {
        Yaml::String(s) => vec![s.as_str()],
        Yaml::Array(v) => v.iter().map(|n| str_of(n, "needs")).collect(),
        other => panic!("merge.needs: {other:?}"),
    };
    assert_eq!(needs, ["shard"]);
    assert_eq!(str_of(&merge["if"], "merge's if"), "always()");
    let down = uses(merge, "actions/download-artifact");
    assert_eq!(down.len(), 1);
    assert_eq!(down[0]["with"]["merge-multiple"].as_bool(), Some(true));
    let dir = str_of(&down[0]["with"]["path"], "download path").trim_end_matches('/');
    let pattern = str_of(&down[0]["with"]["pattern"], "download pattern");
    let artifact = str_of(&up[0]["with"]["name"], "artifact name");
    assert_eq!(
        pattern.trim_end_matches('*'),
        artifact.split("${{").next().unwrap(),
        "the download pattern matches every shard's artifact"
    );
    let merges = merge["steps"].as_vec().unwrap().iter().any(|s| {
        s["run"].as_str().is_some_and(|r| {
            r.contains("cargo xtask merge-results") && r.split_whitespace().any(|w| w == dir)
        })
    });
    assert!(
        merges,
        "the merge job runs `cargo xtask merge-results {dir}`"
    );
}

#[test]
fn kubernetes_indexed_job_makes_the_index_the_shard() {
    let docs = load("k8s-sim-sweep-job.yaml");
    let job = docs
        .iter()
        .find(|d| d["kind"].as_str() == Some("Job"))
        .expect("a Job");
    assert_eq!(str_of(&job["apiVersion"], "apiVersion"), "batch/v1");
    let spec = &job["spec"];
    assert_eq!(str_of(&spec["completionMode"], "completionMode"), "Indexed");
    let n = spec["completions"].as_i64().expect("completions");
    assert!(n >= 2, "a sweep across machines has shards");
    assert_eq!(
        spec["parallelism"].as_i64(),
        Some(n),
        "parallelism = completions"
    );

    let pod = &spec["template"]["spec"];
    let policy = str_of(&pod["restartPolicy"], "restartPolicy");
    assert!(["Never", "OnFailure"].contains(&policy), "{policy}");
    let containers = pod["containers"].as_vec().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let env: Vec<(&str, &Yaml)> = c["env"]
        .as_vec()
        .expect("env")
        .iter()
        .map(|e| (str_of(&e["name"], "env name"), e))
        .collect();
    let var = |name: &str| -> &Yaml {
        env.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, e)| *e)
            .unwrap_or_else(|| panic!("env {name} is set"))
    };
    // n is said once more, for the shell, and agrees.
    assert_eq!(
        str_of(&var("SHARD_COUNT")["value"], "SHARD_COUNT"),
        n.to_string()
    );
    // The completion index, from the pod's annotation.
    assert_eq!(
        str_of(
            &var("JOB_COMPLETION_INDEX")["valueFrom"]["fieldRef"]["fieldPath"],
            "fieldPath"
        ),
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert_eq!(
        str_of(&var("RUSTFLAGS")["value"], "RUSTFLAGS"),
        "--cfg simulation"
    );
    // The index (from 0) becomes SIM_SHARD (from 1) in the command.
    let script: Vec<&str> = c["command"]
        .as_vec()
        .into_iter()
        .chain(c["args"].as_vec())
        .flatten()
        .map(|a| str_of(a, "command"))
        .collect();
    let script = script.join(" ");
    assert!(
        script.contains("export SIM_SHARD=$((JOB_COMPLETION_INDEX + 1))/$SHARD_COUNT"),
        "{script}"
    );
    assert!(script.contains("cargo test"), "{script}");
    // SIM_RESULTS is a mounted volume that every pod shares.
    let results = str_of(&var("SIM_RESULTS")["value"], "SIM_RESULTS");
    let mount = c["volumeMounts"]
        .as_vec()
        .expect("volumeMounts")
        .iter()
        .find(|m| results.starts_with(str_of(&m["mountPath"], "mountPath")))
        .expect("SIM_RESULTS is on a mounted volume");
    let volume = pod["volumes"]
        .as_vec()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mount's volume");
    let claim = str_of(
        &volume["persistentVolumeClaim"]["claimName"],
        "the volume's claim",
    );
    let pvc = docs
        .iter()
        .find(|d| {
            d["kind"].as_str() == Some("PersistentVolumeClaim")
                && d["metadata"]["name"].as_str() == Some(claim)
        })
        .expect("the claim is in the manifest");
    let modes: Vec<&str> = pvc["spec"]["accessModes"]
        .as_vec()
        .expect("accessModes")
        .iter()
        .map(|m| str_of(m, "access mode"))
        .collect();
    assert_eq!(modes, ["ReadWriteMany"], "every pod writes into the claim");
    // The pod checks its own shard's file, by the name the harness gives it.
    assert!(
        script.contains(&format!(
            "{results}/*.shard-$((JOB_COMPLETION_INDEX + 1))-of-$SHARD_COUNT.jsonl"
        )),
        "{script}"
    );
}
