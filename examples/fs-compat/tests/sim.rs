//! The file server simulated, dependencies and all: `cargo sim test -p
//! fs-compat`. fs-err's `tokio` module and axum-server's rustls acceptor
//! run on the simulated Tokio: the server node reads its certificate and
//! lists its tree on its own simulated disk (std's `Metadata` and
//! `FileType`, made from it), and the TLS bytes cross the simulated
//! network to a client that trusts only that certificate. Under the older
//! `--cfg simulation` alone this crate's `tokio` is real Tokio, which has no
//! runtime inside a simulation: the file is empty then.
#![cfg(sim_graph)]

use fs_compat::{client, server};
use fs_err::tokio as fs;
use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

const ADDR: &str = "files:8443";

/// Writes `bytes` at `path` durably: the file synced, then each directory
/// up to the root (a new name is durable only once its directory is).
async fn durable_write(path: &str, bytes: &[u8]) {
    let path = Path::new(path);
    for dir in path
        .ancestors()
        .skip(1)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        if fs::metadata(dir).await.is_err() {
            fs::create_dir(dir).await.unwrap();
        }
    }
    fs::write(path, bytes).await.unwrap();
    fs::File::open(path)
        .await
        .unwrap()
        .sync_all()
        .await
        .unwrap();
    for dir in path.ancestors().skip(1) {
        fs::File::open(dir).await.unwrap().sync_all().await.unwrap();
    }
}

/// Node `files`: its certificate and a tree put durably on its disk, then
/// the TLS server, started again on every restart.
async fn files_node(cert: &str, key: &str) -> sim::Node {
    let files = sim::node("files").build();
    let (cert, key) = (cert.to_string(), key.to_string());
    files
        .spawn(async move {
            durable_write("/etc/files/cert.pem", cert.as_bytes()).await;
            durable_write("/etc/files/key.pem", key.as_bytes()).await;
            durable_write("/srv/a/b.txt", b"hello").await;
        })
        .await
        .unwrap();
    files.restart_with(|| async {
        let tls = server::Tls::new("/etc/files/cert.pem", "/etc/files/key.pem");
        let addr = "0.0.0.0:8443".parse().unwrap();
        server::serve(addr, tls, "/srv".into(), server::Handle::new())
            .await
            .unwrap();
    });
    files
}

/// The manifest, once the server answers. It may not listen yet, and on a
/// seed with early timers the clock may jump while the client is between
/// two steps of its handshake (a slow client), so that axum-server's 10 s
/// handshake timeout ends the attempt: the bound leaves room for a few.
async fn manifest(roots: &str) -> String {
    let body = std::rc::Rc::new(std::cell::RefCell::new(String::new()));
    sim::eventually("files serves its manifest", Duration::from_secs(60), || {
        let (body, roots) = (body.clone(), roots.to_string());
        async move {
            match client::get(ADDR, "files", roots.as_bytes(), "/manifest").await {
                Ok((200, b)) => {
                    *body.borrow_mut() = b;
                    true
                }
                _ => false,
            }
        }
    })
    .await;
    body.take()
}

/// Over TLS by name, the server's tree as fs-err reads it on the server's
/// disk; a file never synced is gone after a crash (the listing and the
/// metadata are the simulated disk's), the synced ones and the certificate
/// stay; and a client trusting another certificate is refused.
#[sim::test(seeds = 0..20)]
async fn the_manifest_crosses_tls_and_follows_the_disk_through_a_crash() {
    let c = rcgen::generate_simple_self_signed(vec!["files".to_string()]).unwrap();
    let (cert, key) = (c.cert.pem(), c.key_pair.serialize_pem());
    let files = files_node(&cert, &key).await;
    assert_eq!(
        manifest(&cert).await,
        "d 755 a 1 entries\nf 644 a/b.txt 5\n"
    );

    // A file written and never synced: listed while the machine runs.
    files
        .spawn(async { fs::write("/srv/draft", b"not yet").await.unwrap() })
        .await
        .unwrap();
    assert_eq!(
        manifest(&cert).await,
        "d 755 a 1 entries\nf 644 a/b.txt 5\nf 644 draft 7\n"
    );
    files.crash();
    files.restart();
    assert_eq!(
        manifest(&cert).await,
        "d 755 a 1 entries\nf 644 a/b.txt 5\n"
    );

    let other = rcgen::generate_simple_self_signed(vec!["files".to_string()]).unwrap();
    let e = client::get(ADDR, "files", other.cert.pem().as_bytes(), "/manifest")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidData, "{e}");
    assert!(e.to_string().contains("invalid peer certificate"), "{e}");
}

/// fs-err's errors name the node's paths: a server whose key is missing
/// from its disk fails to start, saying which file.
#[sim::test(seeds = 0..5)]
async fn a_missing_key_on_the_node_is_named() {
    let files = sim::node("files").build();
    let e = files
        .spawn(async {
            let tls = server::Tls::new("/etc/files/cert.pem", "/etc/files/key.pem");
            server::serve(
                "0.0.0.0:8443".parse().unwrap(),
                tls,
                "/srv".into(),
                server::Handle::new(),
            )
            .await
        })
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("/etc/files/cert.pem"), "{e}");
}
