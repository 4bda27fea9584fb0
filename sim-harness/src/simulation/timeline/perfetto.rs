//! The run as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev)
//! and chrome://tracing open: a process per node, with a `node` thread
//! (its down and paused spans as slices, lifecycle and fault calls and log
//! lines as instants), a thread per task that sent something (a short
//! slice per send; named by the runtime's description when the task was
//! still alive at the end), and a `network` thread (a short slice per
//! delivery, and per send with no task behind it); a flow joins each
//! message's send to its delivery. Times are microseconds.

use super::model::Model;
use serde_json::{json, Value};

const NODE: u64 = 1;
const NETWORK: u64 = 2;
/// A task's thread id: past the two fixed threads.
const TASK: u64 = 1000;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// A node's process id (Perfetto's pid 0 is special).
fn pid(lane: usize) -> usize {
    lane + 1
}

pub(crate) fn render(m: &Model) -> String {
    let mut ev: Vec<Value> = Vec::new();
    for (lane, name) in m.lanes.iter().enumerate() {
        ev.push(
            json!({"ph": "M", "name": "process_name", "pid": pid(lane), "args": {"name": name}}),
        );
        ev.push(json!({"ph": "M", "name": "process_sort_index", "pid": pid(lane), "args": {"sort_index": lane}}));
        for (tid, thread) in [(NODE, "node"), (NETWORK, "network")] {
            ev.push(json!({"ph": "M", "name": "thread_name", "pid": pid(lane), "tid": tid, "args": {"name": thread}}));
        }
    }
    for s in &m.spans {
        let end = s.end.unwrap_or(m.end_ns).max(s.start);
        ev.push(
            json!({"ph": "X", "name": s.kind, "cat": "lifecycle", "pid": pid(s.lane), "tid": NODE,
            "ts": us(s.start), "dur": us(end - s.start), "args": {"what": s.label}}),
        );
    }
    for k in &m.marks {
        ev.push(json!({"ph": "i", "s": "t", "name": k.kind, "cat": "lifecycle", "pid": pid(k.lane), "tid": NODE,
            "ts": us(k.at), "args": {"what": k.label}}));
    }
    for (at, lane, text) in &m.logs {
        let name: String = text.chars().take(80).collect();
        ev.push(
            json!({"ph": "i", "s": "t", "name": name, "cat": "log", "pid": pid(*lane), "tid": NODE,
            "ts": us(*at), "args": {"line": text}}),
        );
    }
    // Each task's thread, in the process of every node it sent from.
    let mut threads = std::collections::BTreeSet::new();
    for g in &m.msgs {
        if let Some(t) = g.task {
            if threads.insert((g.from, t)) {
                let name = m
                    .tasks
                    .get(&t)
                    .cloned()
                    .unwrap_or_else(|| format!("task {t}"));
                let tid = TASK + t;
                ev.push(
                    json!({"ph": "M", "name": "thread_name", "pid": pid(g.from), "tid": tid,
                    "args": {"name": name}}),
                );
            }
        }
    }
    for (id, g) in m.msgs.iter().enumerate() {
        let args = json!({"what": g.label, "bytes": g.bytes, "fate": g.fate, "to": m.lanes[g.to]});
        let tid = g.task.map_or(NETWORK, |t| TASK + t);
        let send = format!("send {}", g.kind);
        ev.push(
            json!({"ph": "X", "name": send, "cat": "net", "pid": pid(g.from), "tid": tid,
            "ts": us(g.sent), "dur": 0.001, "args": args}),
        );
        let Some(arrive) = g.arrive else { continue };
        ev.push(json!({"ph": "s", "id": id, "name": g.kind, "cat": "net", "pid": pid(g.from), "tid": tid,
            "ts": us(g.sent)}));
        let args = json!({"what": g.label, "from": m.lanes[g.from]});
        ev.push(
            json!({"ph": "X", "name": format!("recv {}", g.kind), "cat": "net", "pid": pid(g.to),
            "tid": NETWORK, "ts": us(arrive), "dur": 0.001, "args": args}),
        );
        ev.push(
            json!({"ph": "f", "bp": "e", "id": id, "name": g.kind, "cat": "net", "pid": pid(g.to),
            "tid": NETWORK, "ts": us(arrive)}),
        );
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ns"}).to_string()
}
