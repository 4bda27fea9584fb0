//! `cargo xtask merge-results <dir>...`: the shards of a sweep, run on
//! many machines with `SIM_SHARD=k/n SIM_RESULTS=<dir>`, merged into one
//! report: per test, the seeds run, the first failure (lowest seed) with
//! its replay command, every failing seed, and the coverage of the
//! `sometimes!`/`reachable!` sites across shards. It fails when a seed
//! failed, or when the shards overlap or leave planned seeds unrun (it
//! says which, and the `SIM_SHARD` to rerun).

pub mod model;

use crate::cmd::write_file;
use std::path::{Path, PathBuf};

const USAGE: &str = "\
usage: cargo xtask merge-results [--out PATH] <dir or file.jsonl>...

  Reads every *.jsonl file that SIM_RESULTS=<dir> left in each directory
  (the shards of one or more tests, from one machine or many) and prints
  one report; --out also writes it to PATH. Exits non-zero when a seed
  failed or a shard is missing or overlaps another.
";

pub fn main(args: &[String]) -> crate::Result<()> {
    let mut out = None;
    let mut inputs = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => {
                let p = it
                    .next()
                    .ok_or_else(|| crate::Error::Usage("--out needs a path".into()))?;
                out = Some(PathBuf::from(p));
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(());
            }
            s if s.starts_with("--") => {
                return Err(crate::Error::Usage(format!(
                    "merge-results: unknown option `{s}`\n\n{USAGE}"
                )))
            }
            s => inputs.push(PathBuf::from(s)),
        }
    }
    if inputs.is_empty() {
        return Err(crate::Error::Usage(format!(
            "merge-results: name at least one results directory\n\n{USAGE}"
        )));
    }
    let files = jsonl_files(&inputs)?;
    if files.is_empty() {
        return Err(crate::Error::Failed(format!(
            "merge-results: no *.jsonl file in {}: run the tests with SIM_RESULTS=<dir> first",
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut merged = model::Merged::default();
    for f in &files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| crate::Error::Failed(format!("{}: {e}", f.display())))?;
        model::add_file(&mut merged, &f.display().to_string(), &text)
            .map_err(crate::Error::Failed)?;
    }
    model::check(&mut merged);
    let report = model::render(&merged);
    print!("{report}");
    if let Some(path) = out {
        write_file(&path, &report).map_err(crate::Error::Failed)?;
    }
    if merged.ok() {
        Ok(())
    } else {
        Err(crate::Error::Failed(
            "merge-results: the merged sweep failed (failing seeds, or shards missing or \
             overlapping: see above)"
                .into(),
        ))
    }
}

/// The `.jsonl` files named, or inside the directories named, in name
/// order (the report does not depend on the order of the arguments).
fn jsonl_files(inputs: &[PathBuf]) -> crate::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let entries = std::fs::read_dir(p).map_err(crate::cmd::io_context(p))?;
            for e in entries {
                let path = e.map_err(crate::cmd::io_context(p))?.path();
                if is_jsonl(&path) {
                    files.push(path);
                }
            }
        } else if is_jsonl(p) {
            files.push(p.clone());
        } else {
            return Err(crate::Error::Failed(format!(
                "merge-results: {} is neither a directory nor a .jsonl file",
                p.display()
            )));
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn is_jsonl(p: &Path) -> bool {
    p.is_file() && p.extension().is_some_and(|e| e == "jsonl")
}

#[cfg(test)]
mod tests;
