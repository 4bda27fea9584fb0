//! The run as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev)
//! and chrome://tracing open: a process per node, with a `node` thread
//! (its down and paused spans as slices, lifecycle and fault calls and log
//! lines as instants) and a `network` thread (a short slice per send and
//! per delivery, joined by a flow per message). Times are microseconds.

use super::model::Model;
use serde_json::{json, Value};

const NODE: u32 = 1;
const NETWORK: u32 = 2;

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
    for (id, g) in m.msgs.iter().enumerate() {
        let args = json!({"what": g.label, "bytes": g.bytes, "fate": g.fate, "to": m.lanes[g.to]});
        ev.push(
            json!({"ph": "X", "name": format!("send {}", g.kind), "cat": "net", "pid": pid(g.from),
            "tid": NETWORK, "ts": us(g.sent), "dur": 0.001, "args": args}),
        );
        let Some(arrive) = g.arrive else { continue };
        ev.push(json!({"ph": "s", "id": id, "name": g.kind, "cat": "net", "pid": pid(g.from), "tid": NETWORK,
            "ts": us(g.sent)}));
        ev.push(json!({"ph": "X", "name": format!("recv {}", g.kind), "cat": "net", "pid": pid(g.to),
            "tid": NETWORK, "ts": us(arrive), "dur": 0.001, "args": {"what": g.label, "from": m.lanes[g.from]}}));
        ev.push(
            json!({"ph": "f", "bp": "e", "id": id, "name": g.kind, "cat": "net", "pid": pid(g.to),
            "tid": NETWORK, "ts": us(arrive)}),
        );
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ns"}).to_string()
}
