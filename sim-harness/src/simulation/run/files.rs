//! The files a seed leaves on the real disk — its trace and its timeline
//! page with the exports asked for — in `target/sim/<test>/`, written on
//! the runner's thread after the seed's simulation has ended.

use crate::simulation::seed::{trace_dir, Options, SeedResult};
use crate::simulation::timeline::{self, Wanted};
use sim_runtime::sim::Class;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Writes the page (and the exports asked for) of a recorded seed next to
/// its trace; returns the page's path.
pub(super) fn write_timeline(
    opts: &Options,
    name: &str,
    r: &SeedResult,
    wanted: Wanted,
) -> Option<PathBuf> {
    write_timeline_as(opts, name, r, wanted, "", &[])
}

/// `write_timeline`, with `infix` after the seed in each file's name
/// (`7.shrunk.html` for `.shrunk`) and `markers` drawn on the page.
pub(super) fn write_timeline_as(
    opts: &Options,
    name: &str,
    r: &SeedResult,
    wanted: Wanted,
    infix: &str,
    markers: &[(u64, u64, String)],
) -> Option<PathBuf> {
    let rec = r.recorded.as_ref()?;
    let o = &r.outcome;
    let end = timeline::Ending {
        test: name,
        seed: o.seed,
        class: o.class,
        message: &o.message,
        step: o.step,
        now_ns: o.now.as_nanos() as u64,
        schedule: &o.schedule,
        tasks: &o.leftover,
        markers,
    };
    let dir = trace_dir(opts, name);
    let mut page = None;
    // The page comes first, then the exports.
    for (i, (file, bytes)) in timeline::files(rec, &r.trace, &end, wanted)
        .into_iter()
        .enumerate()
    {
        let path = dir.join(file.replacen('.', &format!("{infix}."), 1));
        match std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, bytes)) {
            Ok(()) if i == 0 => page = Some(path),
            Ok(()) => {}
            Err(e) => eprintln!("sim: could not write {}: {e}", path.display()),
        }
    }
    page
}

/// Writes a seed's trace file, `<seed>.trace`.
pub(super) fn write_trace(opts: &Options, name: &str, r: &SeedResult) {
    write_trace_as(opts, name, r, &format!("{}.trace", r.outcome.seed));
}

/// Writes a seed's trace, its end and its message as `file`.
pub(super) fn write_trace_as(opts: &Options, name: &str, r: &SeedResult, file: &str) {
    let dir = trace_dir(opts, name);
    let path = dir.join(file);
    let mut text = String::new();
    if r.dropped > 0 {
        let _ = writeln!(text, "({} earlier lines dropped)", r.dropped);
    }
    for l in &r.trace {
        text.push_str(l);
        text.push('\n');
    }
    let o = &r.outcome;
    let _ = writeln!(
        text,
        "--- seed {} · strategy {} · step {} · virtual time {:?} · {}",
        o.seed,
        o.schedule,
        o.step,
        o.now,
        o.class.map_or("passed", Class::name)
    );
    if !o.message.is_empty() {
        let _ = writeln!(text, "{}", o.message);
    }
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, text)) {
        eprintln!("sim: could not write the trace {}: {e}", path.display());
    }
}
