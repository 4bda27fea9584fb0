//! What simulated code reaches through std and libc rather than through
//! Tokio, and what the simulation makes of it:
//!
//! - a directory made through `std::fs` (`tempfile::tempdir()`) is usable
//!   with `tokio::fs` (in production trivially; under simulation because
//!   `std::fs` on a node is its simulated disk: std_fs.rs);
//! - a signal a process sends itself (`kill(getpid(), sig)`, `raise(sig)`)
//!   is, under simulation, the calling node's signal, never the OS's;
//! - one open file passes between `tokio::fs::File` and `std::fs::File`
//!   (`into_std`, `from_std`, raw descriptors), under simulation through the
//!   node's simulated descriptors.
//!
//! Without the interposers (`simulation::intercept`, `intercept_fs`) the
//! directory would be missing on the simulated disk (`NotFound`), and the
//! signals would reach the OS and end the test process.

use std::path::PathBuf;

fn rt() -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The pattern of many tests: a temporary directory from `tempfile`, and
/// only `tokio::fs` inside it.
#[test]
fn a_tempdir_is_usable_with_tokio_fs() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        sim_runtime::fs::write(&file, b"hello").await.unwrap();
        assert_eq!(sim_runtime::fs::read(&file).await.unwrap(), b"hello");
        let mut entries = sim_runtime::fs::read_dir(dir.path()).await.unwrap();
        let entry = entries.next_entry().await.unwrap().unwrap();
        assert_eq!(entry.file_name(), "a.txt");
        assert!(entries.next_entry().await.unwrap().is_none());
        // The directory is still the real one for std::fs.
        assert!(dir.path().is_dir());
    });
}

/// `std::fs::create_dir_all` makes the missing parents one `mkdir` at a
/// time; the simulated disk gets all of them, with a `mode` as given.
#[test]
fn std_create_dir_all_is_usable_with_tokio_fs() {
    rt().block_on(async {
        let base = tempfile::tempdir().unwrap();
        let deep: PathBuf = base.path().join("x").join("y");
        std::fs::create_dir_all(&deep).unwrap();
        sim_runtime::fs::write(deep.join("f"), b"1").await.unwrap();
        let meta = sim_runtime::fs::metadata(base.path().join("x"))
            .await
            .unwrap();
        assert!(meta.is_dir());
        // `create_dir` on an existing directory fails as on a real disk.
        let e = sim_runtime::fs::create_dir(&deep).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    });
}

#[cfg(all(
    simulation,
    target_os = "linux",
    target_arch = "x86_64",
    target_env = "gnu"
))]
mod simulation_only {
    use super::rt;
    use sim_runtime::signal::unix::{signal, SignalKind};
    use sim_runtime::sim;
    use sim_runtime::time::{sleep, Duration};
    use std::path::Path;

