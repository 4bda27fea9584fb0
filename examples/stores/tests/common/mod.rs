//! What every store's simulation tests share: the node, the scenarios
//! (generic over the store), and the checks that the files live on the
//! node's simulated disk and never on the real one.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;
use stores::{Durability, Service, Store};
use tokio::sync::{mpsc, oneshot};

/// Where every store keeps its files on its node. A path no real machine
/// has: if a file call escaped the simulation, it would show up here on
/// the real disk (`on_real_disk`).
pub const DIR: &str = "/sim-stores-simulated-only/data";

/// Keys a scenario writes.
pub const KEYS: usize = 8;
/// A crash lands somewhere in this window of virtual time.
pub const CRASH_WINDOW_US: u64 = 60_000;

pub fn key(i: usize) -> String {
    format!("key-{i}")
}

pub fn value(i: usize) -> String {
    format!("value-{i}-{}", "x".repeat(i * 7))
}

/// What a test needs to know of a store beyond [`Store`]: where its main
/// file is, and which of its errors mean which injected fault.
pub trait Probe: Store {
    /// The store's main file, relative to its directory.
    const MAIN_FILE: &'static str;
    /// The store's error for an `fsync` that failed with `EIO`.
    fn is_sync_eio(e: &Self::Error) -> bool;
    /// The store's error for a full disk (`ENOSPC`).
    fn is_no_space(e: &Self::Error) -> bool;
}

/// The `io::Error` with this errno anywhere in `e`'s source chain.
pub fn has_errno(e: &(dyn std::error::Error + 'static), errno: i32) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io.raw_os_error() == Some(errno) {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

pub const EIO: i32 = 5;
pub const ENOSPC: i32 = 28;

/// Whether `path` exists on the machine's real disk (asked outside the
/// node's context, where file calls are not simulated).
pub fn on_real_disk(path: &str) -> bool {
    sim::fs::on_real_disk(|| Path::new(path).exists())
}

/// A node with the store's directory on its disk, each disk operation
/// taking a millisecond so a crash can land between any two calls.
pub fn store_node() -> sim::Node {
    store_node_named("store")
}

/// [`store_node`] with another name (a second machine in one test).
pub fn store_node_named(name: &str) -> sim::Node {
    let node = sim::node(name).build();
    sim::fs::set_latency(&node, Duration::from_millis(1));
    node
}

/// A store kept open in its node's process by [`open_and_keep`].
pub struct Open {
    close: oneshot::Sender<()>,
    closed: oneshot::Receiver<()>,
}

impl Open {
    /// Closes the store cleanly (the process drops it, as on a graceful
    /// shutdown) and waits until it has.
    pub async fn close(self) {
        let _ = self.close.send(());
        self.closed
            .await
            .expect("the node died before the store was closed");
    }
}

/// Opens the store on `node`, runs `f` over it, and keeps the store open
/// (in the node's process) until the node dies or [`Open::close`]; returns
/// `f`'s result. Dropping the [`Open`] also closes the store.
pub async fn open_and_keep<S, F, Fut, T>(node: &sim::Node, f: F) -> (T, Open)
where
    S: Store,
    F: FnOnce(Service<S>) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    let (tx, rx) = oneshot::channel();
    let (close, close_rx) = oneshot::channel::<()>();
    let (closed_tx, closed) = oneshot::channel();
    node.spawn(async move {
        let svc = Service::<S>::open(DIR)
            .await
            .unwrap_or_else(|e| panic!("{}: open: {e}", S::NAME));
        let out = f(svc.clone()).await;
        let _ = tx.send(out);
        // The store stays open, as in a running service, until the node
        // is killed or crashes, or the test closes it.
        let _ = close_rx.await;
        drop(svc);
        let _ = closed_tx.send(());
    });
    let out = rx
        .await
        .expect("the node died before the store's work was done");
    (out, Open { close, closed })
}

/// Opens the store afresh on `node` (after a restart), runs `f`, and
/// closes it cleanly; returns `f`'s result.
pub async fn reopen_and<S, F, Fut, T>(node: &sim::Node, f: F) -> T
where
    S: Store,
    F: FnOnce(Service<S>) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    node.spawn(async move {
        let svc = Service::<S>::open(DIR)
            .await
            .unwrap_or_else(|e| panic!("{}: reopen: {e}", S::NAME));
        f(svc).await
    })
    .await
    .expect("the reopened store's task completes")
}

/// Reads every key the scenarios write.
pub async fn read_all<S: Store>(svc: Service<S>) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for i in 0..KEYS {
        out.push(
            svc.get(&key(i))
                .await
                .unwrap_or_else(|e| panic!("{}: get: {e}", S::NAME)),
        );
    }
    out
}

