//! The hard canaries' chart, `docs/canaries-hard.svg`: for each hard
//! canary, the runs each way of searching needed to its first failure
//! (uniform random, PCT 3, the portfolio, the fuzzer, the explorer), one
//! bar each on a log scale. Drawn from the tables in `docs/canaries.md`
//! (`--hard`'s and the fuzzer's), so `cargo xtask canaries --chart`
//! redraws it without measuring anything; `--hard` draws it after its table.

use std::fmt::Write as _;
use std::path::Path;

/// The columns, in the order drawn: a label and a colour.
const SERIES: &[(&str, &str)] = &[
    ("uniform", "#9aa5b1"),
    ("PCT 3", "#b08ec0"),
    ("portfolio", "#4a7ab5"),
    ("fuzzer", "#d08b3c"),
    ("explorer", "#3c9a5f"),
];

/// One cell: the median, or what the table says instead.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Median(u64),
    /// Not found within the budget in most runs: the table's words.
    Missed(String),
    /// No figure (the fuzzer never ran on it).
    NotMeasured,
}

/// One canary's cells, in [`SERIES`] order.
#[derive(Debug)]
pub struct Row {
    pub name: String,
    pub cells: Vec<Cell>,
}

fn cell(text: &str) -> Cell {
    let t = text.trim();
    match t.split_whitespace().next().map(str::parse::<u64>) {
        Some(Ok(n)) => Cell::Median(n),
        _ => Cell::Missed(t.split(" (").next().unwrap_or(t).to_string()),
    }
}

/// The table rows of `md` whose first cell is a canary's name in
/// backquotes and that have `columns` cells.
fn table<'a>(md: &'a str, header: &str, columns: usize) -> Vec<Vec<&'a str>> {
    let Some(at) = md.find(header) else {
        return Vec::new();
    };
    md[at..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect::<Vec<_>>()
        })
        .filter(|c| c.len() == columns && c[0].starts_with('`'))
        .collect()
}

/// The hard canaries' rows, from docs/canaries.md's text.
pub fn rows(md: &str) -> Vec<Row> {
    let hard = table(
        md,
        "| bug | class | uniform | PCT 3 | portfolio | explorer |",
        7,
    );
    let fuzz = table(
        md,
        "| bug | portfolio: seeds to the first failure | fuzzer: inputs to the first failure |",
        3,
    );
    hard.iter()
        .map(|c| {
            let fuzzer = fuzz
                .iter()
                .find(|f| f[0] == c[0])
                .map_or(Cell::NotMeasured, |f| cell(f[2]));
            Row {
                name: c[0].trim_matches('`').to_string(),
                cells: vec![cell(c[2]), cell(c[3]), cell(c[4]), fuzzer, cell(c[5])],
            }
        })
        .collect()
}

/// Decades on the scale: 1 to 10^DECADES runs.
const DECADES: f64 = 5.0;
const LEFT: f64 = 150.0;
const WIDTH: f64 = 520.0;
const BAR: f64 = 11.0;
const GAP: f64 = 14.0;

fn x(n: u64) -> f64 {
    LEFT + WIDTH * ((n.max(1) as f64).log10() / DECADES).min(1.0)
}

