//! The large-cluster chart (`docs/bench-clusters.svg`): cost per round trip
//! against node count, one line per peer, both axes logarithmic, and a mark
//! where a peer did not finish within the budget. Plain SVG text, no
//! dependency.

use std::fmt::Write as _;

/// One peer's line: its name, colour and, per node count, the µs per round
/// trip (`None`: did not finish within the budget).
pub struct Series {
    pub peer: &'static str,
    pub colour: &'static str,
    pub points: Vec<(usize, Option<f64>)>,
}

const W: f64 = 800.0;
const H: f64 = 460.0;
/// The plot area: left, top, right, bottom.
const PLOT: (f64, f64, f64, f64) = (80.0, 50.0, 600.0, 400.0);

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart for `series`; `budget` names the limit in the DNF labels.
pub fn svg(title: &str, series: &[Series], budget: &str) -> String {
    let (left, top, right, bottom) = PLOT;
    let xs: Vec<usize> = {
        let mut v: Vec<usize> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (x_lo, x_hi) = (
        (*xs.first().unwrap_or(&1) as f64).log10(),
        (*xs.last().unwrap_or(&10) as f64).log10(),
    );
    let x_span = (x_hi - x_lo).max(1e-9);
    let x = |n: usize| left + (right - left) * ((n as f64).log10() - x_lo) / x_span;
    let values: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.1))
        .filter(|v| *v > 0.0)
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let (y_lo, y_hi) = if values.is_empty() {
        (0.0, 1.0)
    } else {
        let (a, b) = (lo.log10().floor(), hi.log10().ceil());
        (a, if b > a { b } else { a + 1.0 })
    };
    let y = |v: f64| bottom - (bottom - top) * (v.max(1e-12).log10() - y_lo) / (y_hi - y_lo);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" \
         viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(s, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
        (left + right) / 2.0,
        escape(title)
    );
    // Axes, grid and ticks.
    let _ = writeln!(
        s,
        "<path d=\"M{left} {top} V{bottom} H{right}\" stroke=\"black\" fill=\"none\"/>"
    );
    for &n in &xs {
        let px = x(n);
        let _ = writeln!(
            s,
            "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{bottom}\" stroke=\"#ddd\"/>\n\
             <text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            bottom + 18.0,
            thousands(n)
        );
    }
    let mut d = y_lo as i32;
    while d as f64 <= y_hi {
        let py = y(10f64.powi(d));
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{py:.1}\" x2=\"{right}\" y2=\"{py:.1}\" stroke=\"#ddd\"/>\n\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            py + 4.0,
            decade(d)
        );
        d += 1;
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">nodes (log scale)</text>",
        (left + right) / 2.0,
        bottom + 40.0
    );
    let _ = writeln!(
        s,
        "<text x=\"20\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 20 {0})\">\
         µs per round trip (log scale)</text>",
        (top + bottom) / 2.0
    );
    // One polyline per peer through the points that finished, a dot on
    // each, and a cross with a label where one did not.
    for (k, ser) in series.iter().enumerate() {
        let c = ser.colour;
        let done: Vec<(f64, f64)> = ser
            .points
            .iter()
            .filter_map(|&(n, v)| v.map(|v| (x(n), y(v))))
            .collect();
        let pts: Vec<String> = done.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        let _ = writeln!(
            s,
            "<polyline class=\"peer\" data-peer=\"{}\" points=\"{}\" fill=\"none\" \
             stroke=\"{c}\" stroke-width=\"2\"/>",
            escape(ser.peer),
            pts.join(" ")
        );
        for (a, b) in &done {
            let _ = writeln!(
                s,
                "<circle cx=\"{a:.1}\" cy=\"{b:.1}\" r=\"3.5\" fill=\"{c}\"/>"
            );
        }
        let mut last = None;
        for &(n, v) in &ser.points {
            if let Some(v) = v {
                last = Some((x(n), y(v)));
                continue;
            }
            // Staggered per peer, so two peers' marks at one count do not
            // overlap.
            let (px, py) = (x(n), top + 8.0 + 16.0 * k as f64);
            // Dashed from the last point that finished to the first mark.
            if let Some((lx, ly)) = last.take() {
                let _ = writeln!(
                    s,
                    "<line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{px:.1}\" y2=\"{py:.1}\" \
                     stroke=\"{c}\" stroke-dasharray=\"4 4\"/>"
                );
            }
            let _ = writeln!(
                s,
                "<g class=\"dnf\" data-peer=\"{}\" data-nodes=\"{n}\" stroke=\"{c}\" \
                 stroke-width=\"2\"><line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>\
                 <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/></g>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\" fill=\"{c}\" font-size=\"10\" \
                 text-anchor=\"middle\">{} DNF</text>",
                escape(ser.peer),
                px - 5.0,
                py - 5.0,
                px + 5.0,
                py + 5.0,
                px - 5.0,
                py + 5.0,
                px + 5.0,
                py - 5.0,
                px,
                py + 18.0,
                escape(ser.peer)
            );
        }
    }
    // The legend.
    for (k, ser) in series.iter().enumerate() {
        let ly = top + 10.0 + 20.0 * k as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" y1=\"{ly}\" x2=\"{1}\" y2=\"{ly}\" stroke=\"{2}\" stroke-width=\"2\"/>\n\
             <text x=\"{3}\" y=\"{4}\">{5}</text>",
            right + 50.0,
            right + 74.0,
            ser.colour,
            right + 80.0,
            ly + 4.0,
            escape(ser.peer)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{0}\" y=\"{1}\" font-size=\"10\">× DNF: did not</text>\n\
         <text x=\"{0}\" y=\"{2}\" font-size=\"10\">finish in {3}</text>",
        right + 50.0,
        top + 30.0 + 20.0 * series.len() as f64,
        top + 44.0 + 20.0 * series.len() as f64,
        escape(budget)
    );
    s.push_str("</svg>\n");
    s
}

