//! A violation as text: a timeline with one line per client and each
//! operation a bar from its call to its return, then one line per
//! operation with its events and times.
//!
//! Columns follow the order of the events shown (not time): each event
//! gets a column of its own, placed as far left as the bars' labels allow.

use crate::violation::{Shown, Violation};
use std::fmt::{self, Write as _};

struct Bar<'a> {
    op: &'a Shown,
    core: bool,
    label: String,
    /// Event ranks; `ret` is `None` for a bar still open at the cut.
    call: usize,
    ret: Option<usize>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self
            .partition
            .as_deref()
            .map_or_else(String::new, |k| format!(" (key {k})"));
        writeln!(
            f,
            "not linearizable{key}: {} completed operation(s) whose answers cannot all be explained, \
             in the history up to event {} ({} operations in this partition)",
            self.core.len(),
            self.end,
            self.partition_ops
        )?;
        if self.minimal {
            writeln!(
                f,
                "minimal: treating any one of them as a maybe makes that history linearizable"
            )?;
        } else {
            writeln!(
                f,
                "not proven minimal: shrinking ran out of steps (Options::shrink_steps_max)"
            )?;
        }
        writeln!(f)?;
        let shown = self.shown();
        let hidden = self.core.len() + self.context.len() - shown.len();
        if hidden > 0 {
            let all = shown.len() + hidden;
            writeln!(
                f,
                "({} of {all} operations drawn: those called nearest the unplaced one)\n",
                shown.len()
            )?;
        }
        f.write_str(&self.timeline(&shown))?;
        writeln!(f)?;
        let width = shown
            .iter()
            .map(|(s, _)| s.text.chars().count())
            .max()
            .unwrap_or(0);
        for &(s, core) in &shown {
            let mark = if s.id == self.unplaced { "!" } else { " " };
            let role = if core { "core " } else { "maybe" };
            write!(
                f,
                "{mark} {:<6} {role}  {:<width$}  client {}",
                s.id.to_string(),
                s.text,
                s.client
            )?;
            if let Some(label) = &s.label {
                write!(f, " on {label}")?;
            }
            write!(f, ", called at event {}{}", s.call.index, at(s.call.at))?;
            match s.ret {
                Some(r) if r.index <= self.end => {
                    writeln!(f, ", {} at event {}{}", s.outcome, r.index, at(r.at))?
                }
                Some(_) => writeln!(f, ", still open at the cut")?,
                None => writeln!(f, ", {}", s.outcome)?,
            }
        }
        writeln!(f)?;
        if self.linearized.is_empty() {
            write!(f, "{} cannot be placed first", self.unplaced)?;
        } else {
            // The end of a long order is what leads to the dead end.
            let skip = self.linearized.len().saturating_sub(12);
            let mut order: Vec<String> = self.linearized[skip..]
                .iter()
                .map(|id| id.to_string())
                .collect();
            if skip > 0 {
                order.insert(0, format!("({skip} before)"));
            }
            write!(
                f,
                "{} cannot be placed after the longest linearizable order found, {}",
                self.unplaced,
                order.join(" ")
            )?;
        }
        writeln!(f, " (state then: {}).", self.state)?;
        writeln!(
            f,
            "[ ] core: answers as recorded; ( ) maybe: took effect between call and return or never, any answer; \
             ? open: may take effect at any time after its call, or never."
        )
    }
}

/// At most this many operations are drawn: a violation whose shrinking ran
/// out of steps may hold hundreds.
const SHOWN_MAX: usize = 48;

impl Violation {
    /// The operations drawn (core or not), in call order: all of them, or
    /// the `SHOWN_MAX` called nearest before (and just after) the unplaced
    /// one.
    fn shown(&self) -> Vec<(&Shown, bool)> {
        let core = self.core.iter().map(|s| (s, true));
        let mut all: Vec<(&Shown, bool)> = core
            .chain(self.context.iter().map(|s| (s, false)))
            .collect();
        all.sort_by_key(|(s, _)| s.id);
        if all.len() > SHOWN_MAX {
            let at = all
                .iter()
                .position(|(s, _)| s.id == self.unplaced)
                .unwrap_or(all.len() - 1);
            let stop = (at + 1 + SHOWN_MAX / 8).clamp(SHOWN_MAX, all.len());
            all.truncate(stop);
            all.drain(..stop - SHOWN_MAX);
        }
        all
    }

