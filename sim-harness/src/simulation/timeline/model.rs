//! The run as the page and the Perfetto export draw it: a lane per node,
//! spans (down, paused, partitioned, clogged), marks (each lifecycle or
//! fault call), messages from lane to lane (connects, segments,
//! datagrams) with their fate, and the trace's lines on their lanes.

use super::{Ending, Noted, Recorded};
use sim_runtime::__private::harness::{NetEvent, SegmentKind};
use sim_runtime::sim::Fault;
use std::collections::BTreeMap;

pub(crate) struct Span {
    pub lane: usize,
    pub start: u64,
    /// `None`: still open when the run ended.
    pub end: Option<u64>,
    pub kind: &'static str,
    pub label: String,
}

pub(crate) struct Mark {
    pub lane: usize,
    pub at: u64,
    pub kind: &'static str,
    pub label: String,
}

pub(crate) struct Msg {
    pub from: usize,
    pub to: usize,
    pub sent: u64,
    /// `None`: never arrived (see `fate`).
    pub arrive: Option<u64>,
    /// `connect`, `syn` (a connect that got no connection), `data`, `fin`,
    /// `rst`, `udp`.
    pub kind: &'static str,
    pub bytes: usize,
    /// Empty when delivered untouched; else what a fault did to it.
    pub fate: &'static str,
    pub label: String,
    /// The runtime's id of the task whose call sent it, when known.
    pub task: Option<u64>,
}

pub(crate) struct Model {
    pub lanes: Vec<String>,
    pub spans: Vec<Span>,
    pub marks: Vec<Mark>,
    pub msgs: Vec<Msg>,
    /// `(time, lane, text)`.
    pub logs: Vec<(u64, usize, String)>,
    pub end_ns: u64,
    /// `(time, step, text)` of the failure.
    pub failure: Option<(u64, u64, String)>,
    /// Network events past the log's bound, not drawn.
    pub dropped: u64,
    /// What is known of the tasks that sent messages: the runtime's
    /// description of those still alive at the end, else `task N`.
    pub tasks: BTreeMap<u64, String>,
}

/// At most this many bytes of a payload are shown on the page.
const PREVIEW: usize = 64;

