//! A lock service grants leases that end at a wall-clock time
//! (`GRANT <epoch> <expires, Unix ms>`, [`LEASE`] after the grant on its
//! clock). A holder writes to a store while, by its own wall clock, the
//! lease has not ended; the store fences: it refuses a write whose lease
//! has ended by *its* wall clock. Wall clocks disagree by up to
//! [`MAX_SKEW`]. The buggy client writes up to the expiry its clock reads;
//! the fix stops [`MAX_SKEW`] early.
//!
//! The store's fence hides the bug until two clocks are wrong together: a
//! late write needs the old holder's clock behind (it still believes in
//! its lease), the store's clock behind too (it still accepts it), and the
//! write to land after the new holder's first. A nemesis sets the clock of
//! the store or a client, now and then, as the run goes (p =
//! 1/[`SKEW_ONE_IN`] each [`TICK`]), and says which clocks are behind
//! (`sim::state!`). The lock server's clock is the authority: never set.

use super::Variant;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Notify;

pub const LOCK_PORT: u16 = 7800;
pub const STORE_PORT: u16 = 7801;
/// How long a lease lasts, on the lock server's clock.
pub const LEASE: Duration = Duration::from_millis(300);
/// How far the deployment lets a wall clock be off.
pub const MAX_SKEW: Duration = Duration::from_millis(10);
/// Leases each client takes.
pub const ROUNDS: u32 = 2;
/// How often the nemesis considers a clock.
pub const TICK: Duration = Duration::from_millis(50);
/// The nemesis sets a clock on one tick in this many.
pub const SKEW_ONE_IN: u64 = 42;

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The lock server: `ACQUIRE` → `GRANT <epoch> <expires>` when the lease is
/// free or has ended, else `BUSY <ms left>`.
pub async fn serve_locks() {
    let listener = TcpListener::bind(("0.0.0.0", LOCK_PORT))
        .await
        .expect("the lock port is free");
    let lease: Arc<Mutex<(u64, u64)>> = Arc::new(Mutex::new((0, 0)));
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
                    let now = unix_ms();
                    if l.1 > now {
                        format!("BUSY {}\n", l.1 - now)
                    } else {
                        *l = (l.0 + 1, now + LEASE.as_millis() as u64);
                        format!("GRANT {} {}\n", l.0, l.1)
                    }
                };
                if w.write_all(answer.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// The epochs of the writes the store accepted, in order, and a signal for
/// the auditor at each one.
#[derive(Clone, Default)]
pub struct Log {
    pub epochs: Arc<Mutex<Vec<u64>>>,
    pub new: Arc<Notify>,
}

/// The store, over UDP: `WRITE <epoch> <expires>` → `OK` while the lease
/// has not ended by the store's clock, else `ENDED`.
pub async fn serve_store(log: Log) {
    let socket = UdpSocket::bind(("0.0.0.0", STORE_PORT))
        .await
        .expect("the store port is free");
    let mut buf = [0u8; 64];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        let line = String::from_utf8_lossy(&buf[..n]).into_owned();
        let mut words = line.split(' ').skip(1).map(str::parse::<u64>);
        let (Some(Ok(epoch)), Some(Ok(expires))) = (words.next(), words.next()) else {
            continue;
        };
        let answer: &[u8] = if unix_ms() < expires {
            log.epochs.lock().unwrap().push(epoch);
            log.new.notify_one();
            b"OK"
        } else {
            b"ENDED"
        };
        let _ = socket.send_to(answer, from).await;
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

/// A client: [`ROUNDS`] times, acquire the lease, write while it lasts
/// (pauses between writes drawn from `pauses`), let it go.
pub async fn client(variant: Variant, mut pauses: impl FnMut() -> u64) {
    let mut locks = connect(&format!("locks:{LOCK_PORT}")).await;
    let store = UdpSocket::bind(("0.0.0.0", 0)).await.expect("a port");
    store
        .connect(("10.0.8.2", STORE_PORT))
        .await
        .expect("the store's address");
    let mut ok = [0u8; 8];
    for _ in 0..ROUNDS {
        let (epoch, expires) = loop {
            locks
                .get_mut()
                .write_all(b"ACQUIRE\n")
                .await
                .expect("the link holds");
            let mut answer = String::new();
            locks.read_line(&mut answer).await.expect("the link holds");
            let words: Vec<&str> = answer.split_whitespace().collect();
            match words.as_slice() {
                ["GRANT", epoch, expires] => {
                    break (epoch.to_string(), expires.parse::<u64>().unwrap_or(0))
                }
                ["BUSY", left] => {
                    let left = left.parse().unwrap_or(1);
                    tokio::time::sleep(Duration::from_millis(left)).await;
                }
                _ => panic!("the lock server answered {answer:?}"),
            }
        };
        let until = match variant {
            // BUG: the client's wall clock is trusted to agree with the
            // lock server's.
            Variant::Buggy => expires,
            Variant::Fixed => expires.saturating_sub(MAX_SKEW.as_millis() as u64),
        };
        while unix_ms() < until {
            store
                .send(format!("WRITE {epoch} {expires}").as_bytes())
                .await
                .expect("sent");
            let _ = tokio::time::timeout(Duration::from_millis(50), store.recv(&mut ok)).await;
            tokio::time::sleep(Duration::from_millis(pauses())).await;
        }
    }
}

/// The lock server, the store and two clients; a nemesis sets clocks as
/// the run goes, each within [`MAX_SKEW`] of the true time. No write of an
/// older lease may be accepted after a write of a newer one: checked at
/// every accepted write.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    use std::cell::Cell;
    let log = Log::default();
    let locks = sim::node("locks").ip("10.0.8.1").start(serve_locks);
    let l = log.clone();
    let store = sim::node("store")
        .ip("10.0.8.2")
        .start(move || serve_store(l.clone()));
    let mut rng = sim::Rng::from_seed(sim::fork_seed("skewed_pair"));
    let mut clients = Vec::new();
    let mut nodes = vec![locks, store];
    for (i, name) in ["a", "b"].into_iter().enumerate() {
        let node = sim::node(name).ip(&format!("10.0.8.{}", 10 + i)).build();
        let mut pauses = sim::Rng::from_seed(rng.next_u64());
        clients.push(tokio::sim::spawn_on(
            sim::AsNode::node_id(&node),
            client(variant, move || 10 + pauses.below(30)),
        ));
        nodes.push(node);
    }
    let done = Cell::new(false);
    let nemesis = async {
        let mut rng = sim::Rng::from_seed(sim::fork_seed("nemesis"));
        // Bit i: node i's clock is behind.
        let mut behind = 0u32;
        while !done.get() {
            tokio::time::sleep(TICK).await;
            if rng.below(SKEW_ONE_IN) != 0 {
                continue;
            }
            // The lock server's clock is the authority: it is never set.
            let i = 1 + rng.below(nodes.len() as u64 - 1) as usize;
            let ahead = rng.below(2) == 0;
            let by = Duration::from_millis(1 + rng.below(MAX_SKEW.as_millis() as u64));
            nodes[i].skew(by, ahead);
            behind = if ahead {
                behind & !(1 << i)
            } else {
                behind | (1 << i)
            };
            sim::state!("clocks behind", behind);
        }
    };
    let work = async {
        let all = async {
            for c in clients {
                c.await.expect("a client");
            }
        };
        tokio::pin!(all);
        loop {
            tokio::select! {
                () = &mut all => break,
                () = log.new.notified() => audit(&log),
            }
        }
        audit(&log);
        done.set(true);
    };
    tokio::join!(nemesis, work);
}

/// The store accepted writes in lease order.
#[cfg(simulation)]
fn audit(log: &Log) {
    let epochs = log.epochs.lock().unwrap();
    for pair in epochs.windows(2) {
        assert!(
            pair[0] <= pair[1],
            "the store accepted a write of lease {} after one of lease {}: two clocks behind let an ended lease write",
            pair[1],
            pair[0]
        );
    }
}
