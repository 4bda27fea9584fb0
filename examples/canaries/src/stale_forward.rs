//! A register behind two forwarding frontends. A client writes versions 1,
//! 2, 3, … through one frontend (each frontend keeps one connection to the
//! store and forwards each request on it); when an answer does not come
//! within [`TIMEOUT`] it sends the same version again through the other
//! frontend, and goes on there. The buggy store applies every `SET` in the
//! order it arrives; the fix applies only a version newer than the one it
//! holds.
//!
//! Three messages must come in the wrong order, behind a partition: a
//! `SET v` held between a frontend and the store, its retry through the
//! other frontend, the next `SET v+1` after it, and only then the heal that
//! delivers the held `SET v` over `v+1`. A nemesis cuts one frontend from
//! the store, now and then, as the run goes (p = 1/[`CUT_ONE_IN`] each
//! [`TICK`]), and heals the cut on each later tick with p = 1/2, so a cut
//! seldom outlasts a timeout, a retry and the next write. Both mark their
//! progress (`sim::state!`): the nemesis how many ticks the cut has lasted,
//! the client how many ticks it has waited for an answer and each timeout,
//! so an exploration climbs towards the timeout one tick at a time.

use super::Variant;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

pub const STORE_PORT: u16 = 7900;
pub const FRONT_PORT: u16 = 7901;
/// How long the client waits for an answer before it retries elsewhere:
/// longer than a request and its answer take when the network is slow
/// (the runtime's `sim.net.slow_delivery` delays each by up to 50 ms), so
/// only a cut makes it retry.
pub const TIMEOUT: Duration = Duration::from_millis(150);
/// Versions the client writes.
pub const WRITES: u64 = 30;
/// How often the nemesis considers a cut or a heal.
pub const TICK: Duration = Duration::from_millis(20);
/// The nemesis cuts a frontend on one tick in this many (none while a cut
/// lasts).
pub const CUT_ONE_IN: u64 = 400;

/// The versions the store applied, in order, and a signal at each.
#[derive(Clone, Default)]
pub struct Log {
    pub applied: Arc<Mutex<Vec<u64>>>,
    pub new: Arc<Notify>,
}

/// The store: `SET <version>` → `OK`.
pub async fn serve_store(variant: Variant, log: Log) {
    let listener = TcpListener::bind(("0.0.0.0", STORE_PORT))
        .await
        .expect("the store port is free");
    let current = Arc::new(Mutex::new(0u64));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (current, log) = (current.clone(), log.clone());
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(Ok(version)) = line.strip_prefix("SET ").map(str::parse::<u64>) else {
                    break;
                };
                {
                    let mut c = current.lock().unwrap();
                    // BUG (buggy variant): whatever arrives last wins.
                    if variant == Variant::Buggy || version > *c {
                        *c = version;
                        log.applied.lock().unwrap().push(version);
                        log.new.notify_one();
                    }
                }
                if w.write_all(b"OK\n").await.is_err() {
                    break;
                }
            }
        });
    }
}

