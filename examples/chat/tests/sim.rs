//! The end-to-end demo: the chat server on one node, three participants on
//! three more, and a seeded fault plan (a participant cut off from the
//! server for a while, a participant's machine crashed and restarted). At
//! the end the server gets SIGTERM. What the service promises:
//!
//! 1. a message id is posted once: a retried `say` gets the same seq, and
//!    no two ids share one;
//! 2. each connection sees every message posted after its WELCOME, in
//!    order, with no gap and no duplicate, for as long as it lasts;
//! 3. on SIGTERM every connected participant is told `BYE shutdown` and the
//!    server process finishes within its grace period.
//!
//! Each seed runs twice and must make the same decisions.
#![cfg(simulation)]

use chat::{Client, Config, Event};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::signal::unix::SignalKind;
use tokio::time::sleep;
use tokio_stream::StreamExt;

const PEOPLE: [&str; 3] = ["alice", "bob", "carol"];
const SAYS: u32 = 12;

#[derive(Default)]
struct Log {
    /// Message id → the seqs the server answered for it.
    acked: BTreeMap<String, Vec<u64>>,
    /// Per participant incarnation (`alice#1`): its events, in order.
    events: BTreeMap<String, Vec<Event>>,
    /// Participant → the incarnation that said all it had to say.
    finished: BTreeMap<&'static str, u32>,
}

fn incarnation() -> u32 {
    tokio::sim::incarnation(tokio::sim::current_node())
}

async fn participant(name: &'static str, log: Arc<Mutex<Log>>) {
    let inc = incarnation();
    let tag = format!("{name}#{inc}");
    let (mut client, mut events) = Client::new("chat:7000", name);
    let (l, t) = (log.clone(), tag.clone());
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            l.lock()
                .unwrap()
                .events
                .entry(t.clone())
                .or_default()
                .push(e);
        }
    });
    let mut think = sim::fork_seed(&tag);
    for i in 0..SAYS {
        let id = format!("{tag}.{i}");
        // The text is the id, so receivers can tell a re-post.
        match client.say(&id, &id).await {
            Ok(seq) => log.lock().unwrap().acked.entry(id).or_default().push(seq),
            Err(e) => tracing::info!(%id, error = %e, "gave up"),
        }
        think = think.rotate_left(17) ^ 0x2545_f491_4f6c_dd1d;
        client.listen(Duration::from_millis(20 + think % 200)).await;
    }
    log.lock().unwrap().finished.insert(name, inc);
    // Stay connected until the server says goodbye.
    loop {
        if client.ensure_connected().await.is_err() {
            sleep(Duration::from_millis(50)).await;
            continue;
        }
        while client.listen(Duration::from_secs(1)).await {}
    }
}

#[sim::test(seeds = 0..30, check_determinism)]
async fn the_room_keeps_its_promises_through_faults_and_shutdown() {
    let stopped = Arc::new(AtomicBool::new(false));
    let s = stopped.clone();
    let config = Config {
        idle: Duration::from_secs(5),
        purge_every: Duration::from_secs(1),
        grace: Duration::from_secs(1),
    };
    let server = sim::node("chat").start(move || {
        let (s, config) = (s.clone(), config.clone());
        async move {
            chat::main(7000, config).await;
            s.store(true, Ordering::SeqCst);
        }
    });
    let log = Arc::new(Mutex::new(Log::default()));
    let nodes: Vec<sim::Node> = PEOPLE
        .iter()
        .map(|&name| {
            let log = log.clone();
            sim::node(name).start(move || participant(name, log.clone()))
        })
        .collect();

    // The plan: one participant cut off for a while, one crashed and
    // restarted.
    let plan = sim::fork_seed("plan");
    let ms = |shift: u32, lo: u64, range: u64| Duration::from_millis(lo + (plan >> shift) % range);
    let cut = PEOPLE[(plan % 3) as usize];
    let (cut_at, cut_for) = (ms(4, 50, 1500), ms(14, 100, 1500));
    sim::at(cut_at, move || sim::net::partition(cut, "chat"));
    sim::at(cut_at + cut_for, move || sim::net::heal(cut, "chat"));
    let crashed = nodes[((plan >> 24) % 3) as usize].clone();
    let (crash_at, down_for) = (ms(28, 100, 2000), ms(40, 50, 800));
    let c = crashed.clone();
    sim::at(crash_at, move || c.crash());
    sim::at(crash_at + down_for, move || crashed.restart());

    // Until the faults are over and every participant's current process
    // has said everything.
    loop {
        sleep(Duration::from_millis(100)).await;
        let done = {
            let log = log.lock().unwrap();
            nodes
                .iter()
                .zip(PEOPLE)
                .all(|(n, name)| log.finished.get(name) == Some(&tokio::sim::incarnation(n.id())))
        };
        if done && sim::elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    // Let the last messages reach everyone, then SIGTERM.
    sleep(Duration::from_millis(500)).await;
    let term_at = sim::elapsed();
    server.signal(SignalKind::terminate());
    while !stopped.load(Ordering::SeqCst) {
        assert!(
            sim::elapsed() - term_at < Duration::from_millis(1500),
            "the server did not stop within its 1 s grace period after SIGTERM"
        );
        sleep(Duration::from_millis(10)).await;
    }
    sleep(Duration::from_millis(100)).await;

    let log = log.lock().unwrap();
    // 1. An id is posted once; no two ids share a seq.
    let mut owner: BTreeMap<u64, &str> = BTreeMap::new();
    for (id, seqs) in &log.acked {
        assert!(
            seqs.windows(2).all(|w| w[0] == w[1]),
            "{id} got seqs {seqs:?}"
        );
        if let Some(other) = owner.insert(seqs[0], id) {
            panic!("seq {} was given to {other} and to {id}", seqs[0]);
        }
    }
    assert!(!log.acked.is_empty(), "nothing was said");
    // … and was pushed under one seq only.
    let mut pushed: BTreeMap<&str, u64> = BTreeMap::new();
    for e in log.events.values().flatten() {
        if let Event::Msg { seq, text, .. } = e {
            if let Some(first) = pushed.insert(text, *seq) {
                assert_eq!(first, *seq, "{text} was posted twice");
            }
        }
    }
    // 2. Each connection: every message after its WELCOME, in order.
    for (tag, events) in &log.events {
        let mut next: Option<u64> = None;
        for e in events {
            match e {
                Event::Welcome(w) => next = Some(w + 1),
                Event::Msg { seq, .. } => {
                    let want = next.expect("a message before any WELCOME");
                    assert_eq!(*seq, want, "{tag}: a gap or a duplicate: {events:?}");
                    next = Some(want + 1);
                }
                Event::Bye(_) => next = None,
            }
        }
    }
    // 3. Every participant's current process heard the goodbye.
    for (n, name) in nodes.iter().zip(PEOPLE) {
        let tag = format!("{name}#{}", tokio::sim::incarnation(n.id()));
        assert_eq!(
            log.events.get(&tag).and_then(|e| e.last()),
            Some(&Event::Bye("shutdown".into())),
            "{tag} was not told the server is shutting down"
        );
    }
    sim::sometimes!(
        log.events
            .values()
            .flatten()
            .filter(|e| matches!(e, Event::Welcome(_)))
            .count()
            > 3,
        "a participant reconnected"
    );
}
