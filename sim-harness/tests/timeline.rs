//! The recorder and what it feeds: a recorded run makes the same decisions
//! as an unrecorded one; the pcap and Perfetto exports parse back with the
//! exchange the run made; the page is written for a passing seed with
//! SIM_TIMELINE=1; leftover tasks are named.
#![cfg(simulation)]

use sim::__private::{run, Seeds};
use sim_runtime::__private::harness::{
    run_seed, set_recording, take_record, NetEvent, SeedSettings,
};
use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{TcpListener, TcpStream, UdpSocket};
use sim_runtime::time::{sleep, Duration};
use std::path::PathBuf;

mod common;

/// A small cluster: an upper-casing TCP server, a client that sends two
/// writes and reads the answer, a datagram, a partition and heal, a crash.
async fn exchange() {
    let server = sim::node("server").ip("10.0.0.1").start(|| async {
        let l = TcpListener::bind("0.0.0.0:7000").await.unwrap();
        let u = UdpSocket::bind("0.0.0.0:7001").await.unwrap();
        sim_runtime::spawn(async move {
            let mut buf = [0u8; 64];
            while let Ok((n, _)) = u.recv_from(&mut buf).await {
                assert!(n > 0);
            }
        });
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            sim_runtime::spawn(async move {
                let mut buf = vec![0u8; 10];
                s.read_exact(&mut buf).await.unwrap();
                s.write_all(&buf.to_ascii_uppercase()).await.unwrap();
            });
        }
    });
    let client = sim::node("client").ip("10.0.0.2").build();
    client
        .spawn(async {
            sleep(Duration::from_millis(5)).await;
            let u = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            u.send_to(b"ping", "10.0.0.1:7001").await.unwrap();
            // The server may not listen yet (early timers fire sleeps early).
            let mut s = loop {
                match TcpStream::connect("10.0.0.1:7000").await {
                    Ok(s) => break s,
                    Err(_) => sleep(Duration::from_millis(5)).await,
                }
            };
            s.write_all(b"hello").await.unwrap();
            sleep(Duration::from_millis(3)).await;
            s.write_all(b"world").await.unwrap();
            let mut answer = vec![0u8; 10];
            s.read_exact(&mut answer).await.unwrap();
            assert_eq!(answer, b"HELLOWORLD");
        })
        .await
        .unwrap();
    sim::net::partition("server", "client");
    sleep(Duration::from_millis(50)).await;
    sim::net::heal("server", "client");
    server.crash();
    sleep(Duration::from_millis(10)).await;
}

fn settings(seed: u64) -> SeedSettings {
    SeedSettings {
        seed,
        record: true,
        ..SeedSettings::default()
    }
}

#[test]
fn recording_changes_no_decision_and_no_fingerprint() {
    for seed in 0..8 {
        let plain = std::thread::spawn(move || run_seed(&settings(seed), exchange))
            .join()
            .unwrap();
        let (recorded, record) = std::thread::spawn(move || {
            set_recording(true);
            let o = run_seed(&settings(seed), exchange);
            set_recording(false);
            (o, take_record())
        })
        .join()
        .unwrap();
        assert!(plain.passed(), "seed {seed}: {}", plain.message);
        assert!(recorded.passed(), "seed {seed}: {}", recorded.message);
        assert_eq!(plain.fingerprint, recorded.fingerprint, "seed {seed}");
        assert_eq!(plain.decisions, recorded.decisions, "seed {seed}");
        assert_eq!(plain.step, recorded.step, "seed {seed}");
        let record = record.expect("a recorded run leaves its record");
        let names: Vec<&str> = record.nodes.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["main", "server", "client"]);
        let connects = record
            .traffic
            .iter()
            .filter(|e| matches!(e, NetEvent::Connect { .. }))
            .count();
        assert!(connects >= 1, "seed {seed}");
        let datagrams = record
            .traffic
            .iter()
            .filter(|e| matches!(e, NetEvent::Datagram { .. }))
            .count();
        assert_eq!(datagrams, 1, "seed {seed}");
        // Each event names the task whose call made it: every byte the
        // client wrote came from one task's calls.
        assert_eq!(record.traffic_tasks.len(), record.traffic.len());
        let writers: std::collections::BTreeSet<Option<u64>> = record
            .traffic
            .iter()
            .zip(&record.traffic_tasks)
            .filter(|(e, _)| {
                matches!(
                    e,
                    NetEvent::Segment {
                        conn: 0,
                        dir: 0,
                        len: 1..,
                        ..
                    }
                )
            })
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(writers.len(), 1, "seed {seed}: {writers:?}");
        assert!(writers.iter().all(Option::is_some), "seed {seed}");
    }
}