/// A frontend: each client line is forwarded on its one connection to the
/// store, and the store's answer sent back.
pub async fn serve_front() {
    let listener = TcpListener::bind(("0.0.0.0", FRONT_PORT))
        .await
        .expect("the front port is free");
    let store = loop {
        if let Ok(s) = TcpStream::connect(("store", STORE_PORT)).await {
            break Arc::new(tokio::sync::Mutex::new(BufReader::new(s)));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let store = store.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let answer = {
                    let mut s = store.lock().await;
                    if s.get_mut()
                        .write_all(format!("{line}\n").as_bytes())
                        .await
                        .is_err()
                    {
                        return;
                    }
                    let mut answer = String::new();
                    if s.read_line(&mut answer).await.is_err() {
                        return;
                    }
                    answer
                };
                if w.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// The client: versions 1..=[`WRITES`], each through the frontend in use,
/// again through the other one after a timeout. Returns when all are
/// acknowledged.
pub async fn client(mut pauses: impl FnMut() -> u64) {
    let fronts = ["f1", "f2"];
    let mut using = 0usize;
    let mut conn: Option<BufReader<TcpStream>> = None;
    let mut timeouts = 0u32;
    let mut version = 1;
    while version <= WRITES {
        if conn.is_none() {
            match TcpStream::connect((fronts[using], FRONT_PORT)).await {
                Ok(s) => conn = Some(BufReader::new(s)),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("connected");
        let sent = c
            .get_mut()
            .write_all(format!("SET {version}\n").as_bytes())
            .await;
        let mut answer = String::new();
        let answered = sent.is_ok() && answer_within(TIMEOUT, c, &mut answer).await;
        if answered {
            version += 1;
            tokio::time::sleep(Duration::from_millis(pauses())).await;
        } else {
            // The same version again, through the other frontend.
            timeouts += 1;
            sim::state!("timeouts", timeouts);
            conn = None;
            using = 1 - using;
        }
    }
}

/// Reads the answer to the request just sent, waiting at most `limit`;
/// whether one came. Each [`TICK`] waited is noted (`sim::state!`), so an
/// exploration sees a request get closer to its timeout, one tick at a time.
async fn answer_within(
    limit: Duration,
    conn: &mut BufReader<TcpStream>,
    answer: &mut String,
) -> bool {
    let read = conn.read_line(answer);
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(read, deadline);
    let mut waited = 0u32;
    loop {
        tokio::select! {
            r = &mut read => return matches!(r, Ok(n) if n > 0),
            () = &mut deadline => return false,
            () = tokio::time::sleep(TICK) => {
                waited += 1;
                sim::state!("ticks waited for an answer", waited);
            }
        }
    }
}

/// The store, two frontends, a client and a nemesis. The store must apply
/// versions in order: checked at every version it applies.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    use std::cell::Cell;
    let log = Log::default();
    let l = log.clone();
    sim::node("store")
        .ip("10.0.9.1")
        .start(move || serve_store(variant, l.clone()));
    sim::node("f1").ip("10.0.9.2").start(serve_front);
    sim::node("f2").ip("10.0.9.3").start(serve_front);
    let client_node = sim::node("client").ip("10.0.9.10").build();
    let mut pauses = sim::Rng::from_seed(sim::fork_seed("pauses"));
    let writes = tokio::sim::spawn_on(
        sim::AsNode::node_id(&client_node),
        client(move || 3 + pauses.below(10)),
    );
    let done = Cell::new(false);
    let nemesis = async {
        let mut rng = sim::Rng::from_seed(sim::fork_seed("nemesis"));
        let mut cut: Option<&str> = None;
        let mut ticks_cut = 0u32;
        while !done.get() {
            tokio::time::sleep(TICK).await;
            match cut {
                Some(front) => {
                    if rng.below(2) == 0 {
                        sim::net::heal(front, "store");
                        cut = None;
                    } else {
                        ticks_cut += 1;
                        sim::state!("ticks a cut lasted", ticks_cut);
                    }
                }
                None => {
                    if rng.below(CUT_ONE_IN) == 0 {
                        let front = ["f1", "f2"][rng.below(2) as usize];
                        sim::net::partition(front, "store");
                        cut = Some(front);
                        ticks_cut = 0;
                    }
                }
            }
        }
        if let Some(front) = cut {
            sim::net::heal(front, "store");
        }
    };
    let work = async {
        tokio::pin!(writes);
        loop {
            tokio::select! {
                r = &mut writes => {
                    r.expect("the client");
                    break;
                }
                () = log.new.notified() => audit(&log),
            }
        }
        done.set(true);
        // Whatever a heal still delivers.
        tokio::time::sleep(Duration::from_millis(100)).await;
        audit(&log);
    };
    tokio::join!(nemesis, work);
}

/// The store applied versions in order.
#[cfg(simulation)]
fn audit(log: &Log) {
    let applied = log.applied.lock().unwrap();
    for pair in applied.windows(2) {
        assert!(
            pair[0] <= pair[1],
            "the store applied version {} after version {}: a SET held behind a partition overwrote a newer one",
            pair[1],
            pair[0]
        );
    }
}
