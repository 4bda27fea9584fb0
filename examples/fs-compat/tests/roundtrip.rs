//! On real Tokio, a real temporary directory and real loopback sockets (a
//! plain `cargo test`). Under `cargo sim test` these `#[tokio::test]`s run
//! in a simulation instead, on the main node's simulated disk and loopback:
//! the same library code, unchanged.

use fs_compat::{client, manifest, server};
use fs_err::tokio as fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A tree with a file, a directory, a symlink and a private file.
async fn tree(root: &Path) {
    fs::create_dir_all(root.join("a/empty")).await.unwrap();
    fs::write(root.join("a/b.txt"), b"hello").await.unwrap();
    fs::write(root.join("secret"), b"12").await.unwrap();
    fs::set_permissions(root.join("secret"), std::fs::Permissions::from_mode(0o600))
        .await
        .unwrap();
    fs::symlink("a/b.txt", root.join("link")).await.unwrap();
}

const TREE: &str = "d 755 a 2 entries\n\
                    f 644 a/b.txt 5\n\
                    d 755 a/empty 0 entries\n\
                    l 777 link -> a/b.txt\n\
                    f 600 secret 2\n";

/// A self-signed certificate for `files` and its key, as PEM.
fn self_signed() -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec!["files".to_string()]).unwrap();
    (c.cert.pem(), c.key_pair.serialize_pem())
}

#[tokio::test]
async fn a_manifest_reads_std_types_through_fs_err() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path()).await;
    let m = manifest::manifest(dir.path()).await.unwrap();
    assert_eq!(manifest::render(&m), TREE);

    // fs-err names the path in its errors, over Tokio's own.
    let missing = dir.path().join("missing");
    let e = manifest::manifest(&missing).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains(&*missing.to_string_lossy()), "{e}");
    let e = manifest::manifest(dir.path().join("secret"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotADirectory, "{e}");
}

#[tokio::test]
async fn the_manifest_over_tls_verifies_against_the_one_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let srv = dir.path().join("srv");
    tree(&srv).await;
    let (cert, key) = self_signed();
    fs::write(dir.path().join("cert.pem"), &cert).await.unwrap();
    fs::write(dir.path().join("key.pem"), &key).await.unwrap();

    let tls = server::Tls::new(dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let handle = server::Handle::new();
    let serving = tokio::spawn(server::serve(
        "127.0.0.1:0".parse().unwrap(),
        tls,
        srv,
        handle.clone(),
    ));
    let addr = handle.listening().await.expect("the server listens");

    let (status, body) = client::get(addr, "files", cert.as_bytes(), "/manifest")
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (200, TREE));

    // Another certificate as the only root (same names, another key): the
    // handshake fails.
    let (other, _) = self_signed();
    let e = client::get(addr, "files", other.as_bytes(), "/manifest")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidData, "{e}");
    assert!(e.to_string().contains("invalid peer certificate"), "{e}");

    handle.shutdown();
    serving.await.unwrap().unwrap();

    // A missing key is an error naming its file (read through fs-err).
    let tls = server::Tls::new(dir.path().join("cert.pem"), dir.path().join("none.pem"));
    let e = server::serve(
        "127.0.0.1:0".parse().unwrap(),
        tls,
        dir.path().into(),
        server::Handle::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("none.pem"), "{e}");
}
