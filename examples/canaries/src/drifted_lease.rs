//! A lock service grants leases of [`LEASE`] on its own clock; a client
//! that holds one writes to a store, and stops writing when its lease has
//! run out. The store does not fence: it trusts the clients to stop in time.
//! Both clients start the lease's clock when they send the request (the
//! server's starts later). The buggy client then trusts its own clock to
//! run at the server's rate: when it runs slow (within the
//! [`MAX_DRIFT_PPM`] the deployment allows) the client goes on writing
//! after the server gave the lease to the other client, and a write of the
//! old lease lands after the new holder's. The fix gives up a margin for
//! the drift both clocks may have, and a little more.

use super::Variant;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Notify;
use tokio::time::Instant;

pub const LOCK_PORT: u16 = 7600;
pub const STORE_PORT: u16 = 7601;
/// How long a lease lasts, on the lock server's clock.
pub const LEASE: Duration = Duration::from_secs(10);
/// The most leases a client takes in a run.
pub const ROUNDS_MAX: u64 = 2;
/// The clock drift the fixed client allows for, in parts per million.
pub const MAX_DRIFT_PPM: u64 = 500;

/// The lock server: `ACQUIRE <client>` → `GRANT <epoch>` when the lease is
/// free or has expired, else `BUSY <ms left>`.
pub async fn serve_locks() {
    let listener = TcpListener::bind(("0.0.0.0", LOCK_PORT))
        .await
        .expect("the lock port is free");
    let lease: Arc<Mutex<(u64, Option<Instant>)>> = Arc::new(Mutex::new((0, None)));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let lease = lease.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(_acquire)) = lines.next_line().await {
                let answer = {
                    let mut l = lease.lock().unwrap();
                    let now = Instant::now();
                    match l.1 {
                        Some(expiry) if expiry > now => {
                            format!("BUSY {}\n", (expiry - now).as_millis() + 1)
                        }
                        _ => {
                            *l = (l.0 + 1, Some(now + LEASE));
                            format!("GRANT {}\n", l.0)
                        }
                    }
                };
                if w.write_all(answer.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// The epochs of the writes in the order they arrived (what the audit
/// reads), and a signal for the auditor at each one.
#[derive(Clone, Default)]
pub struct Log {
    pub epochs: Arc<Mutex<Vec<u64>>>,
    pub new: Arc<Notify>,
}

/// The store, over UDP: `WRITE <epoch>` → `OK`; it keeps the epochs in
/// the order the writes arrived.
pub async fn serve_store(log: Log) {
    let socket = UdpSocket::bind(("0.0.0.0", STORE_PORT))
        .await
        .expect("the store port is free");
    let mut buf = [0u8; 64];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        let line = String::from_utf8_lossy(&buf[..n]);
        if let Some(Ok(epoch)) = line.strip_prefix("WRITE ").map(str::parse) {
            log.epochs.lock().unwrap().push(epoch);
            log.new.notify_one();
        }
        let _ = socket.send_to(b"OK", from).await;
    }
}

async fn connect(addr: &str) -> BufReader<TcpStream> {
    loop {
        if let Ok(s) = TcpStream::connect(addr).await {
            return BufReader::new(s);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn ask(conn: &mut BufReader<TcpStream>, request: &str) -> String {
    conn.get_mut()
        .write_all(request.as_bytes())
        .await
        .expect("the link holds");
    let mut line = String::new();
    conn.read_line(&mut line).await.expect("the link holds");
    line
}

/// A client: `rounds` times, acquire the lease, write while it lasts
/// (pauses between writes drawn from `pauses`), let it go.
pub async fn client(variant: Variant, rounds: u32, mut pauses: impl FnMut() -> u64) {
    let mut locks = connect(&format!("locks:{LOCK_PORT}")).await;
    let store = UdpSocket::bind(("0.0.0.0", 0)).await.expect("a port");
    store
        .connect(("10.0.6.2", STORE_PORT))
        .await
        .expect("the store's address");
    let mut ok = [0u8; 8];
    for _ in 0..rounds {
        let (epoch, start) = loop {
            let sent = Instant::now();
            let answer = ask(&mut locks, "ACQUIRE\n").await;
            if let Some(epoch) = answer.trim_end().strip_prefix("GRANT ") {
                break (epoch.to_string(), sent);
            }
            let left: u64 = answer
                .trim_end()
                .strip_prefix("BUSY ")
                .map_or(1, |ms| ms.parse().unwrap_or(1));
            tokio::time::sleep(Duration::from_millis(left)).await;
        };
        let usable = match variant {
            // BUG: the client's clock is trusted to run at the server's rate.
            Variant::Buggy => LEASE,
            Variant::Fixed => {
                LEASE - LEASE * (2 * MAX_DRIFT_PPM) as u32 / 1_000_000 - Duration::from_millis(1)
            }
        };
        while start.elapsed() < usable {
            store
                .send(format!("WRITE {epoch}").as_bytes())
                .await
                .expect("sent");
            let _ = tokio::time::timeout(Duration::from_millis(50), store.recv(&mut ok)).await;
            tokio::time::sleep(Duration::from_millis(pauses())).await;
        }
    }
}

/// Two clients take turns with the lease, each one to [`ROUNDS_MAX`]
/// times (drawn; a zero draw is once); each client's clock drifts by a
/// seeded amount within ±[`MAX_DRIFT_PPM`]. No write of an older lease may
/// land after a write of a newer one: checked at every write, so a run
/// ends at the first late write.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    let log = Log::default();
    sim::node("locks").ip("10.0.6.1").start(serve_locks);
    let l = log.clone();
    sim::node("store")
        .ip("10.0.6.2")
        .start(move || serve_store(l.clone()));
    let mut rng = sim::Rng::from_seed(sim::fork_seed("drifted_lease"));
    let mut clients = Vec::new();
    for (i, name) in ["a", "b"].into_iter().enumerate() {
        let node = sim::node(name).ip(&format!("10.0.6.{}", 10 + i)).build();
        let drift = rng.below(2 * MAX_DRIFT_PPM + 1) as i64 - MAX_DRIFT_PPM as i64;
        node.drift(drift);
        let mut pauses = sim::Rng::from_seed(rng.next_u64());
        let rounds = 1 + rng.below(ROUNDS_MAX) as u32;
        clients.push(tokio::sim::spawn_on(
            sim::AsNode::node_id(&node),
            client(variant, rounds, move || 20 + pauses.below(400)),
        ));
    }
    let done = async {
        for c in clients {
            c.await.expect("a client");
        }
    };
    tokio::pin!(done);
    loop {
        tokio::select! {
            () = &mut done => break,
            () = log.new.notified() => audit(&log),
        }
    }
    audit(&log);
}

/// The writes landed in lease order.
#[cfg(simulation)]
fn audit(log: &Log) {
    let epochs = log.epochs.lock().unwrap();
    for pair in epochs.windows(2) {
        assert!(
            pair[0] <= pair[1],
            "a write of lease {} landed after a write of lease {}: a lease used after it expired",
            pair[1],
            pair[0]
        );
    }
}