/// The store's files are on the node's simulated disk (seen through
/// `tokio::fs`, the same disk) and not on the real one.
pub async fn files_are_simulated<S: Probe>(node: &sim::Node) {
    let main = PathBuf::from(DIR).join(S::MAIN_FILE);
    let m = main.clone();
    let meta = node
        .spawn(async move { tokio::fs::metadata(&m).await })
        .await
        .unwrap();
    let meta = meta.unwrap_or_else(|e| {
        panic!(
            "{}: {main:?} is not on the node's simulated disk: {e}",
            S::NAME
        )
    });
    assert!(meta.len() > 0, "{}: {main:?} is empty", S::NAME);
    assert!(
        !on_real_disk(DIR),
        "{}: {DIR} exists on the real disk: a file call escaped the simulation",
        S::NAME
    );
    sim::fs::check(node);
}

/// (a) Durable commits, one after another, with a crash at a seeded
/// moment: every acknowledged commit is there after the restart, the one
/// in flight is either wholly there or absent, and nothing later exists.
pub async fn durable_commits_survive_a_crash<S: Probe>() {
    durable_commits_survive_a_crash_with::<S>(value).await;
}

/// [`durable_commits_survive_a_crash`] with key `i`'s value `value(i)`.
pub async fn durable_commits_survive_a_crash_with<S: Probe>(value: fn(usize) -> String) {
    let node = store_node();
    let (acks_tx, mut acks) = mpsc::unbounded_channel();
    node.spawn(async move {
        let svc = Service::<S>::open(DIR)
            .await
            .unwrap_or_else(|e| panic!("{}: open: {e}", S::NAME));
        for i in 0..KEYS {
            svc.put(&key(i), &value(i), Durability::Durable)
                .await
                .unwrap_or_else(|e| panic!("{}: put: {e}", S::NAME));
            let _ = acks_tx.send(i);
        }
        std::future::pending::<()>().await;
        drop((svc, acks_tx));
    });
    let crash_at = Duration::from_micros(sim::fork_seed("crash") % CRASH_WINDOW_US);
    // The acknowledgements are counted until the crash itself, not until the
    // channel closes: a store whose `Drop` waits for its worker threads
    // (fjall) never finishes dropping on a dead node, so the task's sender
    // is never dropped (docs/breakage.md, "OS threads").
    let crashed = std::sync::Arc::new(tokio::sync::Notify::new());
    let (n, c) = (node.clone(), crashed.clone());
    sim::at(crash_at, move || {
        n.crash();
        c.notify_one();
    });
    let mut acked = 0;
    loop {
        tokio::select! {
            biased;
            got = acks.recv() => match got {
                Some(i) => acked = i + 1,
                None => break,
            },
            () = crashed.notified() => break,
        }
    }
    // Sent before the crash, still queued.
    while let Ok(i) = acks.try_recv() {
        acked = i + 1;
    }
    node.restart();
    let found = reopen_and::<S, _, _, _>(&node, read_all).await;
    for (i, got) in found.iter().enumerate() {
        let want = Some(value(i));
        if i < acked {
            assert_eq!(
                got,
                &want,
                "{}: {} acknowledged before the crash at {crash_at:?}, key {i} lost",
                S::NAME,
                acked
            );
        } else if i == acked {
            assert!(
                got.is_none() || got == &want,
                "{}: the commit in flight came back as {got:?}",
                S::NAME
            );
        } else {
            assert_eq!(got, &None, "{}: key {i} was never written", S::NAME);
        }
    }
    files_are_simulated::<S>(&node).await;
}

/// The value of `key(1)` after a commit of it with `durability` on top of a
/// durable `key(0)`, then `end` (a crash, a kill, or nothing), then a
/// restart; `key(0)` must always be there.
pub async fn after<S: Probe>(durability: Durability, end: End) -> Option<String> {
    let node = store_node_named(&format!("store-{durability:?}-{end:?}"));
    let ((), open) = open_and_keep::<S, _, _, _>(&node, move |svc| async move {
        svc.put(&key(0), &value(0), Durability::Durable)
            .await
            .unwrap_or_else(|e| panic!("{}: durable put: {e}", S::NAME));
        svc.put(&key(1), &value(1), durability)
            .await
            .unwrap_or_else(|e| panic!("{}: {durability:?} put: {e}", S::NAME));
        // Read back in the same process: committed and visible.
        assert_eq!(svc.get(&key(1)).await.unwrap(), Some(value(1)));
    })
    .await;
    match end {
        End::Crash => node.crash(),
        End::Kill => node.kill(),
        // A clean stop: the process closes (drops) the store, then exits.
        End::Close => open.close().await,
    }
    node.restart();
    let found = reopen_and::<S, _, _, _>(&node, read_all).await;
    assert_eq!(
        found[0],
        Some(value(0)),
        "{}: the durable commit is gone after {end:?}",
        S::NAME
    );
    files_are_simulated::<S>(&node).await;
    found[1].clone()
}

/// How a node's process ends in [`after`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Crash,
    Kill,
    Close,
}

