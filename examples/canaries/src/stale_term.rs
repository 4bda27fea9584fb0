//! Leader election in the manner of Raft, over UDP between three nodes.
//! A node that hears no leader for its election timeout becomes a
//! candidate: it moves to the next term, votes for itself and asks the
//! others; a node grants one vote per term; a candidate with a majority
//! leads that term and sends heartbeats. The buggy candidate counts every
//! granted vote it receives, without checking the term the vote was for:
//! a grant from an election it already gave up on, delivered late, counts
//! toward its next term, and two nodes lead the same term. The fix counts
//! only votes for its current term.

use super::Variant;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::Notify;
use tokio::time::Instant;

pub const PORT: u16 = 7400;
/// The cluster's size.
pub const NODES: usize = 3;
/// How long the nemesis pauses nodes (a second more runs after it).
pub const RUN: Duration = Duration::from_secs(6);
/// The nemesis's period: each tick, with no node paused, it pauses one with
/// p = 1/[`PAUSE_ODDS`]; a paused node resumes with p = 1/2.
pub const TICK: Duration = Duration::from_millis(50);
/// See [`TICK`].
pub const PAUSE_ODDS: u64 = 8;
/// A leader's heartbeat period.
pub const HEARTBEAT: Duration = Duration::from_millis(50);

/// Who claimed to lead each term (what the nodes log when they win), and
/// a signal for whoever checks them; and which nodes are candidates now
/// (what they log when they stand and when they stop).
#[derive(Clone, Default)]
pub struct Claims {
    pub terms: Arc<Mutex<BTreeMap<u64, BTreeSet<usize>>>>,
    pub new: Arc<Notify>,
    pub candidates: Arc<Mutex<BTreeSet<usize>>>,
}

impl Claims {
    fn claim(&self, term: u64, me: usize) {
        self.terms
            .lock()
            .unwrap()
            .entry(term)
            .or_default()
            .insert(me);
        self.new.notify_one();
    }

    fn standing(&self, me: usize, candidate: bool) {
        let mut c = self.candidates.lock().unwrap();
        if candidate {
            c.insert(me);
        } else {
            c.remove(&me);
        }
    }
}

pub fn addr(node: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 4, node as u8 + 1], PORT))
}

enum Role {
    Follower,
    Candidate(BTreeSet<usize>),
    Leader,
}

/// Node `me`: `timeout()` draws each election timeout in milliseconds.
pub async fn serve(me: usize, variant: Variant, claims: Claims, mut timeout: impl FnMut() -> u64) {
    let socket = UdpSocket::bind(("0.0.0.0", PORT))
        .await
        .expect("the election port is free");
    let (mut term, mut voted_for) = (0u64, None::<usize>);
    let mut role = Role::Follower;
    let mut deadline = Instant::now() + Duration::from_millis(timeout());
    let mut buf = [0u8; 64];
    loop {
        let received = tokio::select! {
            r = socket.recv_from(&mut buf) => r.ok(),
            () = tokio::time::sleep_until(deadline) => None,
        };
        let mut send = Vec::new();
        match received {
            None => {
                if let Role::Leader = role {
                    deadline = Instant::now() + HEARTBEAT;
                    send.push(format!("BEAT {term} {me}"));
                } else {
                    term += 1;
                    voted_for = Some(me);
                    role = Role::Candidate(BTreeSet::from([me]));
                    claims.standing(me, true);
                    deadline = Instant::now() + Duration::from_millis(timeout());
                    send.push(format!("ASK {term} {me}"));
                }
            }
            Some((n, _)) => {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                let w: Vec<&str> = text.split(' ').collect();
                let (Some(Ok(t)), Some(Ok(from))) = (
                    w.get(1).map(|t| t.parse::<u64>()),
                    w.get(2).map(|f| f.parse::<usize>()),
                ) else {
                    continue;
                };
                if t > term {
                    term = t;
                    voted_for = None;
                    role = Role::Follower;
                    claims.standing(me, false);
                }
                match w[0] {
                    "ASK" => {
                        let grant = t == term && voted_for.is_none_or(|v| v == from);
                        if grant {
                            voted_for = Some(from);
                            deadline = Instant::now() + Duration::from_millis(timeout());
                        }
                        let reply = format!("VOTE {term} {me} {}", u8::from(grant));
                        let _ = socket.send_to(reply.as_bytes(), addr(from)).await;
                    }
                    "VOTE" if w.get(3) == Some(&"1") => {
                        // BUG (buggy): a vote for an earlier term counts too.
                        let counts = variant == Variant::Buggy || t == term;
                        if let (Role::Candidate(votes), true) = (&mut role, counts) {
                            votes.insert(from);
                            if votes.len() * 2 > NODES {
                                role = Role::Leader;
                                claims.standing(me, false);
                                claims.claim(term, me);
                                deadline = Instant::now();
                            }
                        }
                    }
                    "BEAT" if t == term => {
                        if let Role::Candidate(_) = role {
                            role = Role::Follower;
                            claims.standing(me, false);
                        }
                        deadline = Instant::now() + Duration::from_millis(timeout());
                    }
                    _ => {}
                }
            }
        }
        for message in send {
            for peer in (0..NODES).filter(|&p| p != me) {
                let _ = socket.send_to(message.as_bytes(), addr(peer)).await;
            }
        }
    }
}