    fn timeline(&self, shown: &[(&Shown, bool)]) -> String {
        let closed = |s: &Shown| s.outcome == "ok" && s.ret.is_some_and(|r| r.index <= self.end);
        let mut events: Vec<u64> = Vec::new();
        for &(s, _) in shown {
            events.push(s.call.index);
            if closed(s) {
                events.push(s.ret.unwrap().index);
            }
        }
        events.sort_unstable();
        events.dedup();
        let rank = |e: u64| {
            events
                .binary_search(&e)
                .expect("every shown event is ranked")
        };
        let bars: Vec<Bar<'_>> = shown
            .iter()
            .map(|&(op, core)| {
                let open = !closed(op);
                let label = format!("{} {}{}", op.id, op.text, if open { " ?" } else { "" });
                Bar {
                    op,
                    core,
                    label,
                    call: rank(op.call.index),
                    ret: (!open).then(|| rank(op.ret.unwrap().index)),
                }
            })
            .collect();

        // Columns: two apart at least, and wide enough for each label.
        let mut x = vec![0usize; events.len()];
        for r in 0..events.len() {
            let mut at = if r == 0 { 0 } else { x[r - 1] + 2 };
            for b in bars.iter().filter(|b| b.ret == Some(r)) {
                at = at.max(x[b.call] + b.label.chars().count() + 1);
            }
            x[r] = at;
        }
        let mut right = x.last().map_or(0, |&l| l + 1);
        for b in bars.iter().filter(|b| b.ret.is_none()) {
            right = right.max(x[b.call] + b.label.chars().count() + 4);
        }

        // Lanes: a client's bars share a line unless they overlap (an open
        // bar runs to the right edge, so the client's next bar goes below).
        let mut order: Vec<&Bar<'_>> = bars.iter().collect();
        order.sort_by_key(|b| (b.op.client, b.call));
        let mut lanes: Vec<(u32, usize, Vec<char>, bool)> = Vec::new();
        for b in order {
            let (start, stop) = (x[b.call], b.ret.map_or(right, |r| x[r]));
            let lane = lanes.iter().position(|l| l.0 == b.op.client && l.1 < start);
            let lane = lane.unwrap_or_else(|| {
                lanes.push((b.op.client, 0, vec![' '; right + 1], false));
                lanes.len() - 1
            });
            let (open, close) = if b.core { ('[', ']') } else { ('(', ')') };
            let line = &mut lanes[lane];
            line.1 = stop + 1;
            line.3 |= b.op.id == self.unplaced;
            line.2[start] = open;
            for (i, c) in b.label.chars().enumerate() {
                line.2[start + 1 + i] = c;
            }
            let fill = if b.ret.is_some() { '-' } else { '.' };
            for c in &mut line.2[start + 1 + b.label.chars().count()..stop] {
                *c = fill;
            }
            if b.ret.is_some() {
                line.2[stop] = close;
            }
        }
        lanes.sort_by_key(|l| l.0);

        let name = |client: u32| {
            let mut labels = bars
                .iter()
                .filter(|b| b.op.client == client)
                .map(|b| b.op.label.as_deref());
            let first = labels.next().flatten();
            match first {
                Some(l) if labels.all(|o| o == Some(l)) => format!("client {client} @{l}"),
                _ => format!("client {client}"),
            }
        };
        let names: Vec<String> = lanes.iter().map(|l| name(l.0)).collect();
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let mut out = String::new();
        for (l, n) in lanes.iter().zip(&names) {
            let line: String = l.2.iter().collect();
            let _ = write!(out, "{n:<width$}  {}", line.trim_end());
            if l.3 {
                let _ = write!(out, "   <- {} cannot be placed", self.unplaced);
            }
            out.push('\n');
        }
        out
    }
}

fn at(t: Option<std::time::Duration>) -> String {
    t.map_or_else(String::new, |t| format!(" ({t:?})"))
}