/// The chart of `rows`, as an SVG document.
pub fn svg(rows: &[Row]) -> String {
    let group = SERIES.len() as f64 * BAR + GAP;
    let top = 40.0;
    let height = top + rows.len() as f64 * group + 40.0;
    let width = LEFT + WIDTH + 150.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"10\">"
    );
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"14\" font-size=\"12\">Runs to the first failure (median of the \
         sweeps; log scale): fewer is better</text>"
    );
    // The legend and the decades' grid.
    for (i, (label, colour)) in SERIES.iter().enumerate() {
        let lx = LEFT + i as f64 * 95.0;
        let _ = writeln!(
            s,
            "<rect x=\"{lx}\" y=\"22\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"31\">{label}</text>",
            lx + 14.0
        );
    }
    for d in 0..=DECADES as u32 {
        let gx = x(10u64.pow(d));
        let _ = writeln!(
            s,
            "<line x1=\"{gx}\" y1=\"{top}\" x2=\"{gx}\" y2=\"{}\" stroke=\"#ddd\"/>\
             <text x=\"{gx}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            height - 28.0,
            height - 16.0,
            10u64.pow(d)
        );
    }
    for (r, row) in rows.iter().enumerate() {
        let y0 = top + r as f64 * group;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            LEFT - 8.0,
            y0 + group / 2.0,
            row.name
        );
        for (i, ((label, colour), c)) in SERIES.iter().zip(&row.cells).enumerate() {
            let y = y0 + i as f64 * BAR;
            match c {
                Cell::Median(n) => {
                    let _ = writeln!(
                        s,
                        "<rect x=\"{LEFT}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" \
                         fill=\"{colour}\"><title>{label}: {n}</title></rect>\
                         <text x=\"{:.1}\" y=\"{}\">{n}</text>",
                        x(*n) - LEFT,
                        BAR - 2.0,
                        x(*n) + 3.0,
                        y + BAR - 3.0
                    );
                }
                Cell::Missed(words) => {
                    let _ = writeln!(
                        s,
                        "<rect x=\"{LEFT}\" y=\"{y}\" width=\"{WIDTH}\" height=\"{}\" \
                         fill=\"none\" stroke=\"{colour}\" stroke-dasharray=\"3,2\"/>\
                         <text x=\"{:.1}\" y=\"{}\">{label}: {words}</text>",
                        BAR - 2.0,
                        LEFT + WIDTH + 3.0,
                        y + BAR - 3.0
                    );
                }
                Cell::NotMeasured => {
                    let _ = writeln!(
                        s,
                        "<text x=\"{:.1}\" y=\"{}\" fill=\"#888\">{label}: not measured</text>",
                        LEFT + 3.0,
                        y + BAR - 3.0
                    );
                }
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Draws the chart of the tables in `md_path` next to it.
pub fn write(md_path: &Path) -> Result<(), String> {
    let md = std::fs::read_to_string(md_path)
        .map_err(|e| format!("cannot read {}: {e}", md_path.display()))?;
    let rows = rows(&md);
    if rows.is_empty() {
        return Err(format!(
            "{} has no hard canaries' table: run `cargo xtask canaries --hard` first",
            md_path.display()
        ));
    }
    let out = md_path.with_file_name("canaries-hard.svg");
    crate::cmd::write_file(&out, &svg(&rows))?;
    eprintln!(
        "==> canaries: chart of {} hard canaries: {}",
        rows.len(),
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "\
| bug | class | uniform | PCT 3 | portfolio | explorer | shrunk (before → after) |
|---|---|---|---|---|---|---|
| `a` | assertion | 130 (5 of 5) | none in 20000 | 2437 (5 of 5) | 319 (5 of 5) | x |
| `b` | assertion | 7 (5 of 5) | 8 (5 of 5) | 9 (5 of 5) | over 5000 (2 of 5) | x |

| bug | portfolio: seeds to the first failure | fuzzer: inputs to the first failure |
|---|---|---|
| `a` | 130 | none in 20000 (3 of 3 missed) |
";

    #[test]
    fn the_tables_cells_become_bars() {
        let rows = rows(MD);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].cells,
            [
                Cell::Median(130),
                Cell::Missed("none in 20000".into()),
                Cell::Median(2437),
                Cell::Missed("none in 20000".into()),
                Cell::Median(319),
            ]
        );
        assert_eq!(rows[1].cells[3], Cell::NotMeasured);
        assert_eq!(rows[1].cells[4], Cell::Missed("over 5000".into()));
        let svg = svg(&rows);
        // Fewer runs, a shorter bar: the explorer's 319 against 2437.
        let width = |n: u64| format!("width=\"{:.1}\"", x(n) - LEFT);
        assert!(svg.contains(&width(319)) && svg.contains(&width(2437)));
        assert!(x(319) < x(2437));
        assert!(svg.contains("fuzzer: not measured"));
    }
}