/// (c) The next fsync fails with `EIO`: the durable commit reports the
/// store's own I/O error, and after a crash and a restart the store opens,
/// the earlier commit is intact and the failed one is not there.
pub async fn fsync_eio_reaches_the_store<S: Probe>() {
    let node = store_node();
    let n = node.clone();
    let (err, _open) = open_and_keep::<S, _, _, _>(&node, move |svc| async move {
        svc.put(&key(0), &value(0), Durability::Durable)
            .await
            .unwrap_or_else(|e| panic!("{}: durable put: {e}", S::NAME));
        sim::fs::fail_syncs(&n, 1);
        match svc.put(&key(1), &value(1), Durability::Durable).await {
            Ok(()) => panic!("{}: a commit whose fsync failed was acknowledged", S::NAME),
            Err(e) => {
                assert!(
                    S::is_sync_eio(&e),
                    "{}: a failed fsync surfaced as {e:?}, not the store's I/O error",
                    S::NAME
                );
                e.to_string()
            }
        }
    })
    .await;
    node.crash();
    node.restart();
    let found = reopen_and::<S, _, _, _>(&node, read_all).await;
    assert_eq!(found[0], Some(value(0)), "{}: after {err}", S::NAME);
    assert_eq!(
        found[1],
        None,
        "{}: the commit whose fsync failed ({err}) survived a crash",
        S::NAME
    );
    files_are_simulated::<S>(&node).await;
}

/// (c) The disk fills up: a durable commit of a value bigger than what is
/// left reports the store's own "disk full" error; once space is back and
/// the process restarts, the store opens with the earlier commit, and
/// takes new ones.
pub async fn enospc_reaches_the_store<S: Probe>() {
    let node = store_node();
    let n = node.clone();
    let ((), _open) = open_and_keep::<S, _, _, _>(&node, move |svc| async move {
        svc.put(&key(0), &value(0), Durability::Durable)
            .await
            .unwrap_or_else(|e| panic!("{}: durable put: {e}", S::NAME));
        let used = sim::fs::used_bytes(&n);
        sim::fs::set_capacity(&n, Some(used + 1024));
        let big = "y".repeat(256 * 1024);
        match svc.put(&key(1), &big, Durability::Durable).await {
            Ok(()) => panic!("{}: a 256 KiB commit fit in 1 KiB", S::NAME),
            Err(e) => assert!(
                S::is_no_space(&e),
                "{}: a full disk surfaced as {e:?}, not the store's ENOSPC error",
                S::NAME
            ),
        }
    })
    .await;
    sim::fs::set_capacity(&node, None);
    // The process restarts (a kill: whatever the store still had in its
    // buffers is gone) and recovers from what the disk has.
    node.restart();
    let found = reopen_and::<S, _, _, _>(&node, |svc| async move {
        svc.put(&key(2), &value(2), Durability::Durable)
            .await
            .unwrap_or_else(|e| panic!("{}: put after the disk has room again: {e}", S::NAME));
        read_all(svc).await
    })
    .await;
    assert_eq!(found[0], Some(value(0)), "{}", S::NAME);
    assert_eq!(found[2], Some(value(2)), "{}", S::NAME);
    files_are_simulated::<S>(&node).await;
}

/// The relative path `p` under the store directory.
pub fn in_dir(p: &str) -> PathBuf {
    Path::new(DIR).join(p)
}

/// (c) Torn writes at a crash: a durable commit, then volatile commits of
/// bigger values, then a crash that keeps a seeded prefix of each file's
/// unsynced writes. The store must open (its recovery path) with the
/// durable commit intact; returns what it found, for the store's own
/// promise about the rest.
pub async fn after_a_torn_crash<S: Probe>() -> Vec<Option<String>> {
    let node = store_node();
    sim::fs::set_torn_writes(&node, true);
    let ((), _open) = open_and_keep::<S, _, _, _>(&node, move |svc| async move {
        svc.put(&key(0), &value(0), Durability::Durable)
            .await
            .unwrap_or_else(|e| panic!("{}: durable put: {e}", S::NAME));
        for i in 1..KEYS {
            svc.put(&key(i), &big_value(i), Durability::Volatile)
                .await
                .unwrap_or_else(|e| panic!("{}: volatile put: {e}", S::NAME));
        }
    })
    .await;
    node.crash();
    node.restart();
    let found = reopen_and::<S, _, _, _>(&node, read_all).await;
    assert_eq!(
        found[0],
        Some(value(0)),
        "{}: the durable commit is gone after a torn crash",
        S::NAME
    );
    for (i, got) in found.iter().enumerate().skip(1) {
        assert!(
            got.is_none() || got.as_deref() == Some(big_value(i).as_str()),
            "{}: key {i} came back as a value never written ({} bytes)",
            S::NAME,
            got.as_ref().map_or(0, String::len)
        );
    }
    files_are_simulated::<S>(&node).await;
    found
}

/// A value of several pages, so a volatile commit writes many pages.
pub fn big_value(i: usize) -> String {
    format!("{i}:{}", "z".repeat(20_000 + i * 4096))
}
