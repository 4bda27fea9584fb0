//! A ledger service over TCP: `DEPOSIT <id> <amount>` → `OK <balance>`.
//! The client gives up on an answer after [`TIMEOUT`], reconnects and
//! sends the same request again, so the server remembers the ids it
//! applied and answers a retry without applying it again. The buggy server
//! forgets an id after [`REMEMBER`] to bound its memory, on the belief that
//! a retry comes within a few timeouts. It does, unless the answer was lost
//! to a partition: the client retries only once the partition heals, which
//! may be long after, and the deposit is applied twice. (A request held by
//! the partition is delivered at the heal and applied then: its retry is
//! recognised.) The fix remembers every id.

use super::Variant;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

pub const PORT: u16 = 7500;
/// How long the client waits for an answer before it retries.
pub const TIMEOUT: Duration = Duration::from_millis(100);
/// How long the buggy server remembers an applied request.
pub const REMEMBER: Duration = Duration::from_millis(500);

/// The ledger: the balance and the requests applied.
#[derive(Default)]
struct Ledger {
    balance: u64,
    applied: BTreeMap<u64, Instant>,
}

/// The ids the ledger applied, in order: what a test watches (the
/// ledger's metrics, in a deployment).
pub type Applied = Arc<Mutex<Vec<u64>>>;

/// The ledger service.
pub async fn serve(variant: Variant, applied: Applied) {
    let listener = TcpListener::bind(("0.0.0.0", PORT))
        .await
        .expect("the ledger's port is free");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let ledger = ledger.clone();
        let applied = applied.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut words = line.split(' ').skip(1).map(|w| w.parse::<u64>());
                let (Some(Ok(id)), Some(Ok(amount))) = (words.next(), words.next()) else {
                    break;
                };
                let balance = {
                    let mut l = ledger.lock().unwrap();
                    let now = Instant::now();
                    if variant == Variant::Buggy {
                        // BUG: a retry after a long partition is forgotten.
                        l.applied.retain(|_, at| now - *at < REMEMBER);
                    }
                    let seen = l.applied.insert(id, now).is_some();
                    if !seen {
                        l.balance += amount;
                        applied.lock().unwrap().push(id);
                    }
                    l.balance
                };
                if w.write_all(format!("OK {balance}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
    }
}

/// Deposits `amount` under request id `id`, on `conn` if there is one,
/// retrying on a new connection until an answer comes back.
pub async fn deposit(conn: &mut Option<BufReader<TcpStream>>, addr: &str, id: u64, amount: u64) {
    loop {
        if conn.is_none() {
            match tokio::time::timeout(TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(s)) => *conn = Some(BufReader::new(s)),
                _ => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            }
        }
        let stream = conn.as_mut().expect("connected");
        let request = format!("DEPOSIT {id} {amount}\n");
        let mut line = String::new();
        let answer = tokio::time::timeout(TIMEOUT, async {
            stream.get_mut().write_all(request.as_bytes()).await?;
            stream.read_line(&mut line).await
        });
        match answer.await {
            Ok(Ok(n)) if n > 0 => return,
            // A timeout, a reset, a close: a new connection, the same id.
            _ => *conn = None,
        }
    }
}

/// Deposits made by the client.
pub const DEPOSITS: u64 = 20;
/// The nemesis's period: each tick it cuts the link with p =
/// 1/[`CUT_ODDS`], or heals a cut with p = 1/2.
pub const TICK: Duration = Duration::from_millis(50);
/// See [`TICK`].
pub const CUT_ODDS: u64 = 20;

/// A client makes deposits with pauses between them while a nemesis cuts
/// the link between it and the ledger now and then and heals each cut on
/// a later tick with p = 1/2, drawn as the run goes. The balance must be
/// the sum of the deposits. The nemesis marks (`sim::state!`) how many
/// ticks a cut has held the answer to a deposit the ledger applied, so
/// exploration climbs a cut's length one tick at a time.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const NONE: u64 = u64::MAX;
    let applied = Applied::default();
    let a = applied.clone();
    let ledger = sim::node("ledger")
        .ip("10.0.5.1")
        .start(move || serve(variant, a.clone()));
    let teller = sim::node("teller").ip("10.0.5.2").build();
    // The deposit the client waits on (NONE between deposits), and whether
    // it is done.
    let waiting = Arc::new(AtomicU64::new(NONE));
    let done = Arc::new(AtomicBool::new(false));
    let nemesis = {
        let (waiting, done) = (waiting.clone(), done.clone());
        async move {
            let mut rng = sim::Rng::from_seed(sim::fork_seed("healed_retry.nemesis"));
            // Ticks the cut under way has lasted (0: none).
            let mut cut = 0u64;
            while !done.load(Ordering::Relaxed) {
                tokio::time::sleep(TICK).await;
                if cut == 0 {
                    if rng.below(CUT_ODDS) == 0 {
                        sim::net::partition("teller", "ledger");
                        cut = 1;
                    }
                } else if rng.below(2) == 0 {
                    sim::net::heal("teller", "ledger");
                    cut = 0;
                } else {
                    cut += 1;
                }
                let id = waiting.load(Ordering::Relaxed);
                if cut > 0 && id != NONE && applied.lock().unwrap().contains(&id) {
                    sim::state!("ticks an applied deposit's answer is held", cut);
                }
            }
            if cut > 0 {
                sim::net::heal("teller", "ledger");
            }
        }
    };
    let client = tokio::sim::spawn_on(sim::AsNode::node_id(&teller), async move {
        let mut pauses = sim::Rng::from_seed(sim::fork_seed("healed_retry.workload"));
        let addr = format!("ledger:{PORT}");
        let mut conn = None;
        for id in 0..DEPOSITS {
            waiting.store(id, Ordering::Relaxed);
            deposit(&mut conn, &addr, id, 10).await;
            waiting.store(NONE, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(pauses.below(1_000))).await;
        }
        // The balance, as a deposit of nothing under a fresh id.
        let mut line = String::new();
        loop {
            let Ok(Ok(stream)) = tokio::time::timeout(TIMEOUT, TcpStream::connect(&addr)).await
            else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            let mut stream = BufReader::new(stream);
            let ask = format!("DEPOSIT {DEPOSITS} 0\n");
            let answer = tokio::time::timeout(TIMEOUT, async {
                stream.get_mut().write_all(ask.as_bytes()).await?;
                stream.read_line(&mut line).await
            });
            if matches!(answer.await, Ok(Ok(n)) if n > 0) {
                return line;
            }
            line.clear();
        }
    });
    let client = async move {
        let balance = client.await.expect("the client");
        done.store(true, Ordering::Relaxed);
        balance
    };
    let ((), balance) = tokio::join!(nemesis, client);
    drop(ledger);
    assert_eq!(
        balance.trim_end(),
        format!("OK {}", DEPOSITS * 10),
        "a retried deposit was applied twice"
    );
}
