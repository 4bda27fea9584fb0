//! The timeline page: one self-contained HTML file (the template
//! `page.html`, its script and style inline, the run embedded as JSON), so
//! it opens from disk with no network.

use super::model::Model;
use super::Ending;
use serde_json::{json, Value};
use sim_runtime::sim::Class;

const TEMPLATE: &str = include_str!("page.html");

/// The message kinds, as the page's `KINDS` numbers them.
const KINDS: [&str; 6] = ["connect", "syn", "data", "fin", "rst", "udp"];

/// The run as the page's data: arrays rather than objects, so 100,000
/// messages stay a few megabytes.
pub(crate) fn data(m: &Model, end: &Ending<'_>) -> Value {
    let t = |v: Option<u64>| v.map_or(-1, |v| v as i64);
    json!({
        "meta": {
            "test": end.test,
            "seed": end.seed,
            "schedule": end.schedule,
            "class": end.class.map(Class::name),
            "end": m.end_ns,
            "dropped": m.dropped,
        },
        "lanes": m.lanes,
        "spans": m.spans.iter().map(|s| json!([s.lane, s.start, t(s.end), s.kind, s.label])).collect::<Vec<_>>(),
        "marks": m.marks.iter().map(|k| json!([k.lane, k.at, k.kind, k.label])).collect::<Vec<_>>(),
        "msgs": m.msgs.iter().map(|g| {
            let kind = KINDS.iter().position(|k| *k == g.kind).unwrap_or(2);
            json!([g.from, g.to, g.sent, t(g.arrive), kind, g.bytes, g.fate, g.label])
        }).collect::<Vec<_>>(),
        "logs": m.logs.iter().map(|(at, lane, text)| json!([at, lane, text])).collect::<Vec<_>>(),
        "failure": m.failure.as_ref().map(|(at, step, text)| json!({"at": at, "step": step, "text": text})),
        "verdicts": end.markers.iter().map(|(at, step, label)| json!([at, step, label])).collect::<Vec<_>>(),
    })
}

/// The page's HTML.
pub(crate) fn render(m: &Model, end: &Ending<'_>) -> String {
    // Inside a <script> element only `</` can end it early.
    let json = data(m, end).to_string().replace("</", "<\\/");
    let title = format!("{} seed {}", end.test, end.seed)
        .replace('&', "&amp;")
        .replace('<', "&lt;");
    TEMPLATE
        .replacen("__TITLE__", &title, 1)
        .replacen("__DATA__", &json, 1)
}
