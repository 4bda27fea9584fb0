//! Tape files: a failing seed's draws, written next to its trace
//! (`target/sim/<test>/<seed>.tape`), and `SIM_TAPE=path`, which runs the
//! test once from such a file instead of from seeds.
//!
//! A tape holds every random draw of one run in order (sim-runtime's
//! tape.rs); replayed, the run takes every decision the seeded run took,
//! bit for bit. So it is tied to the code that drew it: the file names the
//! build (commit and dirty flag, rustc, target, RUSTFLAGS) and the test,
//! and a replay on another build or another test is refused with what to
//! do, never run as if it were the same run.
//!
//! The format: text header lines (`sim-tape 1`, `test:`, `seed:`,
//! `build:`, `bytes:`), an empty line, then the draws' raw bytes.

use std::path::{Path, PathBuf};

const MAGIC: &str = "sim-tape 1";

/// The variable that names a tape to replay.
pub(crate) const VAR: &str = "SIM_TAPE";

/// A tape read back from its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tape {
    pub path: PathBuf,
    pub test: String,
    pub seed: u64,
    pub build: String,
    pub bytes: Vec<u8>,
}

/// The file's bytes for a tape of `test`'s `seed`, recorded by `build`.
pub(crate) fn encode(test: &str, seed: u64, build: &str, draws: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{MAGIC}\ntest: {test}\nseed: {seed}\nbuild: {build}\nbytes: {}\n\n",
        draws.len()
    )
    .into_bytes();
    out.extend_from_slice(draws);
    out
}

/// Reads a tape file; the error says what is wrong with it.
pub(crate) fn decode(path: &Path, file: &[u8]) -> Result<Tape, String> {
    let split = file
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or("it has no header (is it a tape file?)")?;
    let header = std::str::from_utf8(&file[..split]).map_err(|_| "its header is not text")?;
    let draws = &file[split + 2..];
    let mut lines = header.lines();
    if lines.next() != Some(MAGIC) {
        return Err(format!(
            "it does not start with `{MAGIC}` (is it a tape file?)"
        ));
    }
    let mut field = |name: &str| -> Result<String, String> {
        let line = lines
            .next()
            .ok_or_else(|| format!("its header has no `{name}:` line"))?;
        line.strip_prefix(&format!("{name}: "))
            .map(str::to_string)
            .ok_or_else(|| format!("its header has `{line}` where `{name}:` belongs"))
    };
    let test = field("test")?;
    let seed = field("seed")?
        .parse()
        .map_err(|_| "its `seed:` is not a number")?;
    let build = field("build")?;
    let len: usize = field("bytes")?
        .parse()
        .map_err(|_| "its `bytes:` is not a number")?;
    if len != draws.len() {
        return Err(format!(
            "it says {len} bytes of draws but holds {} (cut short?)",
            draws.len()
        ));
    }
    Ok(Tape {
        path: path.to_path_buf(),
        test,
        seed,
        build,
        bytes: draws.to_vec(),
    })
}

/// The tape `SIM_TAPE` names, checked against this test and this build;
/// panics with what to do when it cannot be replayed here.
pub(crate) fn from_env(test: &str) -> Option<Tape> {
    let path = PathBuf::from(std::env::var_os(VAR).filter(|v| !v.is_empty())?);
    let file = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "sim: {VAR}={} cannot be read: {e}. Name a tape file a failing run wrote \
             (target/sim/<test>/<seed>.tape).",
            path.display()
        )
    });
    let tape = decode(&path, &file).unwrap_or_else(|why| {
        panic!(
            "sim: {VAR}={} is not a tape this version can read: {why}.",
            path.display()
        )
    });
    if tape.test != test {
        panic!(
            "sim: {VAR}={} was recorded by test `{}`, not `{test}`: run that test with it \
             (cargo test ... -- {} --exact).",
            path.display(),
            tape.test,
            tape.test
        );
    }
    let here = super::replay::identity();
    if tape.build != here {
        panic!(
            "sim: {VAR}={} was recorded by another build, so it would not replay the same run:\n  \
             recorded by: {}\n  this build:  {here}\nA tape is a list of draws, and which \
             decision each draw makes depends on the code. Replay it on the build that recorded \
             it (that commit, with the same changes, compiler, target and RUSTFLAGS), or run its \
             seed again on this one (SIM_SEED={}).",
            path.display(),
            tape.build,
            tape.seed
        );
    }
    Some(tape)
}

/// Writes `draws` as the tape of `test`'s `seed` into `dir`; returns its
/// path, or why it could not be written.
pub(crate) fn write(dir: &Path, test: &str, seed: u64, draws: &[u8]) -> Result<PathBuf, String> {
    write_as(&dir.join(format!("{seed}.tape")), test, seed, draws)
}

/// Writes `draws` as the tape of `test`'s `seed` at `path`.
pub(crate) fn write_as(
    path: &Path,
    test: &str,
    seed: u64,
    draws: &[u8],
) -> Result<PathBuf, String> {
    let bytes = encode(test, seed, &super::replay::identity(), draws);
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::write(path, bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tape_reads_back_as_written() {
        let file = encode("t::x", 42, "commit abc · rustc", &[0, 1, 2, 10, 10, 255]);
        let tape = decode(Path::new("x.tape"), &file).unwrap();
        assert_eq!(tape.test, "t::x");
        assert_eq!(tape.seed, 42);
        assert_eq!(tape.build, "commit abc · rustc");
        assert_eq!(tape.bytes, vec![0, 1, 2, 10, 10, 255]);
    }

    #[test]
    fn a_damaged_tape_says_what_is_wrong() {
        let p = Path::new("x.tape");
        assert!(decode(p, b"hello").unwrap_err().contains("no header"));
        assert!(decode(p, b"sim-tape 9\n\n")
            .unwrap_err()
            .contains("does not start"));
        let mut file = encode("t", 1, "b", &[1, 2, 3]);
        file.pop();
        assert!(decode(p, &file).unwrap_err().contains("cut short"));
        let file = b"sim-tape 1\ntest: t\nseed: x\nbuild: b\nbytes: 0\n\n";
        assert!(decode(p, file)
            .unwrap_err()
            .contains("`seed:` is not a number"));
    }
}