pub(crate) fn preview(payload: &[u8]) -> String {
    let mut s = String::new();
    for &b in payload.iter().take(PREVIEW) {
        match b {
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    if payload.len() > PREVIEW {
        s.push('…');
    }
    s
}

impl Model {
    pub(crate) fn build(rec: &Recorded, trace: &[String], end: &Ending<'_>) -> Model {
        let mut m = Model {
            lanes: rec.run.nodes.iter().map(|(n, _)| n.clone()).collect(),
            spans: Vec::new(),
            marks: Vec::new(),
            msgs: Vec::new(),
            logs: Vec::new(),
            end_ns: end.now_ns,
            failure: end.class.map(|c| {
                let first = end.message.lines().next().unwrap_or("");
                (end.now_ns, end.step, format!("{c}: {first}"))
            }),
            dropped: rec.run.traffic_dropped,
            tasks: BTreeMap::new(),
        };
        if m.lanes.is_empty() {
            m.lanes.push("main".into());
        }
        m.notes(rec);
        m.traffic(rec);
        m.trace(trace);
        for msg in &m.msgs {
            m.end_ns = m.end_ns.max(msg.arrive.unwrap_or(msg.sent));
        }
        let alive: BTreeMap<u64, &str> = end
            .tasks
            .iter()
            .filter_map(|t| {
                let rest = t.strip_prefix("task ")?;
                let (id, what) = rest.split_once(' ')?;
                Some((id.parse().ok()?, what))
            })
            .collect();
        for msg in &mut m.msgs {
            if let Some(t) = msg.task {
                msg.label.push_str(&format!(" · sent by task {t}"));
                m.tasks.entry(t).or_insert_with(|| match alive.get(&t) {
                    Some(what) => format!("task {t} {what}"),
                    None => format!("task {t}"),
                });
            }
        }
        m
    }

    fn lane(&mut self, name: &str) -> usize {
        match self.lanes.iter().position(|l| l == name) {
            Some(i) => i,
            None => {
                self.lanes.push(name.to_string());
                self.lanes.len() - 1
            }
        }
    }

    /// Closes the open spans of `kind` that `pred` picks, at `at`.
    fn close(&mut self, kind: &str, at: u64, pred: impl Fn(&Span) -> bool) {
        for s in &mut self.spans {
            if s.end.is_none() && s.kind == kind && pred(s) {
                s.end = Some(at);
            }
        }
    }

    fn notes(&mut self, rec: &Recorded) {
        for n in &rec.notes {
            let args: Vec<&str> = n.args.iter().map(String::as_str).collect();
            let first = match n.what {
                Noted::Call(Fault::HealAll | Fault::ResetConnections | Fault::ConnectionFault) => 0,
                _ => args.first().map_or(0, |a| self.lane(a)),
            };
            let label = if args.is_empty() {
                n.what.name().to_string()
            } else {
                format!("{} {}", n.what.name(), args.join(" "))
            };
            self.marks.push(Mark {
                lane: first,
                at: n.at,
                kind: n.what.name(),
                label: label.clone(),
            });
            match n.what {
                Noted::Call(what) => self.call(what, n.at, first, &args, label),
                // A start ends the node's down span, as a restart does.
                Noted::Start => self.close("down", n.at, |s| s.lane == first),
                // A fake's fault is its mark alone.
                Noted::Fake(_) => {}
            }
        }
    }

    /// Draws the spans a control call opens or closes: `first` is the lane
    /// of the node it names first, `label` its mark's label.
    fn call(&mut self, what: Fault, at: u64, first: usize, args: &[&str], label: String) {
        let pair = |m: &mut Model| -> Option<(usize, usize)> {
            Some((m.lane(args.first()?), m.lane(args.get(1)?)))
        };
        let span = |lane, kind, label| Span {
            lane,
            start: at,
            end: None,
            kind,
            label,
        };
        match what {
            Fault::Crash | Fault::Kill => {
                self.close("down", at, |s| s.lane == first);
                let label = format!("{} ({what})", args.join(" "));
                self.spans.push(span(first, "down", label));
            }
            Fault::Restart => self.close("down", at, |s| s.lane == first),
            Fault::Pause => {
                let label = format!("{} paused", args.join(" "));
                self.spans.push(span(first, "paused", label));
            }
            Fault::Resume => self.close("paused", at, |s| s.lane == first),
            Fault::Partition | Fault::PartitionOneWay | Fault::Clog | Fault::ClogOneWay => {
                let Some((a, b)) = pair(self) else { return };
                let kind = match what {
                    Fault::Partition | Fault::PartitionOneWay => "partition",
                    _ => "clog",
                };
                for lane in [a, b] {
                    self.spans.push(span(lane, kind, label.clone()));
                }
            }
            Fault::ClogNode => self.spans.push(span(first, "clog", label)),
            Fault::UnclogNode => self.close("clog", at, |s| {
                s.lane == first && s.label.starts_with(Fault::ClogNode.name())
            }),
            Fault::Heal | Fault::Unclog => {
                let (Some(a), Some(b)) = (args.first(), args.get(1)) else {
                    return;
                };
                let (pa, pb) = (format!(" {a} {b}"), format!(" {b} {a}"));
                let between = |s: &Span| s.label.ends_with(&pa) || s.label.ends_with(&pb);
                self.close("partition", at, between);
                self.close("clog", at, between);
            }
            Fault::HealAll => {
                self.close("partition", at, |_| true);
                self.close("clog", at, |_| true);
            }
            _ => {}
        }
    }

    fn traffic(&mut self, rec: &Recorded) {
        let lane_of = |h: sim_runtime::__private::harness::HostId| h.0 as usize;
        // Each connection's lanes, and its segments (indices into `msgs`).
        let mut conns: BTreeMap<u64, [usize; 2]> = BTreeMap::new();
        let mut segs: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        // Each segment's direction and offset, by its index in `msgs`.
        let mut seg_at: BTreeMap<usize, (usize, u64)> = BTreeMap::new();
        let tasks = rec
            .run
            .traffic_tasks
            .iter()
            .copied()
            .chain(std::iter::repeat(None));
        for (e, task) in rec.run.traffic.iter().zip(tasks) {
            match e {
                NetEvent::Connect {
                    conn,
                    hosts,
                    addrs,
                    at,
                    ready,
                    ..
                } => {
                    let lanes = [lane_of(hosts[0]), lane_of(hosts[1])];
                    conns.insert(*conn, lanes);
                    self.msgs.push(Msg {
                        from: lanes[0],
                        to: lanes[1],
                        sent: *at,
                        arrive: Some(*ready),
                        kind: "connect",
                        bytes: 0,
                        fate: "",
                        label: format!("connect #{conn} {} → {}", addrs[0], addrs[1]),
                        task,
                    });
                }
                NetEvent::ConnectFailed {
                    host,
                    to_host,
                    from,
                    to,
                    at,
                    why,
                    ..
                } => self.msgs.push(Msg {
                    from: lane_of(*host),
                    to: to_host.map_or(lane_of(*host), lane_of),
                    sent: *at,
                    arrive: None,
                    kind: "syn",
                    bytes: 0,
                    fate: why,
                    label: format!("connect {from} → {to}: {why}"),
                    task,
                }),
                NetEvent::Segment {
                    conn,
                    dir,
                    kind,
                    offset,
                    len,
                    sent,
                    arrive,
                    payload,
                } => {
                    let Some(lanes) = conns.get(conn) else {
                        continue;
                    };
                    let kind = match kind {
                        SegmentKind::Data => "data",
                        SegmentKind::Fin => "fin",
                        SegmentKind::Rst => "rst",
                    };
                    segs.entry(*conn).or_default().push(self.msgs.len());
                    seg_at.insert(self.msgs.len(), (*dir, *offset));
                    self.msgs.push(Msg {
                        from: lanes[*dir],
                        to: lanes[1 - dir],
                        sent: *sent,
                        arrive: *arrive,
                        kind,
                        bytes: *len,
                        fate: if arrive.is_some() { "" } else { "held" },
                        label: format!("#{conn} {kind} @{offset} {len}B {}", preview(payload)),
                        task,
                    });
                }
                NetEvent::Release {
                    conn, dir, arrive, ..
                } => {
                    for &i in segs.get(conn).into_iter().flatten() {
                        let msg = &mut self.msgs[i];
                        let from = conns[conn][*dir];
                        if msg.from == from && msg.arrive.is_none() && msg.fate == "held" {
                            msg.arrive = Some(*arrive);
                            msg.fate = "held, then released";
                        }
                    }
                }
                NetEvent::DropHeld { conn, dir, .. } => {
                    for &i in segs.get(conn).into_iter().flatten() {
                        let msg = &mut self.msgs[i];
                        if msg.from == conns[conn][*dir] && msg.arrive.is_none() {
                            msg.fate = "held, then dropped";
                        }
                    }
                }
                NetEvent::Discard {
                    conn,
                    dir,
                    offset: cut,
                    ..
                } => {
                    // The sender's RST discarded its send queue: what lay
                    // past the cut (data, or a FIN behind it) never left.
                    for &i in segs.get(conn).into_iter().flatten() {
                        let msg = &mut self.msgs[i];
                        let gone = seg_at
                            .get(&i)
                            .is_some_and(|&(d, off)| d == *dir && off >= *cut);
                        if gone && msg.kind != "rst" {
                            msg.arrive = None;
                            msg.fate = "discarded by the sender's reset";
                        }
                    }
                }
                NetEvent::Reset { conn, at } => {
                    for &i in segs.get(conn).into_iter().flatten() {
                        let msg = &mut self.msgs[i];
                        if msg.arrive.is_none_or(|a| a > *at) {
                            msg.arrive = None;
                            msg.fate = "lost in a reset";
                        }
                    }
                    if let Some(lanes) = conns.get(conn) {
                        for lane in *lanes {
                            self.marks.push(Mark {
                                lane,
                                at: *at,
                                kind: "reset",
                                label: format!("connection #{conn} reset"),
                            });
                        }
                    }
                }
                NetEvent::Vanish { conn, end, at } => {
                    let Some(lanes) = conns.get(conn).copied() else {
                        continue;
                    };
                    for &i in segs.get(conn).into_iter().flatten() {
                        let msg = &mut self.msgs[i];
                        let toward = msg.to == lanes[*end] && msg.arrive.is_some_and(|a| a > *at);
                        let from_held = msg.from == lanes[*end] && msg.arrive.is_none();
                        if toward || from_held {
                            msg.arrive = None;
                            msg.fate = "lost in a crash";
                        }
                    }
                }
                NetEvent::Datagram {
                    from_host,
                    to_host,
                    from,
                    to,
                    sent,
                    arrive,
                    why,
                    len,
                    payload,
                } => self.msgs.push(Msg {
                    from: lane_of(*from_host),
                    to: lane_of(*to_host),
                    sent: *sent,
                    arrive: *arrive,
                    kind: "udp",
                    bytes: *len,
                    fate: why,
                    label: format!("udp {from} → {to} {len}B {}", preview(payload)),
                    task,
                }),
            }
        }
        for lanes in conns.values() {
            for &l in lanes {
                while self.lanes.len() <= l {
                    self.lanes.push(format!("host {}", self.lanes.len()));
                }
            }
        }
    }

    /// The trace's lines, each on its node's lane (`   1.250000000s kv1
    /// INFO  sim: crash node=kv1`); lines outside the simulation are left out.
    fn trace(&mut self, trace: &[String]) {
        for line in trace {
            let mut parts = line.trim_start().splitn(3, ' ');
            let (Some(time), Some(node)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Some(at) = parse_time(time) else { continue };
            let text = parts.next().unwrap_or("");
            let lane = match self.lanes.iter().position(|l| l == node) {
                Some(l) => l,
                None => continue,
            };
            let text = text.trim_start();
            if let Some((disk, kind, label)) = disk_event(text) {
                // On the lane of the node whose disk it is (a crash is
                // called from another node).
                let lane = self.lanes.iter().position(|l| l == disk).unwrap_or(lane);
                self.marks.push(Mark {
                    lane,
                    at,
                    kind,
                    label,
                });
            }
            self.logs.push((at, lane, text.to_string()));
        }
    }
}

/// A disk event of the trace (`DEBUG sim::fs: sync_all node=db
/// path=/data`, `INFO  sim::fs: crash node=db … lost=…`, written by the
/// runtime's `fs/journal.rs`) as a mark: the disk's node, the mark's kind
/// and its label (for a crash, what it lost).
fn disk_event(text: &str) -> Option<(&str, &'static str, String)> {
    let (_, event) = text.split_once(" sim::fs: ")?;
    let (message, fields) = event.split_once(" node=")?;
    let node = fields.split(' ').next()?;
    let op = message.split(' ').next()?;
    let failed = message.contains(" failed");
    let kind = match op {
        "sync_all" | "sync_data" if failed => "sync failed",
        "sync_all" | "sync_data" => "sync",
        "crash" => "disk lost",
        "unseen:" => "write unseen",
        "create" => "create",
        "mkdir" => "mkdir",
        "symlink" => "symlink",
        "bind" => "bind",
        "link" => "link",
        "rename" => "rename",
        "unlink" => "unlink",
        "rmdir" => "rmdir",
        _ => return None,
    };
    let label = match event.split_once(" lost=") {
        Some((_, lost)) if op == "crash" => format!("the crash of {node} lost: {lost}"),
        _ => format!("{node}: {event}"),
    };
    Some((node, kind, label))
}

/// `12.000000345s` as nanoseconds.
fn parse_time(t: &str) -> Option<u64> {
    let t = t.strip_suffix('s')?;
    let (secs, nanos) = t.split_once('.')?;
    let nanos: u64 = format!("{nanos:0<9}").get(..9)?.parse().ok()?;
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the tests' runs end: a pass at 100 ns.
    fn ending() -> Ending<'static> {
        Ending {
            test: "t",
            seed: 0,
            class: None,
            message: "",
            step: 0,
            now_ns: 100,
            schedule: "random",
            tasks: &[],
            markers: &[],
        }
    }

    #[test]
    fn trace_times_parse() {
        assert_eq!(parse_time("1.250000000s"), Some(1_250_000_000));
        assert_eq!(parse_time("0.000000007s"), Some(7));
        assert_eq!(parse_time("(outside)"), None);
    }

    fn model_of(notes: &[(u64, Noted, &[&str])]) -> Model {
        model_traced(notes, &[])
    }

    fn model_traced(notes: &[(u64, Noted, &[&str])], trace: &[&str]) -> Model {
        let rec = Recorded {
            run: sim_runtime::__private::harness::RunRecord {
                nodes: ["main", "kv1", "kv2"]
                    .iter()
                    .map(|n| (n.to_string(), None))
                    .collect(),
                traffic: Vec::new(),
                traffic_tasks: Vec::new(),
                traffic_dropped: 0,
            },
            notes: notes
                .iter()
                .map(|(at, what, args)| super::super::Note {
                    at: *at,
                    what: *what,
                    args: args.iter().map(|a| a.to_string()).collect(),
                })
                .collect(),
        };
        let end = ending();
        let trace: Vec<String> = trace.iter().map(|l| l.to_string()).collect();
        Model::build(&rec, &trace, &end)
    }

    /// `(lane, start, end, kind)` of each span.
    fn spans(m: &Model) -> Vec<(usize, u64, Option<u64>, &'static str)> {
        m.spans
            .iter()
            .map(|s| (s.lane, s.start, s.end, s.kind))
            .collect()
    }

    #[test]
    fn a_partition_is_a_span_on_both_lanes_until_its_heal() {
        let m = model_of(&[
            (10, Noted::Call(Fault::Partition), &["kv1", "kv2"]),
            (20, Noted::Call(Fault::ClogOneWay), &["kv2", "kv1"]),
            (30, Noted::Call(Fault::Heal), &["kv2", "kv1"]),
        ]);
        assert_eq!(
            spans(&m),
            [
                (1, 10, Some(30), "partition"),
                (2, 10, Some(30), "partition"),
                (2, 20, Some(30), "clog"),
                (1, 20, Some(30), "clog"),
            ]
        );
        let marks: Vec<(usize, &str, &str)> = m
            .marks
            .iter()
            .map(|k| (k.lane, k.kind, k.label.as_str()))
            .collect();
        assert_eq!(
            marks,
            [
                (1, "partition", "partition kv1 kv2"),
                (2, "clog one way", "clog one way kv2 kv1"),
                (2, "heal", "heal kv2 kv1"),
            ]
        );
    }

    #[test]
    fn a_node_is_down_from_its_crash_to_its_restart_and_paused_until_resumed() {
        let m = model_of(&[
            (5, Noted::Start, &["kv1"]),
            (10, Noted::Call(Fault::Crash), &["kv1"]),
            (20, Noted::Call(Fault::Restart), &["kv1"]),
            (30, Noted::Call(Fault::Pause), &["kv2"]),
            (40, Noted::Call(Fault::Kill), &["kv2"]),
            (50, Noted::Start, &["kv2"]),
            (60, Noted::Call(Fault::ClogNode), &["kv1"]),
            (70, Noted::Call(Fault::HealAll), &[]),
        ]);
        assert_eq!(
            spans(&m),
            [
                (1, 10, Some(20), "down"),
                (2, 30, None, "paused"),
                (2, 40, Some(50), "down"),
                (1, 60, Some(70), "clog"),
            ]
        );
        assert_eq!(m.spans[0].label, "kv1 (crash)");
        assert_eq!(m.marks[0].kind, "start");
        assert_eq!(m.marks[7].lane, 0, "heal all is drawn on the first lane");
    }

    /// The disk's events in the trace (the runtime's `fs/journal.rs`) are
    /// marks on the lane of the node whose disk it is: a tick per
    /// operation, a crash's losses with the lost paths in the label, and a
    /// look at the disk that missed a write still in flight.
    #[test]
    fn disk_events_are_marks_on_their_nodes_lane() {
        let m = model_traced(
            &[(4_000_000, Noted::Call(Fault::Crash), &["kv1"])],
            &[
                "   0.001000000s kv1        DEBUG sim::fs: mkdir node=kv1 path=/data",
                "   0.002000000s kv1        DEBUG sim::fs: sync_data node=kv1 path=/data/x directory=false",
                "   0.003000000s kv1        DEBUG sim::fs: sync_all failed: nothing became durable node=kv1 path=/data/y",
                "   0.004000000s main       INFO  sim::fs: crash node=kv1 inodes_lost=2 torn_bytes_kept=0 lost=/data: a new directory, its directory not synced since; /tmp/x: a new file, its directory not synced since",
                "   0.005000000s kv2        INFO  kv: stored node=kv2",
                "   0.006000000s kv1        INFO  sim::fs: unseen: a tokio::fs::File write is still in Tokio's blocking pool node=kv1 path=/data/x bytes=2",
            ],
        );
        let marks: Vec<(usize, u64, &str)> =
            m.marks.iter().map(|k| (k.lane, k.at, k.kind)).collect();
        assert_eq!(
            marks,
            [
                (1, 4_000_000, "crash"),
                (1, 1_000_000, "mkdir"),
                (1, 2_000_000, "sync"),
                (1, 3_000_000, "sync failed"),
                (1, 4_000_000, "disk lost"),
                (1, 6_000_000, "write unseen"),
            ]
        );
        assert_eq!(
            m.marks[4].label,
            "the crash of kv1 lost: /data: a new directory, its directory not synced since; \
             /tmp/x: a new file, its directory not synced since"
        );
        assert_eq!(
            m.marks[2].label,
            "kv1: sync_data node=kv1 path=/data/x directory=false"
        );
        assert_eq!(m.logs.len(), 6, "every line is still a log line");
        assert_eq!(
            m.logs[3].1, 0,
            "the crash's line stays on the lane of who called it"
        );
    }

    /// A sender's reset discards its send queue: the segments past the cut,
    /// and the FIN behind them, never arrive; the one the cut splits and
    /// the other direction's do.
    #[test]
    fn segments_past_a_discard_never_arrive() {
        use sim_runtime::__private::harness::HostId;
        let seg = |dir: usize, kind, offset: u64, len: usize| NetEvent::Segment {
            conn: 0,
            dir,
            kind,
            offset,
            len,
            sent: 1,
            arrive: Some(2),
            payload: Vec::new(),
        };
        let traffic = vec![
            NetEvent::Connect {
                conn: 0,
                hosts: [HostId(1), HostId(2)],
                addrs: [
                    "10.0.0.1:5000".parse().unwrap(),
                    "10.0.0.2:80".parse().unwrap(),
                ],
                at: 0,
                established: 0,
                ready: 0,
            },
            seg(1, SegmentKind::Data, 0, 100),
            seg(1, SegmentKind::Data, 100, 100),
            seg(1, SegmentKind::Data, 200, 100),
            seg(1, SegmentKind::Fin, 300, 0),
            seg(0, SegmentKind::Data, 200, 100),
            NetEvent::Discard {
                conn: 0,
                dir: 1,
                offset: 150,
                at: 1,
            },
        ];
        let rec = Recorded {
            run: sim_runtime::__private::harness::RunRecord {
                nodes: ["main", "kv1", "kv2"]
                    .iter()
                    .map(|n| (n.to_string(), None))
                    .collect(),
                traffic_tasks: vec![None; traffic.len()],
                traffic,
                traffic_dropped: 0,
            },
            notes: Vec::new(),
        };
        let end = ending();
        let m = Model::build(&rec, &[], &end);
        let fates: Vec<(&str, Option<u64>, &str)> =
            m.msgs.iter().map(|g| (g.kind, g.arrive, g.fate)).collect();
        let gone = "discarded by the sender's reset";
        assert_eq!(
            fates,
            [
                ("connect", Some(0), ""),
                ("data", Some(2), ""),
                ("data", Some(2), ""),
                ("data", None, gone),
                ("fin", None, gone),
                ("data", Some(2), ""),
            ]
        );
    }

    #[test]
    fn previews_escape_and_cut() {
        assert_eq!(preview(b"PUT k\n"), "PUT k\\n");
        assert_eq!(preview(&[0, 255]), "\\x00\\xff");
        assert!(preview(&[b'a'; 100]).ends_with('…'));
    }
}