/// `n` with thousands separators (10,000).
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A decade's label: 0.01, 0.1, 1, 10, 100, 1,000 …
fn decade(d: i32) -> String {
    if d >= 0 {
        thousands(10usize.pow(d as u32))
    } else {
        format!("{}", 10f64.powi(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small well-formedness check: every tag is closed in order (or
    /// self-closing), attribute quotes balance, one root `<svg>`.
    fn well_formed(doc: &str) -> Result<(), String> {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = doc;
        let mut roots = 0;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            if text.contains('>') {
                return Err(format!("stray '>' in text {text:?}"));
            }
            let close = rest[open..].find('>').ok_or("a tag is not closed")? + open;
            let tag = &rest[open + 1..close];
            if !tag.matches('"').count().is_multiple_of(2) {
                return Err(format!("unbalanced quotes in <{tag}>"));
            }
            if let Some(name) = tag.strip_prefix('/') {
                match stack.pop() {
                    Some(top) if top == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
            } else {
                let name: String = tag
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '/')
                    .collect();
                if stack.is_empty() {
                    roots += 1;
                    if name != "svg" {
                        return Err(format!("the root is <{name}>"));
                    }
                }
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[close + 1..];
        }
        if !stack.is_empty() {
            return Err(format!("unclosed: {stack:?}"));
        }
        if roots != 1 {
            return Err(format!("{roots} roots"));
        }
        Ok(())
    }

    #[test]
    fn the_chart_is_well_formed_with_a_line_per_peer_and_marks_where_one_did_not_finish() {
        let series = vec![
            Series {
                peer: "sim",
                colour: "#1f77b4",
                points: vec![(2, Some(0.8)), (100, Some(0.9)), (10_000, Some(0.85))],
            },
            Series {
                peer: "madsim",
                colour: "#ff7f0e",
                points: vec![(2, Some(0.9)), (100, Some(1.0)), (10_000, Some(1.1))],
            },
            Series {
                peer: "turmoil",
                colour: "#2ca02c",
                points: vec![(2, Some(2.0)), (100, Some(2_000.0)), (10_000, None)],
            },
        ];
        let doc = svg("cost <per> round trip", &series, "30 s");
        well_formed(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
        assert_eq!(doc.matches("<polyline").count(), 3, "{doc}");
        for peer in ["sim", "madsim", "turmoil"] {
            assert!(doc.contains(&format!("<polyline class=\"peer\" data-peer=\"{peer}\"")));
        }
        assert_eq!(doc.matches("class=\"dnf\"").count(), 1, "{doc}");
        assert!(doc.contains("data-peer=\"turmoil\" data-nodes=\"10000\""));
        assert!(doc.contains("turmoil DNF") && doc.contains("finish in 30 s"));
        // A dashed line leads from turmoil's last finished point to the mark.
        assert_eq!(doc.matches("stroke-dasharray").count(), 1, "{doc}");
        // The title was escaped; the axes name 2 and 10,000 nodes.
        assert!(doc.contains("cost &lt;per&gt; round trip"));
        assert!(doc.contains(">10,000</text>") && doc.contains(">2</text>"));
        // Log y axis: decades from 0.1 to 10,000 µs.
        assert!(doc.contains(">0.1</text>") && doc.contains(">10,000</text>"));
        // The checker refuses what is broken.
        assert!(well_formed("<svg><g></svg>").is_err());
        assert!(well_formed("<svg a=\"1/></svg>").is_err());
    }
}