#[test]
fn an_unrecorded_run_leaves_no_record() {
    let record = std::thread::spawn(|| {
        let o = run_seed(&settings(3), exchange);
        assert!(o.passed());
        take_record()
    })
    .join()
    .unwrap();
    assert!(record.is_none());
}

#[test]
fn leftover_tasks_are_named_with_node_and_spawn_location() {
    let o = std::thread::spawn(|| {
        run_seed(&settings(1), || async {
            let n = sim::node("idler").build();
            n.spawn(async { sleep(Duration::from_secs(3600)).await });
        })
    })
    .join()
    .unwrap();
    assert!(o.passed(), "not strict: leftovers are no failure");
    assert_eq!(o.leftover.len(), 1, "{:?}", o.leftover);
    assert!(
        o.leftover[0].contains("on node 'idler'"),
        "{:?}",
        o.leftover
    );
    assert!(o.leftover[0].contains("timeline.rs"), "{:?}", o.leftover);
}

fn out_dir(test: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/sim")
        .join(test)
}

/// One pcap record: (time ns, packet bytes).
fn pcap_packets(bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let u32le = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(u32le(&bytes[0..4]), 0xa1b2_3c4d, "nanosecond pcap magic");
    assert_eq!(u32le(&bytes[20..24]), 101, "LINKTYPE_RAW");
    let mut at = 24;
    let mut out = Vec::new();
    while at < bytes.len() {
        let (sec, nsec) = (u32le(&bytes[at..]), u32le(&bytes[at + 4..]));
        let (incl, orig) = (u32le(&bytes[at + 8..]), u32le(&bytes[at + 12..]));
        assert_eq!(incl, orig);
        let p = bytes[at + 16..at + 16 + incl as usize].to_vec();
        out.push((u64::from(sec) * 1_000_000_000 + u64::from(nsec), p));
        at += 16 + incl as usize;
    }
    assert_eq!(at, bytes.len());
    out
}

struct Tcp {
    src: ([u8; 4], u16),
    dst: ([u8; 4], u16),
    seq: u32,
    flags: u8,
    payload: Vec<u8>,
}

fn parse_tcp(p: &[u8]) -> Option<Tcp> {
    assert_eq!(p[0], 0x45, "IPv4, 20-byte header");
    assert_eq!(
        u16::from_be_bytes([p[2], p[3]]) as usize,
        p.len(),
        "IP total length"
    );
    // The header checksum: the sum over the header is all ones.
    let mut sum: u32 = p[..20]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    assert_eq!(sum, 0xffff, "IP header checksum");
    if p[9] == 17 {
        assert_eq!(
            u16::from_be_bytes([p[24], p[25]]) as usize,
            p.len() - 20,
            "UDP length"
        );
        return None;
    }
    assert_eq!(p[9], 6);
    let t = &p[20..];
    let ip = |b: &[u8]| [b[0], b[1], b[2], b[3]];
    Some(Tcp {
        src: (ip(&p[12..]), u16::from_be_bytes([t[0], t[1]])),
        dst: (ip(&p[16..]), u16::from_be_bytes([t[2], t[3]])),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        flags: t[13],
        payload: t[usize::from(t[12] >> 4) * 4..].to_vec(),
    })
}

