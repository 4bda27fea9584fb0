//! The report of a failing sweep, the one text a failing `#[sim::test]`
//! panics with: the failing seeds, then the first failure in full (class,
//! step, virtual time, message, the trace's last lines and path; the
//! shrunk run's story when shrinking found a smaller one), what the sweep
//! did not cover, and what the triage found (page, rerun, fresh replays,
//! tape), ending with the line that replays it.

use super::sweep::Swept;
use super::triage::{Triage, TRACED_FAILURES};
use crate::simulation::replay;
use crate::simulation::seed::{trace_dir, Options, SeedResult};
use sim_runtime::sim::Class;
use std::fmt::Write as _;

/// Everything the report tells.
pub(super) struct Report<'a> {
    pub opts: &'a Options,
    pub name: &'a str,
    pub swept: &'a Swept,
    pub triage: &'a Triage,
    /// Whether the sweep traced every seed as it ran it (no cap on the
    /// failing seeds with a trace).
    pub all_traced: bool,
}

impl Report<'_> {
    /// The report's text (`swept` has a failure).
    pub(super) fn render(&self) -> String {
        let mut s = String::new();
        self.head(&mut s);
        self.story(&mut s);
        self.uncovered(&mut s);
        self.verdicts(&mut s);
        s
    }

    /// The first failing seed's run, as the sweep ran it.
    fn first(&self) -> &SeedResult {
        self.swept
            .failures
            .values()
            .next()
            .expect("a report is of a failing sweep")
    }

    /// Which seeds failed; where the first one failed, and how.
    fn head(&self, s: &mut String) {
        let (name, failures) = (self.name, &self.swept.failures);
        let o = &self.first().outcome;
        let seeds: Vec<String> = failures.keys().map(|k| k.to_string()).collect();
        if let Some(how) = &self.swept.explored {
            let _ = writeln!(s, "sim: {name}: exploration: {how} failed");
        } else {
            self.seeds_line(s, &seeds);
        }
        let _ = writeln!(
            s,
            "sim: first failure — seed {} · strategy {} · step {} · virtual time {}.{:09}s",
            o.seed,
            o.schedule,
            o.step,
            o.now.as_secs(),
            o.now.subsec_nanos()
        );
        let _ = writeln!(s, "sim: class: {}", o.class.map_or("?", Class::name));
        if let Some(sh) = &self.triage.shrunk {
            let _ = writeln!(s, "sim: shrunk: {}", sh.line);
        }
    }

    /// Which seeds failed, of how many.
    fn seeds_line(&self, s: &mut String, seeds: &[String]) {
        let _ = writeln!(
            s,
            "sim: {}: {} of {} seed(s) failed: {}{}",
            self.name,
            self.swept.failures.len(),
            self.swept.ran,
            seeds
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            if seeds.len() > 20 { ", …" } else { "" }
        );
    }

    /// The story: the shrunk run's, when shrinking found one, else the
    /// first failure's: its fault points, swarm, message and trace.
    fn story(&self, s: &mut String) {
        let seed = self.first().outcome.seed;
        let (first, trace_file) = match &self.triage.shrunk {
            Some(sh) if sh.smaller => (&sh.result, format!("{seed}.shrunk.trace")),
            _ => (self.first(), format!("{seed}.trace")),
        };
        let o = &first.outcome;
        let active: Vec<String> = o
            .buggify
            .iter()
            .filter(|(_, active, _)| *active)
            .map(|(site, _, fired)| format!("{site} (fired {fired})"))
            .collect();
        if !active.is_empty() {
            let _ = writeln!(s, "sim: fault points active: {}", active.join(", "));
        }
        if !first.fakes.is_empty() {
            let _ = writeln!(s, "sim: fake faults: {}", first.fakes.join("; "));
        }
        if !first.swarm.is_empty() {
            let dims: Vec<String> = first
                .swarm
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(s, "sim: swarm: {}", dims.join(", "));
        }
        for l in o.message.lines() {
            let _ = writeln!(s, "    {l}");
        }
        let path = trace_dir(self.opts, self.name).join(trace_file);
        let tail: Vec<&String> = first.trace.iter().rev().take(20).collect();
        let _ = writeln!(
            s,
            "sim: trace: {} ({} line(s); the last {}:)",
            path.display(),
            first.trace.len() as u64 + first.dropped,
            tail.len()
        );
        for l in tail.into_iter().rev() {
            let _ = writeln!(s, "    {l}");
        }
        let failed = self.swept.failures.len();
        if !self.all_traced && failed > TRACED_FAILURES {
            let _ = writeln!(
                s,
                "sim: traces: written for the first {TRACED_FAILURES} of the {failed} failing \
                 seeds; for another, its replay line (printed as it started) with SIM_TRACE=1",
            );
        }
    }

    /// The sites the sweep did not cover.
    fn uncovered(&self, s: &mut String) {
        let missing = &self.swept.missing;
        if missing.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "sim: not covered by the sweep: {} site(s):",
            missing.len()
        );
        for m in missing.iter().take(20) {
            let _ = writeln!(s, "    {m}");
        }
        if missing.len() > 20 {
            let _ = writeln!(s, "    …");
        }
    }

    /// The triage's pages and verdicts, the build, and the replay line.
    fn verdicts(&self, s: &mut String) {
        let t = self.triage;
        if let Some(page) = &t.page {
            let _ = writeln!(
                s,
                "sim: timeline: {} (open it in a browser: lanes per node, messages as arrows)",
                page.display()
            );
        }
        if let Some(page) = &t.shrunk_page {
            let _ = writeln!(s, "sim: timeline of the shrunk run: {}", page.display());
        }
        if let Some(i) = &t.inevitable {
            let _ = writeln!(s, "{}", i.lines());
        }
        let _ = writeln!(s, "sim: reproduced when run again: {}", t.reproduced);
        let _ = writeln!(s, "sim: replays in fresh processes: {}", t.fresh);
        let _ = writeln!(s, "sim: tape: {}", t.tape);
        let _ = writeln!(s, "sim: build: {}", replay::identity());
        let replay = match (&t.replay, &t.shrunk) {
            (Some(by_tape), _) => by_tape,
            (None, Some(sh)) if sh.smaller => &sh.result.outcome.replay,
            _ => &self.first().outcome.replay,
        };
        let _ = write!(s, "sim: replay: {replay}");
    }
}

/// A sweep without a failure: its verdict on coverage. With
/// `coverage = "all"`, a site no seed covered fails the test.
pub(super) fn coverage_only(opts: &Options, name: &str, swept: &Swept) {
    let missing = &swept.missing;
    if missing.is_empty() {
        return;
    }
    if opts.coverage {
        panic!(
            "sim: coverage: {name}: {} site(s) of this binary were not covered by the {} \
             run(s), and the test asks for coverage = \"all\"\nsim: class: {}\n    {}",
            missing.len(),
            swept.ran,
            Class::Coverage,
            missing.join("\n    ")
        );
    }
    eprintln!(
        "sim: {name}: {} site(s) not covered:\n    {}",
        missing.len(),
        missing.join("\n    ")
    );
}
