//! What tests/ring.rs and tests/aws_lc.rs share: the two services on their
//! nodes, their clients on node `client`, and the faults between them.
//! The process's default crypto provider (which each test binary installs)
//! is the one every party uses: the HTTPS server and reqwest by asking
//! for it, tonic's server and channel by taking it.

#![allow(dead_code)] // each test binary uses part of it

use rustls::crypto::CryptoProvider;
use std::sync::Arc;
use std::time::Duration;
use tls::{grpc, https, Digest, KeyKind, Pki, Tap};
use tokio::net::TcpListener;
use tonic_health::pb::health_check_response::ServingStatus;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Makes `provider` the process's default (the first test to run wins;
/// every test of a binary installs the same one).
pub fn install(provider: CryptoProvider) {
    let _ = provider.install_default();
}

fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .expect("the test installed a provider")
        .clone()
}

/// On the calling node: the platform's roots load, the platform verifier
/// and reqwest's default client build. Each of these fails on a node whose
/// disk has no CA bundle ("No CA certificates were loaded from the
/// system"). Returns how many roots were loaded.
pub fn platform_roots_load() -> usize {
    let loaded = rustls_native_certs::load_native_certs();
    assert!(
        loaded.errors.is_empty(),
        "the native roots load without errors: {:?}",
        loaded.errors
    );
    assert!(!loaded.certs.is_empty(), "the host's CA bundle is served");
    rustls_platform_verifier::Verifier::new(provider())
        .expect("the platform verifier finds the system's roots");
    reqwest::Client::builder()
        .build()
        .expect("reqwest's default client (rustls, platform roots) builds");
    loaded.certs.len()
}

/// What a run saw: the server's bytes on the wire and the roots loaded.
pub struct Seen {
    pub https: Digest,
    pub roots: usize,
}

/// Sleeps for a time that depends on `d`: the clock's advance is a
/// decision, so the bytes the server saw enter the run's fingerprint, and
/// `check_determinism` compares them.
pub async fn fold_into_fingerprint(d: Digest) {
    let h = d.read ^ d.written.rotate_left(17) ^ d.read_len ^ d.written_len << 32;
    tokio::time::sleep(Duration::from_nanos(1 + h % 1_000_000_007)).await;
}

/// reqwest (default TLS: rustls, the platform's roots plus the test's CA)
/// against the HTTPS server on node `web`: answered, refused through a
/// partition and after a crash, answered again after the heal and the
/// restart.
pub async fn reqwest_through_faults(kind: KeyKind) -> Seen {
    let pki = Pki::issue(&["web"], kind);
    let tap = Tap::default();
    let config = https::config(&pki, provider());
    let web = {
        let tap = tap.clone();
        sim::node("web").start(move || {
            let (config, tap) = (config.clone(), tap.clone());
            async move {
                let listener = TcpListener::bind("0.0.0.0:443").await.unwrap();
                https::serve(listener, config, tap).await;
            }
        })
    };
    let client = sim::node("client").build();
    let ca = reqwest::Certificate::from_der(&pki.ca_der).unwrap();
    let (roots, http) = client
        .spawn(async move {
            let roots = platform_roots_load();
            let http = reqwest::Client::builder()
                .tls_certs_merge([ca])
                .timeout(ms(500))
                .build()
                .expect("reqwest builds with the platform's roots and the CA");
            (roots, http)
        })
        .await
        .unwrap();
    let get = |path: &'static str| {
        let http = http.clone();
        client.spawn(async move {
            let reply = http.get(format!("https://web{path}")).send().await?;
            reply.error_for_status()?.text().await
        })
    };
    let answered = |path: &'static str| async move {
        matches!(get(path).await.unwrap(), Ok(body) if body == format!("hello over TLS: {path}"))
    };

    sim::eventually("the HTTPS server answers", Duration::from_secs(5), || {
        answered("/first")
    })
    .await;

    sim::net::partition("client", "web");
    let cut = get("/cut").await.unwrap();
    assert!(
        cut.is_err(),
        "a partitioned server does not answer: {cut:?}"
    );
    sim::net::heal("client", "web");
    sim::eventually("answers after the heal", Duration::from_secs(5), || {
        answered("/healed")
    })
    .await;

    web.crash();
    let down = get("/down").await.unwrap();
    assert!(down.is_err(), "a crashed server does not answer: {down:?}");
    web.restart();
    sim::eventually("answers after the restart", Duration::from_secs(5), || {
        answered("/restarted")
    })
    .await;
    Seen {
        https: tap.digest(),
        roots,
    }
}

/// A tonic TLS channel (native roots plus the test's CA) to tonic-health
/// over TLS on node `grpc`, through a partition and a crash.
pub async fn tonic_through_faults(kind: KeyKind) {
    let pki = Pki::issue(&["grpc"], kind);
    let grpc_node = {
        let pki = pki.clone();
        sim::node("grpc").start(move || {
            let pki = pki.clone();
            async move {
                grpc::serve("0.0.0.0:50051".parse().unwrap(), &pki)
                    .await
                    .unwrap();
            }
        })
    };
    let client = sim::node("client").build();
    // The server may not listen yet: 100 tries, 10 ms apart.
    let channel = client
        .spawn(async move {
            let mut last = None;
            for _ in 0..100 {
                match grpc::connect("https://grpc:50051", &pki).await {
                    Ok(c) => return c,
                    Err(e) => last = Some(format!("{e:?}")),
                }
                tokio::time::sleep(ms(10)).await;
            }
            panic!("no TLS channel to grpc:50051 in 100 tries; last: {last:?}");
        })
        .await
        .unwrap();
    let check = || {
        let channel = channel.clone();
        client.spawn(grpc::check(channel))
    };
    let serving = || async { matches!(check().await.unwrap(), Ok(ServingStatus::Serving)) };
    assert_eq!(check().await.unwrap().unwrap(), ServingStatus::Serving);

    sim::net::partition("client", "grpc");
    let cut = check().await.unwrap();
    assert!(
        cut.is_err(),
        "a partitioned server does not answer: {cut:?}"
    );
    sim::net::heal("client", "grpc");
    sim::eventually("serving after the heal", Duration::from_secs(5), serving).await;

    grpc_node.crash();
    let down = check().await.unwrap();
    assert!(down.is_err(), "a crashed server does not answer: {down:?}");
    grpc_node.restart();
    sim::eventually("serving after the restart", Duration::from_secs(5), serving).await;
}

/// Runs this test binary's test `name` alone with `SIM_SEED=seed` in a new
/// process and returns what it printed from each `tag` on.
pub fn in_a_new_process(name: &str, seed: u64, tag: &str) -> Vec<String> {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("SIM_SEED", seed.to_string())
        .env("TLS_PRINT", "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} with SIM_SEED={seed}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // libtest prints the test's name on the line the first print continues.
    let lines: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.find(tag).map(|at| l[at..].to_owned()))
        .collect();
    assert!(!lines.is_empty(), "{name} printed no {tag} line:\n{stdout}");
    lines
}

/// Whether this process is one [`in_a_new_process`] started.
pub fn printing() -> bool {
    std::env::var_os("TLS_PRINT").is_some()
}
