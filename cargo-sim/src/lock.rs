//! The user's `Cargo.lock` is never changed by a simulated run.
//!
//! The patch makes cargo write a lock in which `tokio` is the simulation.
//! That lock is kept beside the simulated build (`<target>/sim-graph/
//! Cargo.lock`, with a copy of the user's lock it was made from) and put in
//! place only while cargo runs; afterwards the user's bytes are written back
//! (or the file removed, if there was none). A later run reuses the kept
//! lock while the user's is unchanged, so the graph resolves once.

use std::path::{Path, PathBuf};

pub struct Guard {
    lock: PathBuf,
    /// The user's lock as it was, or `None` if there was none.
    original: Option<Vec<u8>>,
    sim_dir: Option<PathBuf>,
    restored: bool,
}

impl Guard {
    /// Reads the user's lock before anything may write it.
    pub fn take(workspace_root: &Path) -> Result<Guard, String> {
        let lock = workspace_root.join("Cargo.lock");
        let original = match std::fs::read(&lock) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {}: {e}", lock.display())),
        };
        Ok(Guard {
            lock,
            original,
            sim_dir: None,
            restored: false,
        })
    }

    /// Puts the kept simulated lock in place if it was made from the lock
    /// the user has now; returns whether it was.
    pub fn use_sim_lock(&mut self, sim_dir: &Path) -> Result<bool, String> {
        self.sim_dir = Some(sim_dir.to_path_buf());
        let (kept, base) = paths(sim_dir);
        let made_from = std::fs::read(&base).ok();
        let current =
            kept.exists() && made_from.as_deref() == self.original.as_deref().or(Some(&[]));
        if current {
            std::fs::copy(&kept, &self.lock)
                .map_err(|e| format!("cannot put the simulated lock in place: {e}"))?;
        }
        Ok(current)
    }

    /// Keeps the simulated lock and writes the user's back.
    pub fn restore(mut self) -> Result<(), String> {
        self.restored = true;
        self.put_back()
    }

    fn put_back(&mut self) -> Result<(), String> {
        if let Some(dir) = &self.sim_dir {
            let (kept, base) = paths(dir);
            if self.lock.exists() {
                let _ = std::fs::create_dir_all(dir);
                let _ = std::fs::copy(&self.lock, &kept);
                let _ = std::fs::write(&base, self.original.as_deref().unwrap_or(&[]));
            }
        }
        match &self.original {
            Some(bytes) => {
                if std::fs::read(&self.lock).ok().as_deref() != Some(bytes.as_slice()) {
                    std::fs::write(&self.lock, bytes).map_err(|e| {
                        format!(
                            "cannot restore {} (your lock is in {}): {e}",
                            self.lock.display(),
                            self.sim_dir.as_deref().unwrap_or(Path::new("?")).display()
                        )
                    })?;
                }
            }
            None => {
                let _ = std::fs::remove_file(&self.lock);
            }
        }
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.restored {
            if let Err(e) = self.put_back() {
                eprintln!("cargo-sim: {e}");
            }
        }
    }
}

/// Whether the lock file at `path` still locks the registry's `tokio` (the
/// patch is then unused), or says the patch is unused.
pub fn names_registry_tokio(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split("[[").any(|entry| {
        let is_tokio = entry.lines().any(|l| l.trim() == "name = \"tokio\"");
        let registry = entry.lines().any(|l| {
            l.trim().starts_with("source = \"registry+")
                || l.trim().starts_with("source = \"sparse+")
        });
        let unused = entry.starts_with("patch.unused]]");
        is_tokio && (registry || unused)
    })
}

fn paths(sim_dir: &Path) -> (PathBuf, PathBuf) {
    (sim_dir.join("Cargo.lock"), sim_dir.join("Cargo.lock.user"))
}

/// Runs `f` (which waits for a child cargo) with SIGINT ignored: a Ctrl-C
/// stops cargo, and this process lives on to restore the user's lock.
pub fn without_sigint<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: `signal` with `SIG_IGN` installs no handler code; the old
    // disposition is put back below on this same thread.
    let old = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let r = f();
    // SAFETY: as above; `old` is the disposition `signal` returned.
    unsafe { libc::signal(libc::SIGINT, old) };
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory with a `sim/` inside, removed when dropped.
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("cargo-sim-lock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sim")).unwrap();
        Scratch(d)
    }

    #[test]
    fn the_users_lock_comes_back_byte_for_byte_and_the_sim_lock_is_kept() {
        let d = dir("keep");
        let lock = d.join("Cargo.lock");
        std::fs::write(&lock, b"user v1\n").unwrap();
        let mut g = Guard::take(&d).unwrap();
        assert!(!g.use_sim_lock(&d.join("sim")).unwrap(), "nothing kept yet");
        std::fs::write(&lock, b"patched\n").unwrap(); // what cargo writes
        g.restore().unwrap();
        assert_eq!(std::fs::read(&lock).unwrap(), b"user v1\n");
        // The next run reuses the patched lock while the user's is unchanged.
        let mut g = Guard::take(&d).unwrap();
        assert!(g.use_sim_lock(&d.join("sim")).unwrap());
        assert_eq!(std::fs::read(&lock).unwrap(), b"patched\n");
        drop(g); // dropped without `restore` (an error path): still restored
        assert_eq!(std::fs::read(&lock).unwrap(), b"user v1\n");
        // A changed user lock makes the kept one stale.
        std::fs::write(&lock, b"user v2\n").unwrap();
        let mut g = Guard::take(&d).unwrap();
        assert!(!g.use_sim_lock(&d.join("sim")).unwrap());
        g.restore().unwrap();
        assert_eq!(std::fs::read(&lock).unwrap(), b"user v2\n");
    }

    #[test]
    fn a_lock_with_the_registrys_tokio_or_an_unused_patch_is_caught() {
        let d = dir("names");
        let lock = d.join("Cargo.lock");
        let shim = "[[package]]\nname = \"tokio\"\nversion = \"1.54.1001\"\n\n\
                    [[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n\n\
                    [[package]]\nname = \"tokio-util\"\nversion = \"0.7.1\"\n\
                    source = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        std::fs::write(&lock, shim).unwrap();
        assert!(
            !names_registry_tokio(&lock),
            "the shim and a path tokio are fine"
        );
        let registry = "[[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n\
                        source = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        std::fs::write(&lock, registry).unwrap();
        assert!(names_registry_tokio(&lock));
        let unused =
            format!("{shim}\n[[patch.unused]]\nname = \"tokio\"\nversion = \"1.54.1001\"\n");
        std::fs::write(&lock, unused).unwrap();
        assert!(names_registry_tokio(&lock));
    }

    #[test]
    fn a_lock_that_did_not_exist_does_not_exist_afterwards() {
        let d = dir("none");
        let g = Guard::take(&d).unwrap();
        std::fs::write(d.join("Cargo.lock"), b"made by cargo\n").unwrap();
        g.restore().unwrap();
        assert!(!d.join("Cargo.lock").exists());
    }
}