    // libc's, through std's link to it (the interposers answer them).
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
        fn raise(sig: i32) -> i32;
        fn getpid() -> i32;
    }

    const SIGHUP: i32 = 1;
    const SIGUSR1: i32 = 10;
    const SIGUSR2: i32 = 12;
    const SIGTERM: i32 = 15;
    const EINVAL: i32 = 22;

    fn kill_self(sig: i32) -> i32 {
        // SAFETY: kill(2) has no memory preconditions.
        unsafe { kill(getpid(), sig) }
    }

    #[test]
    fn kill_of_the_own_process_reaches_the_nodes_listener() {
        rt().block_on(async {
            let mut usr1 = signal(SignalKind::user_defined1()).unwrap();
            assert_eq!(kill_self(SIGUSR1), 0);
            usr1.recv().await.unwrap();
            // Twice: each delivery is seen once.
            assert_eq!(kill_self(SIGUSR1), 0);
            usr1.recv().await.unwrap();
        });
    }

    /// As with Tokio, whose listeners hear of a signal when its driver next
    /// runs: a listener made right after the call still receives it.
    #[test]
    fn the_delivery_comes_once_the_caller_yields() {
        rt().block_on(async {
            drop(signal(SignalKind::user_defined2()).unwrap());
            assert_eq!(kill_self(SIGUSR2), 0);
            let mut usr2 = signal(SignalKind::user_defined2()).unwrap();
            usr2.recv().await.unwrap();
        });
    }

    #[test]
    fn raise_on_a_node_without_a_handler_kills_the_node_only() {
        rt().block_on(async {
            let a = sim::node("a").build();
            let h = sim::spawn_on(a, async {
                // SAFETY: raise(3) has no memory preconditions.
                assert_eq!(unsafe { raise(SIGTERM) }, 0);
                std::future::pending::<()>().await;
            });
            assert!(h.await.unwrap_err().is_cancelled());
            assert!(!sim::is_alive(a));

            // A node with a handler hears it; the main node is untouched.
            let b = sim::node("b").build();
            let h = sim::spawn_on(b, async {
                let mut hup = signal(SignalKind::hangup()).unwrap();
                assert_eq!(kill_self(SIGHUP), 0);
                hup.recv().await.unwrap();
                "handled"
            });
            assert_eq!(h.await.unwrap(), "handled");
            assert!(sim::is_alive(b));
        });
    }

    #[test]
    fn signal_zero_and_bad_numbers_are_answered_in_place() {
        rt().block_on(async {
            assert_eq!(kill_self(0), 0);
            assert_eq!(kill_self(65), -1);
            assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(EINVAL));
            // SAFETY: raise(3) has no memory preconditions.
            assert_eq!(unsafe { raise(-1) }, -1);
            sleep(Duration::from_millis(1)).await;
        });
    }

    /// The main node runs the test: a terminating signal it does not handle
    /// fails the run with that reason (the process would have died).
    #[test]
    fn an_unhandled_terminating_signal_on_the_main_node_fails_the_run() {
        let r = std::thread::spawn(|| {
            std::panic::catch_unwind(|| {
                rt().block_on(async {
                    assert_eq!(kill_self(SIGTERM), 0);
                    sleep(Duration::from_millis(1)).await;
                })
            })
        })
        .join()
        .unwrap();
        let text = crate::panic_text(r.expect_err("the run must fail"));
        assert!(
            text.contains("signal 15 reached the main node"),
            "unexpected failure: {text}"
        );
    }

    /// `std::fs` on a node is its simulated disk: a relative path resolves
    /// at the node's root, as `tokio::fs`'s does, and neither a directory
    /// made through std nor one made through `tokio::fs` reaches the real
    /// disk.
    #[test]
    fn relative_std_paths_resolve_at_the_nodes_root() {
        rt().block_on(async {
            std::fs::create_dir("rel").unwrap();
            let meta = sim_runtime::fs::metadata(Path::new("/").join("rel"))
                .await
                .unwrap();
            assert!(meta.is_dir());
            assert!(!sim::fs::on_real_disk(|| Path::new("/rel").exists()));

            let base = tempfile::tempdir().unwrap();
            let only_simulated = base.path().join("sim-only");
            sim_runtime::fs::create_dir(&only_simulated).await.unwrap();
            assert!(only_simulated.exists(), "std sees the simulated disk");
            assert!(!sim::fs::on_real_disk(|| base.path().exists()));
        });
    }

    /// One open file passes between `tokio::fs` and `std::fs` both ways,
    /// its cursor with it; a file of the real disk cannot become a
    /// simulated one.
    #[test]
    fn an_open_file_passes_between_tokio_and_std() {
        use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
        use std::io::{Read, Write};
        use std::os::unix::io::{AsRawFd, FromRawFd, IntoRawFd};
        rt().block_on(async {
            let mut file = sim_runtime::fs::File::create("/tmp/f").await.unwrap();
            file.write_all(b"tokio ").await.unwrap();
            let raw = file.as_raw_fd();
            assert!(raw > 0);
            let mut std_file = file.into_std().await;
            std_file.write_all(b"std").unwrap();
            let mut back = sim_runtime::fs::File::from_std(std_file);
            back.write_all(b" tokio").await.unwrap();
            drop(back);
            let mut text = String::new();
            std::fs::File::open("/tmp/f")
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "tokio std tokio");

            let std_file = std::fs::File::open("/tmp/f").unwrap();
            // SAFETY: ownership of the open descriptor passes to the File.
            let mut from_fd = unsafe { sim_runtime::fs::File::from_raw_fd(std_file.into_raw_fd()) };
            let mut head = [0; 5];
            from_fd.read_exact(&mut head).await.unwrap();
            assert_eq!(&head, b"tokio");

            let real = sim::fs::on_real_disk(|| std::fs::File::open("/").unwrap());
            let r = std::panic::catch_unwind(|| sim_runtime::fs::File::from_std(real));
            assert!(r.is_err(), "a real file cannot become a simulated one");
        });
    }
}
