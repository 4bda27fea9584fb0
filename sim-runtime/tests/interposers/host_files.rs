//! The host's CA bundle on every node (fs/host.rs): read-only, the same
//! bytes for every node and seed, served where the node's disk has no such
//! name, outside the disk's crash model and the fingerprint, and pinned by
//! `SIM_CA_BUNDLE`.
//!
//! Without host files each test fails: a node's disk starts empty, so
//! `/etc/ssl/certs/ca-certificates.crt` is not found there.

use sim_runtime::sim;
use std::fs;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

fn rt(seed: u64) -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .sim_seed(seed)
        .build()
        .unwrap()
}

/// What the process serves: `$SIM_CA_BUNDLE`, `$SSL_CERT_FILE`, or the
/// first of openssl-probe's files the host has.
fn expected() -> Option<Vec<u8>> {
    let pinned = ["SIM_CA_BUNDLE", "SSL_CERT_FILE"]
        .iter()
        .find_map(std::env::var_os);
    let candidates = pinned.into_iter().map(Into::into).chain(
        [
            BUNDLE,
            "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/ca-bundle.pem",
            "/etc/pki/tls/cacert.pem",
            "/etc/ssl/cert.pem",
            "/opt/etc/ssl/certs/ca-certificates.crt",
            "/etc/ssl/certs/cacert.pem",
        ]
        .map(std::path::PathBuf::from),
    );
    let found: Vec<std::path::PathBuf> = candidates.collect();
    found.iter().find_map(|p| fs::read(p).ok())
}

/// What a node sees of the host files: the bundle's bytes, its stat, and
/// the listings of its directories.
fn look() -> (Vec<u8>, (u64, u64, u32, u64), Vec<String>) {
    let bytes = fs::read(BUNDLE).expect("the host's bundle is served on a node");
    let m = fs::metadata(BUNDLE).unwrap();
    let names = fs::read_dir("/etc/ssl/certs")
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    (bytes, (m.dev(), m.ino(), m.mode(), m.len()), names)
}

#[test]
fn every_node_and_seed_reads_the_same_bundle_and_it_is_read_only() {
    let Some(want) = expected() else {
        eprintln!("this host has no CA bundle: nothing is served (checked by the pinned test)");
        return;
    };
    let mut seen = Vec::new();
    for seed in [1, 2] {
        seen.push(rt(seed).block_on(async {
            let on_main = look();
            let other = sim::node("other").build();
            let on_other = sim::spawn_on(other, async { look() }).await.unwrap();
            assert_eq!(on_main, on_other, "every node sees the same host files");

            // Read-only: Linux's answers on a read-only file system.
            let e = |r: std::io::Result<()>| r.unwrap_err().raw_os_error();
            assert_eq!(e(fs::write(BUNDLE, b"x")), Some(libc::EROFS));
            assert_eq!(e(fs::remove_file(BUNDLE)), Some(libc::EROFS));
            assert_eq!(
                e(fs::write("/etc/ssl/certs/mine.pem", b"x")),
                Some(libc::EROFS)
            );
            assert_eq!(e(fs::create_dir("/etc/ssl/certs/sub")), Some(libc::EROFS));
            // The certificates' directory exists, as on Linux; `/etc`
            // itself is the node's, so a service makes its own there.
            assert_eq!(e(fs::create_dir("/etc/ssl/certs")), Some(libc::EEXIST));
            fs::create_dir_all("/etc/ssl/certs").unwrap();
            fs::create_dir_all("/etc/myapp").unwrap();
            fs::write("/etc/myapp/config", b"x").unwrap();
            assert_eq!(fs::read("/etc/myapp/config").unwrap(), b"x");
            assert_eq!(
                fs::metadata("/etc/ssl/certs/none.pem").unwrap_err().kind(),
                ErrorKind::NotFound
            );
            // One open file description, one offset; pread leaves it.
            let mut f = fs::File::open(BUNDLE).unwrap();
            let mut head = [0u8; 10];
            f.read_exact(&mut head).unwrap();
            assert_eq!(f.stream_position().unwrap(), 10);
            assert_eq!(&head, &on_main.0[..10]);
            assert_eq!(f.seek(SeekFrom::End(0)).unwrap(), on_main.0.len() as u64);
            on_main
        }));
    }
    let (bytes, (_, ino, mode, len), names) = &seen[0];
    assert_eq!(bytes, &want, "the bundle is the host's, byte for byte");
    assert_eq!(
        (*ino, *mode, *len),
        (5, libc::S_IFREG | 0o444, want.len() as u64)
    );
    assert_eq!(names, &["ca-certificates.crt"].map(String::from));
    assert_eq!(seen[0], seen[1], "every seed sees the same host files");
}