/// Three nodes elect leaders for [`RUN`]; the network delays datagrams by
/// a seeded jitter and a nemesis pauses a seeded node now and then (a
/// stop-the-world pause, drawn as the run goes, see [`TICK`]), which brings
/// on new elections. No term may have two leaders.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    let claims = Claims::default();
    let mut rng = sim::Rng::from_seed(sim::fork_seed("stale_term"));
    let mut nodes = Vec::new();
    for me in 0..NODES {
        let c = claims.clone();
        let seed = rng.next_u64();
        let node = sim::node(format!("n{me}"))
            .ip(&format!("10.0.4.{}", me + 1))
            .start(move || {
                let mut timeouts = sim::Rng::from_seed(seed);
                serve(me, variant, c.clone(), move || 150 + timeouts.below(150))
            });
        nodes.push(node);
    }
    for a in &nodes {
        for b in &nodes {
            if a.name() != b.name() {
                let jitter = Duration::from_millis(rng.below(20));
                sim::net::set_latency(a, b, Duration::from_millis(1), jitter);
            }
        }
    }
    // The pauses, drawn as the run goes (so exploration can branch from a
    // moment and pause otherwise from there): each tick, with no node
    // paused, one is paused with p = 1/PAUSE_ODDS; a paused node resumes
    // with p = 1/2 at each later tick. The nemesis marks how many ticks it
    // has held a candidate paused, so exploration climbs a pause's length
    // one tick at a time.
    let nemesis = async {
        let mut rng = sim::Rng::from_seed(sim::fork_seed("stale_term.nemesis"));
        let mut paused: Option<(usize, u64)> = None;
        while sim::elapsed() < RUN {
            tokio::time::sleep(TICK).await;
            paused = match paused {
                None if rng.below(PAUSE_ODDS) == 0 => {
                    let node = rng.below(NODES as u64) as usize;
                    nodes[node].pause();
                    Some((node, 1))
                }
                None => None,
                Some((node, _)) if rng.below(2) == 0 => {
                    nodes[node].resume();
                    None
                }
                Some((node, ticks)) => Some((node, ticks + 1)),
            };
            if let Some((node, ticks)) = paused {
                if claims.candidates.lock().unwrap().contains(&node) {
                    sim::state!("ticks a candidate is paused", ticks);
                }
            }
        }
        if let Some((node, _)) = paused {
            nodes[node].resume();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    tokio::pin!(nemesis);
    // Checked at every claim, so a run ends at its second leader of a
    // term rather than a second after the last pause.
    loop {
        tokio::select! {
            () = &mut nemesis => break,
            () = claims.new.notified() => check(&claims),
        }
    }
    check(&claims);
}

/// No term has two leaders.
#[cfg(simulation)]
fn check(claims: &Claims) {
    for (term, leaders) in claims.terms.lock().unwrap().iter() {
        assert!(
            leaders.len() == 1,
            "term {term} has two leaders: {leaders:?}"
        );
    }
}
