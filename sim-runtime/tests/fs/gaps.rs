//! `tokio::fs` behaviours that Tokio's own tests (`cargo xtask compat`)
//! found missing from the simulated disk. The tests that do not depend on
//! who runs them pass in both modes: against real Tokio on a real temporary
//! directory, and against the simulated disk.

use sim_runtime::io::AsyncWriteExt;
use std::io::IoSlice;
use std::path::PathBuf;

fn rt() -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A temporary directory made through `tempfile` (under simulation, on
/// the node's simulated disk, as every `std::fs` call there).
fn with_dir<Fut: std::future::Future<Output = ()>>(test: impl FnOnce(PathBuf) -> Fut) {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        test(dir.path().to_path_buf()).await;
    });
}

/// Tokio's `File` writes all the slices of a vectored write at once (up to
/// `max_buf_size`), not only the first.
#[test]
fn write_vectored_writes_every_slice() {
    with_dir(|dir| async move {
        let path = dir.join("v");
        let mut file = sim_runtime::fs::File::create(&path).await.unwrap();
        assert!(sim_runtime::io::AsyncWrite::is_write_vectored(&file));
        let n = file
            .write_vectored(&[IoSlice::new(b"hello "), IoSlice::new(b"world")])
            .await
            .unwrap();
        assert_eq!(n, 11);
        file.flush().await.unwrap();
        assert_eq!(sim_runtime::fs::read(&path).await.unwrap(), b"hello world");

        // The cap counts across slices.
        let mut file = sim_runtime::fs::File::create(&path).await.unwrap();
        file.set_max_buf_size(8);
        let n = file
            .write_vectored(&[IoSlice::new(b"hello "), IoSlice::new(b"world")])
            .await
            .unwrap();
        assert_eq!(n, 8);
        file.flush().await.unwrap();
        assert_eq!(sim_runtime::fs::read(&path).await.unwrap(), b"hello wo");
    });
}

/// A lookup through a directory without its search (`x`) bit fails with
/// `PermissionDenied` (`EACCES`), and `try_exists` reports the error rather
/// than `false`. Simulation only: a real process running as root passes
/// (`CAP_DAC_READ_SEARCH`); the simulated process is never root.
#[cfg(simulation)]
#[test]
fn a_directory_without_search_permission_hides_its_entries() {
    use std::os::unix::fs::PermissionsExt;
    with_dir(|dir| async move {
        let d = dir.join("d");
        sim_runtime::fs::create_dir(&d).await.unwrap();
        sim_runtime::fs::write(d.join("f"), b"x").await.unwrap();
        sim_runtime::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o644))
            .await
            .unwrap();
        let e = sim_runtime::fs::try_exists(d.join("f")).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(e.raw_os_error(), Some(13));
        let e = sim_runtime::fs::read(d.join("f")).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        // The directory itself is still there to see, and to fix.
        assert!(sim_runtime::fs::try_exists(&d).await.unwrap());
        sim_runtime::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755))
            .await
            .unwrap();
        assert_eq!(sim_runtime::fs::read(d.join("f")).await.unwrap(), b"x");
    });
}

/// Tokio refuses a zero buffer cap with this panic.
#[test]
fn a_zero_max_buf_size_panics_as_in_tokio() {
    with_dir(|dir| async move {
        let mut file = sim_runtime::fs::File::create(dir.join("z")).await.unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| file.set_max_buf_size(0)));
        let payload = r.expect_err("set_max_buf_size(0) must panic");
        let text = payload.downcast_ref::<&str>().copied().unwrap_or_default();
        assert_eq!(text, "`max_buf_size` must be greater than 0");
    });
}

/// A `File`'s `Debug` starts as Tokio's: the std file and its descriptor.
#[test]
fn debug_shows_the_std_file_and_its_descriptor() {
    with_dir(|dir| async move {
        let file = sim_runtime::fs::File::create(dir.join("d")).await.unwrap();
        let text = format!("{file:?}");
        assert!(
            text.starts_with("tokio::fs::File { std: File { fd: "),
            "{text}"
        );
    });
}

/// Once its runtime has shut down, a file operation fails before it starts,
/// as Tokio's does (its blocking pool is gone): kind `Other`, "background
/// task failed". From Tokio's `rt_handle_block_on::fs_shutdown_before_started`.
#[test]
fn file_operations_after_the_runtime_shut_down_fail_before_they_start() {
    let rt = rt();
    let handle = rt.handle().clone();
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let check = |err: std::io::Error| {
        assert_eq!(err.kind(), std::io::ErrorKind::Other, "{err}");
        assert_eq!(
            err.get_ref().expect("an inner error").to_string(),
            "background task failed"
        );
    };
    use sim_runtime::fs;
    check(
        handle
            .block_on(fs::read_to_string("Cargo.toml"))
            .unwrap_err(),
    );
    check(handle.block_on(fs::metadata("Cargo.toml")).unwrap_err());
    check(handle.block_on(fs::File::open("Cargo.toml")).unwrap_err());
}