#[test]
fn a_node_s_own_file_comes_first_and_the_host_files_survive_its_crash() {
    if expected().is_none() {
        return;
    }
    rt(3).block_on(async {
        let node = sim::node("n").build();
        sim::spawn_on(node, async {
            // tokio::fs makes the names on the node's own disk.
            sim_runtime::fs::create_dir_all("/etc/ssl/certs")
                .await
                .unwrap();
            sim_runtime::fs::write(BUNDLE, b"the node's own")
                .await
                .unwrap();
            assert_eq!(fs::read(BUNDLE).unwrap(), b"the node's own");
            let names: Vec<_> = fs::read_dir("/etc/ssl/certs").unwrap().collect();
            assert_eq!(names.len(), 1, "the node's directory, not the host's");
        })
        .await
        .unwrap();
        // Nothing was made durable: a crash loses the node's file, and the
        // host's (never on the node's disk) is there again.
        sim::crash(node);
        sim::restart(node);
        let back = sim::spawn_on(node, async { fs::read(BUNDLE).unwrap() })
            .await
            .unwrap();
        assert_eq!(Some(back), expected());
    });
}

/// The fingerprint of a run that stats, lists and reads the host files
/// (`read: true`) or does not: reading them makes no decision.
fn fingerprint(seed: u64, read: bool) -> u64 {
    rt(seed).block_on(async move {
        let a = sim::node("a").build();
        let t = sim::spawn_on(a, async move {
            tokio_like_work().await;
            if read {
                let _ = look();
                let _ = fs::read(BUNDLE);
                let _ = Path::new("/etc/ssl/certs").exists();
            }
            tokio_like_work().await;
        });
        t.await.unwrap();
        sim::fingerprint()
    })
}

async fn tokio_like_work() {
    for _ in 0..3 {
        sim_runtime::task::yield_now().await;
        sim_runtime::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

#[test]
fn reading_host_files_is_outside_the_fingerprint() {
    for seed in 0..4 {
        assert_eq!(
            fingerprint(seed, true),
            fingerprint(seed, false),
            "seed {seed}"
        );
    }
}

/// `SIM_CA_BUNDLE` pins the bundle: a child process of this binary, with
/// the variable set to a bundle of our own, serves exactly it.
#[test]
fn sim_ca_bundle_pins_the_served_bundle() {
    const MINE: &[u8] = b"-----BEGIN CERTIFICATE-----\nbWluZQ==\n-----END CERTIFICATE-----\n";
    if std::env::var_os("SIM_TEST_PINNED").is_some() {
        let read = rt(9).block_on(async { fs::read(BUNDLE).unwrap() });
        assert_eq!(read, MINE);
        return;
    }
    let dir = std::env::temp_dir().join(format!("sim-ca-bundle-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let pin = dir.join("mine.pem");
    fs::write(&pin, MINE).unwrap();
    let child = |pinned: &Path| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "host_files::sim_ca_bundle_pins_the_served_bundle",
                "--exact",
            ])
            .env("SIM_TEST_PINNED", "1")
            .env("SIM_CA_BUNDLE", pinned)
            .output()
            .unwrap()
    };
    let ok = child(&pin);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // A pin that cannot be read fails the simulation, naming the variable.
    let bad = child(&dir.join("missing.pem"));
    assert!(!bad.status.success());
    let text =
        String::from_utf8_lossy(&bad.stdout).into_owned() + &String::from_utf8_lossy(&bad.stderr);
    assert!(text.contains("SIM_CA_BUNDLE="), "{text}");
    let _ = fs::remove_dir_all(&dir);
}