#[test]
fn exports_parse_back_and_a_passing_seed_gets_its_page() {
    std::env::set_var("SIM_TIMELINE", "1");
    std::env::set_var("SIM_EXPORT", "perfetto,pcap");
    run(
        common::options("timeline::exports", file!(), Seeds::One(4)),
        exchange,
    );
    let dir = out_dir("exports");
    let page = std::fs::read_to_string(dir.join("4.html")).expect("the page");
    assert!(page.contains("\"lanes\":[\"main\",\"server\",\"client\"]"));
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no network"
    );

    // pcap: the handshake, the two writes and the answer, in order.
    let packets = pcap_packets(&std::fs::read(dir.join("4.pcap")).expect("the pcap"));
    let tcp: Vec<Tcp> = packets.iter().filter_map(|(_, p)| parse_tcp(p)).collect();
    let client_ip = [10, 0, 0, 2];
    let syn = tcp.iter().find(|t| t.flags == 0x02).expect("a SYN");
    assert_eq!(syn.src.0, client_ip);
    assert_eq!(syn.dst, ([10, 0, 0, 1], 7000));
    assert!(
        tcp.iter().any(|t| t.flags == 0x12 && t.dst == syn.src),
        "a SYN-ACK"
    );
    let mut expect = syn.seq.wrapping_add(1);
    let mut sent = Vec::new();
    for t in tcp
        .iter()
        .filter(|t| t.src == syn.src && !t.payload.is_empty())
    {
        assert_eq!(
            t.seq, expect,
            "client sequence numbers advance by payload length"
        );
        expect = t.seq.wrapping_add(t.payload.len() as u32);
        sent.extend_from_slice(&t.payload);
    }
    assert_eq!(sent, b"helloworld");
    let answer: Vec<u8> = tcp
        .iter()
        .filter(|t| t.dst == syn.src)
        .flat_map(|t| t.payload.clone())
        .collect();
    assert_eq!(answer, b"HELLOWORLD");
    assert!(
        tcp.iter().any(|t| t.flags & 0x01 != 0),
        "a FIN when the server's task closes its stream"
    );
    assert!(
        packets.windows(2).all(|w| w[0].0 <= w[1].0),
        "packets in time order"
    );

    // Perfetto: a process per node, a flow per delivered message.
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("4.perfetto.json")).expect("the perfetto export"),
    )
    .expect("valid JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let processes: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(processes, ["main", "server", "client"]);
    let starts = events.iter().filter(|e| e["ph"] == "s").count();
    let ends = events.iter().filter(|e| e["ph"] == "f").count();
    assert_eq!(starts, ends);
    // The connect, "hello", "world", the answer (maybe in one segment),
    // and the datagram at least.
    assert!(starts >= 5, "{starts} flows");
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "down" && e["pid"] == 2));
    // The client's sends are slices on its task's thread (tid 1000 + id).
    let task_threads: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["pid"] == 3 && e["tid"].as_u64() >= Some(1000))
        .collect();
    assert!(!task_threads.is_empty(), "a task thread on the client");
    let hello = events
        .iter()
        .find(|e| {
            e["ph"] == "X"
                && e["args"]["what"]
                    .as_str()
                    .is_some_and(|w| w.contains("hello"))
        })
        .expect("the send of hello");
    assert_eq!(hello["pid"], 3);
    assert!(hello["tid"].as_u64() >= Some(1000), "{hello}");
}

#[test]
fn a_failing_seed_report_names_its_page() {
    let r = common::report(
        common::options("timeline::failing", file!(), Seeds::One(2)),
        || async {
            exchange().await;
            panic!("planted failure after the exchange");
        },
    );
    assert!(r.contains("reproduced when run again: yes"), "{r}");
    let path = r
        .lines()
        .find_map(|l| l.strip_prefix("sim: timeline: "))
        .and_then(|l| l.split(" (").next())
        .expect("the report names the page");
    assert!(path.ends_with("failing/2.html"), "{path}");
    let page = std::fs::read_to_string(path).expect("the page exists");
    assert!(page.contains("planted failure after the exchange"));
    assert!(page.contains("\"down\""), "the crash is a span");
    assert!(page.contains("partition server client"));
    // The failure follows whatever is drawn: certain from the first step
    // sampled, which the page marks.
    assert!(
        r.contains("sim: the failure became likely at step 1 ")
            && r.contains("sim: and certain from step 1 "),
        "{r}"
    );
    assert!(page.contains("\"verdicts\":[["), "the page marks them");
    assert!(page.contains("\"certain\""), "the page marks them");
}
